//! The simulator: a fixed-step loop over the scene, the vehicle, its sensors and the behaviour rules.

use std::collections::VecDeque;
use std::path::Path;
use std::str::FromStr;

use lockstep_rules::{Engine, Facts, RuleSet, Value};

use crate::error::{Error, Result};
use crate::noise::Gaussian;
use crate::scene::{Cell, Scene};
use crate::surface::{Surface, SurfaceTable};
use crate::vehicle::{normalize_angle, DiffDriveParams, Odometry, Pose2D, WheelState};

/// Who drives the vehicle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The behaviour rules decide every tick (`next_state`, `drive`).
    Autonomous,
    /// Commands come from outside ([`Simulator::set_command`], i.e. `cmd_vel`).
    Commanded,
}

impl FromStr for Mode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Mode> {
        match s.trim() {
            "autonomous" => Ok(Mode::Autonomous),
            "commanded" => Ok(Mode::Commanded),
            other => Err(Error::BadParameter {
                name: "mode",
                reason: format!("is `{other}`; expected `autonomous` or `commanded`"),
            }),
        }
    }
}

/// The state before any destination is known (a simulator state, not one of the rules').
pub const IDLE_STATE: &str = "idle";
/// The state reported in commanded mode, where the rules do not drive.
pub const COMMANDED_STATE: &str = "commanded";
/// The state the behaviour starts in once a destination is set.
pub const INITIAL_STATE: &str = "explore";

/// Everything about a run that is not the scene or the rules.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// Who drives.
    pub mode: Mode,
    /// The parameters the ground obeys.
    pub true_vehicle: DiffDriveParams,
    /// The parameters the base controller (wheel speeds from `cmd_vel`, odometry) believes in.
    pub nominal_vehicle: DiffDriveParams,
    /// Radius of the vehicle's circular footprint (m), used for collisions and clearances.
    pub vehicle_radius_m: f64,
    /// Range of the free-distance sensors (m).
    pub sensor_range_m: f64,
    /// Asserted as `min_step(D)`: a direction with less free distance is closed (m).
    pub min_step_m: f64,
    /// `at_destination` holds within this distance of the destination cell's centre (m).
    pub arrival_tolerance_m: f64,
    /// In commanded mode, a command older than this (simulated seconds) is replaced by a stop; 0 = never.
    pub cmd_timeout_secs: f64,
    /// Standard deviation of the SLAM pose's x and y noise (m).
    pub slam_sigma_xy_m: f64,
    /// Standard deviation of the SLAM pose's heading noise (rad).
    pub slam_sigma_yaw_rad: f64,
    /// Simulated seconds between two SLAM samples; 0 = no SLAM.
    pub slam_period_secs: f64,
    /// Seed of the SLAM noise.
    pub seed: u64,
    /// Start cell; `None` = the first enterable cell in row-major order.
    pub start: Option<Cell>,
    /// Start heading (rad, counter-clockwise from +x).
    pub start_yaw_rad: f64,
    /// Destination cell; `None` = hold still (state `idle`) until one is set.
    pub destination: Option<Cell>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            mode: Mode::Autonomous,
            true_vehicle: DiffDriveParams::default(),
            nominal_vehicle: DiffDriveParams::default(),
            vehicle_radius_m: 0.25,
            sensor_range_m: 10.0,
            min_step_m: 0.5,
            arrival_tolerance_m: 0.3,
            cmd_timeout_secs: 0.5,
            slam_sigma_xy_m: 0.05,
            slam_sigma_yaw_rad: 0.02,
            slam_period_secs: 0.2,
            seed: 0,
            start: None,
            start_yaw_rad: 0.0,
            destination: None,
        }
    }
}

