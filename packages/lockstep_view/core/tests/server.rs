//! The server over real sockets, driven by a tokio-tungstenite client (the npm `@foxglove/ws-protocol`
//! client drives the node in test/view).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use lockstep_view::{Allowlist, Event, Kind, Server, ServerOptions};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

async fn start(options: ServerOptions) -> (Server, tokio::sync::mpsc::UnboundedReceiver<Event>) {
    Server::bind("127.0.0.1:0".parse().unwrap(), options)
        .await
        .unwrap()
}

async fn connect(server: &Server) -> Ws {
    let mut request = format!("ws://{}", server.address())
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("Sec-WebSocket-Protocol", "foxglove.websocket.v1".parse().unwrap());
    tokio_tungstenite::connect_async(request).await.unwrap().0
}

async fn next(ws: &mut Ws) -> Message {
    tokio::time::timeout(Duration::from_secs(10), ws.next())
        .await
        .expect("a message within 10 s")
        .unwrap()
        .unwrap()
}

async fn next_json(ws: &mut Ws) -> Value {
    match next(ws).await {
        Message::Text(t) => serde_json::from_str(t.as_str()).unwrap(),
        other => panic!("expected JSON, got {other:?}"),
    }
}

async fn next_event(events: &mut tokio::sync::mpsc::UnboundedReceiver<Event>) -> Event {
    tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .expect("an event within 10 s")
        .unwrap()
}

async fn send(ws: &mut Ws, text: &str) {
    ws.send(Message::text(text.to_owned())).await.unwrap();
}

