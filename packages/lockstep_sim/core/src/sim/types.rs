//! The simulator's data, apart from what it does with it: the [`Simulator`] itself (its fields), and what a
//! step and a behaviour tick report ([`StepReport`], [`SlamSample`], [`Perception`]). The code that runs the
//! simulator lives in the sibling modules, which all import this one; this one imports none of them, so the
//! modules of `sim` do not depend on each other in a circle.

use std::collections::VecDeque;

use lockstep_rules::{Engine, Facts};

use crate::battery::{Battery, BatteryReading};
use crate::config::SimConfig;
use crate::history::{PathHistory, Recent};
use crate::noise::Gaussian;
use crate::scene::{Cell, Scene};
use crate::surface::{Surface, SurfaceTable};
use crate::vehicle::{Odometry, Pose2D, WheelState};

use super::memory::Memory;

/// A SLAM-like pose sample: the true pose plus seeded Gaussian noise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlamSample {
    /// Simulated time of the sample (s).
    pub time_secs: f64,
    /// The noisy pose in the `map` frame.
    pub pose: Pose2D,
}

/// What happened in one [`Simulator::step`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepReport {
    /// Problems with the rules' output this tick (no `next_state`, two of them, evaluation errors...): the
    /// vehicle holds still for the tick and the simulator keeps running.
    pub warnings: Vec<String>,
    /// `(from, to)` when the behaviour state changed.
    pub transition: Option<(String, String)>,
    /// A new SLAM sample was taken (read it with [`Simulator::slam`]).
    pub slam_sample: bool,
    /// The vehicle hit an obstacle (and did not move this tick).
    pub collided: bool,
    /// An evaluation of the rules stopped at its time limit ([`SimConfig::rules_max_seconds`]): the step
    /// took that long, so a loop stepping in real time should let other work run before the next one.
    pub over_time: bool,
}

/// What the vehicle's sensors and its navigation report, i.e. the facts of one tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Perception {
    /// Free distance ahead of the footprint (m), over three parallel rays spanning the vehicle's width.
    pub free_front_m: f64,
    /// Free distance to the left of the footprint (m).
    pub free_left_m: f64,
    /// Free distance to the right of the footprint (m).
    pub free_right_m: f64,
    /// Distance to the destination cell's centre (m).
    pub dest_distance_m: f64,
    /// Bearing of the destination relative to the heading (rad, positive = left).
    pub heading_error_rad: f64,
    /// Free distance along the bearing to the destination (m), like `free_front_m`.
    pub goal_free_m: f64,
    /// Within `arrival_tolerance_m` of the destination's centre.
    pub at_destination: bool,
}

/// The simulator. Deterministic: the same scene, rules, configuration, command sequence and step sizes give
/// the same trajectory, odometry and SLAM samples, bit for bit.
#[derive(Debug)]
pub struct Simulator {
    /// The battery model (`None`: no battery, never empty) and its last reading.
    pub(super) battery: Option<Battery>,
    pub(super) battery_reading: Option<BatteryReading>,
    pub(super) config: SimConfig,
    pub(super) scene: Scene,
    /// Which codes are obstacles, and their names (see `decode`).
    pub(super) surfaces: SurfaceTable,
    pub(super) engine: Engine,
    /// Decodes the whole scene (the obstacle table), apart from the behaviour's engine.
    pub(super) decoder: Engine,
    /// The rules read `sim_time`: the decodings may change every tick.
    pub(super) reads_time: bool,
    /// Facts from outside, asserted in every evaluation.
    pub(super) outside: Facts,
    /// Counts changes of `outside`.
    pub(super) outside_version: u64,
    /// The surface under the vehicle, decoded this tick (or the last time it could be).
    pub(super) ground: Option<Surface>,
    /// Commanded mode: the (typecode, outside version) `ground` was decoded for.
    pub(super) ground_key: Option<(i64, u64)>,
    /// What the behaviour carries between ticks.
    pub(super) memory: Memory,
    pub(super) time_secs: f64,
    pub(super) pose: Pose2D,
    pub(super) start_pose: Pose2D,
    pub(super) wheels: WheelState,
    /// The true body twist of the last step (speed along the body's x axis, yaw rate).
    pub(super) ground_twist: (f64, f64),
    pub(super) odom: Odometry,
    pub(super) noise: Gaussian,
    pub(super) slam: Option<SlamSample>,
    pub(super) next_slam_secs: f64,
    /// Latest external command: (v, w, simulated time received).
    pub(super) commanded: Option<(f64, f64, f64)>,
    /// Commands waiting out the true delay: (issued at, v, w).
    pub(super) queue: VecDeque<(f64, f64, f64)>,
    pub(super) applied: (f64, f64),
    /// The command decided by the last step, before the delay: (simulated time issued, v, w).
    pub(super) issued: (f64, f64, f64),
    pub(super) state: String,
    pub(super) state_since_secs: f64,
    pub(super) destination: Option<Cell>,
    pub(super) bumped: bool,
    pub(super) collisions: u64,
    pub(super) distance_m: f64,
    pub(super) path: PathHistory,
    pub(super) states_visited: Recent<(f64, String)>,
    pub(super) arrived_at_secs: Option<f64>,
    pub(super) last_perception: Option<Perception>,
}
