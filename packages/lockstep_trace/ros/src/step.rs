//! The module side of lock-step replay's step protocol (`lockstep_interfaces/srv/Step`).
//!
//! In step mode a module computes only when the replay grants it a step: [`StepServer`] serves
//! `~/lockstep/step` and holds at most one pending [`Grant`]; the module keeps what it receives in
//! [`Recent`] buffers, looks the inputs the grant names up by digest ([`Grant::find`]), computes, and answers
//! with [`crate::TracedPublisher::publish_step`]. A grant whose inputs do not all arrive in time is refused
//! with the inputs still missing.
//!
//! A computation that publishes on several channels is granted as one step naming one frame per output
//! ([`Grant::frames`]): the module computes once, publishes each output with
//! [`crate::TracedPublisher::publish_step`] (which takes the frame of its own channel) and answers with all of
//! them ([`StepServer::answer_outputs`]).
//!
//! ```text
//! loop {
//!     tokio::select! {
//!         Some(m) = input.next() => recent.push(m),
//!         more = steps.next() => if !more { break },   // a new grant, or the pending one expired
//!     }
//!     if let Some(grant) = steps.pending() {
//!         let Some(msg) = grant.find(&recent, input.channel()) else { continue };  // not yet received
//!         let output = compute(msg);
//!         steps.answer(output_publisher.publish_step(grant, &output));
//!     }
//! }
//! ```

use std::collections::{BTreeSet, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::stream::{BoxStream, StreamExt};
use lockstep_ros::RosContext as _;
use lockstep_trace::TraceHeader;
use r2r::lockstep_interfaces::msg::StepOutput;
use r2r::lockstep_interfaces::srv::Step;
use r2r::ServiceRequest;

use crate::convert::{header_from_msg, header_to_msg};
use crate::error::Result;
use crate::subscription::Traced;

/// The step service of a node, relative to it: `/<node>/lockstep/step`.
pub const STEP_SERVICE: &str = "~/lockstep/step";

/// The step service of a module, by module name (re-exported from `lockstep_trace::names`).
pub use crate::names::step_service_name;

/// How long a module waits for a grant's inputs when the request says 0.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_millis(2000);

/// How many recent messages per input channel a module in step mode keeps to find a grant's inputs in.
pub const RECENT_DEPTH: usize = 256;

/// The last [`RECENT_DEPTH`] messages received on one channel, by digest.
#[derive(Debug)]
pub struct Recent<T> {
    items: VecDeque<(u64, T)>,
}

impl<T> Default for Recent<T> {
    fn default() -> Self {
        Self {
            items: VecDeque::new(),
        }
    }
}

impl<T> Recent<T> {
    /// Keep `reading` (the oldest goes when full).
    pub fn push(&mut self, reading: Traced<T>) {
        if self.items.len() == RECENT_DEPTH {
            self.items.pop_front();
        }
        self.items.push_back((reading.digest, reading.msg));
    }

    /// The newest message with `digest`.
    pub fn find(&self, digest: u64) -> Option<&T> {
        self.items
            .iter()
            .rev()
            .find(|(d, _)| *d == digest)
            .map(|(_, m)| m)
    }

    /// The newest message.
    pub fn latest(&self) -> Option<&T> {
        self.items.back().map(|(_, m)| m)
    }
}

/// One granted computation.
pub struct Grant {
    /// The recorded header of the frame to compute, input digests as the replay wants them consumed.
    pub frame: TraceHeader,
    /// The recorded headers of the computation's other outputs (empty for a one-output computation).
    pub more_frames: Vec<TraceHeader>,
    request: ServiceRequest<Step::Service>,
    deadline: Instant,
    started: Instant,
    missing: Mutex<BTreeSet<String>>,
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("frame", &self.frame)
            .finish_non_exhaustive()
    }
}

impl Grant {
    /// The digest of the input the frame names on `channel`.
    pub fn input_digest(&self, channel: &str) -> Option<u64> {
        self.frame.input(channel).map(|i| i.payload_digest)
    }

