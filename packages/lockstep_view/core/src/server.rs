//! The WebSocket server: accepts clients offering `foxglove.websocket.v1`, tells each the server's info
//! and every channel, keeps their subscriptions, and relays what [`Server::publish`] is given to the
//! clients subscribed to its channel through each client's bounded queue ([`ClientQueue`]). Bad client
//! input is answered with a status message and the connection goes on.
//!
//! The node (or a test) owns the data: it adds and removes channels as topics appear and disappear and
//! learns from [`Event`]s when a channel gets its first subscriber or loses its last, so that it subscribes
//! to a topic only while someone looks at it (as foxglove_bridge does).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::Message;

use crate::access::{handshake, split_parameters, Allowlist, Kind, Token};
use crate::protocol::{
    self, parse_client, Channel, ClientMessage, Level, Parameter, ServerMessage, Service, ServiceCall,
};
use crate::queue::Outgoing;
use crate::state::{Client, ClientIo, State};
pub use crate::stats::ClientStats;
use crate::tls::Tls;

/// How long a new connection may take for its TLS and WebSocket handshakes before it is dropped.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Shown by clients (`serverInfo.name`).
    pub name: String,
    /// Data frames kept per client before its oldest are dropped.
    pub data_queue_len: usize,
    /// Protocol messages kept per client before it is disconnected.
    pub control_queue_len: usize,
    /// Declare the `time` capability (the node then sends time frames and stamps messages with that clock).
    pub time: bool,
    /// Declare the `parameters` capability: `getParameters` / `setParameters` become [`Event`]s for the node
    /// to answer with [`Server::send_parameters`].
    pub parameters: bool,
    /// Declare the `services` capability (calls encoded as JSON): calls to services added with
    /// [`Server::add_service`] become [`Event::ServiceCall`]s for the node to answer.
    pub services: bool,
    /// Topics that may be advertised (default: every topic).
    pub allow_topics: Allowlist,
    /// Services that may be called (default: none; the others are advertised, and a call gets the reason).
    pub allow_services: Allowlist,
    /// Parameters that may be set (default: none). Reading parameters is not limited.
    pub allow_parameters: Allowlist,
    /// A token every client must present in its upgrade request (none: anyone who reaches the port).
    pub token: Option<Token>,
    /// Serve `wss://` with this certificate.
    pub tls: Option<Tls>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            name: "lockstep view".into(),
            data_queue_len: 1024,
            control_queue_len: 4096,
            time: false,
            parameters: false,
            services: false,
            allow_topics: Allowlist::everything(Kind::Topics),
            allow_services: Allowlist::nothing(Kind::Services),
            allow_parameters: Allowlist::nothing(Kind::Parameters),
            token: None,
            tls: None,
        }
    }
}

/// A change in who looks at a channel, or a client's request for the node to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The first client subscribed to the channel.
    Subscribed { channel_id: u32, topic: String },
    /// The last client subscribed to the channel left it.
    Unsubscribed { channel_id: u32, topic: String },
    /// Client `client` asks for parameters (none named: all).
    GetParameters {
        client: u64,
        names: Vec<String>,
        id: Option<String>,
    },
    /// Client `client` sets parameters.
    SetParameters {
        client: u64,
        parameters: Vec<Parameter>,
        id: Option<String>,
    },
    /// Client `client` calls a service (answer with [`Server::send_service_response`] or
    /// [`Server::send_service_failure`]).
    ServiceCall {
        client: u64,
        service: String,
        type_name: String,
        call: ServiceCall,
    },
}

pub(crate) struct Shared {
    pub(crate) options: ServerOptions,
    session_id: String,
    state: Mutex<State>,
    pub(crate) events: mpsc::UnboundedSender<Event>,
}

impl Shared {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A running server (cheap to clone).
#[derive(Clone)]
pub struct Server {
    pub(crate) shared: Arc<Shared>,
    address: SocketAddr,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("address", &self.address).finish()
    }
}

