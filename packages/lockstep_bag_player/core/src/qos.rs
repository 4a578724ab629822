//! QoS for playback, as rosbag2 chooses it: an override from `--qos-profile-overrides-path` wins; otherwise
//! the profile the topic's publishers offered when it was recorded (`offered_qos_profiles`), when they all
//! offered the same; otherwise the default publisher profile (keep last 10, reliable, volatile) with the
//! reliability and durability every recorded publisher agreed on, and a note saying what differed.
//!
//! What the ROS graph could not tell the recorder is filled in as rosbag2 does ([`publishable`]): bags store
//! `history: unknown, depth: 0` (rmw does not report a remote publisher's history), and older bags store
//! unknown policies; a publisher cannot be created with those, so they become the default's.

use std::collections::BTreeMap;
use std::path::Path;

use lockstep_bag::qos::{Durability, History, Liveliness, Reliability, RmwTime};
use lockstep_bag::QosProfile;
use serde_norway::Value;

use crate::error::{Error, Result};

/// The profile a topic plays with, and why when it is not simply the recorded one.
#[derive(Debug, Clone, PartialEq)]
pub struct PlaybackQos {
    pub profile: QosProfile,
    /// Set when the recorded publishers disagreed (log it once).
    pub note: Option<String>,
}

/// The QoS to publish `topic` with (see the module doc).
pub fn playback_qos(topic: &str, offered: &[QosProfile], overridden: Option<&QosProfile>) -> PlaybackQos {
    if let Some(profile) = overridden {
        return PlaybackQos {
            profile: profile.clone(),
            note: None,
        };
    }
    let Some(first) = offered.first() else {
        return PlaybackQos {
            profile: QosProfile::default(),
            note: None,
        };
    };
    if offered.iter().all(|p| p == first) {
        return PlaybackQos {
            profile: publishable(first),
            note: None,
        };
    }
    let mut profile = QosProfile::default();
    let mut differed = Vec::new();
    if offered.iter().all(|p| p.reliability == first.reliability) {
        profile.reliability = first.reliability;
    } else {
        differed.push("reliability");
    }
    if offered.iter().all(|p| p.durability == first.durability) {
        profile.durability = first.durability;
    } else {
        differed.push("durability");
    }
    let what = if differed.is_empty() {
        "other policies".to_owned()
    } else {
        differed.join(" and ")
    };
    let profile = publishable(&profile);
    PlaybackQos {
        note: Some(format!(
            "{topic}: its {} recorded publishers offered different QoS ({what}); playing with keep last {}, {}, {} \
             (set it with --qos-profile-overrides-path)",
            offered.len(),
            profile.depth,
            profile.reliability.name(),
            profile.durability.name()
        )),
        profile,
    }
}

/// `recorded` with what a publisher cannot take replaced by the default profile's value: an unknown or
/// system-default history, or keep-last with depth 0, becomes keep last 10; unknown or best-available
/// reliability, durability and liveliness become reliable, volatile and automatic.
pub fn publishable(recorded: &QosProfile) -> QosProfile {
    let default = QosProfile::default();
    let mut p = recorded.clone();
    let history_known = match p.history {
        History::KeepAll => true,
        History::KeepLast => p.depth > 0,
        History::SystemDefault | History::Unknown => false,
    };
    if !history_known {
        p.history = default.history;
        p.depth = default.depth;
    }
    if matches!(p.reliability, Reliability::Unknown | Reliability::BestAvailable) {
        p.reliability = default.reliability;
    }
    if matches!(p.durability, Durability::Unknown | Durability::BestAvailable) {
        p.durability = default.durability;
    }
    if matches!(p.liveliness, Liveliness::Unknown | Liveliness::BestAvailable) {
        p.liveliness = default.liveliness;
    }
    p
}

/// Parse a rosbag2 QoS override file: a map of topic name to policies, each optional (an absent policy
/// takes the default publisher profile's value), e.g.
///
/// ```yaml
/// /map:
///   history: keep_last
///   depth: 1
///   reliability: reliable
///   durability: transient_local
///   deadline: {sec: 1, nsec: 0}
/// ```
///
/// Errors name the file, the topic and the key.
pub fn parse_qos_overrides(text: &str, path: &Path) -> Result<BTreeMap<String, QosProfile>> {
    let fail = |reason: String| Error::QosOverrides {
        path: path.to_owned(),
        reason,
    };
    if text.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    let value: Value = serde_norway::from_str(text).map_err(|e| fail(format!("not YAML: {e}")))?;
    let Value::Mapping(topics) = value else {
        return Err(fail("expected a map of topic names to QoS policies".into()));
    };
    let mut out = BTreeMap::new();
    for (key, policies) in topics {
        let Some(topic) = key.as_str() else {
            return Err(fail(format!("key {key:?} is not a topic name")));
        };
        let profile = profile_from(policies, topic).map_err(|reason| fail(format!("`{topic}`: {reason}")))?;
        out.insert(topic.to_owned(), profile);
    }
    Ok(out)
}

