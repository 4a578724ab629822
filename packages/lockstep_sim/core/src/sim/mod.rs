//! The simulator: a fixed-step loop over the scene, the vehicle, its sensors and the behaviour rules.
//!
//! The [`Simulator`]'s fields and the reports are defined in `types`, which the other modules of `sim` import;
//! this module builds, steps and reloads the simulator, with the behaviour (`behaviour`, `memory`), the
//! surface decoding (`decode`), the sensors (`sensing`) and the ground (`ground`) in the modules below it.

mod behaviour;
mod decode;
mod ground;
mod memory;
mod motion;
mod sensing;
mod types;

use std::collections::VecDeque;
use std::path::Path;

use lockstep_rules::{Engine, Facts, RuleSet};

use crate::battery::{Battery, BatteryReading};
use crate::config::{Mode, SimConfig};
use crate::error::{Error, Result};
use crate::history::{PathHistory, Recent};
use crate::input::{check_command, CommandLimits};
use crate::noise::Gaussian;
use crate::scene::{Cell, Scene};
use crate::surface::SurfaceTable;
use crate::vehicle::{normalize_angle, DiffDriveParams, Odometry, Pose2D, WheelState};

pub use behaviour::{COMMANDED_STATE, IDLE_STATE, INPUT_PREDICATES};
pub use decode::{parse_facts, SIM_TIME};
pub use types::{Perception, Simulator, SlamSample, StepReport};

use behaviour::check_contract;
use memory::Memory;
use sensing::{check_cell, check_known_cell, collides_in, start_cell};

/// Spacing of the path history's samples while the path is short (m).
const PATH_SPACING_M: f64 = 0.05;

/// What a successful reload changed.
#[derive(Debug, Clone, PartialEq)]
pub struct ReloadSummary {
    /// The rule files' origins, in load order.
    pub rule_files: Vec<String>,
    /// Number of rules in force.
    pub rule_count: usize,
    /// Whether the scene's content changed.
    pub scene_changed: bool,
    /// The rules' warnings (`file:line:column: warning: ...`): variables used once, predicates nothing
    /// defines (besides the simulator's inputs).
    pub warnings: Vec<String>,
}

/// What a reload changed, in one text for the log and the reload service's answer.
impl std::fmt::Display for ReloadSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "reloaded {} rule(s) from {}; scene {}",
            self.rule_count,
            self.rule_files.join(", "),
            if self.scene_changed {
                "changed"
            } else {
                "unchanged"
            }
        )?;
        if !self.warnings.is_empty() {
            write!(
                f,
                "; {} warning(s):\n{}",
                self.warnings.len(),
                self.warnings.join("\n")
            )?;
        }
        Ok(())
    }
}

/// A scene and rules loaded, and the rules checked against the contract of a mode, ready for
/// [`Simulator::install`]. Building one is the slow part of a reload (file reading, parsing) and needs no
/// simulator, so a node can do it off its simulation thread. (The typecodes are decoded by `install`, with
/// the simulated time and the outside facts of the running simulator.)
#[derive(Debug)]
pub struct PreparedWorld {
    scene: Scene,
    rules: RuleSet,
}

impl PreparedWorld {
    /// Loads the scene and rule files for a simulator in `mode`.
    pub fn load<P: AsRef<Path>>(scene_file: impl AsRef<Path>, rule_files: &[P], mode: Mode) -> Result<Self> {
        let rules = RuleSet::load_all(rule_files)?;
        let scene = Scene::load(scene_file)?;
        PreparedWorld::new(scene, rules, mode)
    }

    /// Checks a parsed scene and rules for a simulator in `mode`.
    pub fn new(scene: Scene, rules: RuleSet, mode: Mode) -> Result<Self> {
        check_contract(&rules, mode)?;
        Ok(PreparedWorld { scene, rules })
    }
}

impl Simulator {
    /// Loads the scene and rule files and builds a simulator.
    pub fn load<P: AsRef<Path>>(
        scene_file: impl AsRef<Path>,
        rule_files: &[P],
        config: SimConfig,
    ) -> Result<Self> {
        let rules = RuleSet::load_all(rule_files)?;
        let scene = Scene::load(scene_file)?;
        Simulator::new(scene, rules, config)
    }

