//! The node's publishers. A failed publish is logged once per publisher (then only counted), never dropped
//! silently and never logged at the simulation rate.

use std::cell::Cell;

use lockstep_ros::{qos, SharedNode};
use lockstep_sim::Simulator;
use r2r::geometry_msgs::msg::{PoseStamped, PoseWithCovarianceStamped, TwistStamped};
use r2r::nav_msgs::msg::Odometry;
use r2r::rosgraph_msgs::msg::Clock;
use r2r::sensor_msgs::msg::{BatteryState, JointState, Range};
use r2r::visualization_msgs::msg::MarkerArray;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::Statics;
use crate::messages;

/// Where a message goes; `r2r::Publisher` in the node, a fake in tests.
pub trait Sink<T> {
    /// Sends one message; the error says why not.
    fn send(&self, msg: &T) -> Result<(), String>;
}

impl<T: r2r::WrappedTypesupport + 'static> Sink<T> for r2r::Publisher<T> {
    fn send(&self, msg: &T) -> Result<(), String> {
        self.publish(msg).map_err(|e| e.to_string())
    }
}

/// A sink that logs its first failure (with the topic) and counts the others.
pub struct Logged<S> {
    sink: S,
    topic: &'static str,
    failures: Cell<u64>,
}

impl<S> Logged<S> {
    /// Wraps `sink`, which publishes on `topic`.
    pub fn new(sink: S, topic: &'static str) -> Self {
        Logged {
            sink,
            topic,
            failures: Cell::new(0),
        }
    }

    /// Sends `msg`; on the first failure returns the line to log.
    pub fn send<T>(&self, msg: &T) -> Option<String>
    where
        S: Sink<T>,
    {
        let error = self.sink.send(msg).err()?;
        let failures = self.failures.get() + 1;
        self.failures.set(failures);
        (failures == 1).then(|| {
            format!(
                "cannot publish on {}: {error} (further failures on this topic are counted, not logged)",
                self.topic
            )
        })
    }

    /// Sends `msg`, logging the first failure on `logger`.
    pub fn publish<T>(&self, msg: &T, logger: &str)
    where
        S: Sink<T>,
    {
        if let Some(line) = self.send(msg) {
            r2r::log_error!(logger, "{line}");
        }
    }
}

type Pub<T> = Logged<r2r::Publisher<T>>;

/// Whether a message kept to `period` of simulated time is due at `now`, its next time in `next` (f64 bits)
/// moved on when it is. Behind (publishing slower than the rate): one per publish, counted from now; the
/// simulated time gone back (a reset): due at once.
fn due(next: &AtomicU64, now: f64, period: f64) -> bool {
    let mut at = f64::from_bits(next.load(Ordering::Relaxed));
    if at - now > period {
        at = now;
    }
    if now + 1e-9 < at {
        return false;
    }
    let following = if at + period <= now {
        now + period
    } else {
        at + period
    };
    next.store(following.to_bits(), Ordering::Relaxed);
    true
}

/// Whether a subscriber listens (or the count is unknown).
fn heard<T: r2r::WrappedTypesupport + 'static>(publisher: &Pub<T>) -> bool {
    publisher
        .sink
        .get_inter_process_subscription_count()
        .map_or(true, |n| n > 0)
}

/// Every publisher of the node, with the logger their failures go to.
pub struct Publishers {
    command: Pub<TwistStamped>,
    odom: Pub<Odometry>,
    odom_map: Pub<Odometry>,
    scan_front: Pub<Range>,
    scan_rear: Pub<Range>,
    /// Simulated time of the next range reading (f64 bits).
    next_range_secs: AtomicU64,
    battery: Pub<BatteryState>,
    /// Simulated time of the next battery state (f64 bits).
    next_battery_secs: AtomicU64,
    slam: Pub<PoseWithCovarianceStamped>,
    truth: Pub<PoseStamped>,
    joints: Pub<JointState>,
    state: Pub<r2r::std_msgs::msg::String>,
    markers: Pub<MarkerArray>,
    grid: Pub<MarkerArray>,
    clock: Option<Pub<Clock>>,
    logger: String,
}