fn profile_from(value: Value, topic: &str) -> Result<QosProfile, String> {
    let Value::Mapping(map) = value else {
        return Err(format!("expected a map of QoS policies for {topic}"));
    };
    let mut p = QosProfile::default();
    for (key, v) in &map {
        let key = key
            .as_str()
            .ok_or_else(|| format!("key {key:?} is not a policy name"))?;
        let bad = |what: &str| format!("`{key}`: {v:?} is not {what}");
        match key {
            "history" => p.history = History::from_value(v).ok_or_else(|| bad("a history policy"))?,
            "depth" => p.depth = v.as_u64().ok_or_else(|| bad("an unsigned integer"))?,
            "reliability" => {
                p.reliability = Reliability::from_value(v).ok_or_else(|| bad("a reliability policy"))?
            }
            "durability" => {
                p.durability = Durability::from_value(v).ok_or_else(|| bad("a durability policy"))?
            }
            "liveliness" => {
                p.liveliness = Liveliness::from_value(v).ok_or_else(|| bad("a liveliness policy"))?
            }
            "deadline" => p.deadline = duration(v).map_err(|e| format!("`{key}`: {e}"))?,
            "lifespan" => p.lifespan = duration(v).map_err(|e| format!("`{key}`: {e}"))?,
            "liveliness_lease_duration" => {
                p.liveliness_lease_duration = duration(v).map_err(|e| format!("`{key}`: {e}"))?
            }
            "avoid_ros_namespace_conventions" => {
                p.avoid_ros_namespace_conventions = v.as_bool().ok_or_else(|| bad("a boolean"))?
            }
            other => return Err(format!("unknown QoS policy `{other}`")),
        }
    }
    Ok(p)
}

/// `{sec: S, nsec: N}`: both are required, as in rosbag2.
fn duration(v: &Value) -> Result<RmwTime, String> {
    let part = |name: &str| {
        v.get(name)
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("needs an unsigned `{name}` (give both `sec` and `nsec`)"))
    };
    Ok(RmwTime {
        sec: part("sec")?,
        nsec: part("nsec")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(reliability: Reliability, durability: Durability, depth: u64) -> QosProfile {
        QosProfile {
            reliability,
            durability,
            depth,
            ..QosProfile::default()
        }
    }

    #[test]
    fn the_recorded_profile_when_publishers_agreed() {
        let latched = offer(Reliability::Reliable, Durability::TransientLocal, 1);
        let q = playback_qos("/map", &[latched.clone(), latched.clone()], None);
        assert_eq!(
            q,
            PlaybackQos {
                profile: latched,
                note: None
            }
        );
        assert_eq!(playback_qos("/x", &[], None).profile, QosProfile::default());
    }

    #[test]
    fn disagreeing_publishers_give_the_default_with_what_they_shared_and_a_note() {
        let a = offer(Reliability::BestEffort, Durability::Volatile, 5);
        let b = offer(Reliability::Reliable, Durability::Volatile, 7);
        let q = playback_qos("/scan", &[a, b], None);
        assert_eq!(q.profile.reliability, Reliability::Reliable); // the default
        assert_eq!(q.profile.durability, Durability::Volatile);
        assert_eq!(q.profile.depth, 10);
        let note = q.note.unwrap();
        assert!(
            note.starts_with("/scan: its 2 recorded publishers") && note.contains("(reliability)"),
            "{note}"
        );
    }

    #[test]
    fn what_the_graph_did_not_report_becomes_the_default() {
        // As rosbag2's own talker bag stores /topic: history unknown (3), depth 0.
        let stored = QosProfile {
            history: History::Unknown,
            depth: 0,
            liveliness: Liveliness::BestAvailable,
            ..offer(Reliability::Reliable, Durability::TransientLocal, 0)
        };
        let q = playback_qos("/topic", &[stored], None).profile;
        assert_eq!((q.history, q.depth), (History::KeepLast, 10));
        assert_eq!(q.durability, Durability::TransientLocal); // what was known is kept
        assert_eq!(q.liveliness, Liveliness::Automatic);
        let keep_all = QosProfile {
            history: History::KeepAll,
            depth: 0,
            ..QosProfile::default()
        };
        assert_eq!(publishable(&keep_all), keep_all);
    }

    #[test]
    fn an_override_wins() {
        let o = offer(Reliability::BestEffort, Durability::Volatile, 3);
        let recorded = offer(Reliability::Reliable, Durability::TransientLocal, 1);
        assert_eq!(playback_qos("/t", &[recorded], Some(&o)).profile, o);
    }

    #[test]
    fn override_files_as_rosbag2_writes_them() {
        let text = "/map:\n  durability: transient_local\n  depth: 1\n  deadline: {sec: 2, nsec: 5}\n\
                    /scan:\n  reliability: best_effort\n  history: keep_all\n";
        let map = parse_qos_overrides(text, Path::new("o.yaml")).unwrap();
        assert_eq!(map["/map"].durability, Durability::TransientLocal);
        assert_eq!(map["/map"].depth, 1);
        assert_eq!(map["/map"].deadline, RmwTime { sec: 2, nsec: 5 });
        assert_eq!(map["/map"].reliability, Reliability::Reliable); // not given: the default
        assert_eq!(map["/scan"].history, History::KeepAll);
    }

    #[test]
    fn bad_override_files_name_the_file_topic_and_key() {
        let e = |text: &str| {
            parse_qos_overrides(text, Path::new("o.yaml"))
                .unwrap_err()
                .to_string()
        };
        let bad_value = e("/map:\n  durability: sticky\n");
        assert!(
            bad_value.starts_with("o.yaml: `/map`: `durability`:"),
            "{bad_value}"
        );
        let half = e("/map:\n  deadline: {sec: 1}\n");
        assert!(half.contains("`deadline`: needs an unsigned `nsec`"), "{half}");
        let unknown = e("/map:\n  durabilty: volatile\n");
        assert!(unknown.contains("unknown QoS policy `durabilty`"), "{unknown}");
        assert!(e("- a\n").contains("expected a map"));
        assert!(e("/map: [").contains("not YAML"));
    }
}
