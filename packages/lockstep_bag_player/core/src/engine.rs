//! The play loop: publishes each message when the playback clock reaches its time stamp (log time, or
//! publish time with `--message-order sent`), in the merged order of the bags (see `merge`), loops, and
//! serves the requests only it can (play_next, burst, seek, play). One thread runs it, so the order on the
//! wire is that order. What touches ROS (publishing, `/clock`, subscriber counts, acknowledgements, logging)
//! goes through a [`Sink`] the node gives; the loop decides what and when.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use lockstep_bag::BagMessage;

use crate::control::{Control, Request};
use crate::merge::{Merged, Next, Stamped};
use crate::readahead::ReadAhead;
use crate::{
    burst, check_seek, due, play_next, ClockTopics, Due, Lateness, PlaybackClock, Window, NO_PLAY_RUNNING,
    PLAY_RUNNING,
};

/// Messages published in one run between two looks at the control state (see `publish_due_run`).
const DUE_RUN: usize = 64;

/// What the play loop needs from the outside: the topics' publishers and a logger.
pub trait Sink {
    /// Publish `message` on its topic (the bag's name); a failure is the sink's to report.
    fn publish(&mut self, message: &BagMessage);
    /// Publish `/clock` at bag time `bag_ns` (`--clock-topics`: just before a message of those topics).
    fn publish_clock(&mut self, bag_ns: u64);
    /// At the end of a play: wait at most `timeout` until reliable subscribers acknowledged everything.
    fn wait_for_all_acked(&mut self, timeout: Duration);
    /// A played topic with fewer than `wanted` matched subscriptions, if any.
    fn short_of_subscribers(&self, wanted: usize) -> Option<String>;
    fn info(&self, line: &str);
    fn error(&self, line: &str);
}

/// The bags' span and the configured play.
#[derive(Debug, Clone)]
pub struct Plan {
    pub bag_start_ns: u64,
    pub bag_end_ns: u64,
    pub window: Window,
    pub looped: bool,
    pub delay_ns: u64,
    pub wait_for_all_acked: Duration,
    pub wait_for_subscribers: usize,
    /// Which messages publish `/clock` first.
    pub clock_topics: ClockTopics,
}

pub struct Engine<S: Sink> {
    control: Arc<Control>,
    reader: Merged,
    sink: S,
    plan: Plan,
    exit_at_end: bool,
    /// The next item, read but not yet published.
    next: Option<Next>,
    /// Lateness of each timed publish in this play, and when its first and last publish were (wall ns).
    lateness: Lateness,
    span: Option<(u64, u64)>,
    /// Why the last play ended early: the bag could not be read further.
    failed: Option<String>,
    /// Published messages waiting to go back to the read-ahead threads, which free them.
    spent: Vec<Stamped>,
}

impl<S: Sink> Engine<S> {
    pub fn new(control: Arc<Control>, reader: Merged, sink: S, plan: Plan, exit_at_end: bool) -> Self {
        Self {
            control,
            reader,
            sink,
            plan,
            exit_at_end,
            next: None,
            lateness: Lateness::default(),
            span: None,
            failed: None,
            spent: Vec::new(),
        }
    }

    /// Play until stopped (or until the end, with `exit_at_end`). Returns why the last play ended early when
    /// the bag could not be read to its end, so that `lockstep bag play` exits with an error.
    pub fn run(mut self) -> Option<String> {
        self.run_plays();
        self.failed.take()
    }

    fn run_plays(&mut self) {
        let mut window = self.plan.window;
        let mut delay_ns = self.plan.delay_ns;
        loop {
            if !self.wait_for_subscribers() {
                return;
            }
            self.start(window, delay_ns);
            delay_ns = 0;
            if !self.play(window) {
                return;
            }
            self.wait_for_acks();
            self.control.change(|s, _| s.playing = false);
            self.report();
            if self.exit_at_end {
                return;
            }
            match self.wait_for_play() {
                Some(w) => window = w,
                None => return,
            }
        }
    }

    /// Log what this play did: messages, wall time from first to last publish, lateness against schedule.
    fn report(&self) {
        let played = self.control.played.load(Ordering::Relaxed);
        let line = crate::play_summary(played, self.span, self.lateness.summary());
        self.sink.info(&line);
    }

    /// At the end of a play, let reliable subscribers acknowledge what they were sent (bounded).
    fn wait_for_acks(&mut self) {
        if !self.plan.wait_for_all_acked.is_zero() {
            self.sink.wait_for_all_acked(self.plan.wait_for_all_acked);
        }
    }

