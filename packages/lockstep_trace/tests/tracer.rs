//! Tracer: sequence numbering and the two-level backtrace.

use std::time::Duration;

use lockstep_trace::{digest, Error, SourceRef, TraceHeader, Tracer};

/// The example pipeline, three tracers: m1 reads c1,c2 writes c3; m3 writes c6; m2 reads c3,c6,c4 writes c5.
fn external(channel: &str, seq: u32) -> TraceHeader {
    TraceHeader::external(channel, seq, 1_000 + i64::from(seq), digest(channel.as_bytes()))
}

#[test]
fn outputs_are_numbered_per_channel_from_zero() {
    let mut tracer = Tracer::new("m1");
    let mut seqs = Vec::new();
    for channel in ["/a", "/b", "/a", "/a", "/b"] {
        let token = tracer.begin();
        seqs.push((channel, tracer.finish(token, channel, b"x", &[]).sequence_num));
    }
    assert_eq!(seqs, vec![("/a", 0), ("/b", 0), ("/a", 1), ("/a", 2), ("/b", 1)]);
    assert_eq!(tracer.next_sequence("/a"), 3);
    assert_eq!(tracer.next_sequence("/never"), 0);
}

#[test]
fn header_names_module_channel_stamp_time_and_digest() {
    let mut tracer = Tracer::new("m3");
    let token = tracer.begin_at(1_700_000_000_123_456_789);
    let header = tracer.finish_with_process_time(token, Duration::from_micros(1500), "/c6", b"goal", &[]);
    assert_eq!(header.module_name, "m3");
    assert_eq!(header.channel_name, "/c6");
    assert_eq!(header.sequence_num, 0);
    assert_eq!(header.start_time_ns, 1_700_000_000_123_456_789);
    assert_eq!(header.process_time_ns, 1_500_000);
    assert_eq!(header.payload_digest, digest(b"goal"));
    assert!(header.inputs.is_empty());
}

#[test]
fn measured_process_time_covers_the_work() {
    let mut tracer = Tracer::new("m");
    let token = tracer.begin();
    std::thread::sleep(Duration::from_millis(20));
    let header = tracer.finish(token, "/out", b"", &[]);
    assert!(header.process_time_ns >= 20_000_000, "{}", header.process_time_ns);
    assert!(header.process_time_ns < 2_000_000_000);
}

#[test]
fn process_time_saturates_at_u32() {
    let mut tracer = Tracer::new("m");
    let token = tracer.begin_at(0);
    let header = tracer.finish_with_process_time(token, Duration::from_secs(10), "/out", b"", &[]);
    assert_eq!(header.process_time_ns, u32::MAX);
}

#[test]
fn two_level_backtrace_of_figure_3a() {
    let mut m1 = Tracer::new("m1");
    let mut m2 = Tracer::new("m2");
    let mut m3 = Tracer::new("m3");

    // m1 fuses c1#4 and c2#7 into c3#0.
    let (c1, c2) = (external("/c1", 4), external("/c2", 7));
    let token = m1.begin_at(10);
    let c3 = m1.finish_with_process_time(token, Duration::from_nanos(5), "/c3", b"obstacles", &[&c1, &c2]);
    // m3 produced two missions, m2 will use the second.
    for _ in 0..2 {
        let token = m3.begin_at(20);
        let c6 = m3.finish(token, "/c6", b"mission", &[]);
        m2.record_input(c6);
    }
    m2.record_input(c3.clone());
    m2.record_input(external("/c4", 0));
    m2.record_input(external("/c4", 1)); // the latest odom replaces the first

    let token = m2.begin_at(30);
    let c5 = m2
        .finish_latest(token, "/c5", b"cmd_vel", &["/c3", "/c6", "/c4"])
        .expect("all inputs present");

    assert_eq!(
        (c5.module_name.as_str(), c5.channel_name.as_str(), c5.sequence_num),
        ("m2", "/c5", 0)
    );
    let first: Vec<(&str, &str, u32)> = c5
        .inputs
        .iter()
        .map(|i| (i.module_name.as_str(), i.channel_name.as_str(), i.sequence_num))
        .collect();
    assert_eq!(first, vec![("m1", "/c3", 0), ("m3", "/c6", 1), ("", "/c4", 1)]);

    // Level 1 carries the input's own timing.
    let c3_input = c5.input("/c3").expect("c3 input");
    assert_eq!((c3_input.start_time_ns, c3_input.process_time_ns), (10, 5));
    // Level 2: the input's inputs, and no deeper.
    assert_eq!(
        c3_input.sources,
        vec![
            SourceRef {
                module_name: "".into(),
                channel_name: "/c1".into(),
                sequence_num: 4,
                epoch: 0,
                payload_digest: digest(b"/c1"),
            },
            SourceRef {
                module_name: "".into(),
                channel_name: "/c2".into(),
                sequence_num: 7,
                epoch: 0,
                payload_digest: digest(b"/c2"),
            },
        ]
    );
    assert!(c5.input("/c6").expect("c6").sources.is_empty());
    assert!(c5.input("/c4").expect("c4").sources.is_empty());
}

