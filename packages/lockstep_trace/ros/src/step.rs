//! The module side of lock-step replay's step protocol (`lockstep_interfaces/srv/Step`).
//!
//! In step mode a module computes only when the replay grants it a step: [`StepServer`] serves
//! `~/lockstep/step` and holds at most one pending [`Grant`]; the module keeps what it receives in
//! [`Recent`] buffers, looks the inputs the grant names up by digest ([`Grant::find`]), computes, and answers
//! with [`crate::TracedPublisher::publish_step`]. A grant whose inputs do not all arrive in time is refused
//! with the inputs still missing.
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
use r2r::lockstep_interfaces::srv::Step;
use r2r::ServiceRequest;

use crate::convert::{header_from_msg, header_to_msg};
use crate::{Result, Traced};

/// The step service of a node, relative to it: `/<node>/lockstep/step`.
pub const STEP_SERVICE: &str = "~/lockstep/step";

/// The step service of the node `module` in the root namespace (what the replay calls).
pub fn step_service_name(module: &str) -> String {
    format!("/{module}/lockstep/step")
}

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

/// Serves `~/lockstep/step` and holds the pending grant.
pub struct StepServer {
    requests: BoxStream<'static, ServiceRequest<Step::Service>>,
    pending: Option<Grant>,
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
        Ok(Self {
            requests: requests.boxed(),
            pending: None,
        })
    }

    /// Waits for a new grant (which becomes pending; one still pending is refused: the replay gave up on
    /// it) or for the pending grant's deadline (it is refused, naming the inputs missing). Returns false when
    /// the service is gone (the node is shutting down).
    pub async fn next(&mut self) -> bool {
        let deadline = self.pending.as_ref().map(|g| g.deadline);
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
                    request,
                    deadline: started + timeout,
                    started,
                    missing: Mutex::default(),
                });
            }
            () = expired => {
                if let Some(grant) = self.pending.take() {
                    let reason = grant.refusal();
                    grant.respond(refused(reason));
                }
            }
        }
        true
    }

    /// The grant waiting for its inputs, if any.
    pub fn pending(&self) -> Option<&Grant> {
        self.pending.as_ref()
    }

    /// Answer the pending grant with what the module published (or why it could not).
    pub fn answer(&mut self, answer: StepAnswer) {
        let Some(grant) = self.pending.take() else {
            return;
        };
        let process_time_ns = lockstep_trace::duration_to_ns_u32(grant.elapsed());
        let response = match answer {
            Ok((header, data)) => Step::Response {
                success: true,
                message: String::new(),
                header: header_to_msg(&header),
                data,
                process_time_ns,
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

fn refused(message: String) -> Step::Response {
    Step::Response {
        success: false,
        message,
        ..Step::Response::default()
    }
}