    /// Before a play: until every topic has `wait_for_subscribers` matched subscriptions; `false` on stop.
    fn wait_for_subscribers(&self) -> bool {
        let wanted = self.plan.wait_for_subscribers;
        if wanted == 0 {
            return true;
        }
        let mut logged = false;
        loop {
            let Some(short) = self.sink.short_of_subscribers(wanted) else {
                return true;
            };
            if !logged {
                self.sink.info(&format!(
                    "waiting for {wanted} subscriber(s) on {short} (and every played topic)"
                ));
                logged = true;
            }
            let state = self.control.lock();
            if state.stop {
                return false;
            }
            drop(self.control.wait(state, Some(Duration::from_millis(10))));
        }
    }

    fn start(&mut self, window: Window, delay_ns: u64) {
        self.reader.restart(window.start_ns, window.end_ns);
        self.next = None;
        self.lateness.clear();
        self.span = None;
        self.control.played.store(0, Ordering::Relaxed);
        self.control.change(|s, wall| {
            s.clock.jump(window.start_ns, wall.saturating_add(delay_ns));
            s.playing = true;
        });
    }

    /// The next item, read from the merged read-ahead queues if needed.
    fn peek(&mut self) -> &Next {
        self.next.get_or_insert_with(|| self.reader.next())
    }

    /// Play `window`; `true` at its end, `false` when asked to stop.
    fn play(&mut self, window: Window) -> bool {
        let mut published_this_pass = false;
        let looped = self.plan.looped;
        loop {
            match self.peek() {
                Next::End if looped && published_this_pass => {
                    published_this_pass = false;
                    self.reader.restart(window.start_ns, window.end_ns);
                    self.next = None;
                    self.control.played.store(0, Ordering::Relaxed);
                    self.control.change(|s, wall| s.clock.jump(window.start_ns, wall));
                    continue;
                }
                Next::Failed(e) => {
                    let message = e.to_string();
                    self.sink.error(&format!("reading {message}; playback ends here"));
                    self.failed = Some(message);
                    return true;
                }
                Next::End | Next::Message(_) => {}
            }
            let due_at = match self.peek() {
                Next::Message(m) => Some(m.stamp_ns),
                _ => None,
            };
            let control = self.control.clone();
            let mut state = control.lock();
            if state.stop {
                return false;
            }
            if let Some(request) = state.requests.pop_front() {
                drop(state);
                self.serve(request, window);
                continue;
            }
            let Some(due_at) = due_at else {
                return true; // the end, not looping
            };
            let now = control.wall_ns();
            match due(&state.clock, due_at, now) {
                Due::Paused => drop(control.wait(state, None)),
                Due::In(wait_ns) => drop(control.wait(state, Some(Duration::from_nanos(wait_ns)))),
                Due::Now(due) => {
                    let clock = state.clock.clone();
                    drop(state);
                    self.publish_due_run(&clock, due, now);
                    published_this_pass = true;
                }
            }
        }
    }

    /// Publish the next message (due at wall time `due`, `now` read just before) and up to [`DUE_RUN`] - 1
    /// following ones that are due by then too, without taking the control lock between them: a copy of the
    /// playback clock tells when each is due, and requests (pause, stop, rate) wait at most one run.
    fn publish_due_run(&mut self, clock: &PlaybackClock, due: u64, now: u64) {
        let (mut due, mut now) = (due, now);
        for _ in 0..DUE_RUN {
            let Some(Next::Message(m)) = self.next.take() else {
                return;
            };
            self.publish(m, now);
            self.lateness.record(now.saturating_sub(due));
            let Next::Message(next) = self.peek() else {
                return;
            };
            let Some(next_due) = clock.wall_at(next.stamp_ns) else {
                return;
            };
            // One clock read per message, as when each goes through the lock.
            now = self.control.wall_ns();
            if next_due > now {
                return;
            }
            due = next_due;
        }
    }

    /// Publish `m` (after `/clock` when its topic drives it); `now` (wall ns) is when, for the span of the play.
    fn publish(&mut self, m: Stamped, now: u64) {
        self.span = Some(self.span.map_or((now, now), |(first, _)| (first, now)));
        if self.plan.clock_topics.triggers(&m.message.topic) {
            self.sink.publish_clock(m.stamp_ns);
        }
        self.sink.publish(&m.message);
        self.control.played.fetch_add(1, Ordering::Relaxed);
        self.spent.push(m);
        if self.spent.len() >= ReadAhead::RECYCLE_BATCH {
            let spent = std::mem::replace(&mut self.spent, Vec::with_capacity(ReadAhead::RECYCLE_BATCH));
            self.reader.recycle(spent);
        }
    }