#[test]
fn finish_latest_without_an_input_fails_and_numbers_nothing() {
    let mut m2 = Tracer::new("m2");
    m2.record_input(external("/c3", 0));
    let token = m2.begin();
    match m2.finish_latest(token, "/c5", b"", &["/c3", "/c6"]) {
        Err(Error::NoInput { module, channel }) => {
            assert_eq!((module.as_str(), channel.as_str()), ("m2", "/c6"))
        }
        other => panic!("expected NoInput, got {other:?}"),
    }
    assert_eq!(m2.next_sequence("/c5"), 0);
    assert_eq!(m2.latest_input("/c3").map(|h| h.sequence_num), Some(0));
}

#[test]
fn explicit_inputs_can_differ_from_the_latest() {
    let mut m = Tracer::new("m");
    let old = external("/in", 3);
    m.record_input(external("/in", 9));
    let token = m.begin();
    let header = m.finish(token, "/out", b"", &[&old]);
    assert_eq!(header.inputs[0].sequence_num, 3);
}

#[test]
fn epochs_and_digests_identify_inputs_across_restarts() {
    // Two runs of one module (a restart) number from 0 again; the epoch tells their outputs apart.
    let first = Tracer::with_epoch("m1", 11).finish(Tracer::new("m1").begin(), "/c3", b"a", &[]);
    let mut restarted = Tracer::with_epoch("m1", 22);
    let token = restarted.begin();
    let second = restarted.finish(token, "/c3", b"b", &[]);
    assert_eq!((first.sequence_num, second.sequence_num), (0, 0));
    assert_ne!(first.as_source(), second.as_source());
    assert_eq!((first.epoch, second.epoch), (11, 22));
    // Fresh tracers get distinct, non-zero epochs (0 is an untraced publisher's).
    let (a, b) = (Tracer::new("x").epoch(), Tracer::new("x").epoch());
    assert!(a > 0 && b >= a);
    // An untraced input keeps its payload digest at both levels of the backtrace, so whoever received it,
    // the recorded message is found by (channel, digest).
    let scan = external("/c1", 4);
    let mut m1 = Tracer::with_epoch("m1", 5);
    let token = m1.begin();
    let c3 = m1.finish(token, "/c3", b"c3", &[&scan]);
    assert_eq!(c3.inputs[0].payload_digest, scan.payload_digest);
    assert_eq!(c3.inputs[0].epoch, 0);
    let mut m2 = Tracer::with_epoch("m2", 6);
    let token = m2.begin();
    let c5 = m2.finish(token, "/c5", b"c5", &[&c3]);
    assert_eq!(
        (c5.inputs[0].epoch, c5.inputs[0].payload_digest),
        (5, digest(b"c3"))
    );
    assert_eq!(c5.inputs[0].sources[0].payload_digest, scan.payload_digest);
}
