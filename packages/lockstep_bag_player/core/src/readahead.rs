//! The read-ahead thread: reads the bag's messages of the playing topics, in the bag's total order, up to
//! `read_ahead_queue_size` ahead of the play thread, so decompressing a chunk never delays a publish.
//!
//! Messages go over in batches of up to [`BATCH`] (one channel operation, and at most one thread wake-up,
//! per batch rather than per message: at unlimited rate that hand-over was a third of the play's time).
//! A batch is sent as soon as it is full or the bag has no more for this epoch.
//!
//! Published messages come back to this thread to be freed ([`ReadAhead::recycle`]): freeing on the play
//! thread memory the read-ahead thread allocated made the two threads contend for the allocator's lock and
//! for each topic name's reference count, a futex wake-up every few messages at unlimited rate.
//!
//! Each (re)start carries an epoch; after a seek or a loop the play thread drops what was read for an older
//! epoch. The thread looks for a restart before each message it reads, so a restart is never stuck
//! behind a full queue: the play thread drains the old epoch while waiting for the new one.

use std::collections::{BTreeSet, VecDeque};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError};

use lockstep_bag::{BagMessage, BagReader, ReadOptions};

/// What the thread hands over.
pub enum Item {
    Message(BagMessage),
    /// Nothing more up to the end of the window.
    End,
    /// A read failed (named file and cause); playback of this epoch ends.
    Failed(String),
}

/// Messages per hand-over.
const BATCH: usize = 256;

pub struct ReadAhead {
    restarts: Sender<Restart>,
    spent: Sender<Vec<BagMessage>>,
    items: Receiver<(u64, Vec<Item>)>,
    epoch: u64,
    /// The rest of the last batch received for the current epoch.
    buffered: VecDeque<Item>,
}

impl ReadAhead {
    /// Start the thread on `reader`, reading `topics`, up to `queue` messages ahead (rounded up to whole
    /// batches). It reads nothing until the first [`Self::restart`].
    pub fn start(reader: BagReader, topics: BTreeSet<String>, queue: usize) -> std::io::Result<Self> {
        let (restarts, restart_rx) = mpsc::channel();
        let (spent, spent_rx) = mpsc::channel();
        let (items_tx, items) = mpsc::sync_channel(queue.div_ceil(BATCH).max(1));
        std::thread::Builder::new()
            .name("bag-read-ahead".into())
            .spawn(move || read_loop(&reader, &topics, &restart_rx, &items_tx, &spent_rx))?;
        Ok(Self {
            restarts,
            spent,
            items,
            epoch: 0,
            buffered: VecDeque::new(),
        })
    }

    /// Read again from bag time `from_ns` to `end_ns` (included); what was read before is dropped by
    /// [`Self::next`].
    pub fn restart(&mut self, from_ns: u64, end_ns: u64) {
        self.epoch += 1;
        self.buffered.clear();
        let _ = self.restarts.send(Restart {
            epoch: self.epoch,
            from_ns,
            end_ns,
        });
    }

    /// Hand published messages back to the read-ahead thread, which frees them (see the module's comment).
    pub fn recycle(&self, spent: Vec<BagMessage>) {
        let _ = self.spent.send(spent); // the thread has gone: they are freed here instead
    }

    /// Messages the play thread collects before handing them back with [`Self::recycle`].
    pub const RECYCLE_BATCH: usize = BATCH;

    /// The next item of the current epoch (blocks until the thread has it).
    // Not an iterator: it blocks, and after the end of an epoch it waits for the next restart.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Item {
        loop {
            if let Some(item) = self.buffered.pop_front() {
                return item;
            }
            match self.items.recv() {
                Ok((epoch, batch)) if epoch == self.epoch => self.buffered = batch.into(),
                Ok(_) => continue, // read before the last restart
                Err(_) => return Item::Failed("the read-ahead thread stopped".into()),
            }
        }
    }
}

struct Restart {
    epoch: u64,
    from_ns: u64,
    end_ns: u64,
}

