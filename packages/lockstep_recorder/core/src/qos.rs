//! Subscribe so that every publisher of a topic matches, as rosbag2's recorder does.

use lockstep_bag::qos::{Durability, QosProfile, Reliability};

/// The QoS the recorder asks for on one topic. History is always keep-all on the recorder's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubscriptionQos {
    /// Reliable when every publisher offers reliable; otherwise best effort (a reliable reader would not
    /// match a best-effort writer).
    pub reliable: bool,
    /// Transient-local when every publisher offers it, so latched messages sent before we joined arrive;
    /// otherwise volatile (a transient-local reader would not match a volatile writer).
    pub transient_local: bool,
}

/// Adapt to the publishers' offers. With no publisher known, reliable + volatile (the ROS default).
pub fn adapt_qos(offers: &[QosProfile]) -> SubscriptionQos {
    if offers.is_empty() {
        return SubscriptionQos {
            reliable: true,
            transient_local: false,
        };
    }
    SubscriptionQos {
        reliable: offers.iter().all(|q| q.reliability == Reliability::Reliable),
        transient_local: offers.iter().all(|q| q.durability == Durability::TransientLocal),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(reliability: Reliability, durability: Durability) -> QosProfile {
        QosProfile {
            reliability,
            durability,
            ..QosProfile::default()
        }
    }

    #[test]
    fn all_reliable_latched_gives_reliable_latched() {
        let q = adapt_qos(&[offer(Reliability::Reliable, Durability::TransientLocal)]);
        assert_eq!(
            q,
            SubscriptionQos {
                reliable: true,
                transient_local: true
            }
        );
    }

    #[test]
    fn one_best_effort_or_volatile_publisher_downgrades() {
        let q = adapt_qos(&[
            offer(Reliability::Reliable, Durability::TransientLocal),
            offer(Reliability::BestEffort, Durability::Volatile),
        ]);
        assert_eq!(
            q,
            SubscriptionQos {
                reliable: false,
                transient_local: false
            }
        );
    }

    #[test]
    fn no_publisher_is_the_ros_default() {
        assert_eq!(
            adapt_qos(&[]),
            SubscriptionQos {
                reliable: true,
                transient_local: false
            }
        );
    }
}
