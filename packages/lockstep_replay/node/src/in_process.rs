//! The example three-module pipeline (m1, m2, m3) as in-process lock-step modules: the same pure functions
//! the module nodes run (`lockstep_examples::{fusion, mission, control}`, on messages through
//! `lockstep_examples_node::convert`), fed the CDR of exactly the
//! inputs a frame's header names, answering the canonical CDR of their output.

use std::collections::BTreeMap;

use anyhow::{bail, Context};
use lockstep_examples::control::{self, Gains};
use lockstep_examples_node::convert;
use lockstep_replay::lockstep::{Module, StepInput};
use lockstep_trace_ros::canonical_cdr;
use lockstep_trace_ros::lockstep_trace::TraceHeader;
use r2r::geometry_msgs::msg::{PoseArray, PoseStamped};
use r2r::nav_msgs::msg::Odometry;
use r2r::sensor_msgs::msg::Range;
use r2r::WrappedTypesupport;

/// Module parameters given as `<module>.<name>=<value>` (the recording does not hold parameters).
pub type ModuleParams = BTreeMap<String, String>;

/// Parses `module.name=value` pairs.
pub fn parse_params(pairs: &[String]) -> anyhow::Result<ModuleParams> {
    pairs
        .iter()
        .map(|p| {
            let (key, value) = p
                .split_once('=')
                .with_context(|| format!("--param {p}: expected <module>.<name>=<value>"))?;
            if !key.contains('.') {
                bail!("--param {p}: expected <module>.<name>=<value>");
            }
            Ok((key.to_owned(), value.to_owned()))
        })
        .collect()
}

fn param<T: std::str::FromStr>(params: &ModuleParams, key: &str, default: T) -> anyhow::Result<T> {
    match params.get(key) {
        Some(v) => v
            .parse()
            .map_err(|_| anyhow::anyhow!("--param {key}={v}: not a valid value")),
        None => Ok(default),
    }
}

fn input<T: WrappedTypesupport>(inputs: &[StepInput<'_>], i: usize, what: &str) -> Result<T, String> {
    let found = inputs.get(i).ok_or_else(|| format!("no input {i} ({what})"))?;
    T::from_serialized_bytes(found.data).map_err(|e| format!("input {} is not a {what}: {e}", found.channel))
}

fn output<T: WrappedTypesupport>(msg: &T) -> Result<Vec<u8>, String> {
    canonical_cdr(msg).map_err(|e| e.to_string())
}

struct ObstacleFusion;

impl Module for ObstacleFusion {
    fn name(&self) -> &str {
        "obstacle_fusion"
    }

    fn step(&mut self, _: &TraceHeader, inputs: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
        let front: Range = input(inputs, 0, "sensor_msgs/Range")?;
        let rear: Range = input(inputs, 1, "sensor_msgs/Range")?;
        output(&convert::fuse(&front, &rear))
    }
}

struct MissionPlanner {
    hold: u32,
}

impl Module for MissionPlanner {
    fn name(&self) -> &str {
        "mission_planner"
    }

    fn step(&mut self, frame: &TraceHeader, _: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
        output(&convert::mission_goal(frame.sequence_num, self.hold))
    }
}

struct MotionController {
    gains: Gains,
}

impl Module for MotionController {
    fn name(&self) -> &str {
        "motion_controller"
    }

    fn step(&mut self, _: &TraceHeader, inputs: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
        let obstacles: PoseArray = input(inputs, 0, "geometry_msgs/PoseArray")?;
        let goal: PoseStamped = input(inputs, 1, "geometry_msgs/PoseStamped")?;
        let odom: Odometry = input(inputs, 2, "nav_msgs/Odometry")?;
        output(&convert::command(&obstacles, &goal, &odom, &self.gains))
    }
}

/// The three example modules, configured like the nodes (`mission_planner.hold`,
/// `motion_controller.max_linear_mps`, `.max_angular_rps`, `.stop_distance_m`; the nodes' defaults).
pub fn pipeline_modules(params: &ModuleParams) -> anyhow::Result<Vec<Box<dyn Module>>> {
    let known = [
        "mission_planner.hold",
        "motion_controller.max_linear_mps",
        "motion_controller.max_angular_rps",
        "motion_controller.stop_distance_m",
    ];
    if let Some(unknown) = params.keys().find(|k| !known.contains(&k.as_str())) {
        bail!(
            "--param {unknown}: unknown (the in-process pipeline takes {})",
            known.join(", ")
        );
    }
    let defaults = Gains::default();
    let gains = control::gains_with_limits(
        param(params, known[1], defaults.max_linear_mps)?,
        param(params, known[2], defaults.max_angular_rps)?,
        param(params, known[3], defaults.stop_distance_m)?,
    )
    .context("invalid motion_controller parameter")?;
    let hold: u32 = param(params, known[0], 4)?;
    Ok(vec![
        Box::new(ObstacleFusion),
        Box::new(MissionPlanner { hold: hold.max(1) }),
        Box::new(MotionController { gains }),
    ])
}
