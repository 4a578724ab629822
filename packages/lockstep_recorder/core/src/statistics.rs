//! Per-topic counts and the drops the recorder can prove: gaps in the sequence numbers of the dependency
//! headers of a channel (each publisher numbers its outputs 0, 1, 2, ... per channel).

use std::collections::BTreeMap;

/// What has been recorded on one topic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicStats {
    pub type_name: String,
    pub messages: u64,
    pub bytes: u64,
    /// Messages known missing on this data topic (from its headers' sequence gaps).
    pub dropped: u64,
    /// Messages received and dropped because the write queue was full.
    pub dropped_queue_full: u64,
    /// Messages not in the bag because of a write failure: in the chunk that failed, or received after
    /// recording stopped.
    pub dropped_after_error: u64,
}

/// Why the recorder itself dropped a message it received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The queue between the subscriptions and the bag writer held `max_queue_bytes` already.
    QueueFull,
    /// Recording had stopped on a write failure.
    AfterError,
}

/// Statistics of a recording, sorted by topic name.
#[derive(Debug, Clone, Default)]
pub struct Statistics {
    topics: BTreeMap<String, TopicStats>,
    /// Highest header sequence number seen per (data channel, module).
    last_sequence: BTreeMap<(String, String), u32>,
}

impl Statistics {
    /// List `topic` (with nothing recorded yet), so a topic shows from the moment it is subscribed.
    pub fn register(&mut self, topic: &str, type_name: &str) {
        self.entry(topic, type_name);
    }

    /// The statistics of `topic`, created (with `type_name`) on first use.
    fn entry(&mut self, topic: &str, type_name: &str) -> &mut TopicStats {
        let stats = self.topics.entry(topic.to_owned()).or_default();
        if stats.type_name.is_empty() {
            type_name.clone_into(&mut stats.type_name);
        }
        stats
    }

    /// Count one recorded message.
    pub fn record(&mut self, topic: &str, type_name: &str, bytes: usize) {
        let stats = self.entry(topic, type_name);
        stats.messages += 1;
        stats.bytes += bytes as u64;
    }

    /// Count one message the recorder received and did not record; returns the topic's count for `reason`.
    pub fn drop_message(&mut self, topic: &str, type_name: &str, reason: DropReason) -> u64 {
        let stats = self.entry(topic, type_name);
        let counter = match reason {
            DropReason::QueueFull => &mut stats.dropped_queue_full,
            DropReason::AfterError => &mut stats.dropped_after_error,
        };
        *counter += 1;
        *counter
    }

    /// After a write failure the bag holds `kept` messages of `topic`: those counted as recorded beyond it
    /// were lost with the failed chunk and count as `dropped_after_error` instead.
    pub fn keep_only(&mut self, topic: &str, kept: u64) {
        if let Some(stats) = self.topics.get_mut(topic) {
            let lost = stats.messages.saturating_sub(kept);
            stats.messages -= lost;
            stats.dropped_after_error += lost;
        }
    }

    /// Note a dependency header of `channel` published by `module` with `sequence`; returns how many
    /// messages this header shows to be missing. Late (reordered) headers are not counted twice.
    pub fn note_header(&mut self, channel: &str, module: &str, sequence: u32) -> u64 {
        let key = (channel.to_owned(), module.to_owned());
        let missing = match self.last_sequence.get(&key) {
            // The first header sets the baseline: what was published before the recording started is
            // not a drop.
            None => 0,
            Some(&last) if sequence > last => u64::from(sequence - last - 1),
            Some(_) => 0,
        };
        if self.last_sequence.get(&key).is_none_or(|&last| sequence > last) {
            self.last_sequence.insert(key, sequence);
        }
        if missing > 0 {
            self.topics.entry(channel.to_owned()).or_default().dropped += missing;
        }
        missing
    }

    /// Per-topic statistics, sorted by topic.
    pub fn topics(&self) -> impl Iterator<Item = (&str, &TopicStats)> {
        self.topics.iter().map(|(name, stats)| (name.as_str(), stats))
    }

    pub fn total_messages(&self) -> u64 {
        self.topics.values().map(|s| s.messages).sum()
    }

    pub fn total_bytes(&self) -> u64 {
        self.topics.values().map(|s| s.bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_messages_and_bytes_per_topic() {
        let mut s = Statistics::default();
        s.record("/b", "std_msgs/msg/String", 10);
        s.record("/a", "std_msgs/msg/String", 3);
        s.record("/b", "std_msgs/msg/String", 5);
        let topics: Vec<_> = s
            .topics()
            .map(|(n, t)| (n.to_owned(), t.messages, t.bytes))
            .collect();
        assert_eq!(topics, vec![("/a".into(), 1, 3), ("/b".into(), 2, 15)]);
        assert_eq!((s.total_messages(), s.total_bytes()), (3, 18));
    }

    #[test]
    fn sequence_gaps_are_drops_and_reordering_is_not() {
        let mut s = Statistics::default();
        assert_eq!(s.note_header("/c5", "m2", 0), 0);
        assert_eq!(s.note_header("/c5", "m2", 1), 0);
        assert_eq!(s.note_header("/c5", "m2", 4), 2); // 2 and 3 missing
        assert_eq!(s.note_header("/c5", "m2", 3), 0); // late, not a new drop
        assert_eq!(s.note_header("/c5", "other", 0), 0); // another publisher numbers on its own
        assert_eq!(s.topics().next().map(|(_, t)| t.dropped), Some(2));
    }

    #[test]
    fn recorder_drops_are_counted_per_topic_and_reason() {
        let mut s = Statistics::default();
        s.record("/a", "std_msgs/msg/String", 4);
        assert_eq!(
            s.drop_message("/a", "std_msgs/msg/String", DropReason::QueueFull),
            1
        );
        assert_eq!(
            s.drop_message("/a", "std_msgs/msg/String", DropReason::QueueFull),
            2
        );
        assert_eq!(
            s.drop_message("/b", "std_msgs/msg/Int32", DropReason::AfterError),
            1
        );
        let topics: Vec<_> = s
            .topics()
            .map(|(n, t)| {
                (
                    n.to_owned(),
                    t.type_name.clone(),
                    t.messages,
                    t.dropped_queue_full,
                    t.dropped_after_error,
                )
            })
            .collect();
        assert_eq!(
            topics,
            vec![
                ("/a".into(), "std_msgs/msg/String".into(), 1, 2, 0),
                ("/b".into(), "std_msgs/msg/Int32".into(), 0, 0, 1)
            ]
        );
        // Drops are not recorded messages.
        assert_eq!(s.total_messages(), 1);
        s.keep_only("/a", 0);
        assert_eq!(
            s.topics()
                .next()
                .map(|(_, t)| (t.messages, t.dropped_after_error)),
            Some((0, 1))
        );
        s.register("/c", "std_msgs/msg/Empty");
        assert_eq!(s.topics().last().map(|(n, t)| (n, t.messages)), Some(("/c", 0)));
    }

    #[test]
    fn joining_late_is_not_a_drop() {
        let mut s = Statistics::default();
        assert_eq!(s.note_header("/c3", "m1", 5), 0);
        assert_eq!(s.note_header("/c3", "m1", 7), 1);
    }
}
