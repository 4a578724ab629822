//! Several bags played as one stream (`lockstep bag play -i A -i B ...`): a k-way merge of the bags'
//! read-ahead threads by the time stamp `--message-order` chooses (log time, or publish time).
//!
//! Order, stable: the time stamp, then the bag's place on the command line, then the message's place in its
//! bag (the bag's own total order: log time, then write order across split files). Two plays of the same
//! bags publish the same sequence.
//!
//! Memory is bounded: the merge holds one pending message per bag (its head). In `sent` order each bag's
//! messages, which the bag stores by log time, first go through a reorder window of `window` messages (a
//! min-heap by publish time, then position): a bag whose publish times run out of log-time order by less than
//! the window plays exactly by publish time, as rosbag2's player, whose priority queue of
//! `--read-ahead-queue-size` messages sorts the same way.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeSet, BinaryHeap};

use lockstep_bag::{BagMessage, BagReader};

use crate::readahead::{Item, ReadAhead};
use crate::MessageOrder;

/// One bag's messages in its own order: the read-ahead thread, or a list in tests.
pub trait Feed {
    /// Read again from bag time `from_ns` to `end_ns` (log times, both included).
    fn restart(&mut self, from_ns: u64, end_ns: u64);
    /// The next item since the last restart (blocks until there is one; nothing after `End` or `Failed`).
    fn next_item(&mut self) -> Item;
    /// Messages handed back once published (the read-ahead thread frees them).
    fn recycle(&self, spent: Vec<BagMessage>);
}

impl Feed for ReadAhead {
    fn restart(&mut self, from_ns: u64, end_ns: u64) {
        ReadAhead::restart(self, from_ns, end_ns);
    }
    fn next_item(&mut self) -> Item {
        self.next()
    }
    fn recycle(&self, spent: Vec<BagMessage>) {
        ReadAhead::recycle(self, spent);
    }
}

/// A message of the merged stream: which bag (its index among the inputs) and the time stamp it plays at.
#[derive(Debug)]
pub struct Stamped {
    pub message: BagMessage,
    pub input: usize,
    pub stamp_ns: u64,
}

/// What the merged stream hands over.
#[derive(Debug)]
pub enum Next {
    Message(Stamped),
    /// Every bag is read up to the end of the window.
    End,
    /// A bag could not be read further (named); the play ends here.
    Failed(String),
}

/// A message with its sort key; ordered by the key alone.
struct Keyed {
    key: (u64, u64),
    message: BagMessage,
}

impl PartialEq for Keyed {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Keyed {}
impl PartialOrd for Keyed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Keyed {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key)
    }
}

/// What one bag gives next.
enum Pulled {
    Message(u64, BagMessage),
    End,
    Failed(String),
}

/// One bag: its feed and its reorder window (1 message in `received` order: no reordering).
struct Source<F> {
    name: String,
    feed: F,
    window: usize,
    /// By (time stamp, position in the bag).
    waiting: BinaryHeap<Reverse<Keyed>>,
    position: u64,
    ended: bool,
    failed: Option<String>,
}

impl<F: Feed> Source<F> {
    fn restart(&mut self, from_ns: u64, end_ns: u64) {
        self.feed.restart(from_ns, end_ns);
        self.waiting.clear();
        self.position = 0;
        self.ended = false;
        self.failed = None;
    }

    fn pull(&mut self, order: MessageOrder) -> Pulled {
        while !self.ended && self.waiting.len() < self.window {
            match self.feed.next_item() {
                Item::Message(message) => {
                    let key = (order.stamp(&message), self.position);
                    self.position += 1;
                    self.waiting.push(Reverse(Keyed { key, message }));
                }
                Item::End => self.ended = true,
                Item::Failed(e) => {
                    self.failed = Some(format!("{}: {e}", self.name));
                    self.ended = true;
                }
            }
        }
        match self.waiting.pop() {
            Some(Reverse(Keyed { key, message })) => Pulled::Message(key.0, message),
            None => self.failed.take().map_or(Pulled::End, Pulled::Failed),
        }
    }
}

/// The bags merged into one stream (see the module's comment).
pub struct Merged<F = ReadAhead> {
    sources: Vec<Source<F>>,
    order: MessageOrder,
    /// Each bag's next message, by (time stamp, bag index).
    heads: BinaryHeap<Reverse<Keyed>>,
    primed: bool,
    /// A bag's read failure, handed over after the message already taken.
    failure: Option<String>,
}

impl Merged<ReadAhead> {
    /// Start a read-ahead thread per bag (`(name, reader)`, in command-line order) reading `topics`; `queue`
    /// messages read ahead in all, shared out among the bags (and, in `sent` order, the size of each bag's
    /// reorder window). It reads nothing until the first [`Self::restart`].
    pub fn start(
        bags: Vec<(String, BagReader)>,
        topics: &BTreeSet<String>,
        queue: usize,
        order: MessageOrder,
    ) -> std::io::Result<Self> {
        let each = (queue / bags.len().max(1)).max(1);
        let window = match order {
            MessageOrder::Received => 1,
            MessageOrder::Sent => each,
        };
        let feeds = bags
            .into_iter()
            .map(|(name, reader)| Ok((name, ReadAhead::start(reader, topics.clone(), each)?)))
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Self::new(feeds, order, window))
    }
}

