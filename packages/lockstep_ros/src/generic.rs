//! Subscriptions and publishers of any message type installed on the machine, taking and publishing
//! serialized CDR (like rclcpp's GenericSubscription / GenericPublisher, which rosbag2 records and plays with).
//!
//! A [`GenericNode`] is an rcl node of our own (see [`crate::rcl_node`]) named `<name>_generic`, in the
//! namespace given. The type support of each type comes from [`crate::typesupport`] (loaded once per package
//! from `AMENT_PREFIX_PATH`), so types that were not compiled into the binary work as well as those that
//! were. Its node also answers graph queries ([`GenericNode::graph_probe`]): one private node per process
//! does both.
//!
//! One thread per `GenericNode` waits on all its subscriptions and, on each wake-up, takes **every** message
//! waiting on a ready subscription (not one per wake-up as r2r's spin does), handing each to the
//! subscription's sink: a callback run on that thread ([`GenericNode::subscribe_with`], which can bound
//! memory end to end: what it refuses is never queued anywhere) or a stream ([`GenericNode::subscribe`]).
//! Publishing is a plain `rcl_publish_serialized_message` from the caller's thread.
//!
//! Remapping rules of the process's `--ros-args` do not apply to these entities (their context is created
//! without arguments, so that `__node:=` cannot give this node the main node's name): callers pass the
//! fully qualified topic names they want, after their own remapping.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use futures::channel::mpsc;
use r2r_rcl as rcl;

use crate::graph::GraphProbe;
use crate::rcl_node::{c_string, check, RclError, RclNode};
use crate::typesupport::{message_type_support, TypeSupportError};

