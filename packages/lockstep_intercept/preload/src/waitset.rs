//! A wait set as the caller filled it, refilled in replay mode: without the entities the replay paces while
//! the interceptor waits for the rest, and as the caller filled it (same positions) with only the ready ones
//! left when `rcl_wait` returns.
//!
//! rcl keeps, beside each array of the wait set, the middleware's handles of what was added, and a wait
//! removes from both what is not ready: a wait set is waited on again only after it was cleared and refilled
//! (which rclcpp and rclpy do before every wait). So is it here.

use std::collections::BTreeSet;

use lockstep_intercept::tracker::Handle;
use r2r_rcl::*;

use crate::key::key;
use crate::OK;

/// The entities of a wait set, in the positions the caller added them.
pub struct Snapshot {
    subscriptions: Vec<*const rcl_subscription_t>,
    guard_conditions: Vec<*const rcl_guard_condition_t>,
    timers: Vec<*const rcl_timer_t>,
    clients: Vec<*const rcl_client_t>,
    services: Vec<*const rcl_service_t>,
    events: Vec<*const rcl_event_t>,
}

/// The non-null entries of one of a wait set's arrays, up to the last one.
///
/// # Safety
/// `array` holds `size` entries.
unsafe fn entries<T>(array: *mut *const T, size: usize) -> Vec<*const T> {
    if array.is_null() {
        return Vec::new();
    }
    // SAFETY: see above.
    let all = unsafe { std::slice::from_raw_parts(array, size) };
    let used = all.iter().rposition(|p| !p.is_null()).map_or(0, |last| last + 1);
    all[..used].to_vec()
}

/// Set entry `i` of `array` (of `size`) to `value` when in range.
///
/// # Safety
/// `array` holds `size` entries.
unsafe fn set<T>(array: *mut *const T, size: usize, i: usize, value: *const T) {
    if !array.is_null() && i < size {
        // SAFETY: see above.
        unsafe { *array.add(i) = value };
    }
}

/// The addresses of the non-null entries of one of a wait set's arrays.
///
/// # Safety
/// `array` holds `size` entries.
unsafe fn addresses<T>(array: *mut *const T, size: usize) -> impl Iterator<Item = usize> {
    // SAFETY: see above.
    unsafe { entries(array, size) }.into_iter().map(|p| p as usize)
}

/// In `array` (of `size`), refilled from `entities` in their positions, clear the entries `is_ready` refuses.
///
/// # Safety
/// `array` holds `size` entries.
unsafe fn keep_only<T>(
    entities: &[*const T],
    array: *mut *const T,
    size: usize,
    is_ready: impl Fn(*const T) -> bool,
) {
    for (i, &p) in entities.iter().enumerate() {
        if !is_ready(p) {
            // SAFETY: see above.
            unsafe { set(array, size, i, std::ptr::null()) };
        }
    }
}

impl Snapshot {
    /// What the caller put into `ws`; `None` for a null wait set.
    ///
    /// # Safety
    /// `ws` is a valid wait set or null.
    pub unsafe fn take(ws: *const rcl_wait_set_t) -> Option<Self> {
        // SAFETY: see above.
        let ws = unsafe { ws.as_ref() }?;
        // SAFETY: rcl's arrays with their sizes.
        unsafe {
            Some(Self {
                subscriptions: entries(ws.subscriptions, ws.size_of_subscriptions),
                guard_conditions: entries(ws.guard_conditions, ws.size_of_guard_conditions),
                timers: entries(ws.timers, ws.size_of_timers),
                clients: entries(ws.clients, ws.size_of_clients),
                services: entries(ws.services, ws.size_of_services),
                events: entries(ws.events, ws.size_of_events),
            })
        }
    }

