//! Lock-step replay of an unmodified node, the part without rcl: one granted event at a time.
//!
//! The replay grants an event (`lockstep_interfaces/msg/EventGrant`): take this message, fire this timer,
//! take this request or response. The interceptor resolves what it names in the node ([`Pacer::offer`]), lets
//! the next `rcl_wait` of a thread whose wait set holds it return with only that entity ready
//! ([`Pacer::deliver`]), hands the granted bytes to the node's take ([`Pacer::take`]), keeps what the callback
//! publishes ([`Pacer::capture`]) and, when that thread waits again (the callback returned), answers with it
//! ([`Pacer::finish`]). Nothing else of the node's data flow runs meanwhile: its other subscriptions,
//! timers, services and clients never look ready.

use std::time::Instant;

use lockstep_trace::duration_to_ns_u32;

use crate::events::EventKind;
use crate::tracker::grants::Target;
use crate::tracker::Handle;

/// One granted event (`EventGrant`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub id: u64,
    pub kind: EventKind,
    /// The node's ROS time during the callback.
    pub ros_time_ns: i64,
    /// Topic or service; empty for a timer.
    pub name: String,
    /// TIMER: the timer's number; services: the request's sequence number.
    pub sequence_number: i64,
    /// What to deliver (CDR); empty for a timer.
    pub data: Vec<u8>,
    /// The ROS times the callback read when recorded, in order.
    pub clock_reads_ns: Vec<i64>,
}

impl Grant {
    /// What the grant names in a node, or why it names nothing a node can reproduce.
    pub fn target(&self) -> Result<Target<'_>, String> {
        match self.kind {
            EventKind::Take => Ok(Target::Subscription(&self.name)),
            EventKind::Timer => Ok(Target::Timer(self.sequence_number)),
            EventKind::RequestTaken => Ok(Target::Service(&self.name)),
            EventKind::ResponseTaken => Ok(Target::Client(&self.name)),
            other => Err(format!(
                "a {other:?} event is what a callback does, not something to grant"
            )),
        }
    }

    /// How a message names the grant: "the take of /scan", "timer 0".
    pub fn describe(&self) -> String {
        match self.kind {
            EventKind::Timer => format!("timer {}", self.sequence_number),
            EventKind::Take => format!("the take of {}", self.name),
            EventKind::RequestTaken => format!("the request to {}", self.name),
            EventKind::ResponseTaken => format!("the response of {}", self.name),
            other => format!("{other:?} {}", self.name),
        }
    }
}

/// What a callback sent (`EventOutput`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub kind: EventKind,
    pub name: String,
    pub data: Vec<u8>,
}

/// The answer to a grant (`EventDone`), for the node that was granted it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done {
    pub node: Handle,
    pub id: u64,
    pub success: bool,
    pub message: String,
    pub outputs: Vec<Output>,
    pub process_time_ns: u32,
}

impl Done {
    fn refused(node: Handle, id: u64, message: String) -> Self {
        Self {
            node,
            id,
            success: false,
            message,
            outputs: Vec::new(),
            process_time_ns: 0,
        }
    }
}

#[derive(Debug)]
enum Phase {
    Idle,
    /// Resolved, waiting for a wait set that holds the target.
    Pending {
        node: Handle,
        target: Handle,
        grant: Grant,
    },
    /// Delivered to `thread`'s wait; the callback runs until that thread waits again.
    Running {
        node: Handle,
        target: Handle,
        grant: Grant,
        thread: u32,
        started: Instant,
        taken: bool,
        outputs: Vec<Output>,
        /// Clock reads answered so far.
        reads: usize,
    },
}

/// The one event a replayed process is granted at a time.
#[derive(Debug)]
pub struct Pacer {
    phase: Phase,
}

impl Default for Pacer {
    fn default() -> Self {
        Self { phase: Phase::Idle }
    }
}

impl Pacer {
    /// Whether a grant may be offered (none pending or running).
    pub fn is_idle(&self) -> bool {
        matches!(self.phase, Phase::Idle)
    }

    /// Whether a grant waits for a wait set or its callback runs.
    pub fn is_busy(&self) -> bool {
        !self.is_idle()
    }

