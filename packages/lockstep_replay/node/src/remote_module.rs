//! The live side of one DDS replay step: the recorded inputs published once per message (with their
//! headers and `/clock` at the frame's recorded start), and the step granted through the module's step
//! service, its outputs taken from the answer.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use lockstep_replay::lockstep::{Module, StepInput};
use lockstep_ros::generic::{GenericNode, GenericPublisher};
use lockstep_trace_ros::header_to_msg;
use lockstep_trace_ros::lockstep_trace::TraceHeader;
use lockstep_trace_ros::DependencyHeader;
use r2r::lockstep_interfaces::srv::Step;
use r2r::rosgraph_msgs::msg::Clock;

/// The recorded data the replay publishes, once per message.
#[derive(Default)]
pub(crate) struct Feeds {
    /// Per channel: data publisher, header publisher, live readers.
    pub(crate) publishers: BTreeMap<String, (GenericPublisher, r2r::Publisher<DependencyHeader>, usize)>,
    /// Recorded headers of fed channels by (channel, digest), published after their data.
    pub(crate) headers: BTreeMap<(String, u64), TraceHeader>,
    published: BTreeSet<(String, u64)>,
    /// `/clock`, with each frame's recorded start time.
    pub(crate) clock: Option<r2r::Publisher<Clock>>,
    pub(crate) node: Option<GenericNode>,
}

impl Feeds {
    /// Publish a recorded input and its header, once per message unless `again`.
    fn publish(&mut self, input: &StepInput<'_>, again: bool) -> Result<(), String> {
        let Some((data, header, _)) = self.publishers.get(input.channel) else {
            return Ok(()); // no live reader of it
        };
        if !self
            .published
            .insert((input.channel.to_owned(), input.payload_digest))
            && !again
        {
            return Ok(());
        }
        data.publish(input.data)
            .map_err(|e| format!("publishing the recorded {}: {e}", input.channel))?;
        if let Some(h) = self
            .headers
            .get(&(input.channel.to_owned(), input.payload_digest))
        {
            header
                .publish(&header_to_msg(h))
                .map_err(|e| format!("publishing the recorded header of {}: {e}", input.channel))?;
        }
        Ok(())
    }
}

/// A live module process, stepped through its step service.
pub(crate) struct RemoteModule {
    pub(crate) name: String,
    pub(crate) client: r2r::Client<Step::Service>,
    pub(crate) handle: tokio::runtime::Handle,
    pub(crate) feeds: Arc<Mutex<Feeds>>,
    pub(crate) timeout: Duration,
    pub(crate) last_process_time_ns: Option<u32>,
}

impl Module for RemoteModule {
    fn name(&self) -> &str {
        &self.name
    }

    fn step(&mut self, frame: &TraceHeader, inputs: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
        // One output: the group of one frame (one request path for both).
        let mut outputs = self.step_group(&[frame], inputs)?;
        outputs.pop().ok_or_else(|| {
            format!(
                "`{}` answered the step of {} without its output",
                self.name,
                frame_id(frame)
            )
        })
    }