impl SimConfig {
    /// Checks every value; the error names the field.
    pub fn validate(&self) -> Result<()> {
        self.true_vehicle.validate("true")?;
        self.nominal_vehicle.validate("nominal")?;
        let positive = |name: &'static str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(Error::BadParameter {
                    name,
                    reason: format!("is {v}; it must be a finite number > 0"),
                })
            }
        };
        let non_negative = |name: &'static str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(Error::BadParameter {
                    name,
                    reason: format!("is {v}; it must be a finite number >= 0"),
                })
            }
        };
        positive("vehicle_radius_m", self.vehicle_radius_m)?;
        positive("sensor_range_m", self.sensor_range_m)?;
        non_negative("min_step_m", self.min_step_m)?;
        positive("arrival_tolerance_m", self.arrival_tolerance_m)?;
        non_negative("cmd_timeout_secs", self.cmd_timeout_secs)?;
        non_negative("slam_sigma_xy_m", self.slam_sigma_xy_m)?;
        non_negative("slam_sigma_yaw_rad", self.slam_sigma_yaw_rad)?;
        non_negative("slam_period_secs", self.slam_period_secs)?;
        if !self.start_yaw_rad.is_finite() {
            return Err(Error::BadParameter {
                name: "start_yaw_rad",
                reason: "is not finite".into(),
            });
        }
        Ok(())
    }
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
}

/// What a successful reload changed.
#[derive(Debug, Clone, PartialEq)]
pub struct ReloadSummary {
    /// The rule files' origins, in load order.
    pub rule_files: Vec<String>,
    /// Number of rules in force.
    pub rule_count: usize,
    /// Whether the scene's content changed.
    pub scene_changed: bool,
}

/// Predicates the simulator reads back, with their arities.
const SURFACE_CONTRACT: [(&str, usize); 1] = [("surface", 4)];
const BEHAVIOUR_CONTRACT: [(&str, usize); 2] = [("next_state", 1), ("drive", 2)];