    /// A grant arrived for `node`; `target` is what it names there (`None`: nothing). Returns the refusal to
    /// send at once when it cannot be reproduced, or when another grant is still under way.
    pub fn offer(&mut self, node: Handle, grant: Grant, target: Option<Handle>) -> Option<Done> {
        if !self.is_idle() {
            return Some(Done::refused(
                node,
                grant.id,
                "another event is still being reproduced in this process".into(),
            ));
        }
        match (grant.target(), target) {
            (Err(reason), _) => Some(Done::refused(node, grant.id, reason)),
            (Ok(_), None) => {
                let reason = match grant.kind {
                    EventKind::Timer => format!(
                        "the process has no timer number {} (timers are numbered from 0 in the order they are \
                         created: does the node create the same timers as when it was recorded?)",
                        grant.sequence_number
                    ),
                    _ => format!(
                        "the node has no {} `{}` (does it still read what it read when recorded?)",
                        match grant.kind {
                            EventKind::Take => "subscription to",
                            EventKind::RequestTaken => "service",
                            _ => "client of",
                        },
                        grant.name
                    ),
                };
                Some(Done::refused(node, grant.id, reason))
            }
            (Ok(_), Some(target)) => {
                self.phase = Phase::Pending { node, target, grant };
                None
            }
        }
    }

    /// The entity a wait should report ready, if `in_wait_set` holds the pending grant's target: from now on
    /// the callback runs on `thread`. Returns the target and the ROS time to set.
    pub fn deliver(&mut self, thread: u32, in_wait_set: impl Fn(Handle) -> bool) -> Option<(Handle, i64)> {
        let Phase::Pending { target, .. } = &self.phase else {
            return None;
        };
        if !in_wait_set(*target) {
            return None;
        }
        let Phase::Pending { node, target, grant } = std::mem::replace(&mut self.phase, Phase::Idle) else {
            return None;
        };
        let time = grant.ros_time_ns;
        self.phase = Phase::Running {
            node,
            target,
            grant,
            thread,
            started: Instant::now(),
            taken: false,
            outputs: Vec::new(),
            reads: 0,
        };
        Some((target, time))
    }

    /// Whether `handle` is the entity whose callback runs now.
    pub fn is_running(&self, handle: Handle) -> bool {
        matches!(&self.phase, Phase::Running { target, .. } if *target == handle)
    }

    /// The granted bytes, once, when the node takes from the granted entity.
    pub fn take(&mut self, handle: Handle) -> Option<(&Grant, Vec<u8>)> {
        match &mut self.phase {
            Phase::Running {
                target, taken, grant, ..
            } if *target == handle && !*taken => {
                *taken = true;
                Some((grant, grant.data.clone()))
            }
            _ => None,
        }
    }

    /// Whether an output sent on `thread` belongs to the callback under way.
    pub fn captures(&self, thread: u32) -> bool {
        matches!(&self.phase, Phase::Running { thread: t, .. } if *t == thread)
    }

    /// An output of the callback under way (sent on its thread).
    pub fn capture(&mut self, thread: u32, output: Output) {
        if let Phase::Running {
            thread: t, outputs, ..
        } = &mut self.phase
        {
            if *t == thread {
                outputs.push(output);
            }
        }
    }

    /// The callback under way on `thread` reads a ROS clock: the time it read there when recorded (the next
    /// of the grant's reads, the last again once they are used up); `None` outside that callback or when the
    /// recording has no read.
    pub fn clock_read(&mut self, thread: u32) -> Option<i64> {
        let Phase::Running {
            thread: t,
            grant,
            reads,
            ..
        } = &mut self.phase
        else {
            return None;
        };
        if *t != thread {
            return None;
        }
        let value = grant
            .clock_reads_ns
            .get(*reads)
            .or(grant.clock_reads_ns.last())
            .copied();
        *reads += 1;
        value
    }

    /// `thread` waits again: if the granted callback ran there, it returned; the answer to send.
    pub fn finish(&mut self, thread: u32) -> Option<Done> {
        if !matches!(&self.phase, Phase::Running { thread: t, .. } if *t == thread) {
            return None;
        }
        let Phase::Running {
            node,
            grant,
            started,
            taken,
            outputs,
            ..
        } = std::mem::replace(&mut self.phase, Phase::Idle)
        else {
            return None;
        };
        let needs_take = grant.kind != EventKind::Timer;
        let (success, message) = if needs_take && !taken {
            (
                false,
                format!(
                    "the node did not take what was granted ({}) before its executor waited again: a \
                     multi-threaded executor runs callbacks on other threads than the one that waits, which \
                     lock-step replay cannot follow (spin the node with a single-threaded executor)",
                    grant.describe()
                ),
            )
        } else {
            (true, String::new())
        };
        Some(Done {
            node,
            id: grant.id,
            success,
            message,
            outputs,
            process_time_ns: duration_to_ns_u32(started.elapsed()),
        })
    }

