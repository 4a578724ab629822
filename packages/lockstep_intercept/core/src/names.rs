//! Which topics and services are the node's data, and which are ROS infrastructure or Lockstep's own.

/// Topics every node has that are never data inputs or outputs of its computations.
const INFRASTRUCTURE_TOPICS: &[&str] = &["/rosout", "/parameter_events", "/clock"];

/// Service suffixes of the parameter and type-description services rclcpp and rclpy create for every node.
const INFRASTRUCTURE_SERVICE_SUFFIXES: &[&str] = &[
    "/get_parameters",
    "/set_parameters",
    "/set_parameters_atomically",
    "/list_parameters",
    "/describe_parameters",
    "/get_parameter_types",
    "/get_type_description",
];

/// The prefix of the topics the interceptor publishes each node's event log on.
pub const EVENTS_TOPIC_PREFIX: &str = "/lockstep/events/";

/// The topic a replay grants `module`'s events on, and the one the interceptor answers on.
pub fn grant_topics(module: &str) -> (String, String) {
    (
        format!("/{module}/lockstep/grant"),
        format!("/{module}/lockstep/done"),
    )
}

/// The topic the interceptor publishes the requests (`request`) or responses of `service` on, serialized,
/// for a replay to deliver them again: `<service>/lockstep_request`, `<service>/lockstep_response`.
pub fn call_topic(service: &str, request: bool) -> String {
    format!(
        "{service}/lockstep_{}",
        if request { "request" } else { "response" }
    )
}

/// The topic of one node's event log: `/lockstep/events/<module>` (`/lockstep/events/robot1/filter`).
pub fn events_topic(module: &str) -> String {
    format!("{EVENTS_TOPIC_PREFIX}{module}")
}

/// Whether `topic` belongs to Lockstep itself (dependency headers, topologies, event logs, step services,
/// the replay's grants to a node: `<node>/lockstep/grant`).
pub fn is_lockstep_topic(topic: &str) -> bool {
    topic.contains("/lockstep/")
        || topic.ends_with(lockstep_trace::names::HEADER_TOPIC_SUFFIX)
        || topic.ends_with("/lockstep_request")
        || topic.ends_with("/lockstep_response")
}

/// Whether `topic` is infrastructure: logged apart, never a data input.
pub fn is_infrastructure_topic(topic: &str) -> bool {
    INFRASTRUCTURE_TOPICS.contains(&topic) || is_lockstep_topic(topic)
}

/// Whether `service` is one of the parameter or type-description services every node serves, or Lockstep's.
pub fn is_infrastructure_service(service: &str) -> bool {
    INFRASTRUCTURE_SERVICE_SUFFIXES
        .iter()
        .any(|suffix| service.ends_with(suffix))
        || service.ends_with("/lockstep/step")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infrastructure_is_told_apart_from_data() {
        for topic in [
            "/rosout",
            "/parameter_events",
            "/clock",
            "/scan/lockstep_header",
            "/lockstep/topology/m1",
            "/robot1/filter/lockstep/grant",
        ] {
            assert!(is_infrastructure_topic(topic), "{topic}");
        }
        for topic in ["/scan", "/rosout_agg", "/robot1/clock_sync"] {
            assert!(!is_infrastructure_topic(topic), "{topic}");
        }
        assert!(is_infrastructure_service("/filter/get_parameters"));
        assert!(is_infrastructure_service("/filter/get_type_description"));
        assert!(!is_infrastructure_service("/add_two_ints"));
        assert_eq!(events_topic("robot1/filter"), "/lockstep/events/robot1/filter");
    }
}
