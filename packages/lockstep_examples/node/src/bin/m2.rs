//! m2 of the example pipeline, `motion_controller`: reads obstacles (c3), the mission goal (c6) and odometry
//! (c4 `odom`, nav_msgs/Odometry from outside); on its own timer (`rate_hz`) computes a velocity command
//! (c5 `cmd_vel`, geometry_msgs/Twist) from the latest of each, with a header naming exactly the three inputs
//! (and their sequence numbers) it used. Inputs with numbers it cannot use (see `lockstep_examples::validate`)
//! are dropped, counted and logged; the last valid input of that topic stays in use.

use anyhow::Context as _;
use futures::stream::{BoxStream, StreamExt as _};
use lockstep_examples_node::control::{self, Gains};
use lockstep_examples_node::convert;
use lockstep_examples_node::validate::Validate;
use lockstep_examples_node::{
    announce_topology, period_from_rate, simulate_processing, topics, traced_upstream, wait_for_subscribers,
    InputGuard, DATA_QOS_DEPTH,
};
use lockstep_ros::{lock, qos, SharedNode};
use lockstep_trace_ros::lockstep_trace::{Component, TraceHeader, Tracer};
use lockstep_trace_ros::{Recent, StepServer, Traced, TracedPublisher, TracedSubscription, Upstream};
use r2r::geometry_msgs::msg::{PoseArray, PoseStamped, Twist};
use r2r::nav_msgs::msg::Odometry;
use r2r::sensor_msgs::msg::Range;

/// Parameters of the motion controller module.
#[derive(r2r::RosParams, Debug)]
struct Params {
    /// Commands published per second.
    rate_hz: f64,
    /// Simulated computation time of one command, milliseconds.
    processing_delay_ms: i64,
    /// Whether the odometry source publishes dependency headers; if not, odometry is numbered by arrival.
    odom_traced: bool,
    /// Whether obstacles and mission come from traced modules (m1, m3); if not (a test or a tool publishing
    /// them), they are numbered by arrival.
    modules_traced: bool,
    /// Longest wait for a traced input's header, milliseconds.
    header_timeout_ms: i64,
    /// Speed limit, m/s.
    max_linear_mps: f64,
    /// Turn rate limit, rad/s.
    max_angular_rps: f64,
    /// An obstacle ahead closer than this stops forward motion, m.
    stop_distance_m: f64,
    /// Lock-step replay: compute only when granted a step on `~/lockstep/step`, from the inputs it names.
    lockstep_step_mode: bool,
    /// An extra input topic (sensor_msgs/Range, untraced) the module subscribes and lists in its wiring;
    /// empty: none. In step mode it waits for the message each grant names on it, as for its other inputs,
    /// but the command does not depend on it: a module that gained an input since a recording was made,
    /// with unchanged outputs.
    extra_range_input: String,
    /// Before taking any input, wait until the output topic and its header topic each matched this many
    /// subscriptions (like `ros2 topic pub --wait-matching-subscriptions`); 0: start at once.
    wait_for_subscribers: i64,
}

impl Default for Params {
    fn default() -> Self {
        let gains = Gains::default();
        Self {
            rate_hz: 10.0,
            processing_delay_ms: 3,
            odom_traced: false,
            modules_traced: true,
            header_timeout_ms: 200,
            max_linear_mps: gains.max_linear_mps,
            max_angular_rps: gains.max_angular_rps,
            stop_distance_m: gains.stop_distance_m,
            lockstep_step_mode: false,
            extra_range_input: String::new(),
            wait_for_subscribers: 0,
        }
    }
}

fn main() -> std::process::ExitCode {
    lockstep_ros::exit_status("lockstep_module_m2", run())
}

fn run() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_module_m2",
        about: "example module `motion_controller`: computes cmd_vel from obstacles, the mission goal and odometry, with a dependency header naming the inputs it used.",
        readme: Some(include_str!("../../../README.md")),
        rules: &[],
    });
    lockstep_ros::run_node("motion_controller", |node| Ok(setup(node)?)).context("motion_controller")
}

