//! The Foxglove WebSocket protocol v1 (subprotocol `foxglove.websocket.v1`), the parts this server speaks:
//! JSON `serverInfo`, `status`, `advertise`, `unadvertise`, `parameterValues` out and `subscribe`,
//! `unsubscribe`, `getParameters`, `setParameters` in; binary message data (opcode 0x01) and time (opcode 0x02)
//! out. Every integer in a binary message is little-endian.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The WebSocket subprotocol a client must offer.
pub const SUBPROTOCOL: &str = "foxglove.websocket.v1";

/// Binary opcode of message data (server to client).
pub const OP_MESSAGE_DATA: u8 = 0x01;
/// Binary opcode of a time message (server to client).
pub const OP_TIME: u8 = 0x02;
/// Binary opcode of a service call response (server to client).
pub const OP_SERVICE_CALL_RESPONSE: u8 = 0x03;
/// Binary opcode of a service call request (client to server).
pub const OP_SERVICE_CALL_REQUEST: u8 = 0x02;

/// Largest number of entries one `subscribe` or `unsubscribe` may carry; a longer list is refused whole.
pub const MAX_LIST_LEN: usize = 10_000;

/// A channel as advertised: one ROS topic with its type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Channel {
    /// Server-chosen id; kept while the topic keeps its type.
    pub id: u32,
    /// The topic, e.g. `/odom`.
    pub topic: String,
    /// Message encoding: `cdr` for ROS 2.
    pub encoding: String,
    /// The type, e.g. `nav_msgs/msg/Odometry`.
    pub schema_name: String,
    /// The schema text (`ros2msg`: the type's definition followed by its dependencies').
    pub schema: String,
    /// `ros2msg`.
    pub schema_encoding: String,
}

/// Status levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// 0.
    Info = 0,
    /// 1.
    Warning = 1,
    /// 2.
    Error = 2,
}

/// A JSON message from the server.
#[derive(Debug, Serialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum ServerMessage<'a> {
    /// Sent first on every connection.
    #[serde(rename_all = "camelCase")]
    ServerInfo {
        name: &'a str,
        capabilities: Vec<&'a str>,
        supported_encodings: Vec<&'a str>,
        metadata: BTreeMap<String, String>,
        session_id: String,
    },
    /// A problem (or news) for the client to show.
    Status { level: u8, message: String },
    /// Channels that are available.
    Advertise { channels: Vec<&'a Channel> },
    /// Channels that are gone.
    #[serde(rename_all = "camelCase")]
    Unadvertise { channel_ids: Vec<u32> },
    /// Services that are available.
    AdvertiseServices { services: Vec<&'a Service> },
    /// Services that are gone.
    #[serde(rename_all = "camelCase")]
    UnadvertiseServices { service_ids: Vec<u32> },
    /// A service call that got no response, and why.
    #[serde(rename_all = "camelCase")]
    ServiceCallFailure {
        service_id: u32,
        call_id: u32,
        message: String,
    },
    /// The answer to `getParameters` or `setParameters` (with the request's id).
    ParameterValues {
        parameters: &'a [Parameter],
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
    },
}

/// One half (request or response) of a service's definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSchema {
    /// How calls are encoded: `json` here.
    pub encoding: String,
    /// e.g. `std_srvs/srv/Trigger_Request`.
    pub schema_name: String,
    /// `ros2msg`.
    pub schema_encoding: String,
    /// The half's definition followed by its dependencies'.
    pub schema: String,
}

/// A service as advertised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Service {
    /// Server-chosen id.
    pub id: u32,
    /// e.g. `/lockstep_sim_node/reload`.
    pub name: String,
    /// e.g. `std_srvs/srv/Trigger`.
    #[serde(rename = "type")]
    pub type_name: String,
    pub request: ServiceSchema,
    pub response: ServiceSchema,
}

/// A service call request (binary opcode 0x02 from a client).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceCall {
    pub service_id: u32,
    pub call_id: u32,
    pub encoding: String,
    pub payload: Vec<u8>,
}