    /// Publish up to `limit` messages at once (0: all that are left), moving the clock to the last one's
    /// time; how many were published.
    fn publish_now(&mut self, limit: u64) -> u64 {
        let mut count = 0;
        let mut last = None;
        while limit == 0 || count < limit {
            if !matches!(self.peek(), Next::Message(_)) {
                break;
            }
            if let Some(Next::Message(m)) = self.next.take() {
                let now = self.control.wall_ns();
                last = Some(m.stamp_ns);
                self.publish(m, now);
                count += 1;
            }
        }
        if let Some(t) = last {
            self.control.change(|s, wall| s.clock.jump(t, wall));
        }
        count
    }

    fn paused(&self) -> bool {
        self.control.lock().clock.is_paused()
    }

    /// Serve a request only the play thread can, during a play.
    fn serve(&mut self, request: Request, window: Window) {
        match request {
            Request::PlayNext(reply) => {
                let paused = self.paused();
                reply(play_next(paused, || self.publish_now(1) == 1));
            }
            Request::Burst(n, reply) => {
                let paused = self.paused();
                reply(burst(paused, n, |n| self.publish_now(n)));
            }
            Request::Seek(t, reply) => {
                let outcome = check_seek(t, self.plan.bag_start_ns, self.plan.bag_end_ns);
                if outcome.is_ok() {
                    self.reader.restart(t, window.end_ns);
                    self.next = None;
                    self.control.change(|s, wall| s.clock.jump(t, wall));
                }
                reply(outcome);
            }
            Request::Play(_, reply) => {
                reply(Err(PLAY_RUNNING.to_owned()));
            }
        }
    }

