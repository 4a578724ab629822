//! `range_splitter`: one computation per front range reading (`scan_front`, sensor_msgs/Range) that publishes
//! on two channels, `range_clamped` (sensor_msgs/Range) and `range_margin` (std_msgs/Float64), each with a
//! dependency header naming the same reading and the same start time. In step mode one granted step computes
//! both outputs (see `lockstep_examples::split`).

use anyhow::Context as _;
use futures::StreamExt as _;
use lockstep_examples_node::convert;
use lockstep_examples_node::split::{RANGE_CLAMPED, RANGE_MARGIN};
use lockstep_examples_node::{
    announce_topology, simulate_processing, topics, wait_for_subscribers, InputGuard, DATA_QOS_DEPTH,
};
use lockstep_ros::{lock, qos, SharedNode};
use lockstep_trace_ros::lockstep_trace::{Component, Tracer};
use lockstep_trace_ros::{
    Grant, Recent, StepOutputData, StepServer, TracedPublisher, TracedSubscription, Upstream,
};
use r2r::sensor_msgs::msg::Range;
use r2r::std_msgs::msg::Float64;

/// Parameters of the range splitter module.
#[derive(r2r::RosParams, Debug)]
struct Params {
    /// Simulated computation time of one reading, milliseconds.
    processing_delay_ms: i64,
    /// The margin is measured to this distance, m.
    stop_distance_m: f64,
    /// Lock-step replay: compute only when granted a step on `~/lockstep/step` (one step, two outputs).
    lockstep_step_mode: bool,
    /// Before taking any input, wait until both output topics and their header topics each matched this many
    /// subscriptions; 0: start at once.
    wait_for_subscribers: i64,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            processing_delay_ms: 1,
            stop_distance_m: 0.4,
            lockstep_step_mode: false,
            wait_for_subscribers: 0,
        }
    }
}

/// The module's two outputs.
struct Outputs {
    clamped: TracedPublisher<Range>,
    margin: TracedPublisher<Float64>,
}

/// Publish both outputs of a granted step, or those the grant names (a recording may lack one output of a
/// computation); what was published, for [`StepServer::answer_outputs`].
fn publish_granted(
    grant: &Grant,
    outputs: &Outputs,
    clamped: &Range,
    margin: &Float64,
) -> lockstep_trace_ros::Result<Vec<StepOutputData>> {
    let mut published = Vec::new();
    if grant.frame_for(outputs.clamped.channel()).is_some() {
        published.push(outputs.clamped.publish_step(grant, clamped)?);
    }
    if grant.frame_for(outputs.margin.channel()).is_some() {
        published.push(outputs.margin.publish_step(grant, margin)?);
    }
    Ok(published)
}

fn main() -> std::process::ExitCode {
    lockstep_ros::exit_status("lockstep_module_split", run())
}

fn run() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_module_split",
        about: "example module `range_splitter`: from each front range reading computes the clamped reading and the margin to a stop distance, published on two channels by one computation.",
        readme: Some(include_str!("../../../README.md")),
        rules: &[],
    });
    lockstep_ros::run_node("range_splitter", |node| Ok(setup(node)?)).context("range_splitter")
}

fn setup(
    node: SharedNode,
) -> anyhow::Result<impl std::future::Future<Output = Result<(), lockstep_ros::BoxError>> + 'static> {
    let params = lockstep_ros::declare_parameters(&node, Params::default())?.values;
    let logger = lockstep_ros::logger_name(&node)?;
    let (delay_ms, stop_m, step_mode, subscribers) = {
        let p = params.lock().map_err(|_| lockstep_ros::Error::Poisoned)?;
        (
            p.processing_delay_ms,
            p.stop_distance_m,
            p.lockstep_step_mode,
            p.wait_for_subscribers,
        )
    };
    if !stop_m.is_finite() {
        anyhow::bail!("stop_distance_m must be a finite number, got {stop_m}");
    }

    let mut n = lock(&node)?;
    let module = lockstep_trace_ros::node_module_name(&n)?;
    let data_qos = || qos::reliable(DATA_QOS_DEPTH);
    let input = TracedSubscription::<Range>::new(&mut n, topics::SCAN_FRONT, data_qos(), Upstream::External)?;
    let outputs = Outputs {
        clamped: TracedPublisher::new(&mut n, RANGE_CLAMPED, data_qos())?,
        margin: TracedPublisher::new(&mut n, RANGE_MARGIN, data_qos())?,
    };
    let component = Component::new(
        &module,
        [input.channel()],
        [outputs.clamped.channel(), outputs.margin.channel()],
    );
    let topology = announce_topology(&mut n, &logger, &component)?;
    let steps = step_mode.then(|| StepServer::new(&mut n)).transpose()?;
    drop(n);

    Ok(async move {
        wait_for_subscribers(&outputs.clamped, subscribers, &logger).await?;
        wait_for_subscribers(&outputs.margin, subscribers, &logger).await?;
        let _topology = topology; // latched: must outlive the node's work
        match steps {
            Some(steps) => step_mode_loop(steps, input, outputs, stop_m, delay_ms).await,
            None => free_running(module, logger, input, outputs, stop_m, delay_ms).await,
        }
    })
}

/// Lock-step replay: compute from the reading each grant names and publish the outputs it asks for.
async fn step_mode_loop(
    mut steps: StepServer,
    mut input: TracedSubscription<Range>,
    outputs: Outputs,
    stop_m: f64,
    delay_ms: i64,
) -> Result<(), lockstep_ros::BoxError> {
    let mut recent = Recent::default();
    loop {
        tokio::select! {
            Some(reading) = input.next() => recent.push(reading),
            more = steps.next() => if !more { return Ok(()) },
        }
        let Some(grant) = steps.pending() else { continue };
        let Some(reading) = grant.find(&recent, input.channel()) else {
            continue;
        };
        let (clamped, margin) = (convert::clamped(reading), convert::margin(reading, stop_m));
        simulate_processing(delay_ms).await;
        let answer = publish_granted(grant, &outputs, &clamped, &margin);
        steps.answer_outputs(answer);
    }
}

/// On its own: one computation per usable reading, both outputs naming it.
async fn free_running(
    module: String,
    logger: String,
    mut input: TracedSubscription<Range>,
    outputs: Outputs,
    stop_m: f64,
    delay_ms: i64,
) -> Result<(), lockstep_ros::BoxError> {
    let mut tracer = Tracer::new(module);
    let mut guard = InputGuard::new(logger.clone());
    let topic = input.channel().to_owned();
    while let Some(reading) = input.next().await {
        let Some((reading, header)) = guard.accept(&topic, reading) else {
            continue;
        };
        // One computation: one start time and one input for both outputs.
        let token = tracer.begin();
        let (clamped, margin) = (convert::clamped(&reading), convert::margin(&reading, stop_m));
        simulate_processing(delay_ms).await;
        if !guard.publishable(outputs.clamped.channel(), &clamped) {
            continue;
        }
        let published = outputs
            .clamped
            .publish(&mut tracer, token, &clamped, &[&header])
            .and_then(|_| outputs.margin.publish(&mut tracer, token, &margin, &[&header]));
        if let Err(e) = published {
            r2r::log_error!(&logger, "{e}");
        }
    }
    Ok(())
}