impl Server {
    /// Listens on `address` (port 0 = any free port) and serves clients on the current tokio runtime.
    /// Returns the server and the stream of [`Event`]s.
    pub async fn bind(
        address: SocketAddr,
        options: ServerOptions,
    ) -> std::io::Result<(Server, mpsc::UnboundedReceiver<Event>)> {
        let listener = TcpListener::bind(address).await?;
        let address = listener.local_addr()?;
        let (events, receiver) = mpsc::unbounded_channel();
        let session_id = format!(
            "{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        let shared = Arc::new(Shared {
            options,
            session_id,
            state: Mutex::new(State::default()),
            events,
        });
        let server = Server { shared, address };
        let accepting = server.clone();
        tokio::spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((stream, peer)) => {
                        let s = accepting.clone();
                        tokio::spawn(async move { s.serve(stream, peer).await });
                    }
                    Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
                }
            }
        });
        Ok((server, receiver))
    }

    /// The address the server listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Whether `topic` may be advertised ([`ServerOptions::allow_topics`]).
    pub fn topic_allowed(&self, topic: &str) -> bool {
        self.shared.options.allow_topics.allows(topic)
    }

    /// Advertises a channel to every client; returns its id, or `None` for a topic the topic allowlist
    /// refuses. A channel that was removed and comes back with the same topic, type and schema gets its old
    /// id (the protocol allows clients to cache by id).
    pub fn add_channel(&self, topic: &str, schema_name: &str, schema: &str) -> Option<u32> {
        if !self.topic_allowed(topic) {
            return None;
        }
        let mut st = self.shared.state();
        if let Some(c) = st
            .channels
            .values()
            .find(|c| c.topic == topic && c.schema_name == schema_name)
        {
            return Some(c.id);
        }
        let same = |c: &Channel| c.topic == topic && c.schema_name == schema_name && c.schema == schema;
        let channel = match st.retired.iter().position(same) {
            Some(i) => st.retired.swap_remove(i),
            None => {
                st.next_channel += 1;
                Channel {
                    id: st.next_channel,
                    topic: topic.to_owned(),
                    encoding: "cdr".into(),
                    schema_name: schema_name.to_owned(),
                    schema: schema.to_owned(),
                    schema_encoding: "ros2msg".into(),
                }
            }
        };
        let id = channel.id;
        let text = ServerMessage::Advertise {
            channels: vec![&channel],
        }
        .to_json();
        st.broadcast(&text);
        st.channels.insert(id, channel);
        Some(id)
    }

    /// Unadvertises a channel (its topic is gone); the clients' subscriptions to it end.
    pub fn remove_channel(&self, channel_id: u32) {
        let mut st = self.shared.state();
        let Some(channel) = st.channels.remove(&channel_id) else {
            return;
        };
        let text = ServerMessage::Unadvertise {
            channel_ids: vec![channel_id],
        }
        .to_json();
        st.latched.remove(&channel_id);
        for client in st.clients.values_mut() {
            if let Some(sub) = client.by_channel.remove(&channel_id) {
                client.subscriptions.remove(&sub);
            }
            client.io.control(text.clone());
        }
        st.retired.push(channel);
    }

    /// The channels advertised now, by id.
    pub fn channels(&self) -> Vec<Channel> {
        self.shared.state().channels.values().cloned().collect()
    }

    /// Sends one message (raw CDR) of a channel to every client subscribed to it; returns to how many.
    pub fn publish(&self, channel_id: u32, timestamp_ns: u64, payload: &[u8]) -> usize {
        let mut st = self.shared.state();
        st.keep_latched(channel_id, timestamp_ns, payload);
        let mut sent = 0;
        for client in st.clients.values() {
            if let Some(&sub) = client.by_channel.get(&channel_id) {
                client.io.data(protocol::message_data(sub, timestamp_ns, payload));
                sent += 1;
            }
        }
        sent
    }

    /// Sends a time frame to every client (only with [`ServerOptions::time`]).
    pub fn broadcast_time(&self, timestamp_ns: u64) {
        if !self.shared.options.time {
            return;
        }
        let st = self.shared.state();
        for client in st.clients.values() {
            client.io.queue().push_data(protocol::time(timestamp_ns));
            client.io.wake.notify_one();
        }
    }

    /// Keep the last `depth` messages of the channel for clients that subscribe later (0: keep none).
    pub fn set_latched(&self, channel_id: u32, depth: usize) {
        self.shared.state().set_latched(channel_id, depth);
    }

    /// Per connected client, in connection order.
    pub fn client_stats(&self) -> Vec<ClientStats> {
        (self.shared.state().clients.values())
            .map(ClientStats::of)
            .collect()
    }

    /// Sends a status message to every client.
    pub fn broadcast_status(&self, level: Level, message: &str) {
        self.shared.state().broadcast(&protocol::status(level, message));
    }

    fn server_info(&self) -> String {
        let mut capabilities = Vec::new();
        if self.shared.options.time {
            capabilities.push("time");
        }
        if self.shared.options.parameters {
            capabilities.push("parameters");
        }
        let mut supported_encodings = Vec::new();
        if self.shared.options.services {
            capabilities.push("services");
            supported_encodings.push("json");
        }
        ServerMessage::ServerInfo {
            name: &self.shared.options.name,
            capabilities,
            supported_encodings,
            metadata: BTreeMap::new(),
            session_id: self.shared.session_id.clone(),
        }
        .to_json()
    }

    /// One connection: TLS if configured, then the WebSocket handshake (token and subprotocol checked).
    async fn serve(self, stream: TcpStream, address: SocketAddr) {
        let _ = stream.set_nodelay(true);
        match self.shared.options.tls.clone() {
            Some(tls) => {
                let Ok(Ok(stream)) =
                    tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.acceptor.accept(stream)).await
                else {
                    return;
                };
                self.serve_websocket(stream, address).await
            }
            None => self.serve_websocket(stream, address).await,
        }
    }

    async fn serve_websocket<S>(self, stream: S, address: SocketAddr)
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let token = self.shared.options.token.clone();
        // The refusal is tungstenite's own HTTP response type.
        #[allow(clippy::result_large_err)]
        let check = move |request: &Request, response: Response| handshake(token.as_ref(), request, response);
        // The version first: tungstenite would drop a request for another one without an answer.
        let accepting = async {
            let stream = crate::upgrade::check_version(stream).await?;
            tokio_tungstenite::accept_hdr_async(stream, check).await.ok()
        };
        let Ok(Some(ws)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, accepting).await else {
            return;
        };
        let io = Arc::new(ClientIo::new(
            self.shared.options.data_queue_len,
            self.shared.options.control_queue_len,
        ));
        let id = self.admit(address, &io);
        let (sink, mut source) = ws.split();
        let writer = write_queued(io.clone(), sink);
        let reader = async {
            while let Some(Ok(message)) = source.next().await {
                match message {
                    Message::Text(text) => self.handle(id, &io, text.as_str()),
                    Message::Binary(bytes) => self.binary(id, &io, &bytes),
                    Message::Close(_) => break,
                    _ => {}
                }
            }
        };
        tokio::select! {
            _ = writer => {}
            _ = reader => {}
        }
        self.disconnect(id);
    }

    /// Registers a new client at `address`: it is sent the server's info, the channels and the services;
    /// returns its id.
    fn admit(&self, address: SocketAddr, io: &Arc<ClientIo>) -> u64 {
        let mut st = self.shared.state();
        io.control(self.server_info());
        let channels: Vec<&Channel> = st.channels.values().collect();
        io.control(ServerMessage::Advertise { channels }.to_json());
        if !st.services.is_empty() {
            let services: Vec<&Service> = st.services.values().collect();
            io.control(ServerMessage::AdvertiseServices { services }.to_json());
        }
        st.next_client += 1;
        let id = st.next_client;
        st.clients.insert(
            id,
            Client {
                address,
                io: io.clone(),
                subscriptions: HashMap::new(),
                by_channel: HashMap::new(),
            },
        );
        id
    }

    /// Acts on one text message of client `id_of_client`; problems go back as status messages.
    fn handle(&self, id_of_client: u64, io: &ClientIo, text: &str) {
        let message = match parse_client(text) {
            Ok(m) => m,
            Err(e) => return io.control(protocol::status(Level::Error, e.to_string())),
        };
        let request = match message {
            ClientMessage::GetParameters { names, id } => Some(Event::GetParameters {
                client: id_of_client,
                names,
                id,
            }),
            ClientMessage::SetParameters { parameters, id } if self.shared.options.parameters => {
                let (allowed, refused) = split_parameters(&self.shared.options.allow_parameters, parameters);
                if let Some(why) = refused {
                    io.control(protocol::status(Level::Error, why));
                }
                if allowed.is_empty() {
                    // Nothing to set: a client waiting for the answer gets an empty one.
                    if let Some(id) = id.as_deref() {
                        let none = ServerMessage::ParameterValues {
                            parameters: &[],
                            id: Some(id),
                        };
                        io.control(none.to_json());
                    }
                    None
                } else {
                    Some(Event::SetParameters {
                        client: id_of_client,
                        parameters: allowed,
                        id,
                    })
                }
            }
            ClientMessage::SetParameters { parameters, id } => Some(Event::SetParameters {
                client: id_of_client,
                parameters,
                id,
            }),
            other => {
                self.subscriptions(id_of_client, io, other);
                None
            }
        };
        if let Some(request) = request {
            if self.shared.options.parameters {
                let _ = self.shared.events.send(request);
            } else {
                io.control(protocol::status(
                    Level::Error,
                    "parameters are not offered by this server",
                ));
            }
        }
    }

    fn disconnect(&self, id: u64) {
        let mut events = Vec::new();
        {
            let mut st = self.shared.state();
            let Some(client) = st.clients.remove(&id) else {
                return;
            };
            for channel_id in client.by_channel.keys() {
                if st.subscribers(*channel_id) == 0 {
                    if let Some(c) = st.channels.get(channel_id) {
                        events.push(Event::Unsubscribed {
                            channel_id: *channel_id,
                            topic: c.topic.clone(),
                        });
                    }
                }
            }
        }
        events.sort_by_key(|e| match e {
            Event::Subscribed { channel_id, .. } | Event::Unsubscribed { channel_id, .. } => *channel_id,
            _ => 0,
        });
        for e in events {
            let _ = self.shared.events.send(e);
        }
    }
}

/// Writes what the client's queue holds to its socket, in batches, until the client is closed or the socket
/// fails; closes the socket when the client is closed.
async fn write_queued<W>(io: Arc<ClientIo>, mut sink: W)
where
    W: futures::Sink<Message> + Unpin,
{
    loop {
        if io.closed.load(Ordering::Relaxed) {
            let _ = sink.close().await;
            return;
        }
        let batch: Vec<Outgoing> = {
            let mut q = io.queue();
            std::iter::from_fn(|| q.pop()).take(256).collect()
        };
        if batch.is_empty() {
            io.wake.notified().await;
            continue;
        }
        for m in batch {
            let message = match m {
                Outgoing::Text(t) => Message::text(t),
                Outgoing::Binary(b) => Message::binary(b),
            };
            if sink.feed(message).await.is_err() {
                return;
            }
        }
        if sink.flush().await.is_err() {
            return;
        }
    }
}
