//! What a topic of a ROS graph or bag carries, from its name and type: its own messages, a service's
//! introspection events (`<service>/_service_event`, type `<pkg>/srv/<Service>_Event`), or a part of an action
//! (`<action>/_action/feedback` and `status`, and the events of its goal, result and cancel services), as
//! rosbag2 tells them apart when it records and shows a bag.

/// What a topic of the graph carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Carries {
    /// Messages of its own.
    Topic,
    /// The introspection events of this service.
    Service(String),
    /// A part of this action (feedback, status, or the events of one of its services).
    Action(String),
}

/// The suffix of a service's introspection event topic.
pub const SERVICE_EVENT_SUFFIX: &str = "/_service_event";
/// What separates an action's name from the names of its topics and services.
pub const ACTION_INFIX: &str = "/_action/";

/// What `topic` carries, from its name and type (rosbag2's rule: a service event topic ends with
/// `/_service_event` and its type ends with `_Event`).
pub fn carries(topic: &str, type_name: &str) -> Carries {
    if let Some((action, part)) = topic.rsplit_once(ACTION_INFIX) {
        let event = |service: &str| {
            part.strip_prefix(service)
                .is_some_and(|rest| rest == SERVICE_EVENT_SUFFIX)
        };
        let topic_part = matches!(part, "feedback" | "status");
        if !action.is_empty()
            && (topic_part
                || ["send_goal", "get_result", "cancel_goal"]
                    .iter()
                    .any(|s| event(s)))
        {
            return Carries::Action(action.to_owned());
        }
    }
    match topic.strip_suffix(SERVICE_EVENT_SUFFIX) {
        Some(service) if !service.is_empty() && type_name.ends_with("_Event") => {
            Carries::Service(service.to_owned())
        }
        _ => Carries::Topic,
    }
}

/// The service type of a service event type: `pkg/srv/Name_Event` -> `pkg/srv/Name`.
pub fn service_type(event_type: &str) -> &str {
    event_type.strip_suffix("_Event").unwrap_or(event_type)
}

/// The action type of an action part's type, where it names it: `pkg/action/Name_FeedbackMessage`,
/// `pkg/action/Name_SendGoal_Event` and `pkg/action/Name_GetResult_Event` -> `pkg/action/Name`.
pub fn action_type(part_type: &str) -> Option<&str> {
    if !part_type.contains("/action/") {
        return None;
    }
    ["_FeedbackMessage", "_SendGoal_Event", "_GetResult_Event"]
        .iter()
        .find_map(|suffix| part_type.strip_suffix(suffix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_events_and_action_parts_are_told_from_topics() {
        let event = "example_interfaces/srv/AddTwoInts_Event";
        assert_eq!(
            carries("/add/_service_event", event),
            Carries::Service("/add".into())
        );
        assert_eq!(
            carries("/add/_service_event", "std_msgs/msg/String"),
            Carries::Topic
        );
        assert_eq!(carries("/_service_event", event), Carries::Topic);
        for part in [
            "feedback",
            "status",
            "send_goal/_service_event",
            "get_result/_service_event",
            "cancel_goal/_service_event",
        ] {
            assert_eq!(
                carries(&format!("/r1/move/_action/{part}"), event),
                Carries::Action("/r1/move".into()),
                "{part}"
            );
        }
        assert_eq!(carries("/move/_action/other", "x/msg/Y"), Carries::Topic);
    }

    #[test]
    fn types_are_named_from_their_parts() {
        assert_eq!(service_type("std_srvs/srv/SetBool_Event"), "std_srvs/srv/SetBool");
        assert_eq!(
            action_type("p/action/Count_FeedbackMessage"),
            Some("p/action/Count")
        );
        assert_eq!(
            action_type("p/action/Count_SendGoal_Event"),
            Some("p/action/Count")
        );
        assert_eq!(action_type("action_msgs/msg/GoalStatusArray"), None);
    }
}
