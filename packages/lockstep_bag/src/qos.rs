//! rosbag2's `offered_qos_profiles`: a list of QoS profiles, stored as YAML text (metadata versions
//! 4 to 8: integer enums inside a string; version 9: a YAML sequence with lower-case names) and as
//! YAML text in each MCAP channel's metadata.

use crate::yaml_out::Node;
use crate::{Error, Result};
use serde_norway::Value;

// Every rmw QoS policy enum starts with SYSTEM_DEFAULT = 0, then its own values, then UNKNOWN and
// (all but history) BEST_AVAILABLE; the first two arms add those shared variants, the last one
// writes the enum, its rmw codes and names, and its parser.
macro_rules! policy {
    ($name:ident, $doc:literal, unknown = $unknown:literal, { $($body:tt)* }) => {
        policy!(@emit $name, $doc, {
            SystemDefault = 0 => "system_default": "Use the middleware default.",
            $($body)*
            Unknown = $unknown => "unknown": "Unknown policy.",
        });
    };
    ($name:ident, $doc:literal, unknown = $unknown:literal, best_available = $best:literal, { $($body:tt)* }) => {
        policy!(@emit $name, $doc, {
            SystemDefault = 0 => "system_default": "Use the middleware default.",
            $($body)*
            Unknown = $unknown => "unknown": "Unknown policy.",
            BestAvailable = $best => "best_available": "Match the publishers.",
        });
    };
    (@emit $name:ident, $doc:literal, { $($variant:ident = $code:literal => $text:literal : $vdoc:literal,)+ }) => {
        #[doc = $doc]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $(#[doc = $vdoc] $variant),+
        }

        impl $name {
            /// The rmw enum value (metadata versions up to 8).
            pub fn code(self) -> i64 {
                match self { $($name::$variant => $code),+ }
            }

            /// The rmw string name (metadata version 9).
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// From a YAML value: the rmw enum value or its name (any case).
            pub fn from_value(value: &Value) -> Option<Self> {
                match value {
                    Value::Number(n) => match n.as_i64()? { $($code => Some($name::$variant),)+ _ => None },
                    Value::String(s) => match s.to_ascii_lowercase().as_str() { $($text => Some($name::$variant),)+ _ => None },
                    _ => None,
                }
            }
        }
    };
}

policy!(History, "QoS history policy.", unknown = 3, {
    KeepLast = 1 => "keep_last": "Keep the last `depth` samples.",
    KeepAll = 2 => "keep_all": "Keep all samples.",
});
policy!(Reliability, "QoS reliability policy.", unknown = 3, best_available = 4, {
    Reliable = 1 => "reliable": "Reliable delivery.",
    BestEffort = 2 => "best_effort": "Best-effort delivery.",
});
policy!(Durability, "QoS durability policy.", unknown = 3, best_available = 4, {
    TransientLocal = 1 => "transient_local": "Latched for late joiners.",
    Volatile = 2 => "volatile": "Not latched.",
});
policy!(Liveliness, "QoS liveliness policy.", unknown = 4, best_available = 5, {
    Automatic = 1 => "automatic": "Asserted automatically.",
    ManualByNode = 2 => "manual_by_node": "Deprecated manual-by-node.",
    ManualByTopic = 3 => "manual_by_topic": "Asserted per topic.",
});

/// An rmw time (seconds and nanoseconds), as rosbag2 stores durations in QoS profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RmwTime {
    /// Seconds.
    pub sec: u64,
    /// Nanoseconds.
    pub nsec: u64,
}

impl RmwTime {
    /// `RMW_DURATION_INFINITE` as rosbag2 Jazzy writes it.
    pub const INFINITE: RmwTime = RmwTime {
        sec: 9_223_372_036,
        nsec: 854_775_807,
    };
    /// "Unspecified" (the default).
    pub const ZERO: RmwTime = RmwTime { sec: 0, nsec: 0 };
}

