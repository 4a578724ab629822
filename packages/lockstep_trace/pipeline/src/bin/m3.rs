//! m3 of the example pipeline, `mission_planner`: reads nothing; on its own timer (`rate_hz`) publishes the
//! current patrol goal (c6 `mission`, geometry_msgs/PoseStamped), with a header that has no inputs. Having no
//! input topics, it has no input to drop; like every module it never publishes a non-finite number.

use anyhow::Context as _;
use lockstep_pipeline::{
    announce_topology, mission, period_from_rate, simulate_processing, topics, InputGuard, DATA_QOS_DEPTH,
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
    /// How many consecutive outputs repeat one waypoint before moving to the next.
    hold: i64,
    /// Lock-step replay: publish a goal only when granted a step on `~/lockstep/step` (the goal of the
    /// granted sequence number), not on the timer.
    lockstep_step_mode: bool,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            rate_hz: 2.0,
            processing_delay_ms: 1,
            hold: 4,
            lockstep_step_mode: false,
        }
    }
}

fn main() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_module_m3",
        about: "example module `mission_planner`: publishes the current patrol goal on its own timer, with a dependency header.",
        readme: Some(include_str!("../../../README.md")),
    });
    lockstep_ros::run_node("mission_planner", |node| Ok(setup(node)?)).context("mission_planner")
}

fn setup(
    node: SharedNode,
) -> anyhow::Result<impl std::future::Future<Output = Result<(), lockstep_ros::BoxError>> + 'static> {
    let params = lockstep_ros::declare_parameters(&node, Params::default())?.values;
    let logger = lockstep_ros::logger_name(&node)?;
    let (rate_hz, delay_ms, hold, step_mode) = {
        let p = params.lock().map_err(|_| lockstep_ros::Error::Poisoned)?;
        (p.rate_hz, p.processing_delay_ms, p.hold, p.lockstep_step_mode)
    };
    let period = period_from_rate(rate_hz).with_context(|| format!("rate_hz must be > 0, got {rate_hz}"))?;
    let hold = u32::try_from(hold.max(1)).unwrap_or(u32::MAX);

    let mut n = lock(&node)?;
    let module = n.name()?;
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

    Ok(async move {
        if let Some(mut steps) = steps {
            let _topology = topology;
            while steps.next().await {
                if let Some(grant) = steps.pending() {
                    let goal = mission::goal(grant.frame.sequence_num, hold);
                    simulate_processing(delay_ms).await;
                    let answer = output.publish_step(grant, &goal);
                    steps.answer(answer);
                }
            }
            return Ok(());
        }
        let _topology = topology;
        let mut tracer = Tracer::new(module);
        let mut guard = InputGuard::new(logger.clone());
        let mut timer = tokio::time::interval(period);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            timer.tick().await;
            let token = tracer.begin();
            let goal = mission::goal(tracer.next_sequence(output.channel()), hold);
            simulate_processing(delay_ms).await;
            if !guard.publishable(output.channel(), &goal) {
                continue;
            }
            if let Err(e) = output.publish(&mut tracer, token, &goal, &[]) {
                r2r::log_error!(&logger, "{e}");
            }
        }
    })
}