/// Keep `reading`, received on `topic`, as the latest of its channel if the module may use it (message and
/// header together, so the header cited is the header of the message used); otherwise keep the previous one.
fn keep<T: Validate>(
    latest: &mut Option<T>,
    tracer: &mut Tracer,
    guard: &mut InputGuard,
    topic: &str,
    reading: Traced<T>,
) {
    if let Some((msg, header)) = guard.accept(topic, reading) {
        *latest = Some(msg);
        tracer.record_input(header);
    }
}

/// What the controller takes from its parameters at start.
struct Settings {
    period: std::time::Duration,
    delay_ms: i64,
    modules_upstream: Upstream,
    odom_upstream: Upstream,
    gains: Gains,
    step_mode: bool,
    extra: String,
    subscribers: i64,
}

/// The start settings from the parameters; a rate that is not positive or bad gains stop the node.
fn settings(p: &Params) -> anyhow::Result<Settings> {
    let period =
        period_from_rate(p.rate_hz).with_context(|| format!("rate_hz must be > 0, got {}", p.rate_hz))?;
    let traced = traced_upstream(p.header_timeout_ms);
    let upstream = |is_traced: bool| if is_traced { traced } else { Upstream::External };
    let gains = control::gains_with_limits(p.max_linear_mps, p.max_angular_rps, p.stop_distance_m)
        .context("invalid controller parameter")?;
    Ok(Settings {
        period,
        delay_ms: p.processing_delay_ms,
        modules_upstream: upstream(p.modules_traced),
        odom_upstream: upstream(p.odom_traced),
        gains,
        step_mode: p.lockstep_step_mode,
        extra: p.extra_range_input.clone(),
        subscribers: p.wait_for_subscribers,
    })
}

fn setup(
    node: SharedNode,
) -> anyhow::Result<impl std::future::Future<Output = Result<(), lockstep_ros::BoxError>> + 'static> {
    let params = lockstep_ros::declare_parameters(&node, Params::default())?.values;
    let logger = lockstep_ros::logger_name(&node)?;
    let Settings {
        period,
        delay_ms,
        modules_upstream,
        odom_upstream,
        gains,
        step_mode,
        extra,
        subscribers,
    } = settings(&*params.lock().map_err(|_| lockstep_ros::Error::Poisoned)?)?;

    let mut n = lock(&node)?;
    let module = lockstep_trace_ros::node_module_name(&n)?;
    let data_qos = || qos::reliable(DATA_QOS_DEPTH);
    let inputs = Inputs {
        obstacles: TracedSubscription::new(&mut n, topics::OBSTACLES, data_qos(), modules_upstream)?,
        mission: TracedSubscription::new(&mut n, topics::MISSION, data_qos(), modules_upstream)?,
        odom: TracedSubscription::new(&mut n, topics::ODOM, data_qos(), odom_upstream)?,
    };
    let output = TracedPublisher::<Twist>::new(&mut n, topics::CMD_VEL, data_qos())?;
    let extra_in = match extra.as_str() {
        "" => None,
        topic => Some(TracedSubscription::<Range>::new(
            &mut n,
            topic,
            data_qos(),
            Upstream::External,
        )?),
    };
    let wiring = inputs
        .channels()
        .into_iter()
        .chain(extra_in.as_ref().map(|s| s.channel().to_owned()));
    let component = Component::new(&module, wiring, [output.channel()]);
    let topology = announce_topology(&mut n, &logger, &component)?;
    let steps = step_mode.then(|| StepServer::new(&mut n)).transpose()?;
    drop(n);
    let extra_channel = extra_in.as_ref().map(|s| s.channel().to_owned());
    // Subscribed for the wiring (and, in step mode, waited for): the command does not use it.
    let extra: BoxStream<'static, Traced<Range>> = match extra_in {
        Some(sub) => sub.boxed(),
        None => futures::stream::pending().boxed(),
    };

    Ok(async move {
        wait_for_subscribers(&output, subscribers, &logger).await?;
        let _topology = topology; // latched: must outlive the node's work
        match steps {
            Some(steps) => {
                step_mode_loop(steps, inputs, (extra, extra_channel), output, delay_ms, gains).await
            }
            None => {
                let timing = (period, delay_ms);
                free_running(module, logger, inputs, extra, output, timing, gains).await
            }
        }
    })
}