/// One offered QoS profile of a recorded topic.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QosProfile {
    /// History policy.
    pub history: History,
    /// History depth.
    pub depth: u64,
    /// Reliability policy.
    pub reliability: Reliability,
    /// Durability policy.
    pub durability: Durability,
    /// Deadline period.
    pub deadline: RmwTime,
    /// Lifespan.
    pub lifespan: RmwTime,
    /// Liveliness policy.
    pub liveliness: Liveliness,
    /// Liveliness lease duration.
    pub liveliness_lease_duration: RmwTime,
    /// Whether ROS namespace conventions are bypassed.
    pub avoid_ros_namespace_conventions: bool,
}

impl Default for QosProfile {
    /// The default publisher profile (`rclcpp::QoS(10)`): keep last 10, reliable, volatile.
    fn default() -> Self {
        QosProfile {
            history: History::KeepLast,
            depth: 10,
            reliability: Reliability::Reliable,
            durability: Durability::Volatile,
            deadline: RmwTime::ZERO,
            lifespan: RmwTime::ZERO,
            liveliness: Liveliness::Automatic,
            liveliness_lease_duration: RmwTime::ZERO,
            avoid_ros_namespace_conventions: false,
        }
    }
}

impl QosProfile {
    /// The profile as a version-9 YAML node (string enums).
    pub(crate) fn to_node(&self) -> Node {
        let time = |t: RmwTime| {
            Node::map()
                .with("sec", Node::uint(t.sec))
                .with("nsec", Node::uint(t.nsec))
        };
        Node::map()
            .with("history", Node::str(self.history.name()))
            .with("depth", Node::uint(self.depth))
            .with("reliability", Node::str(self.reliability.name()))
            .with("durability", Node::str(self.durability.name()))
            .with("deadline", time(self.deadline))
            .with("lifespan", time(self.lifespan))
            .with("liveliness", Node::str(self.liveliness.name()))
            .with("liveliness_lease_duration", time(self.liveliness_lease_duration))
            .with(
                "avoid_ros_namespace_conventions",
                Node::Bool(self.avoid_ros_namespace_conventions),
            )
    }

    fn from_value(value: &Value, topic: &str, index: usize) -> Result<Self> {
        let bad = |field: &str, why: &str| Error::Qos {
            topic: topic.to_string(),
            reason: format!("profile {index}: field `{field}` {why}"),
        };
        let get = |field: &str| value.get(field).ok_or_else(|| bad(field, "is missing"));
        let time = |field: &str| -> Result<RmwTime> {
            let v = get(field)?;
            let part = |p: &str| {
                v.get(p)
                    .and_then(Value::as_u64)
                    .ok_or_else(|| bad(field, &format!("has no unsigned `{p}`")))
            };
            Ok(RmwTime {
                sec: part("sec")?,
                nsec: part("nsec")?,
            })
        };
        Ok(QosProfile {
            history: History::from_value(get("history")?)
                .ok_or_else(|| bad("history", "is not a history policy"))?,
            depth: get("depth")?
                .as_u64()
                .ok_or_else(|| bad("depth", "is not an unsigned integer"))?,
            reliability: Reliability::from_value(get("reliability")?)
                .ok_or_else(|| bad("reliability", "is not a reliability policy"))?,
            durability: Durability::from_value(get("durability")?)
                .ok_or_else(|| bad("durability", "is not a durability policy"))?,
            deadline: time("deadline")?,
            lifespan: time("lifespan")?,
            liveliness: Liveliness::from_value(get("liveliness")?)
                .ok_or_else(|| bad("liveliness", "is not a liveliness policy"))?,
            liveliness_lease_duration: time("liveliness_lease_duration")?,
            avoid_ros_namespace_conventions: get("avoid_ros_namespace_conventions")?
                .as_bool()
                .ok_or_else(|| bad("avoid_ros_namespace_conventions", "is not a boolean"))?,
        })
    }
}

/// Parses an `offered_qos_profiles` value: YAML text (any version; empty text = no profiles) or an
/// already-parsed YAML sequence (metadata version 9).
pub fn parse_qos_value(value: &Value, topic: &str) -> Result<Vec<QosProfile>> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::String(text) => parse_qos_yaml(text, topic),
        Value::Sequence(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| QosProfile::from_value(item, topic, i))
            .collect(),
        _ => Err(Error::Qos {
            topic: topic.to_string(),
            reason: "expected a YAML sequence or text".into(),
        }),
    }
}

