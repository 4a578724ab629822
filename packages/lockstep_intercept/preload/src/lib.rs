//! The rcl interceptor, preloaded into any ROS 2 program (`lockstep trace -- CMD`).
//!
//! Every client library (rclcpp, rclpy, r2r, rclc) reaches the middleware through librcl's C functions. This
//! library defines the ones that matter under the same names; the dynamic loader resolves the program's calls
//! to them here first, and each hook calls the real function (`dlsym(RTLD_NEXT, ...)`, [`real`]) and returns
//! its result unchanged. Without `LOCKSTEP_INTERCEPT` a hook only forwards. With `record`, the hooks tell
//! `lockstep_intercept::tracker::Tracker` what happened, and publish, on each traced node itself:
//! - a dependency header on `<topic>/lockstep_header` for every output (inputs inferred by the tracker),
//! - the node's wiring, latched, on `/lockstep/topology/<node>` (marked inferred),
//! - its event log in batches on `/lockstep/events/<node>` (`lockstep_interfaces/msg/NodeEvents`).
//!
//! With `replay`, the node runs only what a lock-step replay grants, one event at a time (see [`pace`]).
//!
//! Nothing here runs a thread of its own: headers of inputs are taken without waiting, and what waits
//! (outputs whose inputs' headers are still on their way, events not yet sent) goes out at the next call the
//! node makes, at the latest within [`flow::SERVICE_PERIOD`] of an `rcl_wait`, and at `rcl_shutdown` or
//! `rcl_node_fini`. A failure in here is one warning line on stderr, never the host's crash.

mod digest;
mod flow;
mod graph;
mod introspect;
mod key;
mod own;
mod pace;
mod real;
mod services;
mod state;
mod waitset;

use std::cell::Cell;
use std::sync::OnceLock;

use lockstep_intercept::env::{Mode, MODE_VAR};

/// Lockstep's own tools: recording, playing or replaying the traced nodes, they are not traced themselves
/// (`lockstep launch --trace` of a launch file that also starts the recorder).
const TOOLS: &[&str] = &[
    "lockstep",
    "lockstep-ros",
    "lockstep_recorder",
    "lockstep_bag_player",
    "lockstep_replay",
    "lockstep_view",
];

/// What this process asked for, read once.
pub(crate) fn mode() -> Option<Mode> {
    static MODE: OnceLock<Option<Mode>> = OnceLock::new();
    *MODE.get_or_init(|| {
        let mode = std::env::var(MODE_VAR).ok().as_deref().and_then(Mode::parse)?;
        let exe = std::env::current_exe().ok()?;
        let name = exe.file_name()?.to_string_lossy().into_owned();
        if TOOLS.contains(&name.as_str()) {
            return None;
        }
        Some(mode)
    })
}

/// Whether the hooks record (`LOCKSTEP_INTERCEPT=record`).
fn recording() -> bool {
    mode() == Some(Mode::Record)
}

/// Whether the hooks pace the process through the events a lock-step replay grants
/// (`LOCKSTEP_INTERCEPT=replay`).
fn replaying() -> bool {
    mode() == Some(Mode::Replay)
}

/// Parts of the work left out, to measure what each costs (`LOCKSTEP_INTERCEPT_SKIP=digest,headers,events`,
/// used by the overhead benchmark): `digest` (payload digests are 0), `headers` (no header is published),
/// `events` (no event batch is published).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Skip {
    pub digest: bool,
    pub headers: bool,
    pub events: bool,
}

pub(crate) fn skip() -> Skip {
    static SKIP: OnceLock<Skip> = OnceLock::new();
    *SKIP.get_or_init(|| {
        let value = std::env::var("LOCKSTEP_INTERCEPT_SKIP").unwrap_or_default();
        let has = |part: &str| value.split(',').any(|p| p.trim() == part);
        Skip {
            digest: has("digest"),
            headers: has("headers"),
            events: has("events"),
        }
    })
}

/// One line on stderr, prefixed so a user sees who says it.
fn say(text: &str) {
    eprintln!("[lockstep trace] {text}");
}

/// Say `text` once per `key` for the whole process.
fn say_once(key: &str, text: &str) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
    if !said.iter().any(|k| k == key) {
        said.push(key.to_owned());
        say(text);
    }
}

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Marks the current thread as inside a hook: rcl functions that call other rcl functions (rcl_take_request
/// calls rcl_take_request_with_info, rcl_node_init creates the /rosout publisher) reach the hooks again, and
/// those nested calls only forward.
struct Entered {
    outermost: bool,
}

impl Entered {
    fn new() -> Self {
        let depth = DEPTH.with(|d| {
            let depth = d.get();
            d.set(depth + 1);
            depth
        });
        Self {
            outermost: depth == 0,
        }
    }

    /// Whether this hook should learn the process's graph (recording or replaying, not nested in another
    /// hook).
    fn active(&self) -> bool {
        self.outermost && mode().is_some()
    }

    /// Whether this hook records (not nested in another hook).
    fn records(&self) -> bool {
        self.outermost && recording()
    }

    /// Whether this hook paces the node for a replay (not nested in another hook).
    fn paces(&self) -> bool {
        self.outermost && replaying()
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// What a successful rcl call returns.
const OK: r2r_rcl::rcl_ret_t = r2r_rcl::RCL_RET_OK as r2r_rcl::rcl_ret_t;

/// A name rcl returns (topic, service, node), owned; `None` for a null pointer.
fn name_of(ptr: *const std::os::raw::c_char) -> Option<String> {
    // SAFETY: rcl returns NUL-terminated names owned by the entity, alive during the hook.
    (!ptr.is_null()).then(|| {
        unsafe { std::ffi::CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned()
    })
}

/// The Linux id of the calling thread.
fn thread_id() -> u32 {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    u32::try_from(tid).unwrap_or(0)
}
