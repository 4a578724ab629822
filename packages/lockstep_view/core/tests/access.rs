//! Closed by default, over real sockets: allowlists of topics, services and parameters (refusals answered
//! with a status that names what was refused and why, the connection going on), the token in the upgrade
//! request, and TLS. `tests/data/cert.pem` and `key.pem` are a self-signed pair for `localhost` made for
//! these tests only (openssl, EC P-256, valid 100 years).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use lockstep_view::{Allowlist, Event, Kind, Server, ServerOptions, Tls, Token};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::rustls::crypto::ring::default_provider;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::client::Request;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

const WAIT: Duration = Duration::from_secs(10);

async fn start(options: ServerOptions) -> (Server, tokio::sync::mpsc::UnboundedReceiver<Event>) {
    Server::bind("127.0.0.1:0".parse().unwrap(), options)
        .await
        .unwrap()
}

fn request(url: &str, authorization: Option<&str>) -> Request {
    let mut request = url.into_client_request().unwrap();
    let headers = request.headers_mut();
    headers.insert("Sec-WebSocket-Protocol", "foxglove.websocket.v1".parse().unwrap());
    if let Some(a) = authorization {
        headers.insert("Authorization", a.parse().unwrap());
    }
    request
}

async fn next_json<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut WebSocketStream<S>) -> Value {
    let message = tokio::time::timeout(WAIT, ws.next())
        .await
        .expect("a message within 10 s")
        .unwrap()
        .unwrap();
    match message {
        Message::Text(t) => serde_json::from_str(t.as_str()).unwrap(),
        other => panic!("expected JSON, got {other:?}"),
    }
}

/// The next message with this op (others, such as advertisements, skipped).
async fn next_op<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut WebSocketStream<S>, op: &str) -> Value {
    loop {
        let m = next_json(ws).await;
        if m["op"] == op {
            return m;
        }
    }
}

fn allow(kind: Kind, patterns: &[&str]) -> Allowlist {
    let patterns: Vec<String> = patterns.iter().map(|p| (*p).to_owned()).collect();
    Allowlist::new(kind, &patterns).unwrap()
}

fn call_frame(service: u32, call: u32, payload: &[u8]) -> Message {
    let mut frame = vec![2u8];
    for n in [service, call, 4] {
        frame.extend_from_slice(&n.to_le_bytes());
    }
    frame.extend_from_slice(b"json");
    frame.extend_from_slice(payload);
    Message::binary(frame)
}

#[tokio::test]
async fn by_default_no_service_may_be_called_and_no_parameter_set() {
    let options = ServerOptions {
        services: true,
        parameters: true,
        ..ServerOptions::default()
    };
    let (server, mut events) = start(options).await;
    let reload = server.add_service("/sim/reload", "std_srvs/srv/Trigger", "", "bool success\n");
    let url = format!("ws://{}", server.address());
    let (mut ws, _) = tokio_tungstenite::connect_async(request(&url, None))
        .await
        .unwrap();
    next_op(&mut ws, "advertiseServices").await;

    ws.send(call_frame(reload, 7, b"{}")).await.unwrap();
    let status = next_op(&mut ws, "status").await;
    assert_eq!(status["level"], 2);
    let text = status["message"].as_str().unwrap();
    assert!(
        text.contains("`/sim/reload` refused") && text.contains("--allow-services"),
        "{text}"
    );
    let failure = next_op(&mut ws, "serviceCallFailure").await;
    assert_eq!(
        (failure["callId"].as_u64(), failure["message"].as_str()),
        (Some(7), Some(text))
    );

    let set = r#"{"op":"setParameters","parameters":[{"name":"/sim.time_scale","value":3}],"id":"s"}"#;
    ws.send(Message::text(set)).await.unwrap();
    let status = next_op(&mut ws, "status").await;
    let text = status["message"].as_str().unwrap();
    assert!(
        text.starts_with("setParameters refused for `/sim.time_scale`"),
        "{text}"
    );
    assert!(text.contains("--allow-parameters"), "{text}");
    // The client waiting for the answer gets an empty one.
    let answer = next_op(&mut ws, "parameterValues").await;
    assert_eq!(
        (
            answer["id"].as_str(),
            answer["parameters"].as_array().map(Vec::len)
        ),
        (Some("s"), Some(0))
    );

    // Reading is not limited, and the connection went on: this request is the first event the node sees.
    let get = r#"{"op":"getParameters","parameterNames":["/sim.time_scale"],"id":"g"}"#;
    ws.send(Message::text(get)).await.unwrap();
    let event = tokio::time::timeout(WAIT, events.recv()).await.unwrap().unwrap();
    assert!(
        matches!(event, Event::GetParameters { ref names, .. } if names == &["/sim.time_scale"]),
        "{event:?}"
    );
}