    /// A simulator over a parsed scene and checked rules.
    pub fn new(scene: Scene, rules: RuleSet, config: SimConfig) -> Result<Self> {
        config.validate()?;
        let PreparedWorld { scene, rules } = PreparedWorld::new(scene, rules, config.mode)?;
        let (mut decoder, reads_time) = Simulator::decoder_for(&rules, config.rules_max_seconds);
        let mut at_start = Facts::new();
        at_start.add(decode::SIM_TIME, [0.0]);
        let surfaces = SurfaceTable::decode_with(&mut decoder, &scene, &at_start)?;
        let start = start_cell(&scene, &surfaces, &config)?;
        let (x_m, y_m) = scene.cell_center(start);
        let pose = Pose2D {
            x_m,
            y_m,
            yaw_rad: normalize_angle(config.start_yaw_rad),
        };
        let memory = Memory::of(&rules, None);
        let mut engine = Engine::new(rules);
        // A rule that generates values without bound must fail one tick quickly, not eat the memory.
        engine.set_max_tuples(1_000_000);
        // ...and a rule that derives one row per round without end must not hold the simulator for ever.
        engine.set_max_seconds(config.rules_max_seconds);
        let states_visited = Recent::new(config.state_history_depth);
        let mut sim = Simulator {
            battery: Battery::new(config.battery.clone()),
            battery_reading: None,
            noise: Gaussian::new(config.seed),
            destination: config.destination,
            path: PathHistory::new((0.0, pose.x_m, pose.y_m), PATH_SPACING_M, config.path_max_points),
            config,
            scene,
            surfaces,
            engine,
            decoder,
            reads_time,
            outside: Facts::new(),
            outside_version: 0,
            ground: None,
            ground_key: None,
            memory,
            time_secs: 0.0,
            pose,
            start_pose: pose,
            wheels: WheelState::default(),
            ground_twist: (0.0, 0.0),
            odom: Odometry::default(),
            slam: None,
            next_slam_secs: 0.0,
            commanded: None,
            queue: VecDeque::new(),
            applied: (0.0, 0.0),
            issued: (0.0, 0.0, 0.0),
            state: IDLE_STATE.to_owned(),
            state_since_secs: 0.0,
            bumped: false,
            collisions: 0,
            distance_m: 0.0,
            states_visited,
            arrived_at_secs: None,
            last_perception: None,
        };
        sim.begin(start)?;
        Ok(sim)
    }

    /// Puts the vehicle on its start cell: it must fit there; the first state, the ground under it and the
    /// first SLAM sample.
    fn begin(&mut self, start: Cell) -> Result<()> {
        if self.collides(&self.pose) {
            return Err(Error::BadCell {
                column: start.column as i64,
                row: start.row as i64,
                reason: format!(
                    "cannot hold the vehicle: a footprint of radius {} m overlaps an obstacle",
                    self.config.vehicle_radius_m
                ),
            });
        }
        match (self.config.mode, self.destination) {
            (Mode::Commanded, _) => self.change_state(COMMANDED_STATE.to_owned()),
            (Mode::Autonomous, Some(_)) => self.start_behaviour()?,
            (Mode::Autonomous, None) => self.change_state(IDLE_STATE.to_owned()),
        }
        let mut report = StepReport::default();
        self.decode_ground(&mut report);
        if let Some(w) = report.warnings.first() {
            return Err(Error::RulesContract {
                files: self.engine.rules().origins().join(", "),
                message: format!("at the start cell: {w}"),
            });
        }
        self.take_slam_sample();
        Ok(())
    }

    /// Reloads rule files and the scene file together; on any error nothing changes and the error (with
    /// `file:line:column`) is returned.
    pub fn reload<P: AsRef<Path>>(
        &mut self,
        scene_file: impl AsRef<Path>,
        rule_files: &[P],
    ) -> Result<ReloadSummary> {
        self.install(PreparedWorld::load(scene_file, rule_files, self.config.mode)?)
    }

    /// Swaps in a new scene and rules after checking that they fit together and with the running vehicle
    /// (its footprint and its destination must stay valid). On error nothing changes.
    pub fn replace(&mut self, scene: Scene, rules: RuleSet) -> Result<ReloadSummary> {
        self.install(PreparedWorld::new(scene, rules, self.config.mode)?)
    }

