//! What the recorder reports (the contents of `~/status` without its stamp) and the one-line summary of it
//! that `lockstep bag record` prints.

/// One recorded topic in the status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicStatus {
    pub topic: String,
    pub type_name: String,
    /// Messages taken from DDS (recorded or not).
    pub received: u64,
    pub messages: u64,
    pub bytes: u64,
    /// Known missing from the dependency headers' sequence gaps.
    pub dropped: u64,
    pub dropped_queue_full: u64,
    pub dropped_after_error: u64,
}

/// A topic the recorder cannot record, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkippedTopic {
    pub topic: String,
    pub type_name: String,
    pub reason: String,
}

/// The recorder's state as `~/status` publishes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    pub bag_path: String,
    pub paused: bool,
    /// False once recording stopped on a write failure.
    pub recording: bool,
    /// Why recording stopped, and what the bag holds; empty while all is well.
    pub error: String,
    /// The cycle in the module topology learnt so far; empty while it is a DAG.
    pub topology_error: String,
    pub file_index: u32,
    pub total_messages: u64,
    pub total_bytes: u64,
    pub queue_bytes: u64,
    pub max_queue_bytes: u64,
    pub topics: Vec<TopicStatus>,
    pub skipped: Vec<SkippedTopic>,
}

impl Status {
    /// `12 topics, 3400 messages, 1.2 MB, 0 dropped` (and `paused`, `error: ...` when so).
    pub fn line(&self) -> String {
        let dropped: u64 = (self.topics.iter())
            .map(|t| t.dropped_queue_full + t.dropped_after_error)
            .sum();
        let mut line = format!(
            "{} topics, {} messages, {:.1} MB, {} dropped",
            self.topics.len(),
            self.total_messages,
            self.total_bytes as f64 / 1e6,
            dropped
        );
        if self.paused {
            line.push_str(", paused");
        }
        if !self.skipped.is_empty() {
            line.push_str(&format!(", {} skipped (type not installed)", self.skipped.len()));
        }
        if !self.error.is_empty() {
            line.push_str(&format!(", error: {}", self.error));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_counts_topics_messages_megabytes_and_the_recorders_own_drops() {
        let mut s = Status {
            total_messages: 3400,
            total_bytes: 1_250_000,
            topics: vec![
                TopicStatus {
                    dropped: 7, // missing upstream: not the recorder's drop
                    dropped_queue_full: 2,
                    ..TopicStatus::default()
                },
                TopicStatus {
                    dropped_after_error: 1,
                    ..TopicStatus::default()
                },
            ],
            ..Status::default()
        };
        assert_eq!(s.line(), "2 topics, 3400 messages, 1.2 MB, 3 dropped");
        s.paused = true;
        s.skipped.push(SkippedTopic::default());
        s.error = "disk full".into();
        assert_eq!(
            s.line(),
            "2 topics, 3400 messages, 1.2 MB, 3 dropped, paused, 1 skipped (type not installed), error: disk full"
        );
    }
}
