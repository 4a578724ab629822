//! What each received message goes through before it is queued for the bag ([`TopicRecorder`]): counted,
//! dropped when paused, stopped or over the queue bound (and the drops logged, throttled), and, for
//! dependency headers and declared topologies, also taught to the bag thread.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

use crate::bag_thread::Command;
use crate::queue::Throttle;
use crate::recording::{Level, Recording};
use crate::statistics::DropReason;

/// The suffix of the sidecar topic that carries a channel's dependency headers.
pub const HEADER_SUFFIX: &str = "/lockstep_header";

/// The ROS type of dependency headers.
pub const HEADER_TYPE: &str = "lockstep_interfaces/msg/DependencyHeader";

/// The ROS type of a module's declared topology (`/lockstep/topology/<module>`).
pub const TOPOLOGY_TYPE: &str = "lockstep_interfaces/msg/ModuleTopology";

/// What a recorded topic carries besides its own messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicKind {
    /// Ordinary data.
    Data,
    /// Dependency headers: they also feed the statistics and the topology.
    Header,
    /// A module's declared topology: it also feeds the topology.
    Topology,
}

impl TopicKind {
    pub fn of(type_name: &str) -> Self {
        match type_name {
            HEADER_TYPE => Self::Header,
            TOPOLOGY_TYPE => Self::Topology,
            _ => Self::Data,
        }
    }
}

/// Turns a header or topology message (CDR) into the command that teaches the bag thread; the node decodes.
pub type Decode = fn(TopicKind, &[u8]) -> Option<Command>;

/// Seconds between two log lines about drops on one topic.
const DROP_LOG_PERIOD: Duration = Duration::from_secs(2);

/// What each message of one topic goes through: counted, dropped when paused, stopped or over the queue
/// bound, fed to the topology when it is a dependency header or a declared topology, and sent to the bag.
pub struct TopicRecorder {
    topic: Arc<str>,
    kind: TopicKind,
    decode: Decode,
    commands: Sender<Command>,
    recording: Arc<Recording>,
    received: Arc<AtomicU64>,
    drop_log: Throttle,
}

impl TopicRecorder {
    pub fn new(
        topic: &str,
        type_name: &str,
        decode: Decode,
        commands: Sender<Command>,
        recording: Arc<Recording>,
    ) -> Self {
        Self {
            topic: topic.into(),
            kind: TopicKind::of(type_name),
            decode,
            commands,
            received: recording.received_counter(topic),
            recording,
            drop_log: Throttle::new(DROP_LOG_PERIOD),
        }
    }

    /// Handle one message; `false` once the bag thread is gone.
    pub fn on_message(&mut self, data: Vec<u8>) -> bool {
        let recording = &self.recording;
        recording.received.fetch_add(1, Ordering::SeqCst);
        self.received.fetch_add(1, Ordering::Relaxed);
        let received_ns = recording.now_ns();
        if recording.paused.load(Ordering::Relaxed) {
            return true;
        }
        if recording.stopped.load(Ordering::Relaxed) {
            recording.note_dropped(&self.topic, DropReason::AfterError);
            return true;
        }
        // Headers and declared topologies are recorded as they are and also feed the topology.
        if self.kind != TopicKind::Data {
            if let Some(command) = (self.decode)(self.kind, &data) {
                let _ = self.commands.send(command);
            }
        }
        if !recording.budget.try_reserve(data.len() as u64) {
            let dropped = recording.note_dropped(&self.topic, DropReason::QueueFull);
            if self.drop_log.ready(std::time::Instant::now()) {
                let line = format!(
                    "{}: write queue full ({} of max_queue_bytes {} bytes waiting): {dropped} messages \
                     dropped so far",
                    self.topic,
                    recording.budget.used(),
                    recording.budget.max()
                );
                recording.log(Level::Warn, &line);
            }
            return true;
        }
        let write = Command::Write {
            topic: self.topic.clone(),
            received_ns,
            data,
        };
        self.commands.send(write).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pending::tests::format;
    use crate::pending::Pending;

    fn recording(max_queue_bytes: u64) -> Arc<Recording> {
        let log: crate::recording::Log = Arc::new(|_, _| {});
        let received = Arc::new(AtomicU64::new(0));
        Recording::new(
            false,
            "bag".into(),
            max_queue_bytes,
            log,
            received,
            Pending::new(format()),
        )
    }

    fn header(_: TopicKind, data: &[u8]) -> Option<Command> {
        (data == b"header").then(|| Command::Declared(Vec::new()))
    }

    #[test]
    fn messages_are_queued_within_the_bound_and_dropped_beyond_it() {
        let rec = recording(10);
        let (commands, inbox) = std::sync::mpsc::channel();
        let mut topic = TopicRecorder::new("/a", "std_msgs/msg/String", header, commands, rec.clone());
        assert!(topic.on_message(vec![0; 6]));
        assert!(topic.on_message(vec![0; 6]), "dropped, not a stop");
        assert!(matches!(inbox.try_recv(), Ok(Command::Write { data, .. }) if data.len() == 6));
        assert!(inbox.try_recv().is_err(), "the second did not fit");
        assert_eq!(rec.budget.used(), 6, "reserved until the bag thread releases it");
        let status = rec.status();
        assert_eq!(status.topics[0].dropped_queue_full, 1);
        assert_eq!(status.topics[0].received, 2);
        assert_eq!(rec.received.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn paused_messages_are_only_counted_and_stopped_ones_are_dropped_after_error() {
        let rec = recording(100);
        let (commands, inbox) = std::sync::mpsc::channel();
        let mut topic = TopicRecorder::new("/a", "t/msg/T", header, commands, rec.clone());
        rec.pause();
        assert!(topic.on_message(vec![1]));
        assert_eq!(rec.resume(), "resumed");
        rec.stopped.store(true, Ordering::SeqCst);
        assert!(topic.on_message(vec![1]));
        assert!(inbox.try_recv().is_err());
        let status = rec.status();
        assert_eq!(
            (status.topics[0].received, status.topics[0].dropped_after_error),
            (2, 1)
        );
    }

    #[test]
    fn headers_and_topologies_also_teach_the_bag_thread_and_data_does_not() {
        let rec = recording(100);
        let (commands, inbox) = std::sync::mpsc::channel();
        let mut data = TopicRecorder::new("/d", "t/msg/T", header, commands.clone(), rec.clone());
        assert!(data.on_message(b"header".to_vec()));
        assert!(matches!(inbox.try_recv(), Ok(Command::Write { .. })));
        let mut headers = TopicRecorder::new("/d/lockstep_header", HEADER_TYPE, header, commands, rec);
        assert!(headers.on_message(b"header".to_vec()));
        assert!(matches!(inbox.try_recv(), Ok(Command::Declared(_))));
        assert!(matches!(inbox.try_recv(), Ok(Command::Write { .. })));
        assert_eq!(TopicKind::of(TOPOLOGY_TYPE), TopicKind::Topology);
    }

    #[test]
    fn a_gone_bag_thread_ends_the_subscription() {
        let rec = recording(100);
        let (commands, inbox) = std::sync::mpsc::channel();
        drop(inbox);
        let mut topic = TopicRecorder::new("/a", "t/msg/T", header, commands, rec);
        assert!(!topic.on_message(vec![1]));
    }
}
