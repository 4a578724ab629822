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
}

/// Statistics of a recording, sorted by topic name.
#[derive(Debug, Clone, Default)]
pub struct Statistics {
    topics: BTreeMap<String, TopicStats>,
    /// Highest header sequence number seen per (data channel, module).
    last_sequence: BTreeMap<(String, String), u32>,
}

impl Statistics {
    /// Count one recorded message.
    pub fn record(&mut self, topic: &str, type_name: &str, bytes: usize) {
        let stats = self.topics.entry(topic.to_owned()).or_default();
        if stats.type_name.is_empty() {
            type_name.clone_into(&mut stats.type_name);
        }
        stats.messages += 1;
        stats.bytes += bytes as u64;
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
    fn joining_late_is_not_a_drop() {
        let mut s = Statistics::default();
        assert_eq!(s.note_header("/c3", "m1", 5), 0);
        assert_eq!(s.note_header("/c3", "m1", 7), 1);
    }
}
