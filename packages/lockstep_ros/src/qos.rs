//! QoS presets, named for what they are for.

use r2r::QosProfile;

/// Reliable, volatile, keep the last `depth` messages: ordinary command and data topics.
pub fn reliable(depth: usize) -> QosProfile {
    QosProfile::default().reliable().volatile().keep_last(depth)
}

/// Requests a service keeps until the node takes them. rcl's default history (10) drops all but the last 10
/// of a burst that arrives faster than the node takes them: those clients never get an answer. With room for
/// a burst, a node answers each request (at once with "busy" when it cannot plan more).
pub const REQUEST_DEPTH: usize = 1000;

/// A service's QoS: reliable, volatile, room for a burst of [`REQUEST_DEPTH`] requests.
pub fn requests() -> QosProfile {
    reliable(REQUEST_DEPTH)
}

/// Reliable and transient-local with depth 1: a "latched" topic whose last value reaches late joiners
/// (model parameters, topology, maps).
pub fn latched() -> QosProfile {
    QosProfile::default().reliable().transient_local().keep_last(1)
}

/// Best effort, keep last 5: high-rate sensor streams where the newest sample matters most.
pub fn sensor_data() -> QosProfile {
    QosProfile::sensor_data()
}

/// Reliable, keep all: a recorder's own side, which must not drop what it was sent.
pub fn keep_all_reliable() -> QosProfile {
    QosProfile::default().reliable().keep_all()
}

/// The profile as bags store it (`offered_qos_profiles`).
pub fn to_bag(q: &QosProfile) -> lockstep_bag::QosProfile {
    use lockstep_bag::qos::{Durability, History, Liveliness, Reliability, RmwTime};
    use r2r::qos::{DurabilityPolicy, HistoryPolicy, LivelinessPolicy, ReliabilityPolicy};
    use std::time::Duration;
    let time = |d: Duration| RmwTime {
        sec: d.as_secs(),
        nsec: u64::from(d.subsec_nanos()),
    };
    lockstep_bag::QosProfile {
        history: match q.history {
            HistoryPolicy::KeepAll => History::KeepAll,
            HistoryPolicy::KeepLast => History::KeepLast,
            HistoryPolicy::SystemDefault => History::SystemDefault,
            HistoryPolicy::Unknown => History::Unknown,
        },
        depth: q.depth as u64,
        reliability: match q.reliability {
            ReliabilityPolicy::Reliable => Reliability::Reliable,
            ReliabilityPolicy::BestEffort => Reliability::BestEffort,
            ReliabilityPolicy::SystemDefault => Reliability::SystemDefault,
            ReliabilityPolicy::BestAvailable => Reliability::BestAvailable,
            ReliabilityPolicy::Unknown => Reliability::Unknown,
        },
        durability: match q.durability {
            DurabilityPolicy::TransientLocal => Durability::TransientLocal,
            DurabilityPolicy::Volatile => Durability::Volatile,
            DurabilityPolicy::SystemDefault => Durability::SystemDefault,
            DurabilityPolicy::BestAvailable => Durability::BestAvailable,
            DurabilityPolicy::Unknown => Durability::Unknown,
        },
        deadline: time(q.deadline),
        lifespan: time(q.lifespan),
        liveliness: match q.liveliness {
            LivelinessPolicy::Automatic => Liveliness::Automatic,
            LivelinessPolicy::ManualByNode => Liveliness::ManualByNode,
            LivelinessPolicy::ManualByTopic => Liveliness::ManualByTopic,
            LivelinessPolicy::SystemDefault => Liveliness::SystemDefault,
            LivelinessPolicy::BestAvailable => Liveliness::BestAvailable,
            LivelinessPolicy::Unknown => Liveliness::Unknown,
        },
        liveliness_lease_duration: time(q.liveliness_lease_duration),
        ..lockstep_bag::QosProfile::default()
    }
}