fn read_loop(
    reader: &BagReader,
    topics: &BTreeSet<String>,
    restarts: &Receiver<Restart>,
    items: &SyncSender<(u64, Vec<Item>)>,
    spent: &Receiver<Vec<BagMessage>>,
) {
    let Ok(mut current) = restarts.recv() else {
        return;
    };
    'epochs: loop {
        // Also here, not only per full batch: a looped bag shorter than a batch never fills one.
        free_spent(spent);
        let epoch = current.epoch;
        let options = ReadOptions {
            topics: Some(topics.clone()),
            start_ns: Some(current.from_ns),
            end_ns: Some(current.end_ns.saturating_add(1)),
        };
        let mut batch = Vec::with_capacity(BATCH);
        for message in reader.messages_with(options) {
            match restarts.try_recv() {
                Ok(next) => {
                    current = next;
                    continue 'epochs;
                }
                Err(TryRecvError::Disconnected) => return,
                Err(TryRecvError::Empty) => {}
            }
            let item = match message {
                Ok(m) => Item::Message(m),
                Err(e) => Item::Failed(lockstep_bag::error_chain(&e)),
            };
            let failed = matches!(item, Item::Failed(_));
            batch.push(item);
            if failed {
                break;
            }
            if batch.len() == BATCH {
                free_spent(spent);
                let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                if items.send((epoch, full)).is_err() {
                    return;
                }
            }
        }
        if batch.last().is_some_and(|i| matches!(i, Item::Failed(_))) {
            if items.send((epoch, batch)).is_err() {
                return;
            }
        } else {
            match restarts.try_recv() {
                Ok(next) => {
                    current = next;
                    continue 'epochs;
                }
                Err(TryRecvError::Disconnected) => return,
                Err(TryRecvError::Empty) => {
                    batch.push(Item::End);
                    if items.send((epoch, batch)).is_err() {
                        return;
                    }
                }
            }
        }
        match restarts.recv() {
            Ok(next) => current = next,
            Err(_) => return,
        }
    }
}

/// Free the messages the play thread has handed back.
fn free_spent(spent: &Receiver<Vec<BagMessage>>) {
    while let Ok(done) = spent.try_recv() {
        drop(done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_bag::{BagWriter, TopicSpec, WriterOptions};

    /// A bag of `count` messages on `/t`, 1 ms apart.
    fn bag(dir: &std::path::Path, count: u64) -> BagReader {
        let path = dir.join("bag");
        let mut writer = BagWriter::create(&path, WriterOptions::default()).unwrap();
        writer
            .add_topic(TopicSpec::new("/t", "std_msgs/msg/String"))
            .unwrap();
        for i in 0..count {
            writer
                .write("/t", 1_000_000 * (i + 1), &[0, 1, 0, 0, 1, 0, 0, 0, 0])
                .unwrap();
        }
        writer.finish().unwrap();
        BagReader::open(&path).unwrap()
    }

    /// Plays the bag `passes` times as a loop does (restart, read to the end), handing every message back;
    /// returns the topic name's reference count afterwards: one per message still alive, plus the few the
    /// reader and this test hold.
    fn alive_after(passes: usize) -> usize {
        let dir = tempfile::tempdir().unwrap();
        let mut ahead = ReadAhead::start(bag(dir.path(), 10), BTreeSet::from(["/t".to_owned()]), 64).unwrap();
        let mut topic = None;
        let mut spent = Vec::new();
        for _ in 0..passes {
            ahead.restart(0, u64::MAX - 1);
            loop {
                match ahead.next() {
                    Item::Message(m) => {
                        topic.get_or_insert_with(|| m.topic.clone());
                        spent.push(m);
                        if spent.len() == ReadAhead::RECYCLE_BATCH {
                            ahead.recycle(std::mem::take(&mut spent));
                        }
                    }
                    Item::End => break,
                    Item::Failed(e) => panic!("{e}"),
                }
            }
        }
        ahead.restart(0, u64::MAX - 1); // the thread frees what came back at the start of a pass
        let _ = ahead.next();
        std::sync::Arc::strong_count(&topic.unwrap())
    }

    #[test]
    fn messages_handed_back_are_freed_even_when_the_bag_never_fills_a_batch() {
        // 10-message bag, 300 passes: 3,000 messages handed back in batches; a leak would keep ~2,800 alive.
        let alive = alive_after(300);
        assert!(alive < 2 * BATCH, "{alive} messages still alive after 300 passes");
    }
}
