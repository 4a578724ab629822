//! Which topics a recording takes, like `ros2 bag record`: topics, services (their introspection events,
//! `<service>/_service_event`) and actions (their feedback and status topics and the events of their goal,
//! result and cancel services, `<action>/_action/...`), each all or by name, and/or by regular expression or
//! type, minus exclusions.

use std::collections::BTreeSet;

use lockstep_bag::carries::{carries, Carries};
use regex::Regex;

use crate::error::{Error, Result};

/// What to record, as plain values (the recorder's parameters and `lockstep bag record`'s flags). Names are
/// taken as absolute (a leading `/` is added when missing); empty patterns mean none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SelectionSettings {
    pub all_topics: bool,
    pub all_services: bool,
    pub all_actions: bool,
    pub topics: Vec<String>,
    pub services: Vec<String>,
    pub actions: Vec<String>,
    /// Topics, services and actions whose name matches.
    pub include_regex: String,
    /// Topics, services and actions whose name matches are left out (named ones are still recorded).
    pub exclude_regex: String,
    pub exclude_topics: Vec<String>,
    pub exclude_services: Vec<String>,
    pub exclude_actions: Vec<String>,
    /// Topics of these types (`pkg/msg/Type`) are recorded.
    pub topic_types: Vec<String>,
    /// Topics of these types are left out (named ones are still recorded).
    pub exclude_topic_types: Vec<String>,
}

/// The recorder's filter.
#[derive(Debug, Clone)]
pub struct TopicSelection {
    all: [bool; 3],
    named: [BTreeSet<String>; 3],
    excluded: [BTreeSet<String>; 3],
    include: Option<Regex>,
    exclude: Option<Regex>,
    types: BTreeSet<String>,
    excluded_types: BTreeSet<String>,
}

impl TopicSelection {
    /// Every kind or none (`all`), the topics named, and regular expressions on names, as `ros2 bag record`
    /// took them before services and actions (the live view's selection).
    pub fn new(all: bool, topics: &[String], include: &str, exclude: &str) -> Result<Self> {
        Self::from_settings(&SelectionSettings {
            all_topics: all,
            all_services: all,
            all_actions: all,
            topics: topics.to_vec(),
            include_regex: include.to_owned(),
            exclude_regex: exclude.to_owned(),
            ..SelectionSettings::default()
        })
    }

    /// The filter `s` describes, or which name or pattern is wrong.
    pub fn from_settings(s: &SelectionSettings) -> Result<Self> {
        let names = |list: &[String]| -> Result<BTreeSet<String>> {
            list.iter().filter_map(|n| absolute(n)).collect()
        };
        Ok(Self {
            all: [s.all_topics, s.all_services, s.all_actions],
            named: [names(&s.topics)?, names(&s.services)?, names(&s.actions)?],
            excluded: [
                names(&s.exclude_topics)?,
                names(&s.exclude_services)?,
                names(&s.exclude_actions)?,
            ],
            include: compile("include_regex", &s.include_regex)?,
            exclude: compile("exclude_regex", &s.exclude_regex)?,
            types: s
                .topic_types
                .iter()
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty())
                .collect(),
            excluded_types: (s.exclude_topic_types.iter())
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty())
                .collect(),
        })
    }

    /// Whether `topic` (absolute name) is to be recorded, its type unknown (taken as a plain topic's, unless its
    /// name says it is a service's or an action's).
    pub fn matches(&self, topic: &str) -> bool {
        self.matches_typed(topic, "")
    }

    /// Whether `topic` of type `type_name` is to be recorded. A topic, service or action named explicitly is
    /// recorded even if an exclusion matches it: naming it is the stronger statement.
    pub fn matches_typed(&self, topic: &str, type_name: &str) -> bool {
        let (kind, name) = match carries(topic, type_name) {
            Carries::Topic => (0, topic.to_owned()),
            Carries::Service(service) => (1, service),
            Carries::Action(action) => (2, action),
        };
        if self.named[kind].contains(&name) {
            return true;
        }
        let by_type = kind == 0 && self.types.contains(type_name);
        let candidate =
            self.all[kind] || by_type || self.include.as_ref().is_some_and(|re| re.is_match(&name));
        let excluded = self.excluded[kind].contains(&name)
            || self.exclude.as_ref().is_some_and(|re| re.is_match(&name))
            || (kind == 0 && self.excluded_types.contains(type_name));
        candidate && !excluded
    }
}

