//! The r2r side of the example modules (crate `lockstep_examples_node`): what the four binaries share to
//! run the pure computations of `lockstep_examples` as traced nodes. Waiting for subscribers, announcing the
//! wiring, and [`InputGuard`], which drops the inputs [`validate`] refuses (and those without a header),
//! counting and logging what it drops.

pub use lockstep_examples::{
    control, fusion, mission, period_from_rate, split, topics, types, DATA_QOS_DEPTH,
};

pub mod convert;
pub mod validate;

use std::time::{Duration, Instant};

use lockstep_examples::millis_or_zero;
use lockstep_trace_ros::lockstep_trace::{Component, TraceHeader};
use lockstep_trace_ros::{publish_topology, ModuleTopology, Traced, Upstream};

use crate::validate::{DropCounter, Invalid, Validate};

/// Simulated computation time: a module sleeps this long between starting and publishing an output, so the
/// headers' `process_time_ns` and the timing between modules look like a real pipeline's. Negative values
/// count as zero.
pub async fn simulate_processing(delay_ms: i64) {
    if delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(delay_ms.unsigned_abs())).await;
    }
}

/// Wait until `output` (data and header topic) matched `count` subscriptions, like `ros2 topic pub
/// --wait-matching-subscriptions`: a module started with its readers known takes no input before every one
/// of them will get its outputs, so a recording misses none. Logs `<count> subscriber(s) on <topic>: starting`
/// once they have. A count of 0 or less does not wait.
pub async fn wait_for_subscribers<T: r2r::WrappedTypesupport + 'static>(
    output: &lockstep_trace_ros::TracedPublisher<T>,
    count: i64,
    logger: &str,
) -> lockstep_trace_ros::Result<()> {
    let Ok(count) = usize::try_from(count) else {
        return Ok(());
    };
    if count == 0 {
        return Ok(());
    }
    if output.matched_subscriptions()? < count {
        r2r::log_info!(
            logger,
            "waiting for {count} subscriber(s) on {} and its header topic",
            output.channel()
        );
    }
    let mut poll = tokio::time::interval(Duration::from_millis(10));
    while output.matched_subscriptions()? < count {
        poll.tick().await;
    }
    r2r::log_info!(logger, "{count} subscriber(s) on {}: starting", output.channel());
    Ok(())
}

/// How to receive a traced module's topic, waiting at most `header_timeout_ms` (negative: 0) for each
/// message's header.
pub fn traced_upstream(header_timeout_ms: i64) -> Upstream {
    Upstream::Traced {
        header_timeout: millis_or_zero(header_timeout_ms),
    }
}

/// Publish the module's wiring latched (see [`lockstep_trace_ros::publish_topology`]) and log it. Keep the
/// returned publisher alive as long as the module runs.
pub fn announce_topology(
    node: &mut r2r::Node,
    logger: &str,
    component: &Component,
) -> lockstep_trace_ros::Result<r2r::Publisher<ModuleTopology>> {
    let publisher = publish_topology(node, component)?;
    r2r::log_info!(
        logger,
        "{}: {:?} -> {:?}",
        component.module_name,
        component.reader_channels,
        component.writer_channels
    );
    Ok(publisher)
}

/// Why a module does not use a received message.
#[derive(Debug, Clone, PartialEq)]
pub enum Rejected {
    /// Its header did not arrive: an input nobody can name cannot be replayed.
    NoHeader,
    /// It holds a number the module cannot use.
    Invalid(Invalid),
}

/// The message and header of `reading` if a module may use it: it has its header and passes [`Validate`].
pub fn usable<T: Validate>(reading: Traced<T>) -> Result<(T, TraceHeader), Rejected> {
    let header = reading.header.ok_or(Rejected::NoHeader)?;
    reading.msg.validate().map_err(Rejected::Invalid)?;
    Ok((reading.msg, header))
}