    /// After the end: wait for `~/play` (its window) or a stop (`None`); other requests are refused.
    fn wait_for_play(&mut self) -> Option<Window> {
        let control = self.control.clone();
        let mut state = control.lock();
        loop {
            if state.stop {
                return None;
            }
            match state.requests.pop_front() {
                None => state = control.wait(state, None),
                Some(Request::Play(request, reply)) => {
                    match request.window(self.plan.window, self.plan.bag_start_ns, self.plan.bag_end_ns) {
                        Ok(window) => {
                            reply(Ok(()));
                            return Some(window);
                        }
                        Err(e) => {
                            reply(Err(e));
                        }
                    }
                }
                Some(Request::PlayNext(reply)) | Some(Request::Seek(_, reply)) => {
                    reply(Err(NO_PLAY_RUNNING.to_owned()));
                }
                Some(Request::Burst(_, reply)) => {
                    reply((0, NO_PLAY_RUNNING.to_owned()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MessageOrder, PlayRequest, Reply};
    use std::collections::BTreeSet;
    use std::sync::mpsc;
    use std::sync::Mutex;

    use lockstep_bag::{BagReader, BagWriter, TopicSpec, WriterOptions};

    const MS: u64 = 1_000_000;

    /// Records the log time of each published message, and each `/clock` (as `u64::MAX - time`).
    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<Vec<u64>>>);

    impl Recorder {
        fn times(&self) -> Vec<u64> {
            self.0.lock().unwrap().clone()
        }
    }

    impl Sink for Recorder {
        fn publish(&mut self, message: &BagMessage) {
            self.0.lock().unwrap().push(message.log_time_ns);
        }
        fn publish_clock(&mut self, bag_ns: u64) {
            self.0.lock().unwrap().push(u64::MAX - bag_ns);
        }
        fn wait_for_all_acked(&mut self, _: Duration) {}
        fn short_of_subscribers(&self, _: usize) -> Option<String> {
            None
        }
        fn info(&self, _: &str) {}
        fn error(&self, _: &str) {}
    }

    /// A bag of 10 messages on `/t` at 1..=10 ms, and an engine on it that plays it at rate 1000.
    fn engine(dir: &std::path::Path, paused: bool, looped: bool, exit: bool) -> (Engine<Recorder>, Recorder) {
        let path = dir.join("bag");
        let mut writer = BagWriter::create(&path, WriterOptions::default()).unwrap();
        writer
            .add_topic(TopicSpec::new("/t", "std_msgs/msg/String"))
            .unwrap();
        for i in 1..=10 {
            writer.write("/t", i * MS, &[0, 1, 0, 0, 1, 0, 0, 0, 0]).unwrap();
        }
        writer.finish().unwrap();
        let reader = BagReader::open(&path).unwrap();
        let topics = BTreeSet::from(["/t".to_owned()]);
        let ahead = Merged::start(vec![("bag".into(), reader)], &topics, 64, MessageOrder::Received).unwrap();
        let plan = Plan {
            bag_start_ns: MS,
            bag_end_ns: 10 * MS,
            window: Window::new(MS, 10 * MS, 0.0, -1.0, 0).unwrap(),
            looped,
            delay_ns: 0,
            wait_for_all_acked: Duration::ZERO,
            wait_for_subscribers: 0,
            clock_topics: ClockTopics::Off,
        };
        let control = Arc::new(Control::new(1000.0, paused));
        let recorder = Recorder::default();
        (
            Engine::new(control, ahead, recorder.clone(), plan, exit),
            recorder,
        )
    }

    /// Send `make(reply)` to the play thread and wait for its answer.
    fn ask<T: Send + 'static>(control: &Control, make: impl FnOnce(Reply<T>) -> Request) -> T {
        let (tx, rx) = mpsc::channel();
        control.request(make(Box::new(move |answer| {
            let _ = tx.send(answer);
        })));
        rx.recv_timeout(Duration::from_secs(10)).unwrap()
    }

    fn expected(passes: usize) -> Vec<u64> {
        (0..passes).flat_map(|_| (1..=10).map(|i| i * MS)).collect()
    }

    #[test]
    fn plays_every_message_in_order_and_ends() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, recorder) = engine(dir.path(), false, false, true);
        let control = engine.control.clone();
        assert_eq!(engine.run(), None);
        assert_eq!(recorder.times(), expected(1));
        assert_eq!(control.progress().0, 10);
    }

    #[test]
    fn clock_topics_publish_the_message_time_just_before_the_message() {
        let dir = tempfile::tempdir().unwrap();
        let (mut engine, recorder) = engine(dir.path(), false, false, true);
        engine.plan.clock_topics = ClockTopics::Listed(BTreeSet::from(["/t".to_owned()]));
        assert_eq!(engine.run(), None);
        let expected: Vec<u64> = (1..=10).flat_map(|i| [u64::MAX - i * MS, i * MS]).collect();
        assert_eq!(recorder.times(), expected);
    }

    #[test]
    fn a_loop_starts_again_from_the_window_start_until_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, recorder) = engine(dir.path(), false, true, true);
        let control = engine.control.clone();
        let thread = std::thread::spawn(move || engine.run());
        while recorder.times().len() < 25 {
            std::thread::sleep(Duration::from_millis(1));
        }
        control.stop();
        assert_eq!(thread.join().unwrap(), None);
        let times = recorder.times();
        assert_eq!(times[..20], expected(2)[..]);
    }

    #[test]
    fn burst_and_play_next_publish_only_while_paused_and_seek_stays_in_the_bag() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, recorder) = engine(dir.path(), true, false, false);
        let control = engine.control.clone();
        let thread = std::thread::spawn(move || engine.run());
        assert_eq!(ask(&control, |r| Request::Burst(3, r)), (3, String::new()));
        assert_eq!(ask(&control, Request::PlayNext), Ok(()));
        assert!(ask(&control, |r| Request::Seek(20 * MS, r)).is_err());
        assert_eq!(ask(&control, |r| Request::Seek(9 * MS, r)), Ok(()));
        assert_eq!(
            ask(&control, |r| Request::Burst(5, r)),
            (2, "the bag ended after 2 of 5 messages".to_owned())
        );
        assert_eq!(recorder.times(), [MS, 2 * MS, 3 * MS, 4 * MS, 9 * MS, 10 * MS]);
        // Playing again, the bag's end comes at once: refused either as not paused or as no play running.
        control.resume();
        assert!(ask(&control, Request::PlayNext).is_err());
        control.stop();
        assert_eq!(thread.join().unwrap(), None);
    }

    #[test]
    fn after_the_end_only_play_is_served_and_it_plays_again() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, recorder) = engine(dir.path(), false, false, false);
        let control = engine.control.clone();
        let thread = std::thread::spawn(move || engine.run());
        while control.lock().playing || recorder.times().len() < 10 {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(ask(&control, Request::PlayNext), Err(NO_PLAY_RUNNING.to_owned()));
        assert_eq!(
            ask(&control, |r| Request::Play(PlayRequest::default(), r)),
            Ok(())
        );
        while recorder.times().len() < 20 {
            std::thread::sleep(Duration::from_millis(1));
        }
        control.stop();
        assert_eq!(thread.join().unwrap(), None);
        assert_eq!(recorder.times(), expected(2));
    }
}
