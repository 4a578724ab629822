//! Recording a simulation: under `use_sim_time` messages are stamped with the ROS clock, which follows
//! `/clock` (rosbag2's recorder does the same), so a bag of a simulation has the simulation's times.

use lockstep_ros::{lock, SharedNode};

/// Whether the recorder follows `/clock`: the node's `use_sim_time` parameter is true, or `force` (the command
/// line's `--use-sim-time`) turns it on.
pub fn follow(node: &SharedNode, force: bool) -> anyhow::Result<bool> {
    let mut n = lock(node)?;
    if force {
        let source = n.get_time_source();
        source.enable_sim_time(&mut n)?;
        return Ok(true);
    }
    let on = n
        .params
        .lock()
        .map(|p| p.get("use_sim_time").map(|p| p.value.clone()) == Some(r2r::ParameterValue::Bool(true)))
        .unwrap_or(false);
    Ok(on)
}

/// The ROS clock now, in nanoseconds; 0 before the first `/clock` message (as rclcpp's clock reads then).
pub fn now_ns(clock: &std::sync::Mutex<r2r::Clock>) -> u64 {
    lockstep_ros::time::clock_now(clock).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