#[tokio::test]
async fn allowed_services_and_parameters_reach_the_node_the_others_are_refused() {
    let options = ServerOptions {
        services: true,
        parameters: true,
        allow_services: allow(Kind::Services, &["/sim/set_.*"]),
        allow_parameters: allow(Kind::Parameters, &["/sim\\.time_scale"]),
        allow_topics: allow(Kind::Topics, &["/odom", "/markers/.*"]),
        ..ServerOptions::default()
    };
    let (server, mut events) = start(options).await;
    assert_eq!(
        server.add_channel("/secret", "std_msgs/msg/String", "string data"),
        None
    );
    let odom = server
        .add_channel("/odom", "nav_msgs/msg/Odometry", "...")
        .unwrap();
    assert!(server
        .add_channel("/markers/grid", "visualization_msgs/msg/MarkerArray", "...")
        .is_some());
    assert!(!server.topic_allowed("/odom/extra"));
    let set_dest = server.add_service("/sim/set_destination", "x/srv/SetDestination", "", "");
    let reload = server.add_service("/sim/reload", "std_srvs/srv/Trigger", "", "");
    let url = format!("ws://{}", server.address());
    let (mut ws, _) = tokio_tungstenite::connect_async(request(&url, None))
        .await
        .unwrap();
    let advertised = next_op(&mut ws, "advertise").await;
    let topics: Vec<&str> = (advertised["channels"].as_array().unwrap().iter())
        .map(|c| c["topic"].as_str().unwrap())
        .collect();
    assert_eq!(topics, ["/odom", "/markers/grid"]);
    assert_eq!(advertised["channels"][0]["id"], odom);

    ws.send(call_frame(reload, 1, b"{}")).await.unwrap();
    let text = next_op(&mut ws, "status").await["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.contains("`/sim/reload`") && text.contains("`/sim/set_.*`"),
        "{text}"
    );
    ws.send(call_frame(set_dest, 2, b"{}")).await.unwrap();
    let set = r#"{"op":"setParameters","parameters":[{"name":"/sim.mode","value":"x"},
                 {"name":"/sim.time_scale","value":3}],"id":"s"}"#;
    ws.send(Message::text(set)).await.unwrap();
    let text = next_op(&mut ws, "status").await["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.starts_with("setParameters refused for `/sim.mode`:"),
        "{text}"
    );
    // The node sees only what is allowed: the allowed call, then the allowed parameter alone.
    let first = tokio::time::timeout(WAIT, events.recv()).await.unwrap().unwrap();
    assert!(matches!(first, Event::ServiceCall { ref service, .. } if service == "/sim/set_destination"));
    let second = tokio::time::timeout(WAIT, events.recv()).await.unwrap().unwrap();
    let Event::SetParameters { parameters, .. } = second else {
        panic!("expected SetParameters, got {second:?}");
    };
    assert_eq!(parameters.len(), 1);
    assert_eq!(parameters[0].name, "/sim.time_scale");
}