    /// Swaps in a prepared scene and rules if the running vehicle fits them: its footprint must stay clear and
    /// its destination enterable. On error nothing changes. (A world prepared for another mode is checked
    /// again against this simulator's mode.)
    pub fn install(&mut self, world: PreparedWorld) -> Result<ReloadSummary> {
        let PreparedWorld { scene, rules } = world;
        check_contract(&rules, self.config.mode)?;
        // Prepared without the simulated time and the outside facts: decoded again with them.
        let (mut decoder, reads_time) = Simulator::decoder_for(&rules, self.config.rules_max_seconds);
        let mut env = Facts::new();
        self.env_facts(&mut env);
        let surfaces = SurfaceTable::decode_with(&mut decoder, &scene, &env)?;
        if self.config.mode == Mode::Autonomous {
            behaviour::initial_state_in(&mut decoder, &env)?;
        }
        if let Some(dest) = self.destination {
            check_known_cell(&scene, &surfaces, dest, "destination")?;
        }
        if collides_in(&scene, &surfaces, &self.pose, self.config.vehicle_radius_m) {
            let (c, r) = scene.signed_cell_at(self.pose.x_m, self.pose.y_m);
            return Err(Error::BadCell {
                column: c,
                row: r,
                reason:
                    "holds the vehicle, which would overlap an obstacle or leave the grid in the new scene"
                        .into(),
            });
        }
        let summary = ReloadSummary {
            rule_files: rules.origins().to_vec(),
            rule_count: rules.rule_count(),
            scene_changed: scene != self.scene,
            warnings: Vec::new(),
        };
        let memory = Memory::of(&rules, Some(std::mem::take(&mut self.memory)));
        let mut inputs: Vec<&str> = INPUT_PREDICATES.to_vec();
        inputs.extend(memory.names());
        inputs.extend(self.outside.iter().map(|(p, _)| p));
        let summary = ReloadSummary {
            warnings: rules.warnings(&inputs).iter().map(ToString::to_string).collect(),
            ..summary
        };
        self.memory = memory;
        self.engine.replace_rules(rules);
        self.decoder = decoder;
        self.reads_time = reads_time;
        self.ground_key = None;
        self.scene = scene;
        self.surfaces = surfaces;
        Ok(summary)
    }

    /// Sets the destination. Outside the grid or an obstacle: an error with the reason, nothing changes.
    /// A vehicle that was idle or in a state the rules call `terminal` sets off again, in the rules'
    /// `initial_state`.
    pub fn set_destination(&mut self, column: i64, row: i64) -> Result<()> {
        let cell = check_cell(&self.scene, &self.surfaces, column, row, "destination")?;
        if self.config.mode == Mode::Autonomous && (self.state == IDLE_STATE || self.in_terminal_state()?) {
            // Changes nothing on error (the rules must name one initial state).
            self.start_behaviour()?;
            self.destination = Some(cell);
        } else {
            self.destination = Some(cell);
        }
        self.arrived_at_secs = None;
        Ok(())
    }

    /// Replaces the TRUE vehicle (what the ground does: a new load, worn wheels). Invalid values: an error
    /// naming the field, nothing changes.
    pub fn set_true_vehicle(&mut self, params: DiffDriveParams) -> Result<()> {
        params.validate("true")?;
        self.config.true_vehicle = params;
        Ok(())
    }

    /// Replaces the NOMINAL vehicle (what the base controller believes: a calibration pushed to it). From the
    /// next step on, wheel speeds and odometry use it. Invalid values: an error naming the field, nothing
    /// changes.
    pub fn set_nominal_vehicle(&mut self, params: DiffDriveParams) -> Result<()> {
        params.validate("nominal")?;
        self.config.nominal_vehicle = params;
        Ok(())
    }

    /// The external command (commanded mode): linear (m/s) and angular (rad/s) velocity, like `cmd_vel`.
    /// Non-finite or beyond `max_linear_mps`/`max_angular_radps`: an error, and the previous command stays.
    pub fn set_command(&mut self, v_mps: f64, w_radps: f64) -> Result<()> {
        check_command("cmd_vel", v_mps, w_radps, &self.limits())?;
        self.commanded = Some((v_mps, w_radps, self.time_secs));
        Ok(())
    }

    /// The bounds on velocity commands (from the configuration).
    pub fn limits(&self) -> CommandLimits {
        self.config.limits
    }

