//! The live side of an unmodified node in a lock-step replay: the node runs under the rcl interceptor in
//! replay mode (`lockstep trace --replay -- <node>`), and the replay grants it one recorded event at a time
//! on `<node>/lockstep/grant` (`EventGrant`: take this message, fire this timer, at this ROS time). The
//! interceptor answers on `<node>/lockstep/done` (`EventDone`) with what the callback published, once the
//! callback returned.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use lockstep_replay::lockstep::{EventOutput, GrantEvent, Module, StepInput};
use lockstep_ros::qos;
use lockstep_trace_ros::lockstep_trace::TraceHeader;
use r2r::lockstep_interfaces::msg::{EventDone, EventGrant};

/// The grant and answer topics of `module` (its fully qualified name without the leading slash).
pub(crate) fn grant_topics(module: &str) -> (String, String) {
    (
        format!("/{module}/lockstep/grant"),
        format!("/{module}/lockstep/done"),
    )
}

/// An unmodified node replayed through the interceptor.
pub(crate) struct InterceptedNode {
    pub(crate) name: String,
    pub(crate) grants: r2r::Publisher<EventGrant>,
    pub(crate) answers: mpsc::Receiver<EventDone>,
    pub(crate) timeout: Duration,
    pub(crate) next_id: u64,
    pub(crate) last_process_time_ns: Option<u32>,
}

impl InterceptedNode {
    /// The grant and answer endpoints of `module` on `node`; answers are forwarded by a task on `handle`.
    pub(crate) fn create(
        node: &mut r2r::Node,
        handle: &tokio::runtime::Handle,
        module: &str,
        timeout: Duration,
    ) -> anyhow::Result<(Self, impl std::future::Future<Output = r2r::Result<()>>)> {
        let (grant_topic, done_topic) = grant_topics(module);
        let grants = node.create_publisher::<EventGrant>(&grant_topic, qos::reliable(100))?;
        // The interceptor's answers are latched: one sent before its publisher matched this subscription
        // still arrives.
        let mut stream = node.subscribe::<EventDone>(&done_topic, qos::latched().keep_last(100))?;
        let matched = grants.wait_for_inter_process_subscribers()?;
        let (sender, answers) = mpsc::channel();
        handle.spawn(async move {
            while let Some(done) = stream.next().await {
                if sender.send(done).is_err() {
                    return;
                }
            }
        });
        // Ids start from the wall clock so that an answer latched by an earlier replay never matches.
        let next_id = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        Ok((
            Self {
                name: module.to_owned(),
                grants,
                answers,
                timeout,
                next_id,
                last_process_time_ns: None,
            },
            matched,
        ))
    }

    fn grant(&mut self, event: &GrantEvent<'_>) -> Result<Vec<EventOutput>, String> {
        let id = self.next_id;
        self.next_id += 1;
        let grant = EventGrant {
            id,
            kind: event.kind,
            stamp: time(event.ros_time_ns),
            name: event.name.to_owned(),
            sequence_number: event.sequence_number,
            data: event.data.to_vec(),
            clock_reads: event.clock_reads_ns.iter().map(|&t| time(t)).collect(),
        };
        self.grants
            .publish(&grant)
            .map_err(|e| format!("granting {} to `{}`: {e}", describe(event), self.name))?;
        let deadline = Instant::now() + self.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let done = self.answers.recv_timeout(left).map_err(|_| {
                format!(
                    "`{}` did not finish {} within {} ms (--event-timeout-ms): is it running under \
                     `lockstep trace --replay`, and is its executor spinning?",
                    self.name,
                    describe(event),
                    self.timeout.as_millis()
                )
            })?;
            if done.id != id {
                continue; // an answer to an earlier replay's grant
            }
            if !done.success {
                return Err(format!(
                    "`{}` could not reproduce {}: {}",
                    self.name,
                    describe(event),
                    done.message
                ));
            }
            self.last_process_time_ns = Some(done.process_time_ns);
            return Ok(done
                .outputs
                .into_iter()
                .map(|o| EventOutput {
                    kind: o.kind,
                    name: o.name,
                    data: o.data,
                })
                .collect());
        }
    }
}

/// builtin_interfaces/Time at `ns` since the Unix epoch (earlier times clamped to it).
fn time(ns: i64) -> r2r::builtin_interfaces::msg::Time {
    let ns = ns.max(0);
    r2r::builtin_interfaces::msg::Time {
        sec: i32::try_from(ns / 1_000_000_000).unwrap_or(i32::MAX),
        nanosec: u32::try_from(ns % 1_000_000_000).unwrap_or(0),
    }
}

/// How an error names an event: "the take of /raw at 12.345678901 s", "timer 0 at 12.3 s".
fn describe(event: &GrantEvent<'_>) -> String {
    let at = format!("{:.9} s", event.ros_time_ns as f64 / 1e9);
    if event.name.is_empty() {
        format!("timer {} at {at}", event.sequence_number)
    } else {
        format!("the event on {} at {at}", event.name)
    }
}

impl Module for InterceptedNode {
    fn name(&self) -> &str {
        &self.name
    }

    fn step(&mut self, frame: &TraceHeader, _inputs: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
        Err(format!(
            "`{}` is an unmodified node: it replays its recorded events, not steps (frame {} #{})",
            self.name, frame.channel_name, frame.sequence_num
        ))
    }

    fn step_events(&mut self, events: &[GrantEvent<'_>]) -> Result<Vec<Vec<EventOutput>>, String> {
        events.iter().map(|e| self.grant(e)).collect()
    }

    fn last_process_time_ns(&self) -> Option<u32> {
        self.last_process_time_ns
    }
}