#[tokio::test]
async fn with_a_token_only_clients_that_present_it_connect() {
    let options = ServerOptions {
        token: Some(Token::new("let-me-in").unwrap()),
        ..ServerOptions::default()
    };
    let (server, _events) = start(options).await;
    let url = format!("ws://{}", server.address());
    let refused = |result: Result<_, WsError>| match result {
        Err(WsError::Http(response)) => {
            let body = String::from_utf8_lossy(response.body().as_deref().unwrap_or_default()).into_owned();
            (response.status().as_u16(), body)
        }
        Err(e) => panic!("expected an HTTP refusal, got {e}"),
        Ok(_) => panic!("expected a refusal, the client connected"),
    };
    let (status, body) = refused(tokio_tungstenite::connect_async(request(&url, None)).await);
    assert_eq!(status, 401);
    assert!(body.contains("Authorization: Bearer"), "{body}");
    let wrong = tokio_tungstenite::connect_async(request(&url, Some("Bearer let-me-out"))).await;
    assert_eq!(refused(wrong), (401, "wrong token".to_owned()));
    let wrong = tokio_tungstenite::connect_async(request(&format!("{url}/?token=nope"), None)).await;
    assert_eq!(refused(wrong).0, 401);

    let (mut ws, _) = tokio_tungstenite::connect_async(request(&url, Some("Bearer let-me-in")))
        .await
        .unwrap();
    assert_eq!(next_json(&mut ws).await["op"], "serverInfo");
    let (mut ws, _) = tokio_tungstenite::connect_async(request(&format!("{url}/?token=let-me-in"), None))
        .await
        .unwrap();
    assert_eq!(next_json(&mut ws).await["op"], "serverInfo");
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

#[tokio::test]
async fn with_tls_a_client_that_trusts_the_certificate_connects_and_plain_text_is_refused() {
    let tls = Tls::from_pem_files(&data("cert.pem"), &data("key.pem")).unwrap();
    let options = ServerOptions {
        tls: Some(tls),
        token: Some(Token::new("t0ken").unwrap()),
        ..ServerOptions::default()
    };
    let (server, _events) = start(options).await;
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(data("cert.pem")).unwrap())
        .unwrap();
    let config = ClientConfig::builder_with_provider(Arc::new(default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(server.address()).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let stream = connector.connect(name, tcp).await.unwrap();
    let url = format!("wss://localhost:{}", server.address().port());
    let (mut ws, _) = tokio_tungstenite::client_async(request(&url, Some("Bearer t0ken")), stream)
        .await
        .unwrap();
    assert_eq!(next_json(&mut ws).await["op"], "serverInfo");

    // Plain WebSocket to the TLS port: no handshake.
    let plain = format!("ws://{}", server.address());
    let result = tokio::time::timeout(
        WAIT,
        tokio_tungstenite::connect_async(request(&plain, Some("Bearer t0ken"))),
    )
    .await
    .expect("the server answers a plain client within 10 s");
    assert!(result.is_err(), "a plain client must not connect to a TLS server");
}

#[test]
fn a_certificate_or_key_that_cannot_be_used_is_named() {
    let missing = Tls::from_pem_files(&data("no_such.pem"), &data("key.pem")).unwrap_err();
    assert!(missing.to_string().starts_with("--tls-cert "), "{missing}");
    assert!(missing.to_string().contains("no_such.pem"), "{missing}");
    // A key where the certificate should be: no certificate in it.
    let swapped = Tls::from_pem_files(&data("key.pem"), &data("key.pem")).unwrap_err();
    assert!(
        swapped.to_string().contains("no certificate in the file"),
        "{swapped}"
    );
    let no_key = Tls::from_pem_files(&data("cert.pem"), &data("cert.pem")).unwrap_err();
    assert!(no_key.to_string().starts_with("--tls-key "), "{no_key}");
}

#[tokio::test]
async fn a_websocket_version_other_than_13_is_answered_426_with_the_version_spoken() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (server, _events) = start(ServerOptions::default()).await;
    let mut tcp = TcpStream::connect(server.address()).await.unwrap();
    let upgrade = format!(
        "GET / HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 99\r\n\
         Sec-WebSocket-Protocol: foxglove.websocket.v1\r\n\r\n",
        server.address()
    );
    tcp.write_all(upgrade.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(WAIT, tcp.read_to_end(&mut answer))
        .await
        .expect("an answer within 10 s")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer).to_lowercase();
    assert!(answer.starts_with("http/1.1 426"), "{answer}");
    assert!(answer.contains("sec-websocket-version: 13"), "{answer}");
    // A client speaking 13 still connects.
    let url = format!("ws://{}", server.address());
    let (mut ws, _) = tokio_tungstenite::connect_async(request(&url, None))
        .await
        .unwrap();
    assert_eq!(next_json(&mut ws).await["op"], "serverInfo");
}
