//! `lockstep_sim`: the rule-driven vehicle simulator, without ROS.
//!
//! - [`Scene`]: a matrix file of road-surface typecodes (`columns rows [cell_size_m]`, then one integer per
//!   cell). Errors name `file:line:column` and the cell's row and column.
//! - [`SurfaceTable`]: each typecode decoded by the Datalog rules (`surface(C, Accel, Decel, Speed)`,
//!   `obstacle(C)`, `surface_name(C, Name)`) through [`lockstep_rules`]. In the shipped
//!   `config/rules/surface.dl`, code 0 is the obstacle; which codes are obstacles is the rules' decision.
//! - [`DiffDriveParams`]: TRUE parameters move the vehicle, NOMINAL ones turn commands into wheel speeds and
//!   wheel increments into [`Odometry`], like a real base controller.
//! - [`SlipModel`]: how the ground slips under the TRUE vehicle: `Centripetal` (the calibrator's own form, the
//!   default) or `Lateral` (sideways sliding in turns, wheel slip while speeding up or braking).
//! - [`Simulator`]: a deterministic fixed-step loop ([`Simulator::step`]): command delay, wheel
//!   accelerations bounded by the surface under the vehicle, collisions with obstacle cells, grid range
//!   sensing (free distance front/left/right), a seeded noisy SLAM pose, and in autonomous mode one behaviour
//!   tick per step: facts in, `next_state` and `drive` out (see `config/rules/behaviour.dl` for the facts).
//!   Inputs from outside are checked where they enter ([`check_twist`], [`check_time_scale`]); what the
//!   simulator keeps is bounded ([`PathHistory`], [`Recent`]).
//! - [`DriveScript`]: a fixed sequence of velocity commands in simulated time (tests, demos, calibration).
//! - [`Pacer`]: fixed steps against the wall clock at a time scale, for the node's loop (pure).
//! - [`grid_cells`], [`Simulator::ascii_map`]: the grid as drawn, for markers and terminals.
//!
//! ```
//! use lockstep_rules::RuleSet;
//! use lockstep_sim::{Cell, Scene, SimConfig, Simulator};
//! let scene = Scene::parse("3 1\n1 1 1\n", "inline.scene")?;
//! let rules = RuleSet::parse(
//!     "surface(C, 2.0, 4.0, 1.0) :- typecode(C), C = 1.\n\
//!      initial_state(explore).\n\
//!      next_state(explore) :- state(explore).\n\
//!      drive(0.5, 0.0) :- next_state(explore).",
//!     "inline.dl",
//! )?;
//! let config = SimConfig { start: Some(Cell { column: 0, row: 0 }), destination: Some(Cell { column: 2, row: 0 }),
//!                          ..SimConfig::default() };
//! let mut sim = Simulator::new(scene, rules, config)?;
//! for _ in 0..100 {
//!     sim.step(0.02);
//! }
//! assert!(sim.pose().x_m > 1.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod battery;
mod config;
mod drive;
mod error;
mod history;
mod input;
mod noise;
mod pacing;
mod render;
mod scene;
mod settings;
mod sim;
mod slip;
mod surface;
mod vehicle;
mod watched;

pub use battery::{Battery, BatteryConfig, BatteryReading, Supply};
pub use config::{Mode, SimConfig, DEFAULT_RULES_MAX_SECONDS};
pub use drive::{DriveScript, DriveSegment, DriveStep, RunningDrive};
pub use error::{Error, Result};
pub use history::{PathHistory, Recent};
pub use input::{check_command, check_time_scale, check_twist, BadInputLog, CommandLimits, MAX_TIME_SCALE};
pub use noise::Gaussian;
pub use pacing::{Every, Pacer, Tick, WarningThrottle, MAX_STEPS_PER_TICK, PAUSED_REPUBLISH_SECS};
pub use render::{grid_cells, surface_color, GridCell, Rgba, OBSTACLE_COLOR};
pub use scene::{Cell, Scene};
pub use settings::{
    cell_setting, count_setting, history_depth, marker_period_secs, non_negative_setting, period_of_rate,
    positive_setting, watch_period,
};
pub use sim::{
    parse_facts, Perception, PreparedWorld, ReloadSummary, Simulator, SlamSample, StepReport,
    COMMANDED_STATE, IDLE_STATE, INPUT_PREDICATES, SIM_TIME,
};
pub use slip::SlipModel;
pub use surface::{Surface, SurfaceTable};
pub use vehicle::{normalize_angle, DiffDriveParams, Odometry, Pose2D, WheelState};
pub use watched::{stamps, Stamps, WatchedFiles};