impl Publishers {
    /// Creates the publishers on `node`.
    pub fn create(node: &SharedNode, st: &Statics, logger: String) -> anyhow::Result<Publishers> {
        let mut n = lockstep_ros::lock(node)?;
        // Deep histories: at a high time_scale a slow subscriber (rclpy) falls behind for a while, and a
        // reliable keep-last writer would overwrite what it has not yet acknowledged.
        let deep = qos::reliable(1000);
        Ok(Publishers {
            command: Logged::new(n.create_publisher("cmd_vel_out", deep.clone())?, "cmd_vel_out"),
            odom: Logged::new(n.create_publisher("odom", deep.clone())?, "odom"),
            odom_map: Logged::new(n.create_publisher("odom_map", deep.clone())?, "odom_map"),
            scan_front: Logged::new(n.create_publisher("scan_front", deep.clone())?, "scan_front"),
            scan_rear: Logged::new(n.create_publisher("scan_rear", deep.clone())?, "scan_rear"),
            next_range_secs: AtomicU64::new(0f64.to_bits()),
            battery: Logged::new(
                n.create_publisher("battery_state", qos::reliable(10))?,
                "battery_state",
            ),
            next_battery_secs: AtomicU64::new(0f64.to_bits()),
            slam: Logged::new(n.create_publisher("slam_pose", deep.clone())?, "slam_pose"),
            truth: Logged::new(n.create_publisher("ground_truth", deep.clone())?, "ground_truth"),
            joints: Logged::new(n.create_publisher("joint_states", deep)?, "joint_states"),
            // Transient-local with room for the latest `state_history_depth` states, so a late subscriber
            // sees the recent history, not only the last state -- and the history stays bounded.
            state: Logged::new(
                n.create_publisher("~/state", qos::reliable(st.state_history_depth).transient_local())?,
                "~/state",
            ),
            markers: Logged::new(n.create_publisher("markers", qos::reliable(10))?, "markers"),
            grid: Logged::new(
                n.create_publisher("markers/grid", qos::latched())?,
                "markers/grid",
            ),
            clock: if st.p.publish_clock {
                Some(Logged::new(
                    n.create_publisher("/clock", qos::reliable(10))?,
                    "/clock",
                ))
            } else {
                None
            },
            logger,
        })
    }

    /// scan_front and scan_rear, at `range_rate_hz` of simulated time (restarting after a reset).
    fn ranges(&self, sim: &Simulator, st: &Statics) {
        if st.p.range_rate_hz <= 0.0 || !(heard(&self.scan_front) || heard(&self.scan_rear)) {
            return;
        }
        if !due(&self.next_range_secs, sim.time_secs(), 1.0 / st.p.range_rate_hz) {
            return;
        }
        let (front, rear) = messages::ranges(sim, st);
        self.scan_front.publish(&front, &self.logger);
        self.scan_rear.publish(&rear, &self.logger);
    }

    /// battery_state, at `battery.rate_hz` of simulated time, when the simulator has a battery.
    fn battery(&self, sim: &Simulator, st: &Statics) {
        let Some(reading) = sim.battery() else {
            return;
        };
        if due(
            &self.next_battery_secs,
            sim.time_secs(),
            1.0 / st.p.battery.rate_hz,
        ) {
            let msg = messages::battery_state(sim, &reading, st);
            self.battery.publish(&msg, &self.logger);
        }
    }

    /// ground_truth, odom, odom_map, joint_states and /clock; scan_front and scan_rear at their rate.
    pub fn motion(&self, sim: &Simulator, st: &Statics) {
        let log = self.logger.as_str();
        self.truth.publish(&messages::ground_truth(sim, st), log);
        self.odom.publish(&messages::odometry(sim, st), log);
        // Derived topics cost a message per publish even when nobody listens (at time_scale 8, hundreds per
        // wall second): built only for subscribers.
        if heard(&self.odom_map) {
            self.odom_map.publish(&messages::odometry_in_map(sim, st), log);
        }
        self.ranges(sim, st);
        self.battery(sim, st);
        self.joints.publish(&messages::joint_states(sim, st), log);
        if let Some(clock) = &self.clock {
            clock.publish(&messages::clock(sim), log);
        }
    }

    /// The command the last step issued (`cmd_vel_out`).
    pub fn command(&self, sim: &Simulator, st: &Statics) {
        self.command
            .publish(&messages::issued_command(sim, st), &self.logger);
    }

    /// The latest SLAM sample.
    pub fn slam(&self, sim: &Simulator, st: &Statics) {
        if let Some(msg) = messages::slam_pose(sim, st) {
            self.slam.publish(&msg, &self.logger);
        }
    }

    /// The behaviour state.
    pub fn state(&self, sim: &Simulator) {
        self.state.publish(&messages::state(sim), &self.logger);
    }

    /// The grid (latched).
    pub fn grid(&self, sim: &Simulator, st: &Statics) {
        self.grid.publish(&messages::grid_markers(sim, st), &self.logger);
    }

    /// Vehicle, path, destination and state markers.
    pub fn markers(&self, sim: &Simulator, st: &Statics) {
        self.markers
            .publish(&messages::vehicle_markers(sim, st), &self.logger);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink that fails while `broken` is set.
    struct Flaky {
        broken: Cell<bool>,
        sent: Cell<u32>,
    }

    impl Sink<u32> for Flaky {
        fn send(&self, _msg: &u32) -> Result<(), String> {
            if self.broken.get() {
                Err("publisher invalid".into())
            } else {
                self.sent.set(self.sent.get() + 1);
                Ok(())
            }
        }
    }

    #[test]
    fn the_first_failure_is_reported_with_the_topic_then_counted() {
        let p = Logged::new(
            Flaky {
                broken: Cell::new(false),
                sent: Cell::new(0),
            },
            "odom",
        );
        assert_eq!(p.send(&1), None);
        p.sink.broken.set(true);
        let line = p.send(&2).unwrap();
        assert!(
            line.contains("odom") && line.contains("publisher invalid"),
            "{line}"
        );
        for i in 0..100 {
            assert_eq!(p.send(&i), None, "logged once, not at the simulation rate");
        }
        assert_eq!(p.failures.get(), 101);
        p.sink.broken.set(false);
        assert_eq!(p.send(&3), None);
        assert_eq!(p.sink.sent.get(), 2);
    }
}
