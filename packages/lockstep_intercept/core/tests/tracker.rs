//! The inference rules on call sequences as rclpy's and rclcpp's executors make them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use lockstep_intercept::events::EventKind;
use lockstep_intercept::tracker::{Now, Received, ServiceCall, Tracker};

const NODE: usize = 1;
const SCAN: usize = 10;
const ODOM: usize = 11;
const OUT: usize = 20;
const TIMER: usize = 30;
const MAIN: u32 = 100;

fn at(ms: u64, base: Instant) -> Now {
    Now {
        wall_ns: 1_000_000_000 + (ms as i64) * 1_000_000,
        ros_ns: (ms as i64) * 1_000_000,
        mono: base + Duration::from_millis(ms),
    }
}

fn received(digest: u64) -> Received {
    Received {
        digest,
        publisher_gid: vec![9; 16],
        publication_sequence_number: digest as i64,
        traced_upstream: false,
    }
}

fn fusion() -> Tracker {
    let mut t = Tracker::new(5);
    t.add_node(NODE, "fusion");
    t.add_subscription(SCAN, NODE, "/scan", false);
    t.add_subscription(ODOM, NODE, "/odom", false);
    t.add_publisher(OUT, NODE, "/fused");
    t
}

#[test]
fn an_output_names_the_message_its_callback_took_then_the_latest_of_the_others() {
    let base = Instant::now();
    let mut t = fusion();
    t.on_wait(MAIN);
    t.on_take(ODOM, MAIN, at(1, base), received(100));
    t.on_wait(MAIN);
    t.on_take(SCAN, MAIN, at(2, base), received(200));
    let out = t.on_publish(OUT, MAIN, at(5, base), 999).expect("an output");
    let channels: Vec<(&str, u64)> = out
        .inputs
        .iter()
        .map(|i| (i.taken.channel.as_str(), i.taken.digest))
        .collect();
    assert_eq!(
        channels,
        vec![("/scan", 200), ("/odom", 100)],
        "the trigger first, then the state"
    );
    assert_eq!(out.header.module_name, "fusion");
    assert_eq!(out.header.sequence_num, 0);
    assert_eq!(
        out.header.start_time_ns, 1_002_000_000,
        "started when /scan was taken"
    );
    assert_eq!(out.header.process_time_ns, 3_000_000);
    assert_eq!(out.header.epoch, 5);
    let again = t
        .on_publish(OUT, MAIN, at(6, base), 998)
        .expect("a second output");
    assert_eq!(again.header.sequence_num, 1);
}

#[test]
fn a_timer_output_names_the_latest_of_every_subscription_and_the_log_has_it_in_order() {
    let base = Instant::now();
    let mut t = fusion();
    t.add_timer(TIMER);
    t.on_take(SCAN, MAIN, at(1, base), received(200));
    t.on_wait(MAIN);
    t.on_timer(TIMER, MAIN, at(2, base));
    let out = t.on_publish(OUT, MAIN, at(3, base), 7).expect("an output");
    assert_eq!(out.inputs.len(), 1, "only /scan has received anything");
    assert_eq!(out.header.start_time_ns, 1_002_000_000, "started at the timer");
    let (_, log) = t.log_of(NODE).expect("node");
    let batch = log.next_batch("fusion", 5).expect("events");
    let kinds: Vec<EventKind> = batch.events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, vec![EventKind::Take, EventKind::Timer, EventKind::Publish]);
    assert_eq!(
        batch.events[0].sequence_number, 200,
        "the publisher's publication sequence number"
    );
    assert_eq!(batch.events[2].sequence_number, 0, "the output's own number");
}

#[test]
fn a_take_whose_callback_published_nothing_is_state_not_a_trigger_after_the_next_wait() {
    let base = Instant::now();
    let mut t = fusion();
    t.on_take(SCAN, MAIN, at(1, base), received(1));
    t.on_wait(MAIN);
    let out = t.on_publish(OUT, MAIN, at(2, base), 3).expect("an output");
    assert_eq!(
        out.header.start_time_ns, 1_002_000_000,
        "no trigger: started when published"
    );
    assert_eq!(out.inputs.len(), 1, "the scan is state");
}

#[test]
fn infrastructure_is_logged_but_never_an_input() {
    let base = Instant::now();
    let mut t = fusion();
    t.add_subscription(40, NODE, "/parameter_events", false);
    t.add_publisher(41, NODE, "/rosout");
    t.on_take(40, MAIN, at(1, base), received(1));
    assert!(
        t.on_publish(41, MAIN, at(2, base), 2).is_none(),
        "no header for /rosout"
    );
    let out = t.on_publish(OUT, MAIN, at(3, base), 3).expect("an output");
    assert!(out.inputs.is_empty());
    let wiring = t.take_wiring_change(NODE).expect("wiring");
    assert_eq!(
        wiring.reader_channels.iter().collect::<Vec<_>>(),
        vec!["/odom", "/scan"]
    );
    assert_eq!(wiring.writer_channels.iter().collect::<Vec<_>>(), vec!["/fused"]);
    assert!(
        t.take_wiring_change(NODE).is_none(),
        "announced once until it changes"
    );
}

#[test]
fn an_instrumented_module_keeps_its_own_headers() {
    let base = Instant::now();
    let mut t = fusion();
    assert!(t.add_publisher(50, NODE, "/fused/lockstep_header"));
    assert!(t.on_publish(OUT, MAIN, at(1, base), 1).is_none());
    assert!(t.take_wiring_change(NODE).is_none());
}

#[test]
fn two_callback_threads_and_foreign_thread_outputs_are_warned_once() {
    let base = Instant::now();
    let mut t = fusion();
    t.on_take(SCAN, MAIN, at(1, base), received(1));
    t.on_take(ODOM, MAIN + 1, at(2, base), received(2));
    t.on_publish(OUT, MAIN + 2, at(3, base), 3).expect("an output");
    t.on_publish(OUT, MAIN + 2, at(4, base), 4).expect("an output");
    t.add_subscription(60, NODE, "/ipc", true);
    let (_, log) = t.log_of(NODE).expect("node");
    let warnings = log.take_unsaid();
    assert_eq!(warnings.len(), 3, "{warnings:#?}");
    assert!(warnings[0].contains("several threads"));
    assert!(warnings[1].contains("no callback of this node"));
    assert!(warnings[2].contains("intra-process"));
}

#[test]
fn service_calls_are_logged_on_their_node() {
    let base = Instant::now();
    let mut t = fusion();
    t.add_service(70, NODE, "/add_two_ints");
    t.add_client(71, NODE, "/other");
    let call = ServiceCall {
        gid: vec![1; 16],
        sequence_number: 4,
        digest: 8,
    };
    t.on_service_event(EventKind::RequestTaken, 70, MAIN, at(1, base), call.clone());
    t.on_service_event(EventKind::ResponseSent, 70, MAIN, at(2, base), call.clone());
    t.on_service_event(EventKind::RequestSent, 71, MAIN, at(3, base), call.clone());
    t.on_service_event(EventKind::ResponseTaken, 71, MAIN, at(4, base), call);
    let (_, log) = t.log_of(NODE).expect("node");
    let batch = log.next_batch("fusion", 5).expect("events");
    let seen: Vec<(EventKind, &str)> = batch.events.iter().map(|e| (e.kind, e.name.as_str())).collect();
    assert_eq!(
        seen,
        vec![
            (EventKind::RequestTaken, "/add_two_ints"),
            (EventKind::ResponseSent, "/add_two_ints"),
            (EventKind::RequestSent, "/other"),
            (EventKind::ResponseTaken, "/other"),
        ]
    );
}