/// A profile stored in a bag as r2r's (for publishing what was recorded with the QoS it was offered with).
pub fn from_bag(q: &lockstep_bag::QosProfile) -> QosProfile {
    use lockstep_bag::qos::{Durability, History, Liveliness, Reliability, RmwTime};
    use r2r::qos::{DurabilityPolicy, HistoryPolicy, LivelinessPolicy, ReliabilityPolicy};
    use std::time::Duration;
    let time = |t: RmwTime| Duration::new(t.sec, u32::try_from(t.nsec.min(999_999_999)).unwrap_or(0));
    QosProfile {
        history: match q.history {
            History::KeepAll => HistoryPolicy::KeepAll,
            History::KeepLast => HistoryPolicy::KeepLast,
            History::SystemDefault => HistoryPolicy::SystemDefault,
            History::Unknown => HistoryPolicy::Unknown,
        },
        depth: usize::try_from(q.depth).unwrap_or(usize::MAX),
        reliability: match q.reliability {
            Reliability::Reliable => ReliabilityPolicy::Reliable,
            Reliability::BestEffort => ReliabilityPolicy::BestEffort,
            Reliability::SystemDefault => ReliabilityPolicy::SystemDefault,
            Reliability::BestAvailable => ReliabilityPolicy::BestAvailable,
            Reliability::Unknown => ReliabilityPolicy::Unknown,
        },
        durability: match q.durability {
            Durability::TransientLocal => DurabilityPolicy::TransientLocal,
            Durability::Volatile => DurabilityPolicy::Volatile,
            Durability::SystemDefault => DurabilityPolicy::SystemDefault,
            Durability::BestAvailable => DurabilityPolicy::BestAvailable,
            Durability::Unknown => DurabilityPolicy::Unknown,
        },
        deadline: time(q.deadline),
        lifespan: time(q.lifespan),
        liveliness: match q.liveliness {
            Liveliness::Automatic => LivelinessPolicy::Automatic,
            Liveliness::ManualByNode => LivelinessPolicy::ManualByNode,
            Liveliness::ManualByTopic => LivelinessPolicy::ManualByTopic,
            Liveliness::SystemDefault => LivelinessPolicy::SystemDefault,
            Liveliness::BestAvailable => LivelinessPolicy::BestAvailable,
            Liveliness::Unknown => LivelinessPolicy::Unknown,
        },
        liveliness_lease_duration: time(q.liveliness_lease_duration),
        avoid_ros_namespace_conventions: q.avoid_ros_namespace_conventions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use r2r::qos::{DurabilityPolicy, HistoryPolicy, ReliabilityPolicy};

    #[test]
    fn latched_is_reliable_transient_local_depth_one() {
        let qos = latched();
        assert_eq!(qos.reliability, ReliabilityPolicy::Reliable);
        assert_eq!(qos.durability, DurabilityPolicy::TransientLocal);
        assert_eq!(qos.history, HistoryPolicy::KeepLast);
        assert_eq!(qos.depth, 1);
    }

    #[test]
    fn bag_profiles_convert_both_ways() {
        use lockstep_bag::qos::{Durability, Liveliness, Reliability, RmwTime};
        let stored = lockstep_bag::QosProfile {
            depth: 3,
            reliability: Reliability::BestEffort,
            durability: Durability::TransientLocal,
            deadline: RmwTime { sec: 1, nsec: 5 },
            liveliness: Liveliness::ManualByTopic,
            // rmw's "infinite" duration, as rosbag2 stores it
            lifespan: RmwTime {
                sec: 9_223_372_036,
                nsec: 854_775_807,
            },
            ..lockstep_bag::QosProfile::default()
        };
        assert_eq!(to_bag(&from_bag(&stored)), stored);
    }

    #[test]
    fn keep_all_has_keep_all_history() {
        assert_eq!(keep_all_reliable().history, HistoryPolicy::KeepAll);
        assert_eq!(reliable(7).depth, 7);
    }
}