    fn step_group(
        &mut self,
        frames: &[&TraceHeader],
        inputs: &[StepInput<'_>],
    ) -> Result<Vec<Vec<u8>>, String> {
        let mut attempt = 0;
        loop {
            match self.step_once(frames, inputs, attempt > 0) {
                Err(why) if attempt < INPUT_RESENDS && is_lost_input(&why, inputs) => attempt += 1,
                result => return result,
            }
        }
    }

    fn last_process_time_ns(&self) -> Option<u32> {
        self.last_process_time_ns
    }
}

/// How often the recorded inputs of a step are published again when the module did not receive them.
const INPUT_RESENDS: usize = 2;

/// Whether a refusal says that recorded inputs never arrived. A message published right after its reader
/// matched the replay's publisher can still be lost in DDS (the reader side of the match may not be complete
/// yet, and a best-effort reader never asks for it again): the replay publishes them again.
fn is_lost_input(why: &str, inputs: &[StepInput<'_>]) -> bool {
    why.contains(lockstep_trace_ros::lockstep_trace::step::INPUTS_NOT_RECEIVED)
        && inputs.iter().any(|i| !i.simulated)
}

impl RemoteModule {
    /// One step request: publish the recorded inputs (`again`: even those published before) and `/clock`,
    /// grant the step and wait for the answer.
    fn step_once(
        &mut self,
        frames: &[&TraceHeader],
        inputs: &[StepInput<'_>],
        again: bool,
    ) -> Result<Vec<Vec<u8>>, String> {
        let Some((first, more)) = frames.split_first() else {
            return Ok(Vec::new());
        };
        {
            let mut feeds = self
                .feeds
                .lock()
                .map_err(|_| "the feeds lock is poisoned".to_owned())?;
            for input in inputs.iter().filter(|i| !i.simulated) {
                feeds.publish(input, again)?;
            }
            // Each frame's recorded start time goes on /clock before its step is granted, so a module
            // running with `use_sim_time` reads the recorded time from `now()`.
            if let Some(clock) = &feeds.clock {
                clock
                    .publish(&clock_at(first.start_time_ns))
                    .map_err(|e| format!("publishing /clock: {e}"))?;
            }
        }
        // Every frame of the computation names the same inputs: each gets the digests the replay wants.
        let wanted = |frame: &TraceHeader| {
            let mut wanted = frame.clone();
            for (record, input) in wanted.inputs.iter_mut().zip(inputs) {
                record.payload_digest = input.payload_digest;
            }
            header_to_msg(&wanted)
        };
        let request = Step::Request {
            frame: wanted(first),
            timeout_ms: u32::try_from(self.timeout.as_millis()).unwrap_or(u32::MAX),
            more_frames: more.iter().map(|f| wanted(f)).collect(),
        };
        let answer = self
            .client
            .request(&request)
            .map_err(|e| format!("sending the step: {e}"))?;
        let (sender, receiver) = mpsc::channel();
        self.handle.spawn(async move {
            let _ = sender.send(answer.await);
        });
        // The module refuses by itself after `timeout`; give its answer time to come back.
        let response = receiver
            .recv_timeout(self.timeout + Duration::from_millis(1000))
            .map_err(|_| format!("no answer within {} ms", self.timeout.as_millis()))?
            .map_err(|e| format!("the step call failed: {e}"))?;
        if !response.success {
            return Err(response.message);
        }
        if response.more_outputs.len() != more.len() {
            return Err(format!(
                "the step of {} named {} output(s), `{}` answered with {}",
                frame_id(first),
                frames.len(),
                self.name,
                1 + response.more_outputs.len()
            ));
        }
        self.last_process_time_ns = Some(response.process_time_ns);
        let mut outputs = Vec::with_capacity(frames.len());
        outputs.push(response.data);
        outputs.extend(response.more_outputs.into_iter().map(|o| o.data));
        Ok(outputs)
    }
}

/// `/clock` at `ns` since the Unix epoch (times before it are clamped to it).
fn clock_at(ns: i64) -> Clock {
    let ns = ns.max(0);
    Clock {
        clock: r2r::builtin_interfaces::msg::Time {
            sec: i32::try_from(ns / 1_000_000_000).unwrap_or(i32::MAX),
            nanosec: u32::try_from(ns % 1_000_000_000).unwrap_or(0),
        },
    }
}

/// `<channel> #<sequence>`: how messages name a frame.
fn frame_id(frame: &TraceHeader) -> String {
    format!("{} #{}", frame.channel_name, frame.sequence_num)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(simulated: bool) -> StepInput<'static> {
        StepInput {
            channel: "/scan",
            data: &[],
            simulated,
            payload_digest: 1,
        }
    }

    #[test]
    fn only_recorded_inputs_that_never_arrived_are_sent_again() {
        let lost = "/obstacles #0: inputs not received within 2000 ms: /scan (digest 0000000000000001)";
        assert!(is_lost_input(lost, &[input(true), input(false)]));
        assert!(
            !is_lost_input(lost, &[input(true)]),
            "a live module's output is not the replay's to send"
        );
        assert!(!is_lost_input("no answer within 2000 ms", &[input(false)]));
    }
}
