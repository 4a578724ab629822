#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The bag player's services with any numbers: `~/set_rate` (SetRate.rate, float64), `~/seek` (Seek.time,
//! builtin_interfaces/Time: sec int32, nanosec uint32), `~/burst` (Burst.num_messages, uint64), `~/play`
//! (Play.start_offset / playback_until_timestamp: Time, playback_duration: Duration). Each is refused with
//! a message naming the field, or carried out with every time inside the bag and every count within what
//! was asked; never a panic (debug build: an overflow panics too). The requests go through what the node
//! calls: `Control::set_rate`, `seek_time` + the play thread's `check_seek`, `PlayRequest::from_fields` +
//! `PlayRequest::window`, `burst`, and the play thread ([`Engine`]) itself.

use std::collections::BTreeSet;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use lockstep_bag::{BagMessage, BagReader, BagWriter, TopicSpec, WriterOptions};
use lockstep_bag_player::{
    burst, check_seek, due, seek_time, ClockTopics, Control, Due, Engine, Merged, MessageOrder, Plan,
    PlayRequest, PlaybackClock, Reply, Request, Sink, Window,
};
use lockstep_ranges::hostile::{any_f64_around, any_nanosec, any_time_sec, config};
use proptest::prelude::*;

const MS: u64 = 1_000_000;

/// Any f64, the hostile ones often (see `lockstep_ranges::hostile`).
fn any_f64() -> BoxedStrategy<f64> {
    any_f64_around(0.001..100.0f64)
}

fn any_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1u64),
        Just(u64::MAX),
        Just(u64::MAX - 1),
        0..20u64,
        any::<u64>()
    ]
}

/// A ROS Time in ns as the node reads it (`lockstep_ros::time::time_to_ns`: exact in an i64).
fn time_ns(sec: i32, nanosec: u32) -> i64 {
    i64::from(sec) * 1_000_000_000 + i64::from(nanosec)
}

/// Whether `message` names one of `fields` (the window's refusals spell them as options: `start-offset`).
fn names(message: &str, fields: &[&str]) -> bool {
    let message = message.replace('-', "_");
    !message.is_empty() && fields.iter().any(|f| message.contains(f))
}

proptest! {
    #![proptest_config(config(256, 0x5EED_0007))]

    /// SetRate.rate: refused naming the rate unless finite and > 0; the clock then maps any bag time to a
    /// wall time and back without overflow.
    #[test]
    fn set_rate_is_refused_naming_the_rate_or_taken(rate in any_f64(), wall in any_u64(), bag in any_u64()) {
        let control = Control::new(1.0, false);
        match control.set_rate(rate) {
            Ok(()) => {
                prop_assert!(rate.is_finite() && rate > 0.0, "rate {} taken", rate);
                prop_assert_eq!(control.rate().to_bits(), rate.to_bits());
            }
            Err(e) => {
                prop_assert!(names(&e, &["rate"]) && !(rate.is_finite() && rate > 0.0), "{}", e);
                prop_assert_eq!(control.rate(), 1.0);
            }
        }
        let _ = control.bag_now();
        let mut clock = PlaybackClock::new(bag, wall, 1.0, false);
        let taken = clock.set_rate(rate, wall);
        prop_assert_eq!(taken, rate.is_finite() && rate > 0.0);
        let now = clock.now(wall.saturating_add(1_000_000_000));
        prop_assert!(now >= bag);
        match due(&clock, bag.saturating_add(MS), wall) {
            Due::In(_) | Due::Now(_) => {}
            Due::Paused => prop_assert!(false, "not paused"),
        }
    }

    /// Seek.time: a time before 1970 or outside the bag is refused naming the time.
    #[test]
    fn seek_time_is_refused_naming_the_time_or_inside_the_bag(
        sec in any_time_sec(),
        nanosec in any_nanosec(),
        span in (any_u64(), any_u64()),
    ) {
        let (bag_start, bag_end) = (span.0.min(span.1), span.0.max(span.1));
        let asked = time_ns(sec, nanosec);
        match seek_time(asked).and_then(|t| check_seek(t, bag_start, bag_end).map(|()| t)) {
            Ok(t) => {
                prop_assert_eq!(i64::try_from(t).ok(), Some(asked));
                prop_assert!((bag_start..=bag_end).contains(&t));
            }
            Err(e) => prop_assert!(names(&e, &["time"]), "{}", e),
        }
    }

    /// Burst.num_messages: any uint64 (0: all that are left); never more published than asked, and the note
    /// says when the bag ended first.
    #[test]
    fn burst_num_messages_of_any_uint64_publishes_at_most_that_many(
        n in any_u64(), left in 0..50u64, paused in any::<bool>(),
    ) {
        let (count, note) = burst(paused, n, |n| if n == 0 { left } else { n.min(left) });
        if !paused {
            prop_assert_eq!(count, 0);
            prop_assert!(!note.is_empty());
        } else {
            prop_assert!(count <= left && (n == 0 || count <= n));
            prop_assert_eq!(note.is_empty(), n == 0 || count == n, "{}", note);
        }
    }

    /// Play: start_offset, playback_duration and playback_until_timestamp of any Time / Duration: refused
    /// naming the field, or a window inside the bag that starts no later than it ends.
    #[test]
    fn play_fields_are_refused_naming_the_field_or_a_window_inside_the_bag(
        start_offset in (any_time_sec(), any_nanosec()),
        duration in (any_time_sec(), any_nanosec()),
        until in (any_time_sec(), any_nanosec()),
        span in prop_oneof![
            Just((MS, 10 * MS)),
            Just((1_700_000_000_000_000_000, 1_700_000_010_000_000_000)),
            (any_u64(), any_u64()),
        ],
    ) {
        let (bag_start, bag_end) = (span.0.min(span.1), span.0.max(span.1));
        let configured = Window { start_ns: bag_start, end_ns: bag_end };
        let request = PlayRequest::from_fields(
            time_ns(start_offset.0, start_offset.1),
            duration.0,
            duration.1,
            time_ns(until.0, until.1),
        );
        for x in [request.start_offset_secs, request.playback_duration_secs] {
            prop_assert!(x.is_finite(), "{:?}", request);
        }
        match request.window(configured, bag_start, bag_end) {
            Ok(w) => {
                prop_assert!(bag_start <= w.start_ns && w.start_ns <= w.end_ns && w.end_ns <= bag_end,
                    "{:?} from {:?} in {}..{}", w, request, bag_start, bag_end);
                prop_assert!(request.start_offset_secs >= 0.0, "a negative start offset taken: {:?}", request);
            }
            Err(e) => prop_assert!(
                names(&e, &["start_offset", "playback_duration", "playback_until_timestamp"]),
                "{}", e
            ),
        }
    }
}