/// What can go wrong creating or using a generic entity.
#[derive(Debug, thiserror::Error)]
pub enum GenericError {
    #[error(transparent)]
    TypeSupport(#[from] TypeSupportError),
    #[error("{what} `{topic}`: {source}")]
    Rcl {
        what: &'static str,
        topic: String,
        #[source]
        source: RclError,
    },
    #[error(transparent)]
    Node(#[from] RclError),
}

/// How long the take thread waits before looking at its stop flag and subscription list again.
const WAIT_SLICE: Duration = Duration::from_millis(100);

/// Where a subscription's messages go: called on the take thread with each message's serialized CDR.
type Sink = Box<dyn FnMut(Vec<u8>) + Send>;

struct Subscription {
    id: SubscriptionId,
    handle: *mut rcl::rcl_subscription_t,
    sink: Sink,
}

/// Names one subscription of a [`GenericNode`], for [`GenericNode::unsubscribe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubscriptionId(u64);

struct Shared {
    node: Arc<RclNode>,
    /// Wakes the take thread when a subscription is added or the node stops.
    guard: *mut rcl::rcl_guard_condition_t,
    subscriptions: Mutex<Vec<Subscription>>,
    /// Unsubscribed handles, finalised by the take thread when it is not waiting on them.
    retired: Mutex<Vec<*mut rcl::rcl_subscription_t>>,
    next_id: AtomicU64,
    stop: AtomicBool,
}

// rcl entities may be used from several threads as done here: created under the mutex, waited on and taken
// from by the take thread only, the guard condition triggered from anywhere.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

/// A node for subscriptions and publishers of types given by name at run time.
pub struct GenericNode {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    prefixes: String,
}

impl GenericNode {
    /// Start the node `<name>_generic` in `namespace` (`/`, or the namespace of the node it works for) and
    /// its take thread. Types are looked up in `AMENT_PREFIX_PATH`.
    pub fn new(name: &str, namespace: &str) -> Result<Self, GenericError> {
        let node = Arc::new(RclNode::new(&format!("{name}_generic"), namespace)?);
        // SAFETY: a zero-initialised guard condition initialised on our context; freed in `Drop` for Shared.
        let guard = unsafe {
            let guard = Box::into_raw(Box::new(rcl::rcl_get_zero_initialized_guard_condition()));
            let made = rcl::rcl_guard_condition_init(
                guard,
                node.context(),
                rcl::rcl_guard_condition_get_default_options(),
            );
            if let Err(e) = check("rcl_guard_condition_init", made) {
                drop(Box::from_raw(guard));
                return Err(e.into());
            }
            guard
        };
        let shared = Arc::new(Shared {
            node,
            guard,
            subscriptions: Mutex::default(),
            retired: Mutex::default(),
            next_id: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("generic-take".into())
                .spawn(move || take_loop(&shared))
                .map_err(|e| RclError::Rcl {
                    call: "spawning the take thread",
                    code: -1,
                    message: e.to_string(),
                })?
        };
        Ok(Self {
            shared,
            thread: Some(thread),
            prefixes: std::env::var("AMENT_PREFIX_PATH").unwrap_or_default(),
        })
    }

    /// Graph queries through this node (no second DDS participant). Its own endpoints are those of the node
    /// [`Self::node_name`].
    pub fn graph_probe(&self) -> GraphProbe {
        GraphProbe::on(self.shared.node.clone())
    }

    /// Fully qualified name of this node, e.g. `/lockstep_recorder_generic`.
    pub fn node_name(&self) -> String {
        self.shared.node.full_name()
    }

    /// Subscribe to `topic` (absolute name) of type `type_name` (`pkg/msg/Type`); the stream yields each
    /// message's serialized CDR bytes, in the order taken. The stream is unbounded: to bound memory, use
    /// [`Self::subscribe_with`] and decide on the take thread.
    pub fn subscribe(
        &self,
        topic: &str,
        type_name: &str,
        qos: r2r::QosProfile,
    ) -> Result<mpsc::UnboundedReceiver<Vec<u8>>, GenericError> {
        let (sender, receiver) = mpsc::unbounded();
        self.subscribe_with(topic, type_name, qos, move |bytes| {
            let _ = sender.unbounded_send(bytes); // a closed stream's messages are dropped
        })
        .map(drop)?;
        Ok(receiver)
    }

    /// Subscribe to `topic` (absolute name) of type `type_name` (`pkg/msg/Type`); `sink` is called on the
    /// take thread with each message's serialized CDR bytes, in the order taken. It must be quick (it holds
    /// up every subscription of this node) and must not call back into this node.
    pub fn subscribe_with(
        &self,
        topic: &str,
        type_name: &str,
        qos: r2r::QosProfile,
        sink: impl FnMut(Vec<u8>) + Send + 'static,
    ) -> Result<SubscriptionId, GenericError> {
        let support = message_type_support(type_name, &self.prefixes)?;
        let c_topic = c_string(topic)?;
        let rcl_failed = |source| GenericError::Rcl {
            what: "subscribing to",
            topic: topic.to_owned(),
            source,
        };
        // SAFETY: a zero-initialised subscription initialised on our node with a type support handle that
        // lives for the process; freed when the node stops (take thread) or here on failure.
        let handle = unsafe {
            let handle = Box::into_raw(Box::new(rcl::rcl_get_zero_initialized_subscription()));
            let mut options = rcl::rcl_subscription_get_default_options();
            options.qos = qos.into();
            let made = rcl::rcl_subscription_init(
                handle,
                self.shared.node.node(),
                support.handle(),
                c_topic.as_ptr(),
                &options,
            );
            if let Err(e) = check("rcl_subscription_init", made) {
                drop(Box::from_raw(handle));
                return Err(rcl_failed(e));
            }
            handle
        };
        let id = SubscriptionId(self.shared.next_id.fetch_add(1, Ordering::Relaxed));
        if let Ok(mut subscriptions) = self.shared.subscriptions.lock() {
            subscriptions.push(Subscription {
                id,
                handle,
                sink: Box::new(sink),
            });
        }
        self.shared.wake();
        Ok(id)
    }

    /// End a subscription: its sink is not called again once this returns (it is dropped, and its DDS
    /// reader deleted, by the take thread). Unknown or already ended ids are ignored; returns whether `id`
    /// was live.
    pub fn unsubscribe(&self, id: SubscriptionId) -> bool {
        let Ok(mut subscriptions) = self.shared.subscriptions.lock() else {
            return false;
        };
        let Some(i) = subscriptions.iter().position(|s| s.id == id) else {
            return false;
        };
        let gone = subscriptions.remove(i);
        drop(subscriptions);
        if let Ok(mut retired) = self.shared.retired.lock() {
            retired.push(gone.handle);
        }
        self.shared.wake();
        true
    }

    /// How many subscriptions are live.
    pub fn subscription_count(&self) -> usize {
        self.shared.subscriptions.lock().map_or(0, |s| s.len())
    }

    /// A publisher on `topic` (absolute name) of type `type_name` (`pkg/msg/Type`) that sends serialized CDR.
    pub fn publisher(
        &self,
        topic: &str,
        type_name: &str,
        qos: r2r::QosProfile,
    ) -> Result<GenericPublisher, GenericError> {
        let support = message_type_support(type_name, &self.prefixes)?;
        let c_topic = c_string(topic)?;
        // SAFETY: as for subscriptions; the publisher keeps the node alive through `shared`.
        let handle = unsafe {
            let handle = Box::into_raw(Box::new(rcl::rcl_get_zero_initialized_publisher()));
            let mut options = rcl::rcl_publisher_get_default_options();
            options.qos = qos.into();
            let made = rcl::rcl_publisher_init(
                handle,
                self.shared.node.node(),
                support.handle(),
                c_topic.as_ptr(),
                &options,
            );
            if let Err(e) = check("rcl_publisher_init", made) {
                drop(Box::from_raw(handle));
                return Err(GenericError::Rcl {
                    what: "publishing on",
                    topic: topic.to_owned(),
                    source: e,
                });
            }
            handle
        };
        Ok(GenericPublisher {
            handle,
            topic: topic.to_owned(),
            shared: self.shared.clone(),
        })
    }
}

impl Shared {
    /// Finalise unsubscribed handles. Only the take thread between waits, or `Drop`, calls this.
    ///
    /// # Safety
    /// No wait set in use may hold any retired handle.
    unsafe fn finalise_retired(&self) {
        if let Ok(mut retired) = self.retired.lock() {
            for handle in retired.drain(..) {
                // SAFETY: each retired handle was initialised on this node, is in no wait set (the caller's
                // promise) and is finalised once (drained).
                unsafe {
                    rcl::rcl_subscription_fini(handle, self.node.node());
                    drop(Box::from_raw(handle));
                }
            }
        }
    }

    fn wake(&self) {
        // SAFETY: the guard condition lives as long as `self`; triggering it is thread-safe.
        unsafe {
            rcl::rcl_trigger_guard_condition(self.guard);
        }
    }
}

impl Drop for GenericNode {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: the take thread has stopped (it held a reference until then); every entity is finalised
        // once, before the node (dropped after this) and its context.
        unsafe {
            if let Ok(subscriptions) = self.subscriptions.get_mut() {
                for s in subscriptions.drain(..) {
                    rcl::rcl_subscription_fini(s.handle, self.node.node());
                    drop(Box::from_raw(s.handle));
                }
            }
            self.finalise_retired();
            rcl::rcl_guard_condition_fini(self.guard);
            drop(Box::from_raw(self.guard));
        }
    }
}

/// Wait on every subscription; on a wake-up take all that waits on the ready ones.
fn take_loop(shared: &Shared) {
    // SAFETY: the wait set is zero-initialised, sized before each use and finalised at the end; the
    // subscriptions added stay valid while the lock is held (they are only freed in `Drop` for Shared).
    unsafe {
        let mut wait_set = rcl::rcl_get_zero_initialized_wait_set();
        let made = rcl::rcl_wait_set_init(
            &mut wait_set,
            0,
            1,
            0,
            0,
            0,
            0,
            shared.node.context(),
            rcl::rcutils_get_default_allocator(),
        );
        if check("rcl_wait_set_init", made).is_err() {
            return;
        }
        let mut buffer = rcl::rcutils_get_zero_initialized_uint8_array();
        rcl::rcutils_uint8_array_init(&mut buffer, 0, &rcl::rcutils_get_default_allocator());
        while !shared.stop.load(Ordering::SeqCst) {
            // Not waiting: the last wait set's handles are no longer in use.
            shared.finalise_retired();
            let Ok(subscriptions) = shared.subscriptions.lock() else {
                break;
            };
            rcl::rcl_wait_set_clear(&mut wait_set);
            rcl::rcl_wait_set_resize(&mut wait_set, subscriptions.len(), 1, 0, 0, 0, 0);
            rcl::rcl_wait_set_add_guard_condition(&mut wait_set, shared.guard, std::ptr::null_mut());
            for s in subscriptions.iter() {
                rcl::rcl_wait_set_add_subscription(&mut wait_set, s.handle, std::ptr::null_mut());
            }
            drop(subscriptions);
            let waited = rcl::rcl_wait(&mut wait_set, WAIT_SLICE.as_nanos() as i64);
            if waited != rcl::RCL_RET_OK as rcl::rcl_ret_t {
                continue; // timeout (or nothing ready): look at the flag and the list again
            }
            let Ok(mut subscriptions) = shared.subscriptions.lock() else {
                break;
            };
            let ready: &[*const rcl::rcl_subscription_t] = if wait_set.subscriptions.is_null() {
                &[] // no subscriptions yet: rcl leaves the array unallocated
            } else {
                std::slice::from_raw_parts(wait_set.subscriptions, wait_set.size_of_subscriptions)
            };
            // By handle, not position: the list may have changed while waiting (an unsubscribed handle is
            // not taken from again; it is finalised on the next turn).
            let mut ready: Vec<usize> = (ready.iter())
                .filter(|p| !p.is_null())
                .map(|p| *p as usize)
                .collect();
            ready.sort_unstable();
            for s in subscriptions.iter_mut() {
                if ready.binary_search(&(s.handle as usize)).is_ok() {
                    take_all(s, &mut buffer);
                }
            }
        }
        rcl::rcutils_uint8_array_fini(&mut buffer);
        rcl::rcl_wait_set_fini(&mut wait_set);
    }
}

/// Take every message waiting on `s` and hand each to its sink.
fn take_all(s: &mut Subscription, buffer: &mut rcl::rcl_serialized_message_t) {
    loop {
        // SAFETY: returns a plain zeroed struct.
        let mut info = unsafe { rcl::rmw_get_zero_initialized_message_info() };
        // SAFETY: `s.handle` is a valid subscription and `buffer` an initialised byte array rmw may grow.
        let taken =
            unsafe { rcl::rcl_take_serialized_message(s.handle, buffer, &mut info, std::ptr::null_mut()) };
        if taken != rcl::RCL_RET_OK as rcl::rcl_ret_t {
            return; // RCL_RET_SUBSCRIPTION_TAKE_FAILED: nothing more waits
        }
        // SAFETY: after a successful take, `buffer` holds `buffer_length` initialised bytes.
        let bytes = unsafe { std::slice::from_raw_parts(buffer.buffer, buffer.buffer_length) }.to_vec();
        (s.sink)(bytes);
    }
}

/// Publishes serialized CDR of one type on one topic.
pub struct GenericPublisher {
    handle: *mut rcl::rcl_publisher_t,
    topic: String,
    shared: Arc<Shared>,
}

// rcl_publish_serialized_message may be called from any thread.
unsafe impl Send for GenericPublisher {}
unsafe impl Sync for GenericPublisher {}

impl GenericPublisher {
    /// Publish one message given as its serialized CDR bytes (with the 4-byte encapsulation header).
    pub fn publish(&self, cdr: &[u8]) -> Result<(), GenericError> {
        // rmw only reads the message; the buffer is borrowed for the call.
        let message = rcl::rcl_serialized_message_t {
            buffer: cdr.as_ptr().cast_mut(),
            buffer_length: cdr.len(),
            buffer_capacity: cdr.len(),
            // SAFETY: returns a plain struct of function pointers.
            allocator: unsafe { rcl::rcutils_get_default_allocator() },
        };
        // SAFETY: the publisher is valid until drop; `message` points to `cdr`, alive through the call.
        let sent =
            unsafe { rcl::rcl_publish_serialized_message(self.handle, &message, std::ptr::null_mut()) };
        check("rcl_publish_serialized_message", sent).map_err(|source| GenericError::Rcl {
            what: "publishing on",
            topic: self.topic.clone(),
            source,
        })
    }

    /// Wait until every matched reliable subscription acknowledged what was published, at most `timeout`;
    /// `false` on timeout (best-effort subscriptions acknowledge nothing and are not waited for).
    pub fn wait_for_all_acked(&self, timeout: std::time::Duration) -> bool {
        let nanos = i64::try_from(timeout.as_nanos()).unwrap_or(i64::MAX);
        // SAFETY: valid publisher; the call only blocks on the middleware.
        let waited = unsafe { rcl::rcl_publisher_wait_for_all_acked(self.handle, nanos) };
        if waited == rcl::RCL_RET_OK as rcl::rcl_ret_t {
            return true;
        }
        // Leave no error state behind for the next rcl call of this thread.
        // SAFETY: resetting rcutils' thread-local error state is always allowed.
        unsafe { rcl::rcutils_reset_error() };
        false
    }

    /// Subscriptions matched right now.
    pub fn subscription_count(&self) -> usize {
        let mut count = 0usize;
        // SAFETY: valid publisher; rcl writes the count.
        let got = unsafe { rcl::rcl_publisher_get_subscription_count(self.handle, &mut count) };
        if got == rcl::RCL_RET_OK as rcl::rcl_ret_t {
            count
        } else {
            0
        }
    }
}

impl Drop for GenericPublisher {
    fn drop(&mut self) {
        // SAFETY: initialised in `GenericNode::publisher`, finalised once, while the node is alive (`shared`).
        unsafe {
            rcl::rcl_publisher_fini(self.handle, self.shared.node.node());
            drop(Box::from_raw(self.handle));
        }
    }
}
