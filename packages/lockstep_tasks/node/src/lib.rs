//! What the task manager and the simulated actuators share: the action server they serve their actions with.

/// The action server, kept where every node crate can use it.
pub use lockstep_ros::action_server;

/// `name` resolved against a namespace, as ROS resolves a relative name (no remapping): `/robot1/navigate`
/// for `navigate` in `/robot1`; an absolute name stays as it is.
pub fn qualified(namespace: &str, name: &str) -> String {
    if name.starts_with('/') {
        name.to_owned()
    } else if namespace.is_empty() || namespace == "/" {
        format!("/{name}")
    } else {
        format!("{}/{name}", namespace.trim_end_matches('/'))
    }
}