/// Records the log time of each published message.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<u64>>>);

impl Sink for Recorder {
    fn publish(&mut self, message: &BagMessage) {
        self.0.lock().unwrap().push(message.log_time_ns);
    }
    fn publish_clock(&mut self, _: u64) {}
    fn wait_for_all_acked(&mut self, _: Duration) {}
    fn short_of_subscribers(&self, _: usize) -> Option<String> {
        None
    }
    fn info(&self, _: &str) {}
    fn error(&self, _: &str) {}
}

/// Send `make(reply)` to the play thread and wait for its answer.
fn ask<T: Send + 'static>(control: &Control, make: impl FnOnce(Reply<T>) -> Request) -> T {
    let (tx, rx) = mpsc::channel();
    control.request(make(Box::new(move |answer| {
        let _ = tx.send(answer);
    })));
    rx.recv_timeout(Duration::from_secs(10)).unwrap()
}

#[derive(Debug, Clone)]
enum Op {
    Burst(u64),
    Seek(i32, u32),
    SetRate(f64),
    Play((i32, u32), (i32, u32), (i32, u32)),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        any_u64().prop_map(Op::Burst),
        (any_time_sec(), any_nanosec()).prop_map(|(s, n)| Op::Seek(s, n)),
        any_f64().prop_map(Op::SetRate),
        (
            (any_time_sec(), any_nanosec()),
            (any_time_sec(), any_nanosec()),
            (any_time_sec(), any_nanosec())
        )
            .prop_map(|(a, b, c)| Op::Play(a, b, c)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..config(256, 0x5EED_0008) })]

    /// The play thread, paused on a bag of 10 messages (1..=10 ms), served any sequence of these requests:
    /// each answered, never more published than asked, only the bag's messages, and it stops when told.
    #[test]
    fn the_play_thread_serves_requests_with_any_numbers(ops in prop::collection::vec(op(), 1..12)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bag");
        let mut writer = BagWriter::create(&path, WriterOptions::default()).unwrap();
        writer.add_topic(TopicSpec::new("/t", "std_msgs/msg/String")).unwrap();
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
            looped: false,
            delay_ns: 0,
            wait_for_all_acked: Duration::ZERO,
            wait_for_subscribers: 0,
            clock_topics: ClockTopics::Off,
        };
        let control = Arc::new(Control::new(1.0, true));
        let recorder = Recorder::default();
        let engine = Engine::new(control.clone(), ahead, recorder.clone(), plan, false);
        let thread = std::thread::spawn(move || engine.run());
        for op in ops {
            let before = recorder.0.lock().unwrap().len() as u64;
            match op {
                Op::Burst(n) => {
                    let (count, note) = ask(&control, |r| Request::Burst(n, r));
                    let after = recorder.0.lock().unwrap().len() as u64;
                    prop_assert!(count <= 10 && (n == 0 || count <= n), "{} of {}: {}", count, n, note);
                    prop_assert_eq!(after - before, count);
                }
                Op::Seek(sec, nanosec) => {
                    let outcome = seek_time(time_ns(sec, nanosec))
                        .map(|t| ask(&control, |r| Request::Seek(t, r)))
                        .and_then(|o| o);
                    if let Err(e) = outcome {
                        prop_assert!(names(&e, &["time", "play"]), "{}", e);
                    }
                }
                Op::SetRate(rate) => {
                    if let Err(e) = control.set_rate(rate) {
                        prop_assert!(names(&e, &["rate"]), "{}", e);
                    }
                    // Back to paused and a sane rate for the next request.
                    control.pause();
                }
                Op::Play(a, b, c) => {
                    let request = PlayRequest::from_fields(time_ns(a.0, a.1), b.0, b.1, time_ns(c.0, c.1));
                    let outcome = ask(&control, |r| Request::Play(request, r));
                    if let Err(e) = outcome {
                        prop_assert!(
                            names(&e, &["start_offset", "playback_duration", "playback_until_timestamp", "play"]),
                            "{}", e
                        );
                    }
                    control.pause();
                }
            }
        }
        control.stop();
        prop_assert_eq!(thread.join().unwrap(), None);
        let times = recorder.0.lock().unwrap().clone();
        prop_assert!(times.iter().all(|t| (MS..=10 * MS).contains(t) && t % MS == 0), "{:?}", times);
    }
}
