//! m3 of the example pipeline, `mission_planner`: reads nothing; on its own timer (`rate_hz`) publishes the
//! current patrol goal (c6 `mission`, geometry_msgs/PoseStamped), with a header that has no inputs. Having no
//! input topics, it has no input to drop; like every module it never publishes a non-finite number.

use anyhow::Context as _;
use lockstep_examples_node::{
    announce_topology, convert, period_from_rate, simulate_processing, topics, InputGuard, DATA_QOS_DEPTH,
};
use lockstep_ros::{lock, qos, SharedNode};
use lockstep_trace_ros::lockstep_trace::{Component, Tracer};
use lockstep_trace_ros::{StepServer, TracedPublisher};
use r2r::geometry_msgs::msg::PoseStamped;

/// Parameters of the mission planner module.
#[derive(r2r::RosParams, Debug)]
struct Params {
    /// Goals published per second.
    rate_hz: f64,
    /// Simulated computation time of one goal, milliseconds.
    processing_delay_ms: i64,
    /// How many consecutive outputs repeat one waypoint before moving to the next (a run-time set applies from
    /// the next goal).
    hold: i64,
    /// Lock-step replay: publish a goal only when granted a step on `~/lockstep/step` (the goal of the
    /// granted sequence number), not on the timer.
    lockstep_step_mode: bool,
    /// Stamp each goal with the node's clock (`now()`: the system time, or with `use_sim_time` the time on
    /// `/clock`) instead of leaving the stamp zero.
    stamp_with_clock: bool,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            rate_hz: 2.0,
            processing_delay_ms: 1,
            hold: 4,
            lockstep_step_mode: false,
            stamp_with_clock: false,
        }
    }
}

fn main() -> std::process::ExitCode {
    lockstep_ros::exit_status("lockstep_module_m3", run())
}

fn run() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_module_m3",
        about: "example module `mission_planner`: publishes the current patrol goal on its own timer, with a dependency header.",
        readme: Some(include_str!("../../../README.md")),
        rules: &[],
    });
    lockstep_ros::run_node("mission_planner", |node| Ok(setup(node)?)).context("mission_planner")
}

fn setup(
    node: SharedNode,
) -> anyhow::Result<impl std::future::Future<Output = Result<(), lockstep_ros::BoxError>> + 'static> {
    let params = lockstep_ros::declare_parameters(&node, Params::default())?.values;
    let logger = lockstep_ros::logger_name(&node)?;
    let (rate_hz, delay_ms, step_mode) = {
        let p = params.lock().map_err(|_| lockstep_ros::Error::Poisoned)?;
        (p.rate_hz, p.processing_delay_ms, p.lockstep_step_mode)
    };
    let stamp_with_clock = params
        .lock()
        .map_err(|_| lockstep_ros::Error::Poisoned)?
        .stamp_with_clock;
    let period = period_from_rate(rate_hz).with_context(|| format!("rate_hz must be > 0, got {rate_hz}"))?;
    // `hold` is read at each output: a value set at run time (`ros2 param set`, or a replay setting the
    // recorded one) takes effect at the next goal.
    let hold = move || {
        params
            .lock()
            .map_or(1, |p| u32::try_from(p.hold.max(1)).unwrap_or(u32::MAX))
    };

    let mut n = lock(&node)?;
    let module = lockstep_trace_ros::node_module_name(&n)?;
    let clock = n.get_ros_clock();
    // The goal, stamped with the node's clock when asked to.
    let stamped = move |mut goal: PoseStamped| {
        if stamp_with_clock {
            if let Ok(now) = clock
                .lock()
                .map_err(|_| ())
                .and_then(|mut c| c.get_now().map_err(|_| ()))
            {
                goal.header.stamp = r2r::Clock::to_builtin_time(&now);
            }
        }
        goal
    };
    let output = TracedPublisher::<PoseStamped>::new(&mut n, topics::MISSION, qos::reliable(DATA_QOS_DEPTH))?;
    let component = Component::new(&module, Vec::<String>::new(), [output.channel()]);
    let topology = announce_topology(&mut n, &logger, &component)?;
    let steps = step_mode.then(|| StepServer::new(&mut n)).transpose()?;
    drop(n);
    if steps.is_some() {
        r2r::log_info!(&logger, "{module}: step mode, one goal per granted step");
    } else {
        r2r::log_info!(&logger, "{module}: one goal every {period:?}");
    }

    let goal = move |sequence: u32| stamped(convert::mission_goal(sequence, hold()));
    Ok(async move {
        let _topology = topology; // latched: must outlive the node's work
        match steps {
            Some(steps) => step_mode_loop(steps, output, goal, delay_ms).await,
            None => free_running(module, logger, output, goal, period, delay_ms).await,
        }
    })
}

/// Lock-step replay: one goal per granted step, numbered by the grant's frame (the timer is not used).
async fn step_mode_loop(
    mut steps: StepServer,
    output: TracedPublisher<PoseStamped>,
    goal: impl Fn(u32) -> PoseStamped,
    delay_ms: i64,
) -> Result<(), lockstep_ros::BoxError> {
    while steps.next().await {
        if let Some(grant) = steps.pending() {
            let goal = goal(grant.frame.sequence_num);
            simulate_processing(delay_ms).await;
            let answer = output.publish_step(grant, &goal);
            steps.answer(answer);
        }
    }
    Ok(())
}

/// On its own: one goal every `period`, numbered by the output's next sequence number.
async fn free_running(
    module: String,
    logger: String,
    output: TracedPublisher<PoseStamped>,
    goal: impl Fn(u32) -> PoseStamped,
    period: std::time::Duration,
    delay_ms: i64,
) -> Result<(), lockstep_ros::BoxError> {
    let mut tracer = Tracer::new(module);
    let mut guard = InputGuard::new(logger.clone());
    let mut timer = tokio::time::interval(period);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        timer.tick().await;
        let token = tracer.begin();
        let goal = goal(tracer.next_sequence(output.channel()));
        simulate_processing(delay_ms).await;
        if !guard.publishable(output.channel(), &goal) {
            continue;
        }
        if let Err(e) = output.publish(&mut tracer, token, &goal, &[]) {
            r2r::log_error!(&logger, "{e}");
        }
    }
}