/// On its own: every `period`, the command from the latest usable input of each channel, its header naming
/// those inputs. `timing` is the period and the simulated computation time in milliseconds.
async fn free_running(
    module: String,
    logger: String,
    mut inputs: Inputs,
    mut extra: BoxStream<'static, Traced<Range>>,
    output: TracedPublisher<Twist>,
    (period, delay_ms): (std::time::Duration, i64),
    gains: Gains,
) -> Result<(), lockstep_ros::BoxError> {
    let mut tracer = Tracer::new(module);
    let mut guard = InputGuard::new(logger.clone());
    let input_channels = inputs.channels();
    let [obstacles_topic, mission_topic, odom_topic] = &input_channels;
    let mut obstacles: Option<PoseArray> = None;
    let mut mission: Option<PoseStamped> = None;
    let mut odom: Option<Odometry> = None;
    let mut timer = tokio::time::interval(period);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            Some(reading) = inputs.obstacles.next() =>
                keep(&mut obstacles, &mut tracer, &mut guard, obstacles_topic, reading),
            Some(reading) = inputs.mission.next() =>
                keep(&mut mission, &mut tracer, &mut guard, mission_topic, reading),
            Some(reading) = inputs.odom.next() => keep(&mut odom, &mut tracer, &mut guard, odom_topic, reading),
            Some(_) = extra.next() => {}
            _ = timer.tick() => {
                let (Some(obstacles), Some(mission), Some(odom)) = (&obstacles, &mission, &odom) else {
                    continue; // not every input has arrived yet
                };
                let token = tracer.begin();
                // Snapshot the inputs' headers now: inputs arriving during the computation are not used.
                let used: Vec<TraceHeader> =
                    input_channels.iter().filter_map(|c| tracer.latest_input(c).cloned()).collect();
                let command = convert::command(obstacles, mission, odom, &gains);
                simulate_processing(delay_ms).await;
                let used: Vec<&TraceHeader> = used.iter().collect();
                if !guard.publishable(output.channel(), &command) {
                    continue;
                }
                if let Err(e) = output.publish(&mut tracer, token, &command, &used) {
                    r2r::log_error!(&logger, "{e}");
                }
            }
        }
    }
}

/// The three inputs the command is computed from.
struct Inputs {
    obstacles: TracedSubscription<PoseArray>,
    mission: TracedSubscription<PoseStamped>,
    odom: TracedSubscription<Odometry>,
}

impl Inputs {
    /// The three input channels, in the order the command takes them.
    fn channels(&self) -> [String; 3] {
        [
            self.obstacles.channel().to_owned(),
            self.mission.channel().to_owned(),
            self.odom.channel().to_owned(),
        ]
    }
}

/// Lock-step replay: compute the command from exactly the three inputs each grant names, when the replay
/// says so (the timer is not used).
async fn step_mode_loop(
    mut steps: StepServer,
    mut inputs: Inputs,
    (mut extra, extra_channel): (BoxStream<'static, Traced<Range>>, Option<String>),
    output: TracedPublisher<Twist>,
    delay_ms: i64,
    gains: Gains,
) -> Result<(), lockstep_ros::BoxError> {
    let (mut obstacles, mut mission, mut odom) = (Recent::default(), Recent::default(), Recent::default());
    let mut ranges = Recent::default();
    loop {
        tokio::select! {
            Some(reading) = inputs.obstacles.next() => obstacles.push(reading),
            Some(reading) = inputs.mission.next() => mission.push(reading),
            Some(reading) = inputs.odom.next() => odom.push(reading),
            Some(reading) = extra.next() => ranges.push(reading),
            more = steps.next() => if !more { return Ok(()) },
        }
        let Some(grant) = steps.pending() else { continue };
        let (Some(o), Some(m), Some(d)) = (
            grant.find(&obstacles, inputs.obstacles.channel()),
            grant.find(&mission, inputs.mission.channel()),
            grant.find(&odom, inputs.odom.channel()),
        ) else {
            continue;
        };
        if extra_channel
            .as_ref()
            .is_some_and(|c| grant.find(&ranges, c).is_none())
        {
            continue;
        }
        let command = convert::command(o, m, d, &gains);
        simulate_processing(delay_ms).await;
        let answer = output.publish_step(grant, &command);
        steps.answer(answer);
    }
}