/// Parses a binary client message that is a service call request: opcode, service id, call id, encoding
/// length, encoding, payload (integers little-endian).
pub fn parse_service_call(bytes: &[u8]) -> Result<ServiceCall, ProtocolError> {
    let op = bytes.first().copied().unwrap_or(0);
    if op != OP_SERVICE_CALL_REQUEST {
        return Err(ProtocolError::Binary(op));
    }
    let short = || ProtocolError::Malformed {
        op: "serviceCallRequest".into(),
        reason: format!("{} bytes are too few for its header", bytes.len()),
    };
    let u32_at = |i: usize| -> Result<u32, ProtocolError> {
        let b = bytes.get(i..i + 4).ok_or_else(short)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (service_id, call_id, len) = (u32_at(1)?, u32_at(5)?, u32_at(9)? as usize);
    let encoding = bytes.get(13..13 + len).ok_or_else(short)?;
    Ok(ServiceCall {
        service_id,
        call_id,
        encoding: String::from_utf8_lossy(encoding).into_owned(),
        payload: bytes[13 + len..].to_vec(),
    })
}

/// A service call response frame (binary opcode 0x03).
pub fn service_call_response(service_id: u32, call_id: u32, encoding: &str, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(13 + encoding.len() + payload.len());
    frame.push(OP_SERVICE_CALL_RESPONSE);
    frame.extend_from_slice(&service_id.to_le_bytes());
    frame.extend_from_slice(&call_id.to_le_bytes());
    frame.extend_from_slice(&(encoding.len() as u32).to_le_bytes());
    frame.extend_from_slice(encoding.as_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// A parameter as the protocol carries it: `name` is `<fully qualified node>.<parameter>` (as
/// foxglove_bridge names them, e.g. `/lockstep_sim_node.time_scale`); `value` a JSON number, bool, string
/// or array; `type` only for what JSON cannot tell (`byte_array` as base64, `float64`, `float64_array`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parameter {
    pub name: String,
    #[serde(default)]
    pub value: serde_json::Value,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_name: Option<String>,
}

impl ServerMessage<'_> {
    /// The message as JSON text.
    pub fn to_json(&self) -> String {
        // Serializing these plain structs cannot fail (string keys, no floats that are not finite).
        serde_json::to_string(self)
            .unwrap_or_else(|e| format!("{{\"op\":\"status\",\"level\":2,\"message\":\"{e}\"}}"))
    }
}

/// A status message as JSON text.
pub fn status(level: Level, message: impl Into<String>) -> String {
    ServerMessage::Status {
        level: level as u8,
        message: message.into(),
    }
    .to_json()
}

/// One entry of a `subscribe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subscription {
    /// Client-chosen subscription id.
    pub id: u32,
    /// The advertised channel.
    pub channel_id: u32,
}

