//! Which topics a recording takes: all, a list, and/or regular expressions, minus an exclude expression.

use regex::Regex;

use crate::error::{Error, Result};

/// The recorder's topic filter, like `ros2 bag record` (`-a`, topic list, `--regex`, `--exclude-regex`).
#[derive(Debug, Clone)]
pub struct TopicSelection {
    all: bool,
    topics: Vec<String>,
    include: Option<Regex>,
    exclude: Option<Regex>,
}

impl TopicSelection {
    /// `topics` are taken as absolute names (a leading `/` is added when missing). Empty patterns mean none.
    pub fn new(all: bool, topics: &[String], include: &str, exclude: &str) -> Result<Self> {
        let topics = topics
            .iter()
            .map(|t| t.trim())
            .filter(|t| !t.is_empty())
            .map(|t| {
                if t.contains(char::is_whitespace) || t == "/" {
                    Err(Error::InvalidTopic { topic: t.to_owned() })
                } else if t.starts_with('/') {
                    Ok(t.to_owned())
                } else {
                    Ok(format!("/{t}"))
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            all,
            topics,
            include: compile("include_regex", include)?,
            exclude: compile("exclude_regex", exclude)?,
        })
    }

    /// Whether `topic` (absolute name) is to be recorded. A topic named explicitly is recorded even if the
    /// exclude expression matches it: naming it is the stronger statement.
    pub fn matches(&self, topic: &str) -> bool {
        if self.topics.iter().any(|t| t == topic) {
            return true;
        }
        let candidate = self.all || self.include.as_ref().is_some_and(|re| re.is_match(topic));
        candidate && !self.exclude.as_ref().is_some_and(|re| re.is_match(topic))
    }
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
}
