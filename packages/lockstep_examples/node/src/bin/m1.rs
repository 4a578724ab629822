//! m1 of the example pipeline, `obstacle_fusion`: fuses the front and rear range sensors (c1 `scan_front`,
//! c2 `scan_rear`, sensor_msgs/Range) into obstacles (c3 `obstacles`, geometry_msgs/PoseArray) whenever both
//! sensors have a new reading, with a dependency header naming the two readings used. Readings with numbers
//! it cannot use (see `lockstep_examples::validate`) are dropped, counted and logged; the last valid reading
//! of that sensor stays in use.

use anyhow::Context as _;
use futures::StreamExt as _;
use lockstep_examples_node::{
    announce_topology, convert, simulate_processing, topics, traced_upstream, wait_for_subscribers,
    InputGuard, DATA_QOS_DEPTH,
};
use lockstep_ros::{lock, qos, SharedNode};
use lockstep_trace_ros::lockstep_trace::{Component, TraceHeader, Tracer};
use lockstep_trace_ros::{Recent, StepServer, TracedPublisher, TracedSubscription, Upstream};
use r2r::geometry_msgs::msg::PoseArray;
use r2r::sensor_msgs::msg::Range;

/// Parameters of the obstacle fusion module.
#[derive(r2r::RosParams, Debug)]
struct Params {
    /// Simulated computation time of one fusion, milliseconds.
    processing_delay_ms: i64,
    /// Whether the sensors publish dependency headers; if not, readings are numbered by arrival.
    sensors_traced: bool,
    /// Longest wait for a traced reading's header, milliseconds.
    header_timeout_ms: i64,
    /// Lock-step replay: compute only when granted a step on `~/lockstep/step`, from the readings it names.
    lockstep_step_mode: bool,
    /// Before taking any input, wait until the output topic and its header topic each matched this many
    /// subscriptions (like `ros2 topic pub --wait-matching-subscriptions`); 0: start at once.
    wait_for_subscribers: i64,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            processing_delay_ms: 2,
            sensors_traced: false,
            header_timeout_ms: 200,
            lockstep_step_mode: false,
            wait_for_subscribers: 0,
        }
    }
}

fn main() -> std::process::ExitCode {
    lockstep_ros::exit_status("lockstep_module_m1", run())
}

fn run() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_module_m1",
        about: "example module `obstacle_fusion`: fuses the front and rear range sensors into obstacles and publishes a dependency header beside each output.",
        readme: Some(include_str!("../../../README.md")),
        rules: &[],
    });
    lockstep_ros::run_node("obstacle_fusion", |node| Ok(setup(node)?)).context("obstacle_fusion")
}

/// The newest reading of one sensor and whether it was used already.
#[derive(Default)]
struct Latest {
    reading: Option<(Range, TraceHeader)>,
    fresh: bool,
}

fn setup(
    node: SharedNode,
) -> anyhow::Result<impl std::future::Future<Output = Result<(), lockstep_ros::BoxError>> + 'static> {
    let params = lockstep_ros::declare_parameters(&node, Params::default())?.values;
    let logger = lockstep_ros::logger_name(&node)?;
    let (delay_ms, upstream, step_mode, subscribers) = {
        let p = params.lock().map_err(|_| lockstep_ros::Error::Poisoned)?;
        let upstream = if p.sensors_traced {
            traced_upstream(p.header_timeout_ms)
        } else {
            Upstream::External
        };
        (
            p.processing_delay_ms,
            upstream,
            p.lockstep_step_mode,
            p.wait_for_subscribers,
        )
    };

    let mut n = lock(&node)?;
    let module = lockstep_trace_ros::node_module_name(&n)?;
    let data_qos = || qos::reliable(DATA_QOS_DEPTH);
    let mut front = TracedSubscription::<Range>::new(&mut n, topics::SCAN_FRONT, data_qos(), upstream)?;
    let mut rear = TracedSubscription::<Range>::new(&mut n, topics::SCAN_REAR, data_qos(), upstream)?;
    let output = TracedPublisher::<PoseArray>::new(&mut n, topics::OBSTACLES, data_qos())?;
    let component = Component::new(&module, [front.channel(), rear.channel()], [output.channel()]);
    let topology = announce_topology(&mut n, &logger, &component)?;
    let steps = step_mode.then(|| StepServer::new(&mut n)).transpose()?;
    drop(n);

    Ok(async move {
        wait_for_subscribers(&output, subscribers, &logger).await?;
        if let Some(steps) = steps {
            let _topology = topology;
            return step_mode_loop(steps, front, rear, output, delay_ms).await;
        }
        let _topology = topology; // latched: must outlive the node's work
        let mut tracer = Tracer::new(module);
        let mut guard = InputGuard::new(logger.clone());
        let (front_topic, rear_topic) = (front.channel().to_owned(), rear.channel().to_owned());
        let (mut latest_front, mut latest_rear) = (Latest::default(), Latest::default());
        loop {
            let (reading, slot, topic) = tokio::select! {
                Some(reading) = front.next() => (reading, &mut latest_front, &front_topic),
                Some(reading) = rear.next() => (reading, &mut latest_rear, &rear_topic),
                else => return Ok(()),
            };
            let Some(used) = guard.accept(topic, reading) else {
                continue;
            };
            *slot = Latest {
                reading: Some(used),
                fresh: true,
            };

            // Fire when both sensors have a reading not fused yet.
            if !(latest_front.fresh && latest_rear.fresh) {
                continue;
            }
            let (Some((front_msg, front_header)), Some((rear_msg, rear_header))) =
                (&latest_front.reading, &latest_rear.reading)
            else {
                continue;
            };
            let token = tracer.begin();
            let obstacles = convert::fuse(front_msg, rear_msg);
            simulate_processing(delay_ms).await;
            if guard.publishable(output.channel(), &obstacles) {
                if let Err(e) = output.publish(&mut tracer, token, &obstacles, &[front_header, rear_header]) {
                    r2r::log_error!(&logger, "{e}");
                }
            }
            latest_front.fresh = false;
            latest_rear.fresh = false;
        }
    })
}

/// Lock-step replay: fuse exactly the two readings each grant names, when the replay says so.
async fn step_mode_loop(
    mut steps: StepServer,
    mut front: TracedSubscription<Range>,
    mut rear: TracedSubscription<Range>,
    output: TracedPublisher<PoseArray>,
    delay_ms: i64,
) -> Result<(), lockstep_ros::BoxError> {
    let (mut recent_front, mut recent_rear) = (Recent::default(), Recent::default());
    loop {
        tokio::select! {
            Some(reading) = front.next() => recent_front.push(reading),
            Some(reading) = rear.next() => recent_rear.push(reading),
            more = steps.next() => if !more { return Ok(()) },
        }
        let Some(grant) = steps.pending() else { continue };
        let (Some(f), Some(r)) = (
            grant.find(&recent_front, front.channel()),
            grant.find(&recent_rear, rear.channel()),
        ) else {
            continue;
        };
        let obstacles = convert::fuse(f, r);
        simulate_processing(delay_ms).await;
        let answer = output.publish_step(grant, &obstacles);
        steps.answer(answer);
    }
}