/// A module's gate for what it receives and publishes: it lets through only usable inputs ([`usable`]) and
/// finite outputs, and counts and logs (throttled, with the running count) what it holds back.
#[derive(Debug)]
pub struct InputGuard {
    logger: String,
    inputs: DropCounter,
    outputs: DropCounter,
}

impl InputGuard {
    /// A guard logging through the ROS logger `logger`.
    pub fn new(logger: impl Into<String>) -> Self {
        Self {
            logger: logger.into(),
            inputs: DropCounter::inputs(),
            outputs: DropCounter::outputs(),
        }
    }

    /// The message and header of `reading`, received on `topic`, if the module may use it; otherwise `None`
    /// and the module keeps its previous input.
    pub fn accept<T: Validate>(&mut self, topic: &str, reading: Traced<T>) -> Option<(T, TraceHeader)> {
        match usable(reading) {
            Ok(used) => Some(used),
            Err(Rejected::NoHeader) => {
                r2r::log_warn!(
                    &self.logger,
                    "an input on {topic} arrived without its header; ignored"
                );
                None
            }
            Err(Rejected::Invalid(why)) => {
                if let Some(line) = self.inputs.count(Instant::now(), topic, &why) {
                    r2r::log_warn!(&self.logger, "{line}");
                }
                None
            }
        }
    }

    /// Whether `output` may be published on `topic` (every number finite); logs if not.
    pub fn publishable<T: Validate>(&mut self, topic: &str, output: &T) -> bool {
        match output.validate() {
            Ok(()) => true,
            Err(why) => {
                if let Some(line) = self.outputs.count(Instant::now(), topic, &why) {
                    r2r::log_error!(&self.logger, "{line}");
                }
                false
            }
        }
    }

    /// How many inputs were dropped so far.
    pub fn dropped_inputs(&self) -> u64 {
        self.inputs.total()
    }

    /// How many outputs were withheld so far.
    pub fn withheld_outputs(&self) -> u64 {
        self.outputs.total()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use r2r::sensor_msgs::msg::Range;

    fn reading(range: f32, header: bool) -> Traced<Range> {
        Traced {
            msg: Range {
                min_range: 0.1,
                max_range: 5.0,
                range,
                ..Range::default()
            },
            header: header.then(|| TraceHeader::external("/scan_front", 0, 0, 0)),
            digest: 0,
        }
    }

    #[test]
    fn only_valid_inputs_with_a_header_are_usable() {
        let (msg, header) = usable(reading(1.0, true)).expect("usable");
        assert_eq!((msg.range, header.channel_name.as_str()), (1.0, "/scan_front"));
        assert_eq!(usable(reading(1.0, false)).err(), Some(Rejected::NoHeader));
        match usable(reading(f32::NAN, true)) {
            Err(Rejected::Invalid(why)) => assert_eq!(why.field, "range"),
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn the_guard_counts_what_it_holds_back() {
        let mut guard = InputGuard::new("test");
        assert!(guard.accept("/scan_front", reading(1.0, true)).is_some());
        assert!(guard.accept("/scan_front", reading(f32::NAN, true)).is_none());
        assert!(guard.accept("/scan_front", reading(1.0, false)).is_none());
        assert_eq!(guard.dropped_inputs(), 1);
        let mut bad = r2r::geometry_msgs::msg::Twist::default();
        assert!(guard.publishable("/cmd_vel", &bad));
        bad.linear.x = f64::NAN;
        assert!(!guard.publishable("/cmd_vel", &bad));
        assert_eq!(guard.withheld_outputs(), 1);
    }

    #[test]
    fn negative_header_timeouts_count_as_zero() {
        assert_eq!(
            traced_upstream(-5),
            Upstream::Traced {
                header_timeout: Duration::ZERO
            }
        );
        assert_eq!(
            traced_upstream(250),
            Upstream::Traced {
                header_timeout: Duration::from_millis(250)
            }
        );
    }
}