/// `name` as an absolute name (`None` when blank), or why it is not a name.
fn absolute(name: &str) -> Option<Result<String>> {
    let t = name.trim();
    if t.is_empty() {
        return None;
    }
    Some(if t.contains(char::is_whitespace) || t == "/" {
        Err(Error::InvalidTopic { topic: t.to_owned() })
    } else if t.starts_with('/') {
        Ok(t.to_owned())
    } else {
        Ok(format!("/{t}"))
    })
}

fn compile(parameter: &'static str, pattern: &str) -> Result<Option<Regex>> {
    if pattern.is_empty() {
        return Ok(None);
    }
    Regex::new(pattern)
        .map(Some)
        .map_err(|source| Error::InvalidRegex {
            parameter,
            pattern: pattern.to_owned(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn all_minus_exclude() {
        let s = TopicSelection::new(true, &[], "", "^/rosout$|lockstep_header$").unwrap();
        assert!(s.matches("/odom"));
        assert!(!s.matches("/rosout"));
        assert!(!s.matches("/c5/lockstep_header"));
    }

    #[test]
    fn list_and_regex() {
        let s = TopicSelection::new(false, &names(&["odom", "/cmd_vel"]), "^/scan_", "rear").unwrap();
        assert!(s.matches("/odom") && s.matches("/cmd_vel") && s.matches("/scan_front"));
        assert!(!s.matches("/scan_rear") && !s.matches("/tf"));
    }

    #[test]
    fn a_named_topic_beats_exclude() {
        let s = TopicSelection::new(true, &names(&["/rosout"]), "", "rosout").unwrap();
        assert!(s.matches("/rosout"));
    }

    #[test]
    fn bad_regex_names_the_parameter() {
        let e = TopicSelection::new(true, &[], "", "([").unwrap_err().to_string();
        assert!(
            e.starts_with("parameter `exclude_regex`: invalid regular expression `([`"),
            "{e}"
        );
        let e = TopicSelection::new(true, &names(&["a b"]), "", "")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`a b`"), "{e}");
    }

    #[test]
    fn each_kind_is_chosen_on_its_own() {
        let only = |s: SelectionSettings| TopicSelection::from_settings(&s).unwrap();
        let ev = "pkg/srv/Add_Event";
        let all_services = only(SelectionSettings {
            all_services: true,
            ..Default::default()
        });
        assert!(all_services.matches_typed("/add/_service_event", ev));
        assert!(!all_services.matches_typed("/odom", "nav_msgs/msg/Odometry"));
        assert!(!all_services.matches_typed("/move/_action/status", "action_msgs/msg/GoalStatusArray"));
        let all_topics = only(SelectionSettings {
            all_topics: true,
            ..Default::default()
        });
        assert!(all_topics.matches_typed("/odom", "nav_msgs/msg/Odometry"));
        assert!(!all_topics.matches_typed("/add/_service_event", ev));
        let named = only(SelectionSettings {
            services: names(&["add"]),
            actions: names(&["/move"]),
            ..Default::default()
        });
        assert!(named.matches_typed("/add/_service_event", ev));
        assert!(named.matches_typed("/move/_action/feedback", "pkg/action/Move_FeedbackMessage"));
        assert!(!named.matches_typed("/other/_service_event", ev) && !named.matches_typed("/add", "x/msg/Y"));
        let excluded = only(SelectionSettings {
            all_topics: true,
            all_services: true,
            exclude_topics: names(&["/tf"]),
            exclude_services: names(&["/add"]),
            exclude_topic_types: names(&["sensor_msgs/msg/Image"]),
            ..Default::default()
        });
        assert!(!excluded.matches_typed("/tf", "tf2_msgs/msg/TFMessage"));
        assert!(!excluded.matches_typed("/add/_service_event", ev));
        assert!(!excluded.matches_typed("/camera", "sensor_msgs/msg/Image"));
        assert!(excluded.matches_typed("/odom", "nav_msgs/msg/Odometry"));
        let typed = only(SelectionSettings {
            topic_types: names(&["sensor_msgs/msg/Image"]),
            ..Default::default()
        });
        assert!(typed.matches_typed("/camera", "sensor_msgs/msg/Image"));
        assert!(!typed.matches_typed("/odom", "nav_msgs/msg/Odometry"));
        let regex = only(SelectionSettings {
            include_regex: "^/ad".into(),
            ..Default::default()
        });
        assert!(
            regex.matches_typed("/add/_service_event", ev),
            "a service matches by its own name"
        );
    }
}