/// Parses QoS profiles from YAML text as found in metadata.yaml (versions 4 to 8) or in MCAP channel
/// metadata. Integer and string enum spellings are both accepted.
pub fn parse_qos_yaml(text: &str, topic: &str) -> Result<Vec<QosProfile>> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let value: Value = serde_norway::from_str(text).map_err(|e| Error::Qos {
        topic: topic.to_string(),
        reason: format!("not YAML: {e}"),
    })?;
    match value {
        Value::String(_) => Err(Error::Qos {
            topic: topic.to_string(),
            reason: "expected a YAML sequence".into(),
        }),
        other => parse_qos_value(&other, topic),
    }
}

/// Serializes profiles as rosbag2 Jazzy does for MCAP channel metadata (version 9 YAML text).
pub fn qos_to_yaml(profiles: &[QosProfile]) -> String {
    if profiles.is_empty() {
        // rosbag2 writes an empty sequence for topics without offers; readers treat "" alike.
        return String::new();
    }
    let text = crate::yaml_out::emit(&qos_node(profiles));
    text.trim_end().to_string()
}

pub(crate) fn qos_node(profiles: &[QosProfile]) -> Node {
    Node::Seq(profiles.iter().map(QosProfile::to_node).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const V8: &str = "- history: 3\n  depth: 0\n  reliability: 1\n  durability: 2\n  deadline:\n    sec: 0\n    nsec: 0\n  lifespan:\n    sec: 0\n    nsec: 0\n  liveliness: 1\n  liveliness_lease_duration:\n    sec: 0\n    nsec: 0\n  avoid_ros_namespace_conventions: false";

    #[test]
    fn parses_v8_and_round_trips_v9() {
        let q = parse_qos_yaml(V8, "/t").unwrap();
        assert_eq!(q.len(), 1);
        assert_eq!(q[0].history, History::Unknown);
        assert_eq!(q[0].durability, Durability::Volatile);
        let text = qos_to_yaml(&q);
        assert!(text.starts_with("- history: unknown\n  depth: 0\n  reliability: reliable"));
        assert_eq!(parse_qos_yaml(&text, "/t").unwrap(), q);
    }

    #[test]
    fn policy_codes_and_names_are_rmw_s() {
        // rmw value -> name in History, Reliability, Durability, Liveliness ("": no such value).
        let table = [
            (0, ["system_default"; 4]),
            (1, ["keep_last", "reliable", "transient_local", "automatic"]),
            (2, ["keep_all", "best_effort", "volatile", "manual_by_node"]),
            (3, ["unknown", "unknown", "unknown", "manual_by_topic"]),
            (4, ["", "best_available", "best_available", "unknown"]),
            (5, ["", "", "", "best_available"]),
        ];
        for (code, names) in table {
            let v = Value::from(code);
            let by_code = [
                History::from_value(&v).map(|p| (p.code(), p.name())),
                Reliability::from_value(&v).map(|p| (p.code(), p.name())),
                Durability::from_value(&v).map(|p| (p.code(), p.name())),
                Liveliness::from_value(&v).map(|p| (p.code(), p.name())),
            ];
            let want = names.map(|n| (!n.is_empty()).then_some((code, n)));
            assert_eq!(by_code, want, "value {code}");
            let upper = |i: usize| Value::from(names[i].to_ascii_uppercase());
            let by_name = [
                History::from_value(&upper(0)).map(History::code),
                Reliability::from_value(&upper(1)).map(Reliability::code),
                Durability::from_value(&upper(2)).map(Durability::code),
                Liveliness::from_value(&upper(3)).map(Liveliness::code),
            ];
            assert_eq!(by_name, want.map(|w| w.map(|p| p.0)), "names of {code}");
        }
    }

    #[test]
    fn rejects_garbage_with_topic_name() {
        let err = parse_qos_yaml("- history: sometimes", "/x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("/x") && err.contains("history"), "{err}");
    }
}
