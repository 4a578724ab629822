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
    /// The answer to `getParameters` or `setParameters` (with the request's id).
    ParameterValues {
        parameters: &'a [Parameter],
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
    },
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
    /// A binary message from a client (client publishing and service calls are not offered).
    #[error("binary client messages (opcode {0:#04x}) are not supported by this server")]
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
