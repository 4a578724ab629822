//! The module side of lock-step replay's step protocol (`lockstep_interfaces/srv/Step`).
//!
//! In step mode a module computes only when the replay grants it a step: [`StepServer`] serves
//! `~/lockstep/step` and holds at most one pending [`Grant`]; the module keeps what it receives in
//! [`Recent`] buffers, looks the inputs the grant names up by digest ([`StepGrant::find`]), computes, and answers
//! with [`crate::TracedPublisher::publish_step`]. A grant whose inputs do not all arrive in time is refused
//! with the inputs still missing.
//!
//! A computation that publishes on several channels is granted as one step naming one frame per output
//! ([`StepGrant::frames`]): the module computes once, publishes each output with
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

/// The step service of a node, relative to it: `/<node>/lockstep/step`.
pub const STEP_SERVICE: &str = "~/lockstep/step";

/// The step service of a module, by module name (re-exported from `lockstep_trace::names`).
pub use crate::names::step_service_name;

/// The plain bookkeeping of a grant, re-exported from `lockstep_trace::step`.
pub use lockstep_trace::step::{
    match_outputs, Granted, PendingStep, Recent, StepGrant, StepOutputData, DEFAULT_STEP_TIMEOUT,
    RECENT_DEPTH,
};

/// One granted computation: what it allows ([`StepGrant`], which it dereferences to: [`StepGrant::frame`],
/// [`StepGrant::find`], ...) and the request to answer.
pub type Grant = Granted<ServiceRequest<Step::Service>>;

/// Answer a step request. The replay may have given up already; nothing to do then.
fn respond(request: ServiceRequest<Step::Service>, response: Step::Response) {
    let _ = request.respond(response);
}

/// What a module answers for a grant: the header published and the output's canonical CDR.
pub type StepAnswer = Result<(TraceHeader, Vec<u8>)>;

/// Serves `~/lockstep/step` and holds the pending grant.
pub struct StepServer {
    requests: BoxStream<'static, ServiceRequest<Step::Service>>,
    pending: PendingStep<ServiceRequest<Step::Service>>,
    /// The node's ROS clock when it runs with `use_sim_time`: a grant is handed to the module only once the
    /// clock reads the frame's recorded start (see [`PendingStep::waits_for_clock`]).
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
            pending: PendingStep::default(),
            sim_clock: use_sim_time.then(|| node.get_ros_clock()),
        })
    }

    /// With `use_sim_time`: the node's ROS time, nanoseconds (`Some(None)` when it cannot be read); `None`
    /// without it.
    fn sim_now_ns(&self) -> Option<Option<i64>> {
        let clock = self.sim_clock.as_ref()?;
        Some((|| {
            let now = clock.lock().ok()?.get_now().ok()?;
            i64::try_from(now.as_nanos()).ok()
        })())
    }

    /// Waits for a new grant (which becomes pending; one still pending is refused: the replay gave up on
    /// it) or for the pending grant's deadline (it is refused, naming the inputs missing). Returns false when
    /// the service is gone (the node is shutting down).
    pub async fn next(&mut self) -> bool {
        let deadline = self.pending.deadline();
        // A grant waiting for `/clock` is looked at again every millisecond (the clock has no wake-up).
        let poll = self.pending.waits_for_clock(self.sim_now_ns());
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
        let refused_grant = tokio::select! {
            request = self.requests.next() => {
                let Some(request) = request else { return false };
                let state = StepGrant::new(
                    header_from_msg(&request.message.frame),
                    request.message.more_frames.iter().map(header_from_msg).collect(),
                    Instant::now(),
                    lockstep_trace::step::step_timeout(request.message.timeout_ms),
                );
                self.pending.grant(Granted::new(state, request))
            }
            () = clock_poll => None,
            () = expired => self.pending.expire(self.sim_now_ns()),
        };
        if let Some((request, reason)) = refused_grant {
            respond(request, refused(reason));
        }
        true
    }

    /// The grant waiting for its inputs, if any (with `use_sim_time`, once the clock reads its start).
    pub fn pending(&self) -> Option<&Grant> {
        self.pending.pending(self.sim_now_ns())
    }

    /// Answer the pending grant with the one output the module published (or why it could not). A grant
    /// naming several outputs is refused: this module publishes one per computation.
    pub fn answer(&mut self, answer: StepAnswer) {
        self.answer_outputs(answer.map(|output| vec![output]));
    }

    /// Answer the pending grant with every output the module published for it, in any order: each goes to
    /// the frame of its channel. A frame left without an output refuses the step, naming its channel.
    pub fn answer_outputs(&mut self, answer: Result<Vec<StepOutputData>>) {
        let Some((grant, request)) = self.pending.take().map(Granted::into_parts) else {
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
        respond(request, response);
    }

    /// Refuse the pending grant with `reason` (the module cannot compute it).
    pub fn refuse(&mut self, reason: impl Into<String>) {
        if let Some((_, request)) = self.pending.take().map(Granted::into_parts) {
            respond(request, refused(reason.into()));
        }
    }
}

fn refused(message: String) -> Step::Response {
    Step::Response {
        success: false,
        message,
        ..Step::Response::default()
    }
}