    /// The keys of what a replay can pace: subscriptions, timers, services and clients.
    pub fn keys(&self) -> impl Iterator<Item = Handle> + '_ {
        let subs = self.subscriptions.iter().map(|&s| key(s));
        let timers = self.timers.iter().map(|&t| key(t));
        let services = self.services.iter().map(|&s| key(s));
        let clients = self.clients.iter().map(|&c| key(c));
        subs.chain(timers)
            .chain(services)
            .chain(clients)
            .filter(|&h| h != 0)
    }

    pub fn contains(&self, handle: Handle) -> bool {
        self.keys().any(|h| h == handle)
    }

    /// Clear `ws` and add back the guard conditions and events, and the subscriptions, timers, services and
    /// clients whose key `keep` accepts. Fails with rcl's error.
    ///
    /// # Safety
    /// `ws` is the valid wait set the snapshot was taken of, and its entities are alive.
    pub unsafe fn refill(
        &self,
        ws: *mut rcl_wait_set_t,
        keep: impl Fn(Handle) -> bool,
    ) -> Result<(), rcl_ret_t> {
        let check = |ret: rcl_ret_t| if ret == OK { Ok(()) } else { Err(ret) };
        let none = std::ptr::null_mut();
        // SAFETY: see above; every entity was in this wait set, so it fits.
        unsafe {
            check(rcl_wait_set_clear(ws))?;
            for &s in self.subscriptions.iter().filter(|&&s| keep(key(s))) {
                check(rcl_wait_set_add_subscription(ws, s, none))?;
            }
            for &g in &self.guard_conditions {
                check(rcl_wait_set_add_guard_condition(ws, g, none))?;
            }
            for &t in self.timers.iter().filter(|&&t| keep(key(t))) {
                check(rcl_wait_set_add_timer(ws, t, none))?;
            }
            for &c in self.clients.iter().filter(|&&c| keep(key(c))) {
                check(rcl_wait_set_add_client(ws, c, none))?;
            }
            for &s in self.services.iter().filter(|&&s| keep(key(s))) {
                check(rcl_wait_set_add_service(ws, s, none))?;
            }
            for &e in &self.events {
                check(rcl_wait_set_add_event(ws, e, none))?;
            }
        }
        Ok(())
    }

    /// The addresses of the entities a wait left in `ws` (the ready ones).
    ///
    /// # Safety
    /// `ws` is a valid wait set.
    pub unsafe fn ready(ws: *const rcl_wait_set_t) -> BTreeSet<usize> {
        // SAFETY: see above.
        let Some(ws) = (unsafe { ws.as_ref() }) else {
            return BTreeSet::new();
        };
        let mut ready = BTreeSet::new();
        // SAFETY: rcl's arrays with their sizes.
        unsafe {
            ready.extend(addresses(ws.subscriptions, ws.size_of_subscriptions));
            ready.extend(addresses(ws.guard_conditions, ws.size_of_guard_conditions));
            ready.extend(addresses(ws.timers, ws.size_of_timers));
            ready.extend(addresses(ws.clients, ws.size_of_clients));
            ready.extend(addresses(ws.services, ws.size_of_services));
            ready.extend(addresses(ws.events, ws.size_of_events));
        }
        ready.remove(&0);
        ready
    }

    /// Refill `ws` as the caller filled it, then leave in it only the entities `is_ready(address, key)`
    /// accepts (`key`: `None` for guard conditions and events): what `rcl_wait` returns.
    ///
    /// # Safety
    /// As [`Snapshot::refill`].
    pub unsafe fn report(
        &self,
        ws: *mut rcl_wait_set_t,
        is_ready: impl Fn(usize, Option<Handle>) -> bool,
    ) -> rcl_ret_t {
        // SAFETY: see above.
        if let Err(ret) = unsafe { self.refill(ws, |_| true) } {
            return ret;
        }
        // SAFETY: the wait set just refilled; positions are those of the snapshot.
        unsafe {
            let Some(w) = ws.as_ref() else { return OK };
            let (subs, timers) = (&self.subscriptions, &self.timers);
            keep_only(subs, w.subscriptions, w.size_of_subscriptions, |p| {
                is_ready(p as usize, Some(key(p)))
            });
            keep_only(timers, w.timers, w.size_of_timers, |p| {
                is_ready(p as usize, Some(key(p)))
            });
            keep_only(&self.clients, w.clients, w.size_of_clients, |p| {
                is_ready(p as usize, Some(key(p)))
            });
            keep_only(&self.services, w.services, w.size_of_services, |p| {
                is_ready(p as usize, Some(key(p)))
            });
            let (guards, events) = (&self.guard_conditions, &self.events);
            keep_only(guards, w.guard_conditions, w.size_of_guard_conditions, |p| {
                is_ready(p as usize, None)
            });
            keep_only(events, w.events, w.size_of_events, |p| is_ready(p as usize, None));
        }
        OK
    }
}
