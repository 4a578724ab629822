//! QoS presets, named for what they are for.

use r2r::QosProfile;

/// Reliable, volatile, keep the last `depth` messages: ordinary command and data topics.
pub fn reliable(depth: usize) -> QosProfile {
    QosProfile::default().reliable().volatile().keep_last(depth)
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
    fn keep_all_has_keep_all_history() {
        assert_eq!(keep_all_reliable().history, HistoryPolicy::KeepAll);
        assert_eq!(reliable(7).depth, 7);
    }
}
