//! What a lock-step replay's grant names in a node (replay mode of the interceptor), and what the replay
//! paces.

use std::collections::BTreeMap;

use super::{Endpoint, Handle, Tracker};

/// What a replay grant names in a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    Subscription(&'a str),
    Timer(i64),
    Service(&'a str),
    Client(&'a str),
}

impl Tracker {
    /// What a grant names, found in `node`: the data subscription to `topic`, the timer numbered `number`
    /// (timers belong to the process), the data service or client `name`.
    pub fn find(&self, node: Handle, target: Target<'_>) -> Option<Handle> {
        let endpoint = |map: &BTreeMap<Handle, Endpoint>, name: &str| {
            (map.iter())
                .find(|(_, e)| e.node == node && e.name == name && !e.infrastructure)
                .map(|(&h, _)| h)
        };
        match target {
            Target::Subscription(topic) => (self.subs.iter())
                .find(|(_, s)| s.node == node && s.topic == topic && !s.infrastructure)
                .map(|(&h, _)| h),
            Target::Timer(number) => self.timers.iter().find(|(_, &n)| n == number).map(|(&h, _)| h),
            Target::Service(name) => endpoint(&self.services, name),
            Target::Client(name) => endpoint(&self.clients, name),
        }
    }

    /// Whether a replay paces `handle`: a data subscription, service or client, or a timer.
    pub fn is_paced(&self, handle: Handle) -> bool {
        self.is_data_subscription(handle)
            || self.timers.contains_key(&handle)
            || self
                .endpoint(handle)
                .is_some_and(|(_, _, infrastructure)| !infrastructure)
    }

    /// A service's or client's node, name and whether it is infrastructure.
    pub fn endpoint(&self, handle: Handle) -> Option<(Handle, &str, bool)> {
        (self.services.get(&handle))
            .or_else(|| self.clients.get(&handle))
            .map(|e| (e.node, e.name.as_str(), e.infrastructure))
    }
}
