//! The play thread: publishes each message when the playback clock reaches its log time, in the bag's total
//! order, and serves the requests only it can (play_next, burst, seek, play). One thread publishes
//! everything, so the order on the wire is the bag's order.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use lockstep_bag::BagMessage;
use lockstep_bag_player::{
    burst, check_seek, due, play_next, Due, Lateness, Window, NO_PLAY_RUNNING, PLAY_RUNNING,
};
use lockstep_ros::generic::GenericPublisher;

use crate::control::{Control, Request};
use crate::readahead::{Item, ReadAhead};

/// Messages published in one run between two looks at the control state (see `publish_due_run`).
const DUE_RUN: usize = 64;

/// A topic's publisher; `failing` keeps a publish error to one log line.
pub struct Outlet {
    pub publisher: GenericPublisher,
    pub name: String,
    pub failing: bool,
}

/// The bag's span and the configured play.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub bag_start_ns: u64,
    pub bag_end_ns: u64,
    pub window: Window,
    pub looped: bool,
    pub delay_ns: u64,
    pub wait_for_all_acked: Duration,
    pub wait_for_subscribers: usize,
}

pub struct Engine {
    pub control: Arc<Control>,
    pub reader: ReadAhead,
    pub outlets: BTreeMap<String, Outlet>,
    pub plan: Plan,
    pub logger: String,
    pub exit_at_end: bool,
    /// The next item, read but not yet published.
    pub next: Option<Item>,
    /// Lateness of each timed publish in this play, and when its first and last publish were (wall ns).
    pub lateness: Lateness,
    pub span: Option<(u64, u64)>,
    /// Why the last play ended early: the bag could not be read further.
    pub failed: Option<String>,
    /// Published messages waiting to go back to the read-ahead thread, which frees them.
    pub spent: Vec<BagMessage>,
}

impl Engine {
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
        let line = lockstep_bag_player::play_summary(played, self.span, self.lateness.summary());
        r2r::log_info!(&self.logger, "{line}");
    }

    /// At the end of a play, let reliable subscribers acknowledge what they were sent (bounded).
    fn wait_for_acks(&self) {
        if self.plan.wait_for_all_acked.is_zero() {
            return;
        }
        let deadline = std::time::Instant::now() + self.plan.wait_for_all_acked;
        for outlet in self.outlets.values() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if !outlet.publisher.wait_for_all_acked(left) {
                r2r::log_warn!(
                    &self.logger,
                    "{}: not every subscriber acknowledged every message within {:?}",
                    outlet.name,
                    self.plan.wait_for_all_acked
                );
            }
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
            let short = self
                .outlets
                .values()
                .find(|o| o.publisher.subscription_count() < wanted);
            let Some(short) = short else {
                return true;
            };
            if !logged {
                r2r::log_info!(
                    &self.logger,
                    "waiting for {wanted} subscriber(s) on {} (and every played topic)",
                    short.name
                );
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

    /// The next item, read from the read-ahead queue if needed.
    fn peek(&mut self) -> &Item {
        self.next.get_or_insert_with(|| self.reader.next())
    }

    /// Play `window`; `true` at its end, `false` when asked to stop.
    fn play(&mut self, window: Window) -> bool {
        let mut published_this_pass = false;
        let looped = self.plan.looped;
        loop {
            match self.peek() {
                Item::End if looped && published_this_pass => {
                    published_this_pass = false;
                    self.reader.restart(window.start_ns, window.end_ns);
                    self.next = None;
                    self.control.played.store(0, Ordering::Relaxed);
                    self.control.change(|s, wall| s.clock.jump(window.start_ns, wall));
                    continue;
                }
                Item::Failed(e) => {
                    let message = e.to_string();
                    r2r::log_error!(&self.logger, "reading the bag: {message}; playback ends here");
                    self.failed = Some(message);
                    return true;
                }
                Item::End | Item::Message(_) => {}
            }
            let due_at = match self.peek() {
                Item::Message(m) => Some(m.log_time_ns),
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
    fn publish_due_run(&mut self, clock: &lockstep_bag_player::PlaybackClock, due: u64, now: u64) {
        let (mut due, mut now) = (due, now);
        for _ in 0..DUE_RUN {
            let Some(Item::Message(m)) = self.next.take() else {
                return;
            };
            self.publish(m, now);
            self.lateness.record(now.saturating_sub(due));
            let Item::Message(next) = self.peek() else {
                return;
            };
            let Some(next_due) = clock.wall_at(next.log_time_ns) else {
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

    /// Publish `m`; `now` (wall ns) is when, for the span of the play.
    fn publish(&mut self, m: BagMessage, now: u64) {
        self.span = Some(self.span.map_or((now, now), |(first, _)| (first, now)));
        if let Some(outlet) = self.outlets.get_mut(&*m.topic) {
            match outlet.publisher.publish(&m.data) {
                Ok(()) => outlet.failing = false,
                Err(e) if !outlet.failing => {
                    outlet.failing = true;
                    r2r::log_error!(&self.logger, "publishing on {}: {e} (logged once)", outlet.name);
                }
                Err(_) => {}
            }
        }
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
            if !matches!(self.peek(), Item::Message(_)) {
                break;
            }
            if let Some(Item::Message(m)) = self.next.take() {
                let now = self.control.wall_ns();
                last = Some(m.log_time_ns);
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
                let _ = reply.send(play_next(paused, || self.publish_now(1) == 1));
            }
            Request::Burst(n, reply) => {
                let paused = self.paused();
                let _ = reply.send(burst(paused, n, |n| self.publish_now(n)));
            }
            Request::Seek(t, reply) => {
                let outcome = check_seek(t, self.plan.bag_start_ns, self.plan.bag_end_ns);
                if outcome.is_ok() {
                    self.reader.restart(t, window.end_ns);
                    self.next = None;
                    self.control.change(|s, wall| s.clock.jump(t, wall));
                }
                let _ = reply.send(outcome);
            }
            Request::Play(_, reply) => {
                let _ = reply.send(Err(PLAY_RUNNING.to_owned()));
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
                            let _ = reply.send(Ok(()));
                            return Some(window);
                        }
                        Err(e) => {
                            let _ = reply.send(Err(e));
                        }
                    }
                }
                Some(Request::PlayNext(reply)) | Some(Request::Seek(_, reply)) => {
                    let _ = reply.send(Err(NO_PLAY_RUNNING.to_owned()));
                }
                Some(Request::Burst(_, reply)) => {
                    let _ = reply.send((0, NO_PLAY_RUNNING.to_owned()));
                }
            }
        }
    }
}