async fn subscribe(ws: &mut Ws, sub: u32, channel: u32) {
    send(
        ws,
        &format!(r#"{{"op":"subscribe","subscriptions":[{{"id":{sub},"channelId":{channel}}}]}}"#),
    )
    .await;
}

#[tokio::test]
async fn a_client_sees_channels_subscribes_and_gets_the_data() {
    let (server, mut events) = start(ServerOptions::default()).await;
    let odom = server
        .add_channel("/odom", "nav_msgs/msg/Odometry", "MSG: ...")
        .unwrap();
    let mut ws = connect(&server).await;
    let info = next_json(&mut ws).await;
    assert_eq!(info["op"], "serverInfo");
    let adv = next_json(&mut ws).await;
    assert_eq!(adv["op"], "advertise");
    assert_eq!(adv["channels"][0]["topic"], "/odom");
    assert_eq!(adv["channels"][0]["encoding"], "cdr");
    assert_eq!(adv["channels"][0]["schemaEncoding"], "ros2msg");

    subscribe(&mut ws, 7, odom).await;
    let e = next_event(&mut events).await;
    assert_eq!(
        e,
        Event::Subscribed {
            channel_id: odom,
            topic: "/odom".into()
        }
    );
    assert_eq!(server.publish(odom, 42, b"cdr bytes"), 1);
    match next(&mut ws).await {
        Message::Binary(b) => {
            assert_eq!(b[0], 1);
            assert_eq!(u32::from_le_bytes(b[1..5].try_into().unwrap()), 7);
            assert_eq!(u64::from_le_bytes(b[5..13].try_into().unwrap()), 42);
            assert_eq!(&b[13..], b"cdr bytes");
        }
        other => panic!("{other:?}"),
    }

    // A topic that appears later is advertised; one that goes away is unadvertised.
    let late = server
        .add_channel("/late", "std_msgs/msg/String", "string data")
        .unwrap();
    assert_eq!(next_json(&mut ws).await["channels"][0]["topic"], "/late");
    server.remove_channel(odom);
    let un = next_json(&mut ws).await;
    assert_eq!(un["op"], "unadvertise");
    assert_eq!(un["channelIds"][0], odom);
    assert_eq!(server.publish(odom, 0, b"x"), 0);
    // Coming back unchanged, it keeps its id.
    assert_eq!(
        server
            .add_channel("/odom", "nav_msgs/msg/Odometry", "MSG: ...")
            .unwrap(),
        odom
    );
    assert_ne!(late, odom);

    // (A removed channel's subscriptions end with it: the node that removed it knows.)
    next_json(&mut ws).await; // the advertisement of /odom again
    subscribe(&mut ws, 8, late).await;
    let e = next_event(&mut events).await;
    assert_eq!(
        e,
        Event::Subscribed {
            channel_id: late,
            topic: "/late".into()
        }
    );
    // Leaving: the last subscriber gone is an event.
    drop(ws);
    let e = next_event(&mut events).await;
    assert_eq!(
        e,
        Event::Unsubscribed {
            channel_id: late,
            topic: "/late".into()
        }
    );
}

#[tokio::test]
async fn bad_input_gets_a_status_and_the_connection_goes_on() {
    let (server, _events) = start(ServerOptions::default()).await;
    let chan = server
        .add_channel("/a", "std_msgs/msg/String", "string data")
        .unwrap();
    let mut ws = connect(&server).await;
    next_json(&mut ws).await;
    next_json(&mut ws).await;
    let huge: Vec<String> = (0..20_000)
        .map(|i| format!(r#"{{"id":{i},"channelId":{i}}}"#))
        .collect();
    let cases = [
        ("{not json".to_owned(), "malformed"),
        (
            r#"{"op":"subscribe","subscriptions":[{"id":1,"channelId":999}]}"#.to_owned(),
            "unknown channel id 999",
        ),
        (
            r#"{"op":"unsubscribe","subscriptionIds":[5]}"#.to_owned(),
            "unknown subscription id 5",
        ),
        (r#"{"op":"callService"}"#.to_owned(), "not supported"),
        (
            format!(r#"{{"op":"subscribe","subscriptions":[{}]}}"#, huge.join(",")),
            "at most 10000",
        ),
    ];
    for (text, expected) in cases {
        send(&mut ws, &text).await;
        let status = next_json(&mut ws).await;
        assert_eq!(status["op"], "status");
        assert_eq!(status["level"], 2);
        assert!(status["message"].as_str().unwrap().contains(expected), "{status}");
    }
    ws.send(Message::binary(vec![5u8, 0, 0])).await.unwrap();
    assert!(next_json(&mut ws).await["message"]
        .as_str()
        .unwrap()
        .contains("opcode 0x05"));
    ws.send(Message::binary(vec![2u8, 0, 0])).await.unwrap();
    assert_eq!(
        next_json(&mut ws).await["message"],
        "service calls are not offered by this server"
    );
    // Still serving.
    subscribe(&mut ws, 1, chan).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(server.publish(chan, 1, b"ok"), 1);
    assert!(matches!(next(&mut ws).await, Message::Binary(_)));
}

#[tokio::test]
async fn a_client_without_the_subprotocol_is_refused() {
    let (server, _events) = start(ServerOptions::default()).await;
    let e = tokio_tungstenite::connect_async(format!("ws://{}", server.address()))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("400"), "{e}");
}

#[tokio::test]
async fn a_client_that_stops_reading_loses_its_oldest_messages_not_the_others_theirs() {
    let options = ServerOptions {
        data_queue_len: 64,
        ..ServerOptions::default()
    };
    let (server, _events) = start(options).await;
    let chan = server
        .add_channel("/big", "std_msgs/msg/String", "string data")
        .unwrap();
    let mut fast = connect(&server).await;
    let mut slow = connect(&server).await;
    for ws in [&mut fast, &mut slow] {
        next_json(ws).await;
        next_json(ws).await;
        subscribe(ws, 1, chan).await;
    }
    while server.client_stats().iter().any(|c| c.subscriptions == 0) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // 2,000 messages of 64 KiB (125 MiB): far more than the socket buffers hold for a client that never reads.
    let payload = vec![7u8; 64 * 1024];
    let total = 2_000u64;
    let reader = tokio::spawn(async move {
        let mut got = 0u64;
        let mut last = 0u64;
        while got < total {
            if let Message::Binary(b) = next(&mut fast).await {
                let stamp = u64::from_le_bytes(b[5..13].try_into().unwrap());
                assert!(stamp > last || got == 0, "in order");
                last = stamp;
                got += 1;
            }
        }
        got
    });
    for i in 1..=total {
        server.publish(chan, i, &payload);
        if i % 32 == 0 {
            tokio::task::yield_now().await;
            // Give the fast reader time to keep up (it is not the one under test).
            while server.client_stats()[0].queued > 32 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    }
    assert_eq!(
        reader.await.unwrap(),
        total,
        "the reading client got every message"
    );
    let stats = server.client_stats();
    assert_eq!(stats[0].dropped, 0);
    assert!(stats[1].dropped > 1_000, "{stats:?}");
    assert!(stats[1].queued <= 64 + 2, "{stats:?}");
    drop(slow);
}

#[tokio::test]
async fn parameter_requests_reach_the_node_and_its_answer_reaches_only_that_client() {
    let options = ServerOptions {
        parameters: true,
        allow_parameters: Allowlist::new(Kind::Parameters, &["/sim\\..*".into()]).unwrap(),
        ..ServerOptions::default()
    };
    let (server, mut events) = start(options).await;
    let mut asking = connect(&server).await;
    let info = next_json(&mut asking).await;
    assert_eq!(info["capabilities"], serde_json::json!(["parameters"]));
    next_json(&mut asking).await; // advertise
    let mut other = connect(&server).await;
    next_json(&mut other).await;
    next_json(&mut other).await;
    send(
        &mut asking,
        r#"{"op":"getParameters","parameterNames":["/sim.time_scale"],"id":"q1"}"#,
    )
    .await;
    let Event::GetParameters { client, names, id } = next_event(&mut events).await else {
        panic!("expected GetParameters");
    };
    assert_eq!(
        (names, id.as_deref()),
        (vec!["/sim.time_scale".to_owned()], Some("q1"))
    );
    let values = [lockstep_view::Parameter {
        name: "/sim.time_scale".into(),
        value: serde_json::json!(2.0),
        type_name: None,
    }];
    server.send_parameters(client, &values, id.as_deref());
    let answer = next_json(&mut asking).await;
    assert_eq!(answer["op"], "parameterValues");
    assert_eq!(answer["id"], "q1");
    assert_eq!(answer["parameters"][0]["value"], 2.0);
    send(
        &mut asking,
        r#"{"op":"setParameters","parameters":[{"name":"/sim.x","value":true}]}"#,
    )
    .await;
    assert!(matches!(next_event(&mut events).await, Event::SetParameters { client: c, .. } if c == client));
    // The other client got neither answer: the next thing it sees is a status sent to it alone.
    server.send_status(client + 1, lockstep_view::Level::Warning, "for you");
    assert_eq!(next_json(&mut other).await["message"], "for you");
}

#[tokio::test]
async fn without_the_capability_a_parameter_request_gets_a_status() {
    let (_server, _events) = start(ServerOptions::default()).await;
    let mut ws = connect(&_server).await;
    assert_eq!(next_json(&mut ws).await["capabilities"], serde_json::json!([]));
    next_json(&mut ws).await;
    send(&mut ws, r#"{"op":"getParameters","parameterNames":[]}"#).await;
    let status = next_json(&mut ws).await;
    assert_eq!(status["op"], "status");
    assert_eq!(status["message"], "parameters are not offered by this server");
}

fn call_frame(service: u32, call: u32, encoding: &str, payload: &[u8]) -> Message {
    let mut frame = vec![2u8];
    for n in [service, call, encoding.len() as u32] {
        frame.extend_from_slice(&n.to_le_bytes());
    }
    frame.extend_from_slice(encoding.as_bytes());
    frame.extend_from_slice(payload);
    Message::binary(frame)
}

#[tokio::test]
async fn a_service_call_reaches_the_node_and_its_response_the_caller() {
    let options = ServerOptions {
        services: true,
        allow_services: Allowlist::new(Kind::Services, &["/sim/.*".into()]).unwrap(),
        ..ServerOptions::default()
    };
    let (server, mut events) = start(options).await;
    let id = server.add_service(
        "/sim/reload",
        "std_srvs/srv/Trigger",
        "",
        "bool success\nstring message\n",
    );
    let mut ws = connect(&server).await;
    let info = next_json(&mut ws).await;
    assert_eq!(info["capabilities"], serde_json::json!(["services"]));
    assert_eq!(info["supportedEncodings"], serde_json::json!(["json"]));
    next_json(&mut ws).await; // advertise (channels)
    let adv = next_json(&mut ws).await;
    assert_eq!(adv["op"], "advertiseServices");
    assert_eq!(adv["services"][0]["name"], "/sim/reload");
    assert_eq!(adv["services"][0]["type"], "std_srvs/srv/Trigger");
    assert_eq!(
        adv["services"][0]["response"]["schemaName"],
        "std_srvs/srv/Trigger_Response"
    );
    assert_eq!(adv["services"][0]["request"]["encoding"], "json");

    ws.send(call_frame(id, 41, "json", b"{}")).await.unwrap();
    let Event::ServiceCall {
        client,
        service,
        type_name,
        call,
    } = next_event(&mut events).await
    else {
        panic!("expected a service call");
    };
    assert_eq!(
        (service.as_str(), type_name.as_str()),
        ("/sim/reload", "std_srvs/srv/Trigger")
    );
    assert_eq!((call.call_id, call.payload.as_slice()), (41, b"{}".as_slice()));
    server.send_service_response(client, id, 41, br#"{"success":true,"message":"ok"}"#);
    let Message::Binary(frame) = next(&mut ws).await else {
        panic!("expected a binary response");
    };
    assert_eq!(frame[0], 3);
    assert_eq!(u32::from_le_bytes([frame[5], frame[6], frame[7], frame[8]]), 41);
    assert_eq!(&frame[13..17], b"json");
    assert_eq!(&frame[17..], br#"{"success":true,"message":"ok"}"#);

    // An unknown service and an encoding other than JSON fail with the reason; the connection goes on.
    ws.send(call_frame(99, 1, "json", b"{}")).await.unwrap();
    let failure = next_json(&mut ws).await;
    assert_eq!(
        (failure["op"].as_str(), failure["callId"].as_u64()),
        (Some("serviceCallFailure"), Some(1))
    );
    assert_eq!(failure["message"], "unknown service id 99");
    ws.send(call_frame(id, 2, "cdr", b"\0")).await.unwrap();
    let failure = next_json(&mut ws).await;
    assert!(
        failure["message"].as_str().unwrap().contains("encoding `cdr`"),
        "{failure}"
    );
    server.remove_service(id);
    assert_eq!(next_json(&mut ws).await["op"], "unadvertiseServices");
    assert!(server.services().is_empty());
}

#[tokio::test]
async fn a_client_that_subscribes_later_to_a_latched_channel_gets_its_last_messages() {
    let (server, _events) = start(ServerOptions::default()).await;
    let map = server
        .add_channel("/map", "nav_msgs/msg/OccupancyGrid", "MSG: ...")
        .unwrap();
    server.set_latched(map, 2);
    let mut first = connect(&server).await;
    next_json(&mut first).await;
    next_json(&mut first).await;
    subscribe(&mut first, 1, map).await;
    subscriptions_reach(&server, 1).await;
    for (stamp, payload) in [(1u64, b"a"), (2, b"b"), (3, b"c")] {
        assert_eq!(server.publish(map, stamp, payload), 1);
    }
    let mut late = connect(&server).await;
    next_json(&mut late).await;
    next_json(&mut late).await;
    subscribe(&mut late, 9, map).await;
    // The last two, with the late client's subscription id, in order.
    for (stamp, payload) in [(2u64, b'b'), (3, b'c')] {
        let Message::Binary(frame) = next(&mut late).await else {
            panic!("expected data");
        };
        assert_eq!(frame[1], 9);
        assert_eq!(u64::from_le_bytes(frame[5..13].try_into().unwrap()), stamp);
        assert_eq!(frame[13], payload);
    }
    // Not latched: nothing kept.
    server.set_latched(map, 0);
    let mut third = connect(&server).await;
    next_json(&mut third).await;
    next_json(&mut third).await;
    subscribe(&mut third, 4, map).await;
    subscriptions_reach(&server, 3).await;
    assert_eq!(server.publish(map, 4, b"d"), 3);
    let Message::Binary(frame) = next(&mut third).await else {
        panic!("expected data");
    };
    assert_eq!((frame[1], frame[13]), (4, b'd'));
}

/// Waits until the server holds `n` subscriptions over all clients.
async fn subscriptions_reach(server: &Server, n: usize) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while server
            .client_stats()
            .iter()
            .map(|c| c.subscriptions)
            .sum::<usize>()
            < n
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the subscriptions within 10 s");
}