    /// The node goes: a grant pending or running for it is answered with why it stopped.
    pub fn node_gone(&mut self, gone: Handle) -> Option<Done> {
        let (node, id, what) = match &self.phase {
            Phase::Pending { node, grant, .. } | Phase::Running { node, grant, .. } if *node == gone => {
                (*node, grant.id, grant.describe())
            }
            _ => return None,
        };
        self.phase = Phase::Idle;
        Some(Done::refused(
            node,
            id,
            format!("the node shut down during {what}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(kind: EventKind, name: &str) -> Grant {
        Grant {
            id: 7,
            kind,
            ros_time_ns: 1_500,
            name: name.into(),
            sequence_number: 0,
            data: vec![1, 2, 3],
            clock_reads_ns: vec![1_600, 1_700],
        }
    }

    #[test]
    fn a_take_is_delivered_once_and_answered_when_the_thread_waits_again() {
        let mut p = Pacer::default();
        assert!(p.offer(1, grant(EventKind::Take, "/raw"), Some(10)).is_none());
        assert!(p.deliver(5, |h| h == 11).is_none(), "not in that wait set");
        assert_eq!(p.deliver(5, |h| h == 10), Some((10, 1_500)));
        assert!(p.take(11).is_none());
        assert_eq!(p.take(10).map(|(_, d)| d), Some(vec![1, 2, 3]));
        assert!(p.take(10).is_none(), "the grant is one message");
        assert_eq!(
            p.clock_read(6),
            None,
            "another thread's read is not the callback's"
        );
        let reads: Vec<_> = (0..3).map(|_| p.clock_read(5)).collect();
        assert_eq!(
            reads,
            [Some(1_600), Some(1_700), Some(1_700)],
            "recorded reads, then the last again"
        );
        p.capture(
            6,
            Output {
                kind: EventKind::Publish,
                name: "/x".into(),
                data: vec![],
            },
        );
        p.capture(
            5,
            Output {
                kind: EventKind::Publish,
                name: "/out".into(),
                data: vec![9],
            },
        );
        assert!(p.finish(6).is_none(), "another thread's wait ends nothing");
        let done = p.finish(5).expect("answered");
        assert!(done.success, "{}", done.message);
        assert_eq!((done.node, done.id), (1, 7));
        assert_eq!(done.outputs.len(), 1);
        assert_eq!(done.outputs[0].name, "/out");
        assert!(p.is_idle());
    }

    #[test]
    fn what_cannot_be_reproduced_is_refused_with_the_reason() {
        let mut p = Pacer::default();
        let done = p.offer(1, grant(EventKind::Take, "/raw"), None).expect("refused");
        assert!(!done.success);
        assert!(
            done.message.contains("subscription to `/raw`"),
            "{}",
            done.message
        );
        let done = p
            .offer(1, grant(EventKind::Publish, "/raw"), Some(3))
            .expect("refused");
        assert!(
            done.message.contains("not something to grant"),
            "{}",
            done.message
        );
        assert!(p.offer(1, grant(EventKind::Timer, ""), Some(3)).is_none());
        let busy = p.offer(1, grant(EventKind::Timer, ""), Some(3)).expect("refused");
        assert!(busy.message.contains("still"), "{}", busy.message);
    }

    #[test]
    fn a_take_the_executor_skipped_fails_and_a_node_that_goes_answers() {
        let mut p = Pacer::default();
        p.offer(1, grant(EventKind::Take, "/raw"), Some(10));
        p.deliver(5, |_| true);
        let done = p.finish(5).expect("answered");
        assert!(
            !done.success && done.message.contains("did not take"),
            "{}",
            done.message
        );
        p.offer(2, grant(EventKind::Timer, ""), Some(4));
        assert!(p.node_gone(1).is_none());
        let gone = p.node_gone(2).expect("answered");
        assert!(
            gone.message.contains("shut down during timer 0"),
            "{}",
            gone.message
        );
        assert!(p.is_idle());
    }
}
