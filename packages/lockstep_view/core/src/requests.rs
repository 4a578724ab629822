//! What clients ask of the node rather than of the relay: parameters and service calls. The server turns
//! each request into an [`Event`]; the node answers one client with the methods here. Services are added and
//! removed by the node as they come and go in the graph, like channels.

use crate::protocol::{
    self, parse_service_call, Level, Parameter, ServerMessage, Service, ServiceSchema,
    OP_SERVICE_CALL_REQUEST,
};
use crate::server::{Event, Server};
use crate::state::ClientIo;

impl Server {
    /// Answers a parameter request of client `client` (ignored if it has left).
    pub fn send_parameters(&self, client: u64, parameters: &[Parameter], id: Option<&str>) {
        self.to_client(
            client,
            ServerMessage::ParameterValues { parameters, id }.to_json(),
        );
    }

    /// Sends a status message to client `client` (ignored if it has left).
    pub fn send_status(&self, client: u64, level: Level, message: &str) {
        self.to_client(client, protocol::status(level, message));
    }

    /// Advertises a service to every client; returns its id (the same id while it stays). `request` and
    /// `response` are the halves' `ros2msg` definitions; calls are JSON.
    pub fn add_service(&self, name: &str, type_name: &str, request: &str, response: &str) -> u32 {
        let mut st = self.shared.state();
        if let Some(s) = st
            .services
            .values()
            .find(|s| s.name == name && s.type_name == type_name)
        {
            return s.id;
        }
        st.next_service += 1;
        let half = |suffix: &str, schema: &str| ServiceSchema {
            encoding: "json".into(),
            schema_name: format!("{type_name}_{suffix}"),
            schema_encoding: "ros2msg".into(),
            schema: schema.to_owned(),
        };
        let service = Service {
            id: st.next_service,
            name: name.to_owned(),
            type_name: type_name.to_owned(),
            request: half("Request", request),
            response: half("Response", response),
        };
        let text = ServerMessage::AdvertiseServices {
            services: vec![&service],
        }
        .to_json();
        st.broadcast(&text);
        let id = service.id;
        st.services.insert(id, service);
        id
    }

    /// Unadvertises a service (it left the graph).
    pub fn remove_service(&self, service_id: u32) {
        let mut st = self.shared.state();
        if st.services.remove(&service_id).is_none() {
            return;
        }
        let text = ServerMessage::UnadvertiseServices {
            service_ids: vec![service_id],
        }
        .to_json();
        st.broadcast(&text);
    }

    /// The services advertised now, by id.
    pub fn services(&self) -> Vec<Service> {
        self.shared.state().services.values().cloned().collect()
    }

    /// Sends a service's response to the client that called it.
    pub fn send_service_response(&self, client: u64, service_id: u32, call_id: u32, payload: &[u8]) {
        let frame = protocol::service_call_response(service_id, call_id, "json", payload);
        if let Some(c) = self.shared.state().clients.get(&client) {
            c.io.control_frame(crate::queue::Outgoing::Binary(frame));
        }
    }

    /// Tells the client that called a service why it gets no response.
    pub fn send_service_failure(&self, client: u64, service_id: u32, call_id: u32, message: &str) {
        let text = ServerMessage::ServiceCallFailure {
            service_id,
            call_id,
            message: message.to_owned(),
        }
        .to_json();
        self.to_client(client, text);
    }

    fn to_client(&self, client: u64, text: String) {
        if let Some(c) = self.shared.state().clients.get(&client) {
            c.io.control(text);
        }
    }

    /// Acts on a binary message of client `id`: a service call, or a status saying what is wrong.
    pub(crate) fn binary(&self, id: u64, io: &ClientIo, bytes: &[u8]) {
        let op = bytes.first().copied().unwrap_or(0);
        if op == OP_SERVICE_CALL_REQUEST && !self.shared.options.services {
            return io.control(protocol::status(
                Level::Error,
                "service calls are not offered by this server",
            ));
        }
        let call = match parse_service_call(bytes) {
            Ok(call) => call,
            Err(e) => return io.control(protocol::status(Level::Error, e.to_string())),
        };
        let failure = |message: String| {
            ServerMessage::ServiceCallFailure {
                service_id: call.service_id,
                call_id: call.call_id,
                message,
            }
            .to_json()
        };
        if call.encoding != "json" {
            let why = format!("encoding `{}` is not supported (calls are `json`)", call.encoding);
            return io.control(failure(why));
        }
        let Some((service, type_name)) = (self.shared.state().services.get(&call.service_id))
            .map(|s| (s.name.clone(), s.type_name.clone()))
        else {
            return io.control(failure(format!("unknown service id {}", call.service_id)));
        };
        let allow = &self.shared.options.allow_services;
        if !allow.allows(&service) {
            // A status for the user, and the failure for the client's pending call.
            let why = format!("call to service `{service}` refused: {}", allow.why_not());
            io.control(protocol::status(Level::Error, why.clone()));
            return io.control(failure(why));
        }
        let _ = self.shared.events.send(Event::ServiceCall {
            client: id,
            service,
            type_name,
            call,
        });
    }
}
