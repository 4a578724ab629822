#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A traced module's step service (Step: `uint32 timeout_ms`, and the numbers of the frames it grants) with
//! any values, through what `lockstep_trace_ros::step` calls on each request: `step_timeout`,
//! `StepGrant::new`, `PendingStep` (grant, wait for the clock, expire). The wait is exactly the timeout
//! asked (0: the default), its deadline is on the clock, and a refusal says how long it waited and which
//! frame it was; never a panic (debug build: an overflow panics too).

use std::time::{Duration, Instant};

use lockstep_ranges::hostile::config;
use lockstep_trace::step::{step_timeout, DEFAULT_STEP_TIMEOUT, INPUTS_NOT_RECEIVED};
use lockstep_trace::{Granted, PendingStep, StepGrant, TraceHeader};
use proptest::prelude::*;

fn header() -> impl Strategy<Value = TraceHeader> {
    (
        prop_oneof![Just(0u32), Just(u32::MAX), any::<u32>()],
        prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()],
        prop_oneof![
            Just(i64::MIN),
            Just(i64::MAX),
            Just(-1i64),
            Just(0i64),
            any::<i64>()
        ],
        prop_oneof![Just(0u32), Just(u32::MAX), any::<u32>()],
        any::<u64>(),
    )
        .prop_map(
            |(sequence_num, epoch, start_time_ns, process_time_ns, payload_digest)| TraceHeader {
                module_name: "m".into(),
                channel_name: "/out".into(),
                sequence_num,
                epoch,
                start_time_ns,
                process_time_ns,
                payload_digest,
                inputs: Vec::new(),
            },
        )
}

proptest! {
    #![proptest_config(config(256, 0x5EED_0009))]

    #[test]
    fn step_timeout_ms_of_any_uint32_waits_exactly_that_long(
        timeout_ms in prop_oneof![Just(0u32), Just(1u32), Just(u32::MAX), Just(u32::MAX - 1), any::<u32>()],
        frame in header(),
        more in prop::collection::vec(header(), 0..3),
        sim_now in prop_oneof![Just(None), Just(Some(None)), any::<i64>().prop_map(|n| Some(Some(n)))],
    ) {
        let timeout = step_timeout(timeout_ms);
        if timeout_ms == 0 {
            prop_assert_eq!(timeout, DEFAULT_STEP_TIMEOUT);
        } else {
            prop_assert_eq!(timeout, Duration::from_millis(u64::from(timeout_ms)));
        }
        let started = Instant::now();
        let grant = StepGrant::new(frame.clone(), more.clone(), started, timeout);
        prop_assert_eq!(grant.deadline().duration_since(started), timeout);
        prop_assert_eq!(grant.frames().count(), 1 + more.len());
        let refusal = grant.refusal();
        prop_assert!(
            refusal.contains(&format!("#{}: {INPUTS_NOT_RECEIVED} within {} ms", frame.sequence_num, timeout.as_millis())),
            "{}", refusal
        );
        let mut pending = PendingStep::default();
        prop_assert!(pending.grant(Granted::new(grant, ())).is_none());
        let waits = pending.waits_for_clock(sim_now);
        prop_assert_eq!(waits, matches!(sim_now, Some(now) if now != Some(frame.start_time_ns)));
        prop_assert_eq!(pending.pending(sim_now).is_some(), !waits);
        let again = StepGrant::new(frame.clone(), Vec::new(), started, timeout);
        let (_, superseded) = pending.grant(Granted::new(again, ())).unwrap();
        prop_assert!(superseded.starts_with("superseded by a newer grant"), "{}", superseded);
        let (_, expired) = pending.expire(sim_now).unwrap();
        prop_assert!(!expired.is_empty() && expired.contains(&format!("#{}", frame.sequence_num)), "{}", expired);
        if waits {
            prop_assert!(expired.contains(&frame.start_time_ns.to_string()), "{}", expired);
        }
    }
}
