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

mod client;
mod error;
mod publisher;
mod shared;
mod take;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use futures::channel::mpsc;
use r2r_rcl as rcl;

use crate::graph::GraphProbe;
use crate::rcl_node::{c_string, check, RclError, RclNode};
use crate::typesupport::message_type_support;
use shared::{Shared, Subscription};
use take::take_loop;

pub use client::GenericClient;
pub use error::GenericError;
pub use publisher::GenericPublisher;
pub use shared::SubscriptionId;

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
        GenericPublisher::new(&self.shared, topic, &support, qos)
    }

    /// A client of `service` (absolute name) that sends the requests of recorded introspection events of type
    /// `event_type` (`pkg/srv/Type_Event`, or an action's `pkg/action/Type_SendGoal_Event`, ...).
    pub fn event_client(&self, service: &str, event_type: &str) -> Result<GenericClient, GenericError> {
        let service_type = event_type.strip_suffix("_Event").unwrap_or(event_type);
        let support = crate::typesupport::more::service_type_support(service_type, &self.prefixes)?;
        let event_support = message_type_support(event_type, &self.prefixes)?;
        let event_layout = crate::typesupport::more::message_layout(event_type, &self.prefixes)?;
        let response_type = format!("{service_type}_Response");
        let response_layout = crate::typesupport::more::message_layout(&response_type, &self.prefixes)?;
        GenericClient::new(
            &self.shared,
            service,
            &support,
            event_support,
            event_layout,
            response_layout,
        )
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