    /// Advances the simulation by `dt_secs` (use a fixed step for reproducible runs).
    pub fn step(&mut self, dt_secs: f64) -> StepReport {
        let mut report = StepReport::default();
        if !(dt_secs.is_finite() && dt_secs > 0.0) {
            report
                .warnings
                .push(format!("step of {dt_secs} s ignored: it must be > 0"));
            return report;
        }
        self.refresh_surfaces(&mut report);
        let mut desired = self.desired_command(&mut report);
        if self.battery.as_ref().is_some_and(Battery::empty) {
            desired = (0.0, 0.0); // an empty battery drives nothing
        }
        self.delay_command(desired);
        let (wl, wr) = self.wheel_speeds_reached(dt_secs);
        let before = self.pose;
        self.move_vehicle(wl, wr, dt_secs, &mut report);
        if let Some(battery) = self.battery.as_mut() {
            let driven_m = before.distance_to(&self.pose);
            let xy = [self.pose.x_m, self.pose.y_m];
            self.battery_reading = Some(battery.step(dt_secs, driven_m, xy));
        }
        self.time_secs += dt_secs;
        if self.config.slam_period_secs > 0.0 && self.time_secs + 1e-9 >= self.next_slam_secs {
            self.take_slam_sample();
            report.slam_sample = true;
        }
        self.path.record(self.time_secs, self.pose.x_m, self.pose.y_m);
        report
    }

    fn take_slam_sample(&mut self) {
        if self.config.slam_period_secs <= 0.0 {
            return;
        }
        let pose = Pose2D {
            x_m: self.pose.x_m + self.noise.sample(self.config.slam_sigma_xy_m),
            y_m: self.pose.y_m + self.noise.sample(self.config.slam_sigma_xy_m),
            yaw_rad: normalize_angle(self.pose.yaw_rad + self.noise.sample(self.config.slam_sigma_yaw_rad)),
        };
        self.slam = Some(SlamSample {
            time_secs: self.time_secs,
            pose,
        });
        while self.next_slam_secs <= self.time_secs + 1e-9 {
            self.next_slam_secs += self.config.slam_period_secs;
        }
    }

    /// Simulated time (s).
    pub fn time_secs(&self) -> f64 {
        self.time_secs
    }
    /// The battery after the last step; `None` without a battery model (or before the first step).
    pub fn battery(&self) -> Option<BatteryReading> {
        self.battery_reading
    }
    /// The true pose in the `map` frame.
    pub fn pose(&self) -> Pose2D {
        self.pose
    }
    /// The pose the vehicle started from.
    pub fn start_pose(&self) -> Pose2D {
        self.start_pose
    }
    /// Wheel encoders.
    pub fn wheels(&self) -> WheelState {
        self.wheels
    }
    /// Odometry (NOMINAL parameters) in the `odom` frame, which starts at the start pose.
    pub fn odometry(&self) -> Odometry {
        self.odom
    }
    /// The latest SLAM sample.
    pub fn slam(&self) -> Option<SlamSample> {
        self.slam
    }
    /// The behaviour state.
    pub fn state(&self) -> &str {
        &self.state
    }
    /// The destination cell.
    pub fn destination(&self) -> Option<Cell> {
        self.destination
    }
    /// The scene in force.
    pub fn scene(&self) -> &Scene {
        &self.scene
    }
    /// The surface decoding in force.
    pub fn surfaces(&self) -> &SurfaceTable {
        &self.surfaces
    }
    /// The rules in force.
    pub fn rules(&self) -> &RuleSet {
        self.engine.rules()
    }
    /// The configuration.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }
    /// True path: (time, x, y) every 5 cm of travel, coarser once it holds `path_max_points` (see
    /// [`PathHistory`]).
    pub fn path(&self) -> &[(f64, f64, f64)] {
        self.path.points()
    }
    /// The latest `state_history_depth` states entered, with the time each was entered, oldest first
    /// (starting with the initial state while the run is short).
    pub fn states_visited(&self) -> &[(f64, String)] {
        self.states_visited.as_slice()
    }
    /// When the rules first said `arrived`.
    pub fn arrived_at_secs(&self) -> Option<f64> {
        self.arrived_at_secs
    }
    /// True distance travelled (m).
    pub fn distance_m(&self) -> f64 {
        self.distance_m
    }
    /// Number of steps in which the vehicle hit an obstacle.
    pub fn collisions(&self) -> u64 {
        self.collisions
    }
    /// The perception of the last behaviour tick.
    pub fn last_perception(&self) -> Option<Perception> {
        self.last_perception
    }
    /// The command the last step decided (the rules' drive or cmd_vel), before the delay: (simulated time it
    /// was issued, v, w). What a base controller's `cmd_vel_out` would say.
    pub fn issued_command(&self) -> (f64, f64, f64) {
        self.issued
    }
    /// The command in effect after the delay (v, w).
    pub fn applied_command(&self) -> (f64, f64) {
        self.applied
    }
}