impl<F: Feed> Merged<F> {
    /// Merge `feeds` (`(name, feed)`, in command-line order), each through a reorder window of `window`
    /// messages (at least 1).
    pub fn new(feeds: Vec<(String, F)>, order: MessageOrder, window: usize) -> Self {
        let sources = feeds
            .into_iter()
            .map(|(name, feed)| Source {
                name,
                feed,
                window: window.max(1),
                waiting: BinaryHeap::new(),
                position: 0,
                ended: false,
                failed: None,
            })
            .collect();
        Self {
            sources,
            order,
            heads: BinaryHeap::new(),
            primed: false,
            failure: None,
        }
    }

    /// Read every bag again from bag time `from_ns` to `end_ns` (log times); what was read before is dropped.
    pub fn restart(&mut self, from_ns: u64, end_ns: u64) {
        for source in &mut self.sources {
            source.restart(from_ns, end_ns);
        }
        self.heads.clear();
        self.failure = None;
        self.primed = false;
    }

    /// The next message of the merged stream (blocks until every bag that is not at its end has one).
    // Not an iterator: after the end it waits for the next restart, like the read-ahead.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Next {
        if !self.primed {
            self.primed = true;
            for input in 0..self.sources.len() {
                self.refill(input);
            }
        }
        if let Some(e) = self.failure.take() {
            return Next::Failed(e);
        }
        let Some(Reverse(Keyed { key, message })) = self.heads.pop() else {
            return Next::End;
        };
        let input = usize::try_from(key.1).unwrap_or(usize::MAX);
        self.refill(input);
        Next::Message(Stamped {
            message,
            input,
            stamp_ns: key.0,
        })
    }

    /// Hand published messages back to their bags' read-ahead threads.
    pub fn recycle(&self, spent: Vec<Stamped>) {
        let mut by_input: Vec<Vec<BagMessage>> = self.sources.iter().map(|_| Vec::new()).collect();
        for s in spent {
            if let Some(list) = by_input.get_mut(s.input) {
                list.push(s.message);
            }
        }
        for (source, list) in self.sources.iter().zip(by_input) {
            if !list.is_empty() {
                source.feed.recycle(list);
            }
        }
    }

    /// Take bag `input`'s next message into the heads.
    fn refill(&mut self, input: usize) {
        let Some(source) = self.sources.get_mut(input) else {
            return;
        };
        match source.pull(self.order) {
            Pulled::Message(stamp, message) => self.heads.push(Reverse(Keyed {
                key: (stamp, input as u64),
                message,
            })),
            Pulled::End => {}
            Pulled::Failed(e) => self.failure = Some(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::sync::Arc;

    use proptest::prelude::*;

    /// A bag as a list: `(log ms, publish ms)`; the message's data is its position in the bag.
    struct ListFeed {
        messages: Vec<(u64, u64)>,
        queued: VecDeque<Item>,
        fail_after: Option<usize>,
    }

    fn feed(messages: &[(u64, u64)]) -> ListFeed {
        ListFeed {
            messages: messages.to_vec(),
            queued: VecDeque::new(),
            fail_after: None,
        }
    }

    fn message(log_ms: u64, publish_ms: u64, position: usize) -> BagMessage {
        BagMessage {
            topic: Arc::from("/t"),
            log_time_ns: log_ms * 1_000_000,
            publish_time_ns: publish_ms * 1_000_000,
            data: vec![position as u8],
            sequence: 0,
            file_index: 0,
            channel_id: 0,
        }
    }

    impl Feed for ListFeed {
        fn restart(&mut self, from_ns: u64, end_ns: u64) {
            self.queued = (self.messages.iter().enumerate())
                .map(|(i, &(log, publish))| message(log, publish, i))
                .filter(|m| (from_ns..=end_ns).contains(&m.log_time_ns))
                .map(Item::Message)
                .collect();
            if let Some(n) = self.fail_after {
                self.queued.truncate(n);
                self.queued.push_back(Item::Failed("bad chunk".into()));
            } else {
                self.queued.push_back(Item::End);
            }
        }
        fn next_item(&mut self) -> Item {
            self.queued.pop_front().unwrap_or(Item::End)
        }
        fn recycle(&self, _: Vec<BagMessage>) {}
    }

    /// Play every bag to the end: `(bag, position in it, stamp in ms)` of each message in play order.
    fn play(bags: &[Vec<(u64, u64)>], order: MessageOrder, window: usize) -> Vec<(usize, u8, u64)> {
        let feeds = bags
            .iter()
            .enumerate()
            .map(|(i, b)| (format!("bag{i}"), feed(b)))
            .collect();
        let mut merged = Merged::new(feeds, order, window);
        merged.restart(0, u64::MAX);
        let mut out = Vec::new();
        loop {
            match merged.next() {
                Next::Message(s) => out.push((s.input, s.message.data[0], s.stamp_ns / 1_000_000)),
                Next::End => return out,
                Next::Failed(e) => panic!("{e}"),
            }
        }
    }

    /// What the merge must give: every message sorted by (stamp, bag, position), a stable sort.
    fn sorted(bags: &[Vec<(u64, u64)>], order: MessageOrder) -> Vec<(usize, u8, u64)> {
        let mut all: Vec<_> = (bags.iter().enumerate())
            .flat_map(|(i, b)| {
                b.iter().enumerate().map(move |(p, &(log, publish))| {
                    let stamp = match order {
                        MessageOrder::Sent if publish != 0 => publish,
                        _ => log,
                    };
                    (i, p as u8, stamp)
                })
            })
            .collect();
        all.sort_by_key(|&(bag, position, stamp)| (stamp, bag, position));
        all
    }

    #[test]
    fn equal_stamps_across_bags_play_in_command_line_order_then_bag_order() {
        let a = vec![(1, 1), (2, 2), (2, 2), (5, 5)];
        let b = vec![(2, 2), (3, 3), (5, 5)];
        let c = vec![(0, 0), (2, 2), (5, 5), (6, 6)];
        let bags = [a, b, c];
        let got = play(&bags, MessageOrder::Received, 1);
        let expected = [
            (2, 0, 0),
            (0, 0, 1),
            (0, 1, 2),
            (0, 2, 2),
            (1, 0, 2),
            (2, 1, 2),
            (1, 1, 3),
            (0, 3, 5),
            (1, 2, 5),
            (2, 2, 5),
            (2, 3, 6),
        ];
        assert_eq!(got, expected);
    }

    #[test]
    fn sent_order_uses_publish_times_within_the_window_and_log_time_when_none_is_stored() {
        // Bag 0's publish times run out of its log order by one place; bag 1 stores none (0).
        let a = vec![(10, 9), (11, 4), (12, 12)];
        let b = vec![(5, 0), (8, 0)];
        let bags = [a, b];
        assert_eq!(
            play(&bags, MessageOrder::Sent, 2),
            sorted(&bags, MessageOrder::Sent)
        );
        assert_eq!(
            play(&bags, MessageOrder::Sent, 2),
            [(0, 1, 4), (1, 0, 5), (1, 1, 8), (0, 0, 9), (0, 2, 12)]
        );
        // A window of one message keeps each bag's own order (and received order ignores publish times).
        assert_eq!(
            play(&bags, MessageOrder::Sent, 1),
            [(1, 0, 5), (1, 1, 8), (0, 0, 9), (0, 1, 4), (0, 2, 12)]
        );
        assert_eq!(
            play(&bags, MessageOrder::Received, 1),
            sorted(&bags, MessageOrder::Received)
        );
    }

    #[test]
    fn a_read_failure_names_its_bag_after_the_messages_before_it_and_a_restart_reads_again() {
        let mut broken = feed(&[(1, 1), (4, 4), (6, 6)]);
        broken.fail_after = Some(1);
        let feeds = vec![
            ("good".to_owned(), feed(&[(2, 2), (3, 3)])),
            ("broken".to_owned(), broken),
        ];
        let mut merged = Merged::new(feeds, MessageOrder::Received, 1);
        merged.restart(0, u64::MAX);
        assert!(matches!(merged.next(), Next::Message(s) if s.input == 1));
        match merged.next() {
            Next::Failed(e) => assert_eq!(e, "broken: bad chunk"),
            _ => panic!("expected the failure"),
        }
        merged.restart(3_000_000, u64::MAX);
        assert!(matches!(merged.next(), Next::Message(s) if s.input == 0 && s.stamp_ns == 3_000_000));
    }

    /// Up to 4 bags of up to 12 messages with log times in a small range (many ties) and publish times
    /// up to 5 ms before their log time.
    fn bags() -> impl Strategy<Value = Vec<Vec<(u64, u64)>>> {
        let bag = prop::collection::vec((0u64..8, 0u64..6), 0..12).prop_map(|mut v| {
            v.sort_by_key(|&(log, _)| log);
            v.into_iter()
                .map(|(log, early)| (log + 5, log + 5 - early))
                .collect()
        });
        prop::collection::vec(bag, 1..5)
    }

    proptest! {
        #![proptest_config(lockstep_ranges::hostile::config(256, 0x5EED_0B46))]

        #[test]
        fn the_merge_is_the_stable_sort_of_all_bags(bags in bags()) {
            prop_assert_eq!(play(&bags, MessageOrder::Received, 1), sorted(&bags, MessageOrder::Received));
            // A window as long as the longest bag sorts each bag by publish time.
            prop_assert_eq!(play(&bags, MessageOrder::Sent, 12), sorted(&bags, MessageOrder::Sent));
        }
    }
}
