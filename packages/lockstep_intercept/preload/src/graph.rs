//! Hooks that learn the process's graph: contexts, nodes, publishers, subscriptions, services, clients,
//! timers and ROS clocks. Each forwards first and learns only from a call that succeeded.

use std::os::raw::{c_char, c_int};

use lockstep_intercept::env::{preload_without_interceptor, MODE_VAR};
use lockstep_intercept::names::is_infrastructure_topic;
use r2r_rcl::*;

use crate::key::key;
use crate::real::real;
use crate::state::{lock, RosClock};
use crate::{name_of, thread_id, Entered, OK};

/// The programs this one starts run without the interceptor (it goes only into the program named).
fn leave_children_alone() {
    // The mode is read once; read it before the variable goes.
    crate::mode();
    // Changing the environment while other threads read it is racy in C; this runs in rcl_init, before a
    // client library starts its threads.
    // SAFETY: see above.
    unsafe {
        std::env::remove_var(MODE_VAR);
        match std::env::var("LD_PRELOAD")
            .ok()
            .as_deref()
            .map(preload_without_interceptor)
        {
            Some(Some(rest)) => std::env::set_var("LD_PRELOAD", rest),
            Some(None) => std::env::remove_var("LD_PRELOAD"),
            None => {}
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn rcl_init(
    argc: c_int,
    argv: *const *const c_char,
    options: *const rcl_init_options_t,
    context: *mut rcl_context_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    let f = real!(rcl_init: unsafe extern "C" fn(c_int, *const *const c_char, *const rcl_init_options_t, *mut rcl_context_t) -> rcl_ret_t);
    // SAFETY: the caller's arguments, forwarded unchanged.
    let ret = unsafe { f(argc, argv, options, context) };
    if ret == OK && entered.outermost && std::env::var_os(MODE_VAR).is_some() {
        leave_children_alone();
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_shutdown(context: *mut rcl_context_t) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.active() {
        lock().service(true);
    }
    let f = real!(rcl_shutdown: unsafe extern "C" fn(*mut rcl_context_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    unsafe { f(context) }
}

#[no_mangle]
pub unsafe extern "C" fn rcl_node_init(
    node: *mut rcl_node_t,
    name: *const c_char,
    namespace: *const c_char,
    context: *mut rcl_context_t,
    options: *const rcl_node_options_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    let f = real!(rcl_node_init: unsafe extern "C" fn(*mut rcl_node_t, *const c_char, *const c_char, *mut rcl_context_t, *const rcl_node_options_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(node, name, namespace, context, options) };
    if ret == OK && entered.active() {
        // SAFETY: the node was just initialised.
        if let Some(fqn) = name_of(unsafe { rcl_node_get_fully_qualified_name(node) }) {
            lock().add_node(node, fqn.trim_start_matches('/'));
        }
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_node_fini(node: *mut rcl_node_t) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.active() {
        lock().remove_node(node);
    }
    let f = real!(rcl_node_fini: unsafe extern "C" fn(*mut rcl_node_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    unsafe { f(node) }
}

#[no_mangle]
pub unsafe extern "C" fn rcl_publisher_init(
    publisher: *mut rcl_publisher_t,
    node: *const rcl_node_t,
    type_support: *const rosidl_message_type_support_t,
    topic: *const c_char,
    options: *const rcl_publisher_options_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    let f = real!(rcl_publisher_init: unsafe extern "C" fn(*mut rcl_publisher_t, *const rcl_node_t, *const rosidl_message_type_support_t, *const c_char, *const rcl_publisher_options_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(publisher, node, type_support, topic, options) };
    if ret == OK && entered.active() {
        // SAFETY: the publisher was just initialised.
        if let Some(topic) = name_of(unsafe { rcl_publisher_get_topic_name(publisher) }) {
            let mut state = lock();
            let node = key(node);
            if state.tracker.module(node).is_some() {
                let instrumented_now = state.tracker.add_publisher(key(publisher), node, &topic);
                state.type_supports.insert(key(publisher), type_support as usize);
                if instrumented_now {
                    state.leave_to_module(node);
                } else if !state.tracker.is_instrumented(node) && !is_infrastructure_topic(&topic) {
                    state.ensure_header_publisher(node, &topic);
                }
                state.announce_wiring(node);
            }
        }
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_publisher_fini(
    publisher: *mut rcl_publisher_t,
    node: *mut rcl_node_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.active() {
        let mut state = lock();
        state.tracker.remove(key(publisher));
        state.type_supports.remove(&key(publisher));
    }
    let f =
        real!(rcl_publisher_fini: unsafe extern "C" fn(*mut rcl_publisher_t, *mut rcl_node_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    unsafe { f(publisher, node) }
}

#[no_mangle]
pub unsafe extern "C" fn rcl_subscription_init(
    subscription: *mut rcl_subscription_t,
    node: *const rcl_node_t,
    type_support: *const rosidl_message_type_support_t,
    topic: *const c_char,
    options: *const rcl_subscription_options_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    let f = real!(rcl_subscription_init: unsafe extern "C" fn(*mut rcl_subscription_t, *const rcl_node_t, *const rosidl_message_type_support_t, *const c_char, *const rcl_subscription_options_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(subscription, node, type_support, topic, options) };
    if ret == OK && entered.active() {
        // SAFETY: the subscription was just initialised; options are the caller's, valid for the call.
        let topic = name_of(unsafe { rcl_subscription_get_topic_name(subscription) });
        let intra =
            unsafe { options.as_ref() }.is_some_and(|o| o.rmw_subscription_options.ignore_local_publications);
        if let Some(topic) = topic {
            let mut state = lock();
            if state.tracker.module(key(node)).is_some() {
                state
                    .tracker
                    .add_subscription(key(subscription), key(node), &topic, intra);
                state
                    .type_supports
                    .insert(key(subscription), type_support as usize);
                if state.tracker.is_data_subscription(key(subscription)) {
                    state.follow_headers(key(node), &topic);
                }
                state.announce_wiring(key(node));
            }
        }
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_subscription_fini(
    subscription: *mut rcl_subscription_t,
    node: *mut rcl_node_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.active() {
        let mut state = lock();
        state.tracker.remove(key(subscription));
        state.type_supports.remove(&key(subscription));
    }
    let f = real!(rcl_subscription_fini: unsafe extern "C" fn(*mut rcl_subscription_t, *mut rcl_node_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    unsafe { f(subscription, node) }
}

#[no_mangle]
pub unsafe extern "C" fn rcl_clock_init(
    clock_type: rcl_clock_type_t,
    clock: *mut rcl_clock_t,
    allocator: *mut rcl_allocator_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    let f = real!(rcl_clock_init: unsafe extern "C" fn(rcl_clock_type_t, *mut rcl_clock_t, *mut rcl_allocator_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(clock_type, clock, allocator) };
    if ret == OK && entered.active() {
        let ros_time = clock_type == rcl_clock_type_e::RCL_ROS_TIME;
        let mut state = lock();
        state
            .timer_clocks
            .clock_made(thread_id(), clock as usize, ros_time);
        // SAFETY: the clock was just initialised.
        if let Some(&copy) = unsafe { clock.as_ref() }.filter(|_| ros_time) {
            state.ros_clocks.push(RosClock(copy));
        }
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_guard_condition_init(
    guard_condition: *mut rcl_guard_condition_t,
    context: *mut rcl_context_t,
    options: rcl_guard_condition_options_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    let f = real!(rcl_guard_condition_init: unsafe extern "C" fn(*mut rcl_guard_condition_t, *mut rcl_context_t, rcl_guard_condition_options_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(guard_condition, context, options) };
    if ret == OK && entered.active() {
        lock().timer_clocks.guard_condition_made(thread_id());
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_clock_fini(clock: *mut rcl_clock_t) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.active() {
        let mut state = lock();
        // SAFETY: the caller's clock, still initialised.
        if let Some(data) = unsafe { clock.as_ref() }.map(|c| c.data) {
            state.ros_clocks.retain(|c| c.0.data != data);
        }
        state.timer_clocks.clock_gone(clock as usize);
    }
    let f = real!(rcl_clock_fini: unsafe extern "C" fn(*mut rcl_clock_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    unsafe { f(clock) }
}

#[no_mangle]
pub unsafe extern "C" fn rcl_timer_init2(
    timer: *mut rcl_timer_t,
    clock: *mut rcl_clock_t,
    context: *mut rcl_context_t,
    period: i64,
    callback: rcl_timer_callback_t,
    allocator: rcl_allocator_t,
    autostart: bool,
) -> rcl_ret_t {
    let entered = Entered::new();
    let f = real!(rcl_timer_init2: unsafe extern "C" fn(*mut rcl_timer_t, *mut rcl_clock_t, *mut rcl_context_t, i64, rcl_timer_callback_t, rcl_allocator_t, bool) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(timer, clock, context, period, callback, allocator, autostart) };
    if ret == OK && entered.active() {
        add_timer(timer, clock);
    }
    ret
}

#[no_mangle]
pub unsafe extern "C" fn rcl_timer_init(
    timer: *mut rcl_timer_t,
    clock: *mut rcl_clock_t,
    context: *mut rcl_context_t,
    period: i64,
    callback: rcl_timer_callback_t,
    allocator: rcl_allocator_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    let f = real!(rcl_timer_init: unsafe extern "C" fn(*mut rcl_timer_t, *mut rcl_clock_t, *mut rcl_context_t, i64, rcl_timer_callback_t, rcl_allocator_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(timer, clock, context, period, callback, allocator) };
    if ret == OK && entered.active() {
        add_timer(timer, clock);
    }
    ret
}

/// A node's timer gets the next number; an executor's time-out timer is left alone (see `TimerClocks`).
fn add_timer(timer: *mut rcl_timer_t, clock: *mut rcl_clock_t) {
    let mut state = lock();
    if state.timer_clocks.timer_made(thread_id(), clock as usize) {
        state.tracker.add_timer(key(timer));
    }
}

#[no_mangle]
pub unsafe extern "C" fn rcl_timer_fini(timer: *mut rcl_timer_t) -> rcl_ret_t {
    let entered = Entered::new();
    if entered.active() {
        lock().tracker.remove(key(timer));
    }
    let f = real!(rcl_timer_fini: unsafe extern "C" fn(*mut rcl_timer_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    unsafe { f(timer) }
}

#[no_mangle]
pub unsafe extern "C" fn rcl_clock_get_now(
    clock: *mut rcl_clock_t,
    time_point_value: *mut rcl_time_point_value_t,
) -> rcl_ret_t {
    let entered = Entered::new();
    // SAFETY: the caller's clock (or null, which rcl reports).
    let ros = unsafe { clock.as_ref() }.is_some_and(|c| c.type_ == rcl_clock_type_e::RCL_ROS_TIME);
    if ros && entered.paces() {
        crate::pace::clock_read();
    }
    let f = real!(rcl_clock_get_now: unsafe extern "C" fn(*mut rcl_clock_t, *mut rcl_time_point_value_t) -> rcl_ret_t);
    // SAFETY: forwarded unchanged.
    let ret = unsafe { f(clock, time_point_value) };
    if ret == OK && ros && entered.records() && !time_point_value.is_null() {
        // SAFETY: a successful call wrote the time.
        let value = unsafe { *time_point_value };
        lock().tracker.on_clock_read(crate::thread_id(), value);
    }
    ret
}
