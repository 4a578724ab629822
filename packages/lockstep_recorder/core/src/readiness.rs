//! When the recorder says it is ready: once a look at the ROS graph left no topic with publishers waiting to be
//! subscribed, and every topic named in `topics` has delivered a message (the proof that its subscription
//! matched a publisher: the generic subscriptions cannot count their matches). Launch files wait for the line
//! (`<?lockstep wait-for process="lockstep_recorder" output="ready: recording"?>`) before they start the nodes
//! whose inputs must be in the recording from their first message.

use std::sync::atomic::Ordering;

use crate::Recording;

/// The readiness of one recorder: said once.
#[derive(Debug, Clone, Default)]
pub struct Readiness {
    named: Vec<String>,
    told_waiting: bool,
    ready: bool,
}

impl Readiness {
    /// From the `topics` parameter (comma-separated; relative names made absolute, as the selection takes them).
    pub fn new(topics: &str) -> Readiness {
        let named = (topics.split(',').map(str::trim).filter(|t| !t.is_empty()))
            .map(|t| {
                if t.starts_with('/') {
                    t.to_owned()
                } else {
                    format!("/{t}")
                }
            })
            .collect();
        Readiness {
            named,
            ..Readiness::default()
        }
    }

    /// After a look at the graph that left `undecided` topics with publishers not subscribed yet: the line to
    /// log, if any. `ready: recording <n> topics` once; before it, once, which named topics it still waits for.
    pub fn after_look(&mut self, undecided: usize, recording: &Recording) -> Option<String> {
        if self.ready || undecided > 0 {
            return None;
        }
        let silent: Vec<&str> = (self.named.iter())
            .filter(|t| recording.received_counter(t).load(Ordering::Relaxed) == 0)
            .map(String::as_str)
            .collect();
        if !silent.is_empty() {
            let first = !std::mem::replace(&mut self.told_waiting, true);
            return first.then(|| {
                format!(
                    "ready once these named topics deliver a message: {}",
                    silent.join(", ")
                )
            });
        }
        self.ready = true;
        Some(format!(
            "ready: recording {} topics",
            recording.status().topics.len()
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;

    use super::*;
    use crate::pending::tests::format;
    use crate::Pending;

    fn recording() -> Arc<Recording> {
        let log: crate::recording::Log = Arc::new(|_, _| {});
        Recording::new(
            false,
            "bag".into(),
            1 << 20,
            log,
            Arc::new(AtomicU64::new(0)),
            Pending::new(format()),
        )
    }

    #[test]
    fn ready_once_the_graph_is_subscribed_and_every_named_topic_delivered() {
        let rec = recording();
        let mut readiness = Readiness::new(" scan_front, /odom ,");
        assert_eq!(
            readiness.after_look(2, &rec),
            None,
            "topics with publishers still to subscribe"
        );
        assert_eq!(
            readiness.after_look(0, &rec).as_deref(),
            Some("ready once these named topics deliver a message: /scan_front, /odom")
        );
        assert_eq!(readiness.after_look(0, &rec), None, "the wait is said once");
        rec.received_counter("/scan_front")
            .fetch_add(1, Ordering::Relaxed);
        assert_eq!(
            readiness.after_look(0, &rec),
            None,
            "/odom has delivered nothing yet"
        );
        rec.received_counter("/odom").fetch_add(1, Ordering::Relaxed);
        assert_eq!(
            readiness.after_look(0, &rec).as_deref(),
            Some("ready: recording 0 topics")
        );
        assert_eq!(readiness.after_look(0, &rec), None, "ready is said once");
    }

    #[test]
    fn with_no_named_topics_the_first_complete_look_is_ready() {
        let mut readiness = Readiness::new("");
        assert_eq!(
            readiness.after_look(0, &recording()).as_deref(),
            Some("ready: recording 0 topics")
        );
    }
}
