//! A recording from start to finish ([`Session`]): the shared state and the bag thread, started together
//! from the checked settings, and finished by joining the thread once every sender to it is gone.

use std::sync::atomic::AtomicU64;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::bag_thread::{BagThread, Command, ThreadOptions};
use crate::config::RecorderConfig;
use crate::error::{Error, Result};
use crate::pending::Pending;
use crate::recording::{Log, Recording};
use crate::status::Status;

/// A recording under way.
pub struct Session {
    pub recording: Arc<Recording>,
    /// To the bag thread; clone it for each task that sends.
    pub commands: Sender<Command>,
    handle: JoinHandle<()>,
}

impl Session {
    /// Create the bag (fails if its directory exists) and start the thread that writes it. `received`
    /// counts every message taken from DDS; `parameters` holds the modules' parameters until stored.
    pub fn start(
        config: &RecorderConfig,
        log: Log,
        received: Arc<AtomicU64>,
        parameters: Pending,
    ) -> Result<Self> {
        // In snapshot mode `max_queue_bytes` is what memory keeps; what waits for the bag thread (which only
        // moves messages into memory then) gets the default bound beside it, so a burst is not dropped on its
        // way to the cache.
        let queue_bytes = match config.snapshot_mode {
            true => config.max_queue_bytes.max(crate::config::DEFAULT_QUEUE_BYTES),
            false => config.max_queue_bytes,
        };
        let recording = Recording::new(
            config.start_paused,
            config.output.clone(),
            queue_bytes,
            log,
            received,
            parameters,
        );
        let thread = ThreadOptions {
            write_delay: config.write_delay,
            snapshot_bytes: config.snapshot_mode.then_some(config.max_queue_bytes),
        };
        if config.snapshot_mode {
            (recording.snapshot_cache_bytes)
                .store(config.max_queue_bytes, std::sync::atomic::Ordering::Relaxed);
        }
        let bag = BagThread::start(&config.output, config.writer.clone(), thread, recording.clone())?;
        Ok(Self {
            recording,
            commands: bag.commands,
            handle: bag.handle,
        })
    }

    /// Wait for the bag thread to finish the bag (it does once every clone of `commands` is dropped) and
    /// return the last status.
    pub fn finish(self) -> Result<Status> {
        drop(self.commands);
        self.handle.join().map_err(|_| Error::WriterPanicked)?;
        Ok(self.recording.status())
    }
}

/// Seconds since the Unix epoch now (0 if the clock is before it): names the default bag directory.
pub fn unix_now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;
    use crate::pending::tests::format;
    use lockstep_bag::TopicSpec;

    fn start(dir: &std::path::Path, settings: Settings) -> Session {
        let settings = Settings {
            output: dir.join("bag").to_string_lossy().into_owned(),
            ..settings
        };
        let config = RecorderConfig::new(&settings, 0).unwrap();
        let log: Log = Arc::new(|_, _| {});
        Session::start(&config, log, Arc::default(), Pending::new(format())).unwrap()
    }

    fn write(session: &Session, topic: &str, data: Vec<u8>) {
        assert!(session.recording.budget.try_reserve(data.len() as u64));
        let topic = topic.into();
        let command = Command::Write {
            topic,
            received_ns: 1,
            data,
        };
        session.commands.send(command).unwrap();
    }

    #[test]
    fn written_messages_are_counted_the_budget_released_and_the_bag_finished() {
        let dir = tempfile::tempdir().unwrap();
        let session = start(dir.path(), Settings::default());
        let spec = TopicSpec::new("/a", "std_msgs/msg/String");
        session.commands.send(Command::AddTopic(Box::new(spec))).unwrap();
        write(&session, "/a", vec![0; 8]);
        write(&session, "/a", vec![0; 4]);
        let (reply, answer) = std::sync::mpsc::channel();
        let reply: crate::bag_thread::SplitReply = Box::new(move |r| reply.send(r).unwrap());
        session.commands.send(Command::Split(reply)).unwrap();
        assert_eq!(answer.recv().unwrap(), Ok(1));
        let status = session.finish().unwrap();
        assert_eq!((status.total_messages, status.total_bytes), (2, 12));
        assert_eq!((status.queue_bytes, status.file_index), (0, 1));
        assert!(status.recording && status.error.is_empty());
        let report = lockstep_bag::survey(&dir.path().join("bag")).unwrap();
        assert_eq!(report.metadata.message_count, 2);
        assert_eq!(report.files.len(), 2, "split once");
    }

    #[test]
    fn an_existing_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("metadata.yaml"), "").unwrap();
        let settings = Settings {
            output: dir.path().to_string_lossy().into_owned(),
            ..Settings::default()
        };
        let config = RecorderConfig::new(&settings, 0).unwrap();
        let log: Log = Arc::new(|_, _| {});
        let refused = Session::start(&config, log, Arc::default(), Pending::new(format()));
        assert!(matches!(refused, Err(Error::CreateBag { .. })));
    }
}