/// A JSON message from a client that this server acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientMessage {
    /// Start streaming channels.
    Subscribe(Vec<Subscription>),
    /// Stop streaming subscriptions.
    Unsubscribe(Vec<u32>),
    /// Read parameters (none named: every parameter of every node).
    GetParameters { names: Vec<String>, id: Option<String> },
    /// Set parameters; the answer lists their values after the request.
    SetParameters {
        parameters: Vec<Parameter>,
        id: Option<String>,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GetParametersBody {
    #[allow(dead_code)]
    op: String,
    parameter_names: Vec<String>,
    #[serde(default)]
    id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SetParametersBody {
    #[allow(dead_code)]
    op: String,
    parameters: Vec<Parameter>,
    #[serde(default)]
    id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Op {
    op: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SubscribeBody {
    #[allow(dead_code)]
    op: String,
    subscriptions: Vec<Subscription>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct UnsubscribeBody {
    #[allow(dead_code)]
    op: String,
    subscription_ids: Vec<u32>,
}

/// Why a client's message was not taken; the text goes back in a status message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// Not JSON, or not the shape the op needs.
    #[error("malformed `{op}` message: {reason}")]
    Malformed { op: String, reason: String },
    /// An op this server does not offer.
    #[error(
        "op `{0}` is not supported by this server (it offers subscribe, unsubscribe, getParameters and \
         setParameters)"
    )]
    Unsupported(String),
    /// A list over [`MAX_LIST_LEN`].
    #[error("`{op}` lists {len} entries; at most {MAX_LIST_LEN} are taken per message")]
    TooLong { op: String, len: usize },
    /// A binary message from a client other than a service call (client publishing is not offered).
    #[error("binary client messages with opcode {0:#04x} are not supported by this server (only service calls, 0x02)")]
    Binary(u8),
}

/// Parses a client's text message. Errors name the op and what is wrong, for a status message.
pub fn parse_client(text: &str) -> Result<ClientMessage, ProtocolError> {
    let malformed = |op: &str, e: serde_json::Error| ProtocolError::Malformed {
        op: op.to_owned(),
        reason: e.to_string(),
    };
    let op = serde_json::from_str::<Op>(text)
        .map_err(|e| malformed("?", e))?
        .op;
    match op.as_str() {
        "subscribe" => {
            let body: SubscribeBody = serde_json::from_str(text).map_err(|e| malformed(&op, e))?;
            check_len(&op, body.subscriptions.len())?;
            Ok(ClientMessage::Subscribe(body.subscriptions))
        }
        "unsubscribe" => {
            let body: UnsubscribeBody = serde_json::from_str(text).map_err(|e| malformed(&op, e))?;
            check_len(&op, body.subscription_ids.len())?;
            Ok(ClientMessage::Unsubscribe(body.subscription_ids))
        }
        "getParameters" => {
            let body: GetParametersBody = serde_json::from_str(text).map_err(|e| malformed(&op, e))?;
            check_len(&op, body.parameter_names.len())?;
            Ok(ClientMessage::GetParameters {
                names: body.parameter_names,
                id: body.id,
            })
        }
        "setParameters" => {
            let body: SetParametersBody = serde_json::from_str(text).map_err(|e| malformed(&op, e))?;
            check_len(&op, body.parameters.len())?;
            Ok(ClientMessage::SetParameters {
                parameters: body.parameters,
                id: body.id,
            })
        }
        _ => Err(ProtocolError::Unsupported(op)),
    }
}

fn check_len(op: &str, len: usize) -> Result<(), ProtocolError> {
    if len > MAX_LIST_LEN {
        return Err(ProtocolError::TooLong {
            op: op.to_owned(),
            len,
        });
    }
    Ok(())
}

/// A message-data frame: opcode, subscription id, receive timestamp (ns), payload.
pub fn message_data(subscription_id: u32, timestamp_ns: u64, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(13 + payload.len());
    frame.push(OP_MESSAGE_DATA);
    frame.extend_from_slice(&subscription_id.to_le_bytes());
    frame.extend_from_slice(&timestamp_ns.to_le_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// A time frame: opcode and timestamp (ns).
pub fn time(timestamp_ns: u64) -> Vec<u8> {
    let mut frame = Vec::with_capacity(9);
    frame.push(OP_TIME);
    frame.extend_from_slice(&timestamp_ns.to_le_bytes());
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_messages_parse_and_bad_ones_say_why() {
        assert_eq!(
            parse_client(r#"{"op":"subscribe","subscriptions":[{"id":0,"channelId":3}]}"#),
            Ok(ClientMessage::Subscribe(vec![Subscription {
                id: 0,
                channel_id: 3
            }]))
        );
        assert_eq!(
            parse_client(r#"{"op":"unsubscribe","subscriptionIds":[0, 1]}"#),
            Ok(ClientMessage::Unsubscribe(vec![0, 1]))
        );
        let e = parse_client("{not json").unwrap_err().to_string();
        assert!(e.starts_with("malformed `?` message"), "{e}");
        let e = parse_client(r#"{"op":"subscribe","subscriptions":[{"id":-1,"channelId":3}]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("malformed `subscribe` message"), "{e}");
        let e = parse_client(r#"{"op":"subscribeParameterUpdates","parameterNames":[]}"#).unwrap_err();
        assert_eq!(e, ProtocolError::Unsupported("subscribeParameterUpdates".into()));
        assert_eq!(
            parse_client(r#"{"op":"getParameters","parameterNames":["/n.a"],"id":"q1"}"#),
            Ok(ClientMessage::GetParameters {
                names: vec!["/n.a".into()],
                id: Some("q1".into())
            })
        );
        let set = parse_client(
            r#"{"op":"setParameters","parameters":[{"name":"/n.b","value":1.5,"type":"float64"}]}"#,
        );
        assert_eq!(
            set,
            Ok(ClientMessage::SetParameters {
                parameters: vec![Parameter {
                    name: "/n.b".into(),
                    value: serde_json::json!(1.5),
                    type_name: Some("float64".into())
                }],
                id: None
            })
        );
        let e = parse_client(r#"{"op":"setParameters","parameters":[{"value":1}]}"#).unwrap_err();
        assert!(e.to_string().contains("missing field `name`"), "{e}");
        let ids: Vec<String> = (0..MAX_LIST_LEN + 1).map(|i| i.to_string()).collect();
        let long = format!(r#"{{"op":"unsubscribe","subscriptionIds":[{}]}}"#, ids.join(","));
        assert!(
            matches!(parse_client(&long), Err(ProtocolError::TooLong { len, .. }) if len == MAX_LIST_LEN + 1)
        );
    }

    #[test]
    fn service_calls_parse_and_responses_frame() {
        let mut call = vec![2, 7, 0, 0, 0, 9, 0, 0, 0, 4, 0, 0, 0];
        call.extend_from_slice(b"json{}");
        assert_eq!(
            parse_service_call(&call),
            Ok(ServiceCall {
                service_id: 7,
                call_id: 9,
                encoding: "json".into(),
                payload: b"{}".to_vec()
            })
        );
        let e = parse_service_call(&call[..15]).unwrap_err().to_string();
        assert!(e.contains("too few"), "{e}");
        assert_eq!(parse_service_call(&[1, 0]), Err(ProtocolError::Binary(1)));
        let mut expected = vec![3, 7, 0, 0, 0, 9, 0, 0, 0, 4, 0, 0, 0];
        expected.extend_from_slice(b"json{}");
        assert_eq!(service_call_response(7, 9, "json", b"{}"), expected);
    }

    #[test]
    fn frames_are_little_endian() {
        assert_eq!(
            message_data(7, 0x0102, b"ab"),
            [1, 7, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, b'a', b'b']
        );
        assert_eq!(time(1), [2, 1, 0, 0, 0, 0, 0, 0, 0]);
        let adv = ServerMessage::Unadvertise { channel_ids: vec![1] }.to_json();
        assert_eq!(adv, r#"{"op":"unadvertise","channelIds":[1]}"#);
        let values = [Parameter {
            name: "/n.a".into(),
            value: serde_json::json!(2),
            type_name: None,
        }];
        let answer = ServerMessage::ParameterValues {
            parameters: &values,
            id: Some("q"),
        };
        assert_eq!(
            answer.to_json(),
            r#"{"op":"parameterValues","parameters":[{"name":"/n.a","value":2}],"id":"q"}"#
        );
        assert_eq!(
            status(Level::Warning, "x"),
            r#"{"op":"status","level":1,"message":"x"}"#
        );
    }
}
