//! Topic, channel and module names shared by publishers, subscriptions, the step protocol and the tools that
//! find a module's topics: plain string rules, so the recorder and the replay compute the same names the
//! modules use without a node.

/// Suffix of the sidecar topic that carries a channel's headers.
pub const HEADER_TOPIC_SUFFIX: &str = "/lockstep_header";

/// Prefix of the latched per-module topology topics.
pub const TOPOLOGY_TOPIC_PREFIX: &str = "/lockstep/topology/";

/// The fully qualified name of `topic` as seen from a node in `namespace`: absolute names stay, relative ones
/// are put under the namespace. Channel names in headers are fully qualified so that headers from nodes in
/// different namespaces compare. (`~` private names and remapping rules are not applied: r2r does not expose
/// rcl's name resolution; remap absolute names instead.)
pub fn resolve_channel(namespace: &str, topic: &str) -> String {
    if topic.starts_with('/') {
        return topic.to_owned();
    }
    let namespace = namespace.trim_end_matches('/');
    format!("{namespace}/{topic}")
}

/// The module name a node writes into its headers and topology: its fully qualified name without the leading
/// slash. In the root namespace that is the node name (`obstacle_fusion`); under a namespace the namespace
/// comes first (`robot1/obstacle_fusion`), so two nodes of one name in two namespaces are two modules. The
/// node's step service is then `/<module name>/lockstep/step` ([`step_service_name`]) and its topology is
/// latched on `/lockstep/topology/<module name>` ([`topology_topic`]).
pub fn module_name(namespace: &str, node_name: &str) -> String {
    let namespace = namespace.trim_matches('/');
    if namespace.is_empty() {
        node_name.to_owned()
    } else {
        format!("{namespace}/{node_name}")
    }
}

/// The sidecar topic carrying the headers of `topic` (same relative/absolute form as `topic`).
pub fn header_topic(topic: &str) -> String {
    format!("{}{HEADER_TOPIC_SUFFIX}", topic.trim_end_matches('/'))
}

/// The latched topic of one module's topology: `/lockstep/topology/<module>` (a namespaced module's name
/// holds its namespace: `/lockstep/topology/robot1/obstacle_fusion`).
pub fn topology_topic(module_name: &str) -> String {
    format!("{TOPOLOGY_TOPIC_PREFIX}{}", module_name.trim_matches('/'))
}

/// The step service of the module `module` (what the replay calls): `/<module>/lockstep/step`. Module names
/// are fully qualified node names without the leading slash ([`module_name`]), so this is the node's
/// `~/lockstep/step` in whatever namespace it runs.
pub fn step_service_name(module: &str) -> String {
    format!("/{}/lockstep/step", module.trim_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_resolve_against_the_namespace() {
        assert_eq!(resolve_channel("/", "odom"), "/odom");
        assert_eq!(resolve_channel("", "odom"), "/odom");
        assert_eq!(resolve_channel("/robot1", "odom"), "/robot1/odom");
        assert_eq!(resolve_channel("/robot1/", "odom"), "/robot1/odom");
        assert_eq!(resolve_channel("/robot1", "/odom"), "/odom");
        assert_eq!(header_topic("cmd_vel"), "cmd_vel/lockstep_header");
        assert_eq!(header_topic("/a/b"), "/a/b/lockstep_header");
    }

    #[test]
    fn module_names_carry_the_namespace_without_the_leading_slash() {
        assert_eq!(module_name("/", "obstacle_fusion"), "obstacle_fusion");
        assert_eq!(module_name("", "obstacle_fusion"), "obstacle_fusion");
        assert_eq!(
            module_name("/robot1", "obstacle_fusion"),
            "robot1/obstacle_fusion"
        );
        assert_eq!(
            module_name("/fleet/robot2/", "obstacle_fusion"),
            "fleet/robot2/obstacle_fusion"
        );
        assert_eq!(
            step_service_name("robot1/obstacle_fusion"),
            "/robot1/obstacle_fusion/lockstep/step"
        );
        assert_eq!(
            step_service_name("obstacle_fusion"),
            "/obstacle_fusion/lockstep/step"
        );
        assert_eq!(
            topology_topic("robot1/obstacle_fusion"),
            "/lockstep/topology/robot1/obstacle_fusion"
        );
    }
}