    /// The message of `recent` (the buffer of `channel`) that the frame names as its input on `channel`;
    /// `None` while it has not arrived (or if the frame names no input on `channel`), remembered for the
    /// refusal if it never does.
    pub fn find<'r, T>(&self, recent: &'r Recent<T>, channel: &str) -> Option<&'r T> {
        let found = self.input_digest(channel).and_then(|d| recent.find(d));
        if found.is_none() {
            if let Ok(mut missing) = self.missing.lock() {
                missing.insert(channel.to_owned());
            }
        }
        found
    }

    /// Every frame of the computation: [`Grant::frame`], then [`Grant::more_frames`].
    pub fn frames(&self) -> impl Iterator<Item = &TraceHeader> {
        std::iter::once(&self.frame).chain(&self.more_frames)
    }

    /// The frame of the output on `channel`, if the grant names one. A module with several outputs publishes
    /// those the grant names (a recording may have lost one output of a computation).
    pub fn frame_for(&self, channel: &str) -> Option<&TraceHeader> {
        self.frames().find(|f| f.channel_name == channel)
    }

    /// The output channels the grant names, comma separated (for messages).
    pub fn channels(&self) -> String {
        self.frames()
            .map(|f| f.channel_name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// When the computation was granted (for the process time reported back).
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    fn refusal(&self) -> String {
        let missing = self.missing.lock().map(|m| m.clone()).unwrap_or_default();
        let named: Vec<String> = missing
            .iter()
            .map(|channel| match self.input_digest(channel) {
                Some(d) => format!("{channel} (digest {d:016x})"),
                None => format!("{channel} (the frame names no input on it)"),
            })
            .collect();
        format!(
            "{} #{}: inputs not received within {} ms: {}",
            self.frame.channel_name,
            self.frame.sequence_num,
            self.deadline.saturating_duration_since(self.started).as_millis(),
            if named.is_empty() {
                "(none looked up)".to_owned()
            } else {
                named.join(", ")
            }
        )
    }

    fn respond(self, response: Step::Response) {
        // The replay may have given up already; nothing to do then.
        let _ = self.request.respond(response);
    }
}

/// What a module answers for a grant: the header published and the output's canonical CDR.
pub type StepAnswer = Result<(TraceHeader, Vec<u8>)>;

/// One output published for a grant: its header and canonical CDR.
pub type StepOutputData = (TraceHeader, Vec<u8>);

/// Serves `~/lockstep/step` and holds the pending grant.
pub struct StepServer {
    requests: BoxStream<'static, ServiceRequest<Step::Service>>,
    pending: Option<Grant>,
    /// The node's ROS clock when it runs with `use_sim_time`: a grant is handed to the module only once the
    /// clock reads the frame's recorded start (the replay publishes it on `/clock` before granting), so
    /// `now()` during the computation is the recorded time.
    sim_clock: Option<std::sync::Arc<Mutex<r2r::Clock>>>,
}

impl std::fmt::Debug for StepServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepServer")
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

impl StepServer {
    /// Advertise the step service of `node`.
    pub fn new(node: &mut r2r::Node) -> Result<Self> {
        let requests = node
            .create_service::<Step::Service>(STEP_SERVICE, lockstep_ros::qos::reliable(10))
            .with_ros_context(|| format!("creating the step service {STEP_SERVICE}"))?;
        let use_sim_time = node.params.lock().is_ok_and(|p| {
            p.get("use_sim_time")
                .is_some_and(|p| p.value == r2r::ParameterValue::Bool(true))
        });
        Ok(Self {
            requests: requests.boxed(),
            pending: None,
            sim_clock: use_sim_time.then(|| node.get_ros_clock()),
        })
    }

    /// With `use_sim_time`: the node's ROS time, nanoseconds (`None` when it cannot be read).
    fn sim_now_ns(&self) -> Option<i64> {
        let clock = self.sim_clock.as_ref()?;
        let now = clock.lock().ok()?.get_now().ok()?;
        i64::try_from(now.as_nanos()).ok()
    }

    /// Whether the pending grant still waits for `/clock` to read its frame's start.
    fn waits_for_clock(&self) -> bool {
        match (&self.pending, &self.sim_clock) {
            (Some(grant), Some(_)) => self.sim_now_ns() != Some(grant.frame.start_time_ns),
            _ => false,
        }
    }

    /// Waits for a new grant (which becomes pending; one still pending is refused: the replay gave up on
    /// it) or for the pending grant's deadline (it is refused, naming the inputs missing). Returns false when
    /// the service is gone (the node is shutting down).
    pub async fn next(&mut self) -> bool {
        let deadline = self.pending.as_ref().map(|g| g.deadline);
        // A grant waiting for `/clock` is looked at again every millisecond (the clock has no wake-up).
        let poll = self.waits_for_clock();
        let clock_poll = async move {
            if poll {
                tokio::time::sleep(Duration::from_millis(1)).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        let expired = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            request = self.requests.next() => {
                let Some(request) = request else { return false };
                if let Some(old) = self.pending.take() {
                    let reason = format!("superseded by a newer grant; {}", old.refusal());
                    old.respond(refused(reason));
                }
                let timeout = match request.message.timeout_ms {
                    0 => DEFAULT_STEP_TIMEOUT,
                    ms => Duration::from_millis(u64::from(ms)),
                };
                let started = Instant::now();
                self.pending = Some(Grant {
                    frame: header_from_msg(&request.message.frame),
                    more_frames: request.message.more_frames.iter().map(header_from_msg).collect(),
                    request,
                    deadline: started + timeout,
                    started,
                    missing: Mutex::default(),
                });
            }
            () = clock_poll => {}
            () = expired => {
                let waited_for_clock = self.waits_for_clock().then(|| self.sim_now_ns());
                if let Some(grant) = self.pending.take() {
                    let reason = match waited_for_clock {
                        Some(now) => format!(
                            "{} #{}: the node runs with use_sim_time and its clock reads {} ns, not the frame's \
                             start {} ns: is /clock published (lockstep replay publishes it)?",
                            grant.frame.channel_name,
                            grant.frame.sequence_num,
                            now.map_or_else(|| "nothing".to_owned(), |n| n.to_string()),
                            grant.frame.start_time_ns
                        ),
                        None => grant.refusal(),
                    };
                    grant.respond(refused(reason));
                }
            }
        }
        true
    }

    /// The grant waiting for its inputs, if any (with `use_sim_time`, once the clock reads its start).
    pub fn pending(&self) -> Option<&Grant> {
        if self.waits_for_clock() {
            return None;
        }
        self.pending.as_ref()
    }

    /// Answer the pending grant with the one output the module published (or why it could not). A grant
    /// naming several outputs is refused: this module publishes one per computation.
    pub fn answer(&mut self, answer: StepAnswer) {
        self.answer_outputs(answer.map(|output| vec![output]));
    }

    /// Answer the pending grant with every output the module published for it, in any order: each goes to
    /// the frame of its channel. A frame left without an output refuses the step, naming its channel.
    pub fn answer_outputs(&mut self, answer: Result<Vec<StepOutputData>>) {
        let Some(grant) = self.pending.take() else {
            return;
        };
        let process_time_ns = lockstep_trace::duration_to_ns_u32(grant.elapsed());
        let response = match answer {
            Ok(outputs) => match match_outputs(&grant.frames().collect::<Vec<_>>(), outputs) {
                Ok((first, more)) => Step::Response {
                    success: true,
                    message: String::new(),
                    header: header_to_msg(&first.0),
                    data: first.1,
                    process_time_ns,
                    more_outputs: more
                        .into_iter()
                        .map(|(header, data)| StepOutput {
                            header: header_to_msg(&header),
                            data,
                        })
                        .collect(),
                },
                Err(reason) => refused(reason),
            },
            Err(e) => refused(e.to_string()),
        };
        grant.respond(response);
    }

    /// Refuse the pending grant with `reason` (the module cannot compute it).
    pub fn refuse(&mut self, reason: impl Into<String>) {
        if let Some(grant) = self.pending.take() {
            grant.respond(refused(reason.into()));
        }
    }
}

/// The outputs in the order of `frames` (a grant's [`Grant::frames`]), matched by channel: (the first
/// frame's, the others'). A frame without an output is an error naming its channel.
fn match_outputs(
    frames: &[&TraceHeader],
    mut outputs: Vec<StepOutputData>,
) -> std::result::Result<(StepOutputData, Vec<StepOutputData>), String> {
    let Some(first_frame) = frames.first() else {
        return Err("the step names no frame".to_owned());
    };
    let published: Vec<String> = outputs.iter().map(|(h, _)| h.channel_name.clone()).collect();
    let mut ordered = Vec::with_capacity(frames.len());
    for frame in frames {
        let Some(at) = outputs
            .iter()
            .position(|(h, _)| h.channel_name == frame.channel_name)
        else {
            let named: Vec<&str> = frames.iter().map(|f| f.channel_name.as_str()).collect();
            return Err(format!(
                "{} #{}: the step names outputs on {}, but the module published nothing on {} (it published on {})",
                first_frame.channel_name,
                first_frame.sequence_num,
                named.join(", "),
                frame.channel_name,
                if published.is_empty() { "none".to_owned() } else { published.join(", ") }
            ));
        };
        ordered.push(outputs.remove(at));
    }
    let first = ordered.remove(0);
    Ok((first, ordered))
}

fn refused(message: String) -> Step::Response {
    Step::Response {
        success: false,
        message,
        ..Step::Response::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(channel: &str) -> TraceHeader {
        TraceHeader::external(channel, 7, 0, 0)
    }

    fn output(channel: &str, byte: u8) -> StepOutputData {
        (frame(channel), vec![byte])
    }

    #[test]
    fn outputs_follow_the_order_of_the_frames_whatever_order_they_were_published_in() {
        let (a, b) = (frame("/range_clamped"), frame("/range_margin"));
        let (first, more) = match_outputs(
            &[&b, &a],
            vec![output("/range_clamped", 1), output("/range_margin", 2)],
        )
        .expect("both outputs");
        assert_eq!(
            (first.0.channel_name.as_str(), first.1),
            ("/range_margin", vec![2])
        );
        assert_eq!(more.len(), 1);
        assert_eq!(
            (more[0].0.channel_name.as_str(), more[0].1.clone()),
            ("/range_clamped", vec![1])
        );
    }

    #[test]
    fn a_frame_without_its_output_names_the_channel() {
        let (a, b) = (frame("/range_clamped"), frame("/range_margin"));
        let why = match_outputs(&[&a, &b], vec![output("/range_clamped", 1)]).expect_err("one missing");
        assert!(why.contains("nothing on /range_margin"), "{why}");
        assert!(why.contains("it published on /range_clamped"), "{why}");
        let why = match_outputs(&[&a], Vec::new()).expect_err("none published");
        assert!(why.contains("(it published on none)"), "{why}");
    }

    #[test]
    fn one_output_for_one_frame_is_the_answer() {
        let a = frame("/obstacles");
        let (first, more) = match_outputs(&[&a], vec![output("/obstacles", 3)]).expect("the output");
        assert_eq!((first.1, more.len()), (vec![3], 0));
    }
}
