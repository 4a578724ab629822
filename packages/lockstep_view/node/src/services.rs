//! The graph's services for Foxglove's Service Call panel: each service (not an action's internal ones) is
//! advertised with its request and response definitions from its `.srv` file, calls are JSON, and each call
//! goes through an untyped r2r client made on the first call to that service (r2r carries JSON only for the
//! types compiled into Lockstep; a call to another type fails with that reason). A service gone from the
//! graph is unadvertised.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockstep_bag::MessageDefinitions;
use lockstep_ros::{lock, SharedNode};
use lockstep_view::graph::{callable_services, vanished};
use lockstep_view::{Server, ServiceCall};

type Clients = Arc<Mutex<BTreeMap<String, Arc<r2r::ClientUntyped>>>>;

/// What is advertised, and the clients made so far.
#[derive(Default)]
pub struct Services {
    /// Service name -> (type, id).
    advertised: BTreeMap<String, (String, u32)>,
    /// Services whose definition could not be read (reported once each).
    skipped: BTreeSet<(String, String)>,
    clients: Clients,
}

impl Services {
    /// Advertises new services of `graph` (name -> types) and unadvertises vanished ones.
    pub fn refresh(
        &mut self,
        graph: &[(String, Vec<String>)],
        server: &Server,
        definitions: &mut MessageDefinitions,
        logger: &str,
    ) {
        let now = callable_services(graph);
        let advertised = self
            .advertised
            .iter()
            .map(|(name, (type_name, _))| (name, type_name.as_str()));
        let gone = vanished(advertised, &now);
        for name in gone {
            if let Some((_, id)) = self.advertised.remove(&name) {
                server.remove_service(id);
            }
            if let Ok(mut clients) = self.clients.lock() {
                clients.remove(&name);
            }
        }
        for (name, type_name) in now {
            if self.advertised.contains_key(name) {
                continue;
            }
            match definitions.resolve_service(type_name) {
                Ok((request, response)) => {
                    let id = server.add_service(name, type_name, &request.text, &response.text);
                    self.advertised
                        .insert(name.to_owned(), (type_name.to_owned(), id));
                }
                Err(e) => {
                    if self.skipped.insert((name.to_owned(), type_name.to_owned())) {
                        r2r::log_warn!(logger, "not offering service {name} ({type_name}): {e}");
                    }
                }
            }
        }
    }

    /// What a call task needs.
    pub fn clients(&self) -> Clients {
        self.clients.clone()
    }
}

/// Carries out one call and answers the client: the response as JSON, or a failure with the reason.
pub async fn call(
    node: SharedNode,
    clients: Clients,
    server: Server,
    client: u64,
    (service, type_name, call): (String, String, ServiceCall),
    timeout: Duration,
) {
    match respond(&node, &clients, &service, &type_name, &call.payload, timeout).await {
        Ok(json) => server.send_service_response(client, call.service_id, call.call_id, &json),
        Err(why) => server.send_service_failure(
            client,
            call.service_id,
            call.call_id,
            &format!("{service}: {why}"),
        ),
    }
}

async fn respond(
    node: &SharedNode,
    clients: &Clients,
    service: &str,
    type_name: &str,
    payload: &[u8],
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let request: serde_json::Value =
        serde_json::from_slice(payload).map_err(|e| format!("the request is not JSON: {e}"))?;
    let client = untyped_client(node, clients, service, type_name)?;
    let answer = async {
        r2r::Node::is_available(client.as_ref())
            .map_err(|e| e.to_string())?
            .await
            .map_err(|e| e.to_string())?;
        let pending = client
            .request(request)
            .map_err(|e| format!("the request does not fit {type_name}_Request: {e}"))?;
        pending
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())
    };
    let response = tokio::time::timeout(timeout, answer)
        .await
        .map_err(|_| format!("no response within {:.1} s", timeout.as_secs_f64()))??;
    serde_json::to_vec(&response).map_err(|e| e.to_string())
}

fn untyped_client(
    node: &SharedNode,
    clients: &Clients,
    service: &str,
    type_name: &str,
) -> Result<Arc<r2r::ClientUntyped>, String> {
    let mut cache = clients
        .lock()
        .map_err(|_| "service clients poisoned".to_owned())?;
    if let Some(c) = cache.get(service) {
        return Ok(c.clone());
    }
    let made = lock(node)
        .map_err(|e| e.to_string())?
        .create_client_untyped(service, type_name, r2r::QosProfile::services_default())
        .map_err(|e| {
            format!("calls to {type_name} cannot be relayed ({e}: its package is not compiled into Lockstep)")
        })?;
    let made = Arc::new(made);
    cache.insert(service.to_owned(), made.clone());
    Ok(made)
}