/// The simulator. Deterministic: the same scene, rules, configuration, command sequence and step sizes give
/// the same trajectory, odometry and SLAM samples, bit for bit.
#[derive(Debug)]
pub struct Simulator {
    config: SimConfig,
    scene: Scene,
    surfaces: SurfaceTable,
    engine: Engine,
    time_secs: f64,
    pose: Pose2D,
    start_pose: Pose2D,
    wheels: WheelState,
    odom: Odometry,
    noise: Gaussian,
    slam: Option<SlamSample>,
    next_slam_secs: f64,
    /// Latest external command: (v, w, simulated time received).
    commanded: Option<(f64, f64, f64)>,
    /// Commands waiting out the true delay: (issued at, v, w).
    queue: VecDeque<(f64, f64, f64)>,
    applied: (f64, f64),
    state: String,
    state_since_secs: f64,
    backups: i64,
    destination: Option<Cell>,
    bumped: bool,
    collisions: u64,
    distance_m: f64,
    path: Vec<(f64, f64, f64)>,
    states_visited: Vec<(f64, String)>,
    arrived_at_secs: Option<f64>,
    last_perception: Option<Perception>,
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
        check_contract(&rules, config.mode)?;
        let surfaces = SurfaceTable::decode(&rules, &scene)?;
        let start = match config.start {
            Some(cell) => {
                check_cell(&scene, &surfaces, cell.column as i64, cell.row as i64, "start")?;
                cell
            }
            None => first_free_cell(&scene, &surfaces).ok_or_else(|| Error::BadCell {
                column: 0,
                row: 0,
                reason: "cannot start the vehicle: every cell of the scene is an obstacle".into(),
            })?,
        };
        if let Some(dest) = config.destination {
            check_cell(
                &scene,
                &surfaces,
                dest.column as i64,
                dest.row as i64,
                "destination",
            )?;
        }
        let (x_m, y_m) = scene.cell_center(start);
        let pose = Pose2D {
            x_m,
            y_m,
            yaw_rad: normalize_angle(config.start_yaw_rad),
        };
        let mut engine = Engine::new(rules);
        // A rule that generates values without bound must fail one tick quickly, not eat the memory.
        engine.set_max_tuples(1_000_000);
        let state = match (config.mode, config.destination) {
            (Mode::Commanded, _) => COMMANDED_STATE,
            (Mode::Autonomous, Some(_)) => INITIAL_STATE,
            (Mode::Autonomous, None) => IDLE_STATE,
        };
        let mut sim = Simulator {
            noise: Gaussian::new(config.seed),
            destination: config.destination,
            config,
            scene,
            surfaces,
            engine,
            time_secs: 0.0,
            pose,
            start_pose: pose,
            wheels: WheelState::default(),
            odom: Odometry::default(),
            slam: None,
            next_slam_secs: 0.0,
            commanded: None,
            queue: VecDeque::new(),
            applied: (0.0, 0.0),
            state: state.to_owned(),
            state_since_secs: 0.0,
            backups: 0,
            bumped: false,
            collisions: 0,
            distance_m: 0.0,
            path: vec![(0.0, pose.x_m, pose.y_m)],
            states_visited: vec![(0.0, state.to_owned())],
            arrived_at_secs: None,
            last_perception: None,
        };
        if sim.collides(&pose) {
            return Err(Error::BadCell {
                column: start.column as i64,
                row: start.row as i64,
                reason: format!(
                    "cannot hold the vehicle: a footprint of radius {} m overlaps an obstacle",
                    sim.config.vehicle_radius_m
                ),
            });
        }
        sim.take_slam_sample();
        Ok(sim)
    }

    /// Reloads rule files and the scene file together; on any error nothing changes and the error (with
    /// `file:line:column`) is returned.
    pub fn reload<P: AsRef<Path>>(
        &mut self,
        scene_file: impl AsRef<Path>,
        rule_files: &[P],
    ) -> Result<ReloadSummary> {
        let rules = RuleSet::load_all(rule_files)?;
        let scene = Scene::load(scene_file)?;
        self.replace(scene, rules)
    }

    /// Swaps in a new scene and rules after checking that they fit together and with the running vehicle
    /// (its footprint and its destination must stay valid). On error nothing changes.
    pub fn replace(&mut self, scene: Scene, rules: RuleSet) -> Result<ReloadSummary> {
        check_contract(&rules, self.config.mode)?;
        let surfaces = SurfaceTable::decode(&rules, &scene)?;
        if let Some(dest) = self.destination {
            check_cell(
                &scene,
                &surfaces,
                dest.column as i64,
                dest.row as i64,
                "destination",
            )?;
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
        let scene_changed = scene != self.scene;
        let summary = ReloadSummary {
            rule_files: rules.origins().to_vec(),
            rule_count: rules.rule_count(),
            scene_changed,
        };
        self.engine.replace_rules(rules);
        self.scene = scene;
        self.surfaces = surfaces;
        Ok(summary)
    }

    /// Sets the destination. Outside the grid or an obstacle: an error with the reason, nothing changes.
    /// A vehicle that had arrived, was blocked or idle starts exploring again.
    pub fn set_destination(&mut self, column: i64, row: i64) -> Result<()> {
        let cell = check_cell(&self.scene, &self.surfaces, column, row, "destination")?;
        self.destination = Some(cell);
        self.arrived_at_secs = None;
        if self.config.mode == Mode::Autonomous
            && matches!(self.state.as_str(), "arrived" | "blocked" | IDLE_STATE)
        {
            self.backups = 0;
            self.change_state(INITIAL_STATE.to_owned());
        }
        Ok(())
    }

    /// The external command (commanded mode): linear (m/s) and angular (rad/s) velocity, like `cmd_vel`.
    pub fn set_command(&mut self, v_mps: f64, w_radps: f64) -> Result<()> {
        if !v_mps.is_finite() || !w_radps.is_finite() {
            return Err(Error::BadParameter {
                name: "cmd_vel",
                reason: format!("({v_mps}, {w_radps}) is not finite"),
            });
        }
        self.commanded = Some((v_mps, w_radps, self.time_secs));
        Ok(())
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
        let desired = match self.config.mode {
            Mode::Autonomous => self.decide(&mut report),
            Mode::Commanded => match self.commanded {
                Some((v, w, stamp))
                    if self.config.cmd_timeout_secs <= 0.0
                        || self.time_secs - stamp <= self.config.cmd_timeout_secs + 1e-9 =>
                {
                    (v, w)
                }
                _ => (0.0, 0.0),
            },
        };

        // The command takes effect after the TRUE delay.
        self.queue.push_back((self.time_secs, desired.0, desired.1));
        let due = self.time_secs - self.config.true_vehicle.delay_secs + 1e-9;
        while self.queue.len() > 1 && self.queue[1].0 <= due {
            self.queue.pop_front();
        }
        if let Some(&(issued, v, w)) = self.queue.front() {
            if issued <= due {
                self.applied = (v, w);
            }
        }

        // The base controller turns the command into wheel speeds with the NOMINAL parameters...
        let (target_l, target_r) = self
            .config
            .nominal_vehicle
            .wheel_speeds(self.applied.0, self.applied.1);
        // ...which the wheels reach within the surface's acceleration limits (both wheels scaled alike so
        // that the path's curvature is kept while speeding up or braking).
        let (accel, decel) = self
            .surface_under()
            .map_or((1.0, 1.0), |s| (s.accel_mps2, s.decel_mps2));
        let radius = self.config.true_vehicle.wheel_radius_m;
        let fraction = |current: f64, target: f64| -> f64 {
            let dv = (target - current) * radius;
            if dv == 0.0 {
                return 1.0;
            }
            let speeding_up = target.abs() > current.abs() && target * current >= 0.0;
            let limit = if speeding_up { accel } else { decel } * dt_secs;
            (limit / dv.abs()).min(1.0)
        };
        let f = fraction(self.wheels.left_velocity_radps, target_l)
            .min(fraction(self.wheels.right_velocity_radps, target_r));
        let wl = self.wheels.left_velocity_radps + f * (target_l - self.wheels.left_velocity_radps);
        let wr = self.wheels.right_velocity_radps + f * (target_r - self.wheels.right_velocity_radps);

        // The ground moves the vehicle with the TRUE parameters.
        let (v, w_kinematic) = self.config.true_vehicle.body_twist(wl, wr);
        let w = self.config.true_vehicle.slipped_yaw_rate(v, w_kinematic);
        let next = self.pose.advanced(v, w, dt_secs);
        if self.collides(&next) {
            // A collision stops the vehicle where it was: the wheels stall, the encoders see nothing.
            self.bumped = true;
            self.collisions += 1;
            report.collided = true;
            self.wheels.left_velocity_radps = 0.0;
            self.wheels.right_velocity_radps = 0.0;
            self.odom
                .integrate(&self.config.nominal_vehicle, 0.0, 0.0, dt_secs);
        } else {
            self.bumped = false;
            let (dl, dr) = (wl * dt_secs, wr * dt_secs);
            self.wheels.left_position_rad += dl;
            self.wheels.right_position_rad += dr;
            self.wheels.left_velocity_radps = wl;
            self.wheels.right_velocity_radps = wr;
            self.odom.integrate(&self.config.nominal_vehicle, dl, dr, dt_secs);
            self.distance_m += self.pose.distance_to(&next);
            self.pose = next;
        }
        self.time_secs += dt_secs;

        if self.config.slam_period_secs > 0.0 && self.time_secs + 1e-9 >= self.next_slam_secs {
            self.take_slam_sample();
            report.slam_sample = true;
        }
        if let Some(&(_, x, y)) = self.path.last() {
            if (x - self.pose.x_m).hypot(y - self.pose.y_m) >= 0.05 {
                self.path.push((self.time_secs, self.pose.x_m, self.pose.y_m));
            }
        }
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

    /// One behaviour tick: assert the facts, evaluate, read `next_state` and `drive`.
    fn decide(&mut self, report: &mut StepReport) -> (f64, f64) {
        if matches!(self.state.as_str(), IDLE_STATE) || self.destination.is_none() {
            return (0.0, 0.0);
        }
        let p = self.perceive();
        self.last_perception = Some(p);
        let mut facts = Facts::new();
        facts
            .add("state", [self.state.as_str()])
            .add("free_front", [p.free_front_m])
            .add("free_left", [p.free_left_m])
            .add("free_right", [p.free_right_m])
            .add("min_step", [self.config.min_step_m])
            .add("heading_error", [p.heading_error_rad])
            .add("backups", [self.backups])
            .add("dest_distance", [p.dest_distance_m])
            .add("goal_free", [p.goal_free_m])
            .add("state_time", [self.time_secs - self.state_since_secs]);
        if let Some(code) = self.cell_under().and_then(|c| self.scene.code(c)) {
            facts.add("typecode", [code]);
        }
        if p.at_destination {
            facts.flag("at_destination");
        }
        if self.bumped {
            facts.flag("bumped");
        }
        if let Err(e) = self.engine.tick(&facts) {
            report.warnings.push(format!(
                "behaviour rules failed in state `{}`: {e}; holding still",
                self.state
            ));
            return (0.0, 0.0);
        }
        let next = match self.engine.query("next_state") {
            Ok(rows) if !rows.is_empty() => {
                if rows.len() > 1 {
                    report.warnings.push(format!(
                        "behaviour rules derived {} next states in state `{}`: {}; taking the first",
                        rows.len(),
                        self.state,
                        rows.iter()
                            .map(|r| value_text(r.first()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                value_text(rows[0].first())
            }
            Ok(_) => {
                report.warnings.push(format!(
                    "behaviour rules derived no next_state in state `{}`; holding still",
                    self.state
                ));
                return (0.0, 0.0);
            }
            Err(e) => {
                report.warnings.push(format!("cannot read next_state: {e}"));
                return (0.0, 0.0);
            }
        };
        if let Ok(rows) = self.engine.query("ambiguous_state") {
            if !rows.is_empty() {
                report.warnings.push(format!(
                    "behaviour rules report ambiguous_state {rows:?} in state `{}`",
                    self.state
                ));
            }
        }
        let drive = match self.engine.query("drive") {
            Ok(rows) if !rows.is_empty() => {
                if rows.len() > 1 {
                    report.warnings.push(format!(
                        "behaviour rules derived {} drive commands for state `{next}`; taking the first",
                        rows.len()
                    ));
                }
                let num = |i: usize| rows[0].get(i).and_then(|v| v.as_f64()).filter(|x| x.is_finite());
                match (num(0), num(1)) {
                    (Some(v), Some(w)) => (v, w),
                    _ => {
                        report
                            .warnings
                            .push(format!("drive {:?} is not numeric; holding still", rows[0]));
                        (0.0, 0.0)
                    }
                }
            }
            Ok(_) => {
                report.warnings.push(format!(
                    "behaviour rules derived no drive command for state `{next}`; holding still"
                ));
                (0.0, 0.0)
            }
            Err(e) => {
                report.warnings.push(format!("cannot read drive: {e}"));
                (0.0, 0.0)
            }
        };
        if next != self.state {
            report.transition = Some((self.state.clone(), next.clone()));
            if next == "back_up" {
                self.backups += 1;
            } else if next == INITIAL_STATE {
                self.backups = 0;
            }
            if next == "arrived" && self.arrived_at_secs.is_none() {
                self.arrived_at_secs = Some(self.time_secs);
            }
            self.change_state(next);
        }
        drive
    }

    fn change_state(&mut self, next: String) {
        self.state_since_secs = self.time_secs;
        self.states_visited.push((self.time_secs, next.clone()));
        self.state = next;
    }

    /// The sensors and navigation facts for the current true pose.
    pub fn perceive(&self) -> Perception {
        let r = self.config.vehicle_radius_m;
        let yaw = self.pose.yaw_rad;
        let half_pi = std::f64::consts::FRAC_PI_2;
        let clearance = |d: f64| (d - r).max(0.0);
        let free_front_m = clearance(self.cast_wide(yaw));
        let free_left_m = clearance(self.cast(self.pose.x_m, self.pose.y_m, yaw + half_pi));
        let free_right_m = clearance(self.cast(self.pose.x_m, self.pose.y_m, yaw - half_pi));
        let (dest_distance_m, heading_error_rad, goal_free_m) = match self.destination {
            Some(dest) => {
                let (dx, dy) = self.scene.cell_center(dest);
                let bearing = (dy - self.pose.y_m).atan2(dx - self.pose.x_m);
                let distance = (dx - self.pose.x_m).hypot(dy - self.pose.y_m);
                (
                    distance,
                    normalize_angle(bearing - yaw),
                    clearance(self.cast_wide(bearing)),
                )
            }
            None => (0.0, 0.0, 0.0),
        };
        Perception {
            free_front_m,
            free_left_m,
            free_right_m,
            dest_distance_m,
            heading_error_rad,
            goal_free_m,
            at_destination: self.destination.is_some() && dest_distance_m <= self.config.arrival_tolerance_m,
        }
    }

    /// Free distance along `bearing` over three parallel rays: the centre line and the footprint's two sides.
    fn cast_wide(&self, bearing: f64) -> f64 {
        let r = self.config.vehicle_radius_m;
        let (s, c) = bearing.sin_cos();
        [-r, 0.0, r]
            .iter()
            .map(|off| self.cast(self.pose.x_m - off * s, self.pose.y_m + off * c, bearing))
            .fold(f64::INFINITY, f64::min)
    }

    /// Distance from a point along `bearing` to the first blocked cell (an obstacle or outside the grid),
    /// capped at the sensor range: an exact grid traversal (Amanatides & Woo).
    fn cast(&self, x_m: f64, y_m: f64, bearing: f64) -> f64 {
        let range = self.config.sensor_range_m;
        let cs = self.scene.cell_size_m();
        let rows = self.scene.rows() as i64;
        let (gx, gy) = (x_m / cs, y_m / cs);
        let (mut ix, mut iy) = (gx.floor() as i64, gy.floor() as i64);
        if self.blocked(ix, rows - 1 - iy) {
            return 0.0;
        }
        let (dy, dx) = bearing.sin_cos();
        let step_x: i64 = if dx > 0.0 { 1 } else { -1 };
        let step_y: i64 = if dy > 0.0 { 1 } else { -1 };
        let boundary = |g: f64, i: i64, d: f64| -> f64 {
            if d > 1e-12 {
                ((i + 1) as f64 - g) / d
            } else if d < -1e-12 {
                (g - i as f64) / -d
            } else {
                f64::INFINITY
            }
        };
        let mut t_max_x = boundary(gx, ix, dx);
        let mut t_max_y = boundary(gy, iy, dy);
        let t_delta_x = if dx.abs() > 1e-12 {
            1.0 / dx.abs()
        } else {
            f64::INFINITY
        };
        let t_delta_y = if dy.abs() > 1e-12 {
            1.0 / dy.abs()
        } else {
            f64::INFINITY
        };
        loop {
            let t = if t_max_x < t_max_y {
                let t = t_max_x;
                ix += step_x;
                t_max_x += t_delta_x;
                t
            } else {
                let t = t_max_y;
                iy += step_y;
                t_max_y += t_delta_y;
                t
            };
            let distance = t * cs;
            if distance >= range {
                return range;
            }
            if self.blocked(ix, rows - 1 - iy) {
                return distance;
            }
        }
    }

    fn blocked(&self, column: i64, row: i64) -> bool {
        blocked_in(&self.scene, &self.surfaces, column, row)
    }

    fn collides(&self, pose: &Pose2D) -> bool {
        collides_in(&self.scene, &self.surfaces, pose, self.config.vehicle_radius_m)
    }

    fn cell_under(&self) -> Option<Cell> {
        self.scene.cell_at(self.pose.x_m, self.pose.y_m)
    }

    /// The surface under the vehicle's centre.
    pub fn surface_under(&self) -> Option<&Surface> {
        self.cell_under()
            .and_then(|c| self.scene.code(c))
            .and_then(|code| self.surfaces.get(code))
    }

    /// Simulated time (s).
    pub fn time_secs(&self) -> f64 {
        self.time_secs
    }
    /// The true pose in the `map` frame.
    pub fn pose(&self) -> Pose2D {
        self.pose
    }
    /// The pose the vehicle started from.
    pub fn start_pose(&self) -> Pose2D {
        self.start_pose
    }
    /// The true body twist (v, w) of the last step, from the wheel speeds and TRUE parameters.
    pub fn true_twist(&self) -> (f64, f64) {
        let p = &self.config.true_vehicle;
        let (v, w) = p.body_twist(self.wheels.left_velocity_radps, self.wheels.right_velocity_radps);
        (v, p.slipped_yaw_rate(v, w))
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
    /// True path: (time, x, y) every 5 cm of travel.
    pub fn path(&self) -> &[(f64, f64, f64)] {
        &self.path
    }
    /// Every state entered, with the time it was entered, starting with the initial state.
    pub fn states_visited(&self) -> &[(f64, String)] {
        &self.states_visited
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
    /// The command in effect after the delay (v, w).
    pub fn applied_command(&self) -> (f64, f64) {
        self.applied
    }

    /// The grid as text, first matrix row first: `#` obstacle, the typecode's last digit for a surface, `*`
    /// the path, `S` start, `D` destination, `@` the vehicle.
    pub fn ascii_map(&self) -> String {
        let (cols, rows) = (self.scene.columns(), self.scene.rows());
        let mut grid: Vec<Vec<char>> = (0..rows)
            .map(|r| {
                (0..cols)
                    .map(|c| {
                        let code = self.scene.code(Cell { column: c, row: r }).unwrap_or(0);
                        match self.surfaces.get(code) {
                            Some(s) if !s.obstacle => {
                                char::from_digit(code.rem_euclid(10) as u32, 10).unwrap_or('?')
                            }
                            _ => '#',
                        }
                    })
                    .collect()
            })
            .collect();
        let mut mark = |x: f64, y: f64, ch: char| {
            if let Some(cell) = self.scene.cell_at(x, y) {
                grid[cell.row][cell.column] = ch;
            }
        };
        for &(_, x, y) in &self.path {
            mark(x, y, '*');
        }
        mark(self.start_pose.x_m, self.start_pose.y_m, 'S');
        if let Some(d) = self.destination {
            let (x, y) = self.scene.cell_center(d);
            mark(x, y, 'D');
        }
        mark(self.pose.x_m, self.pose.y_m, '@');
        grid.into_iter()
            .map(|r| r.into_iter().collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

fn value_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::Sym(s)) => s.as_str().to_owned(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn check_contract(rules: &RuleSet, mode: Mode) -> Result<()> {
    let mut needed: Vec<(&str, usize)> = SURFACE_CONTRACT.to_vec();
    if mode == Mode::Autonomous {
        needed.extend(BEHAVIOUR_CONTRACT);
    }
    let derived = rules.derived_predicates();
    for (pred, arity) in needed {
        let problem = match rules.arity(pred) {
            None => Some(format!(
                "no rule derives `{pred}` ({arity} argument(s)), which the simulator reads"
            )),
            Some(a) if a != arity => Some(format!(
                "`{pred}` has {a} argument(s) but the simulator reads it with {arity}"
            )),
            Some(_) if !derived.contains(&pred) => {
                Some(format!("no rule derives `{pred}`, which the simulator reads"))
            }
            Some(_) => None,
        };
        if let Some(message) = problem {
            return Err(Error::RulesContract {
                files: rules.origins().join(", "),
                message,
            });
        }
    }
    Ok(())
}

fn blocked_in(scene: &Scene, surfaces: &SurfaceTable, column: i64, row: i64) -> bool {
    match scene.checked_cell(column, row).and_then(|c| scene.code(c)) {
        None => true,
        Some(code) => !matches!(surfaces.get(code), Some(s) if !s.obstacle),
    }
}

fn collides_in(scene: &Scene, surfaces: &SurfaceTable, pose: &Pose2D, radius_m: f64) -> bool {
    let cs = scene.cell_size_m();
    let (c0, r_top) = scene.signed_cell_at(pose.x_m - radius_m, pose.y_m + radius_m);
    let (c1, r_bottom) = scene.signed_cell_at(pose.x_m + radius_m, pose.y_m - radius_m);
    for row in r_top..=r_bottom {
        for column in c0..=c1 {
            if !blocked_in(scene, surfaces, column, row) {
                continue;
            }
            let (x0, y0) = scene.cell_min_corner(column, row);
            let nx = pose.x_m.clamp(x0, x0 + cs);
            let ny = pose.y_m.clamp(y0, y0 + cs);
            if (pose.x_m - nx).hypot(pose.y_m - ny) < radius_m - 1e-9 {
                return true;
            }
        }
    }
    false
}

fn check_cell(scene: &Scene, surfaces: &SurfaceTable, column: i64, row: i64, what: &str) -> Result<Cell> {
    let Some(cell) = scene.checked_cell(column, row) else {
        return Err(Error::BadCell {
            column,
            row,
            reason: format!(
                "cannot be the {what}: it is outside the {} x {} grid (columns 0..{}, rows 0..{})",
                scene.columns(),
                scene.rows(),
                scene.columns() - 1,
                scene.rows() - 1
            ),
        });
    };
    let code = scene.code(cell).unwrap_or(0);
    match surfaces.get(code) {
        Some(s) if !s.obstacle => Ok(cell),
        Some(s) => Err(Error::BadCell {
            column,
            row,
            reason: format!(
                "cannot be the {what}: it is an obstacle (typecode {code}, {})",
                s.name
            ),
        }),
        None => Err(Error::BadCell {
            column,
            row,
            reason: format!("cannot be the {what}: typecode {code} is not decoded"),
        }),
    }
}

fn first_free_cell(scene: &Scene, surfaces: &SurfaceTable) -> Option<Cell> {
    (0..scene.rows())
        .flat_map(|row| (0..scene.columns()).map(move |column| Cell { column, row }))
        .find(|&c| {
            scene
                .code(c)
                .and_then(|code| surfaces.get(code))
                .is_some_and(|s| !s.obstacle)
        })
}
