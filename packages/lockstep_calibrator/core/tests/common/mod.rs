//! Data with known parameters: the simulator's core in commanded mode on an open floor, driven by a
//! scripted mixed drive, sampled like the node sees it (commands stamped when issued, odometry every step,
//! SLAM poses with seeded noise).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use lockstep_calibrator::{
    Calibrator, CommandSample, History, ModelParams, OdomSample, Outcome, Pose, PoseSample,
};
use lockstep_rules::RuleSet;
use lockstep_sim::{Cell, DiffDriveParams, Mode, Scene, SimConfig, Simulator, SlipModel};

pub const DT: f64 = 0.01;

/// The true vehicle of the tests: radius +5 %, track -4 %, delay 80 ms, beta 0.3.
pub fn true_vehicle() -> DiffDriveParams {
    DiffDriveParams {
        track_width_m: 0.4 * 0.96,
        wheel_radius_m: 0.05 * 1.05,
        delay_secs: 0.08,
        centripetal_factor: 0.3,
    }
}

pub fn nominal() -> DiffDriveParams {
    DiffDriveParams::default()
}

pub fn model(p: &DiffDriveParams) -> ModelParams {
    ModelParams {
        track_width_m: p.track_width_m,
        wheel_radius_m: p.wheel_radius_m,
        delay_secs: p.delay_secs,
        centripetal_factor: p.centripetal_factor,
        wheel_radius_asymmetry: 0.0,
        lateral_slip_s: 0.0,
    }
}

/// A `size` x `size` floor of surface `code` (1 asphalt: high grip; 6 ice: low grip).
fn floor(size: usize, code: u8) -> Scene {
    let mut text = format!("{size} {size}\n");
    for _ in 0..size {
        let row: Vec<String> = (0..size).map(|_| code.to_string()).collect();
        text.push_str(&row.join(" "));
        text.push('\n');
    }
    Scene::parse(&text, "floor.scene").unwrap()
}

/// A segment of the scripted drive: `(v, w)` for `secs`.
pub type Segment = (f64, f64, f64);

/// Straight, arcs at two lateral accelerations, turns in place, a figure-eight, stops.
pub fn mixed_drive() -> Vec<Segment> {
    vec![
        (0.5, 0.0, 3.0),
        (0.0, 0.0, 1.0),
        (0.4, 0.4, 4.0),
        (0.0, 0.8, 3.0),
        (0.7, -0.9, 3.0),
        (0.0, 0.0, 0.5),
        (0.0, -0.8, 2.0),
        (0.5, 0.8, 4.0),
        (0.5, -0.8, 4.0),
        (0.3, 0.0, 2.0),
    ]
}

pub fn straight_drive() -> Vec<Segment> {
    vec![(0.5, 0.0, 3.0), (0.0, 0.0, 1.0), (0.3, 0.0, 3.0), (0.0, 0.0, 1.0)]
}

/// What a run produced.
pub struct Run {
    pub commands: Vec<CommandSample>,
    pub odom: Vec<OdomSample>,
    pub poses: Vec<PoseSample>,
    pub truth: Vec<(f64, Pose)>,
}

impl Run {
    /// Feeds everything into `h` in time order.
    pub fn feed(&self, h: &mut History) {
        for t in self.times() {
            self.push(h, t);
        }
    }

    /// Every sample as (time, stream, index), in time order.
    pub fn times(&self) -> Vec<(f64, u8, usize)> {
        let mut events: Vec<(f64, u8, usize)> = Vec::new();
        events.extend(self.commands.iter().enumerate().map(|(i, c)| (c.t_secs, 0, i)));
        events.extend(self.odom.iter().enumerate().map(|(i, o)| (o.t_secs, 1, i)));
        events.extend(self.poses.iter().enumerate().map(|(i, p)| (p.t_secs, 2, i)));
        events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        events
    }

    /// Pushes one sample.
    pub fn push(&self, h: &mut History, (_, kind, i): (f64, u8, usize)) {
        match kind {
            0 => h.push_command(self.commands[i]).unwrap(),
            1 => h.push_odom(self.odom[i]).unwrap(),
            _ => h.push_pose(self.poses[i]).unwrap(),
        }
    }

    /// Runs `c` online over the data, stepping it every `period_secs`; every outcome with its time.
    pub fn online(&self, c: &mut Calibrator, period_secs: f64) -> Vec<(f64, Outcome)> {
        let mut out = Vec::new();
        let mut next = period_secs;
        for e in self.times() {
            if e.0 >= next {
                out.push((e.0, c.step()));
                next += period_secs;
            }
            self.push(c.history_mut(), e);
        }
        out
    }
}

/// Drives `script` repeated for `secs` with SLAM at `slam_hz` and noise `(sigma_xy, sigma_yaw)`.
pub fn simulate(
    true_vehicle: DiffDriveParams,
    script: &[Segment],
    secs: f64,
    surface: u8,
    slam_hz: f64,
    noise: (f64, f64),
    seed: u64,
) -> Run {
    simulate_with_change(true_vehicle, None, script, secs, surface, slam_hz, noise, seed)
}

/// As [`simulate`], and at `change.0` seconds the true vehicle becomes `change.1` (wear, a new load).
#[allow(clippy::too_many_arguments)]
pub fn simulate_with_change(
    true_vehicle: DiffDriveParams,
    change: Option<(f64, DiffDriveParams)>,
    script: &[Segment],
    secs: f64,
    surface: u8,
    slam_hz: f64,
    noise: (f64, f64),
    seed: u64,
) -> Run {
    let setup = Setup {
        surface,
        slam_hz,
        noise,
        seed,
        slip: SlipModel::Centripetal,
        floor_cells: 120,
    };
    simulate_setup(true_vehicle, change, script, secs, &setup)
}

/// How a run is simulated.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// Surface code of the floor (1 asphalt).
    pub surface: u8,
    /// SLAM rate (Hz).
    pub slam_hz: f64,
    /// SLAM noise (sigma_xy m, sigma_yaw rad).
    pub noise: (f64, f64),
    /// Seed of the SLAM noise.
    pub seed: u64,
    /// How the ground slips.
    pub slip: SlipModel,
    /// Side of the square floor in cells of 0.1 m; the drive starts at cell (60, 60).
    pub floor_cells: usize,
}

/// Drives `script` repeated for `secs` as `setup` says; at `change.0` seconds the true vehicle becomes
/// `change.1`.
pub fn simulate_setup(
    true_vehicle: DiffDriveParams,
    mut change: Option<(f64, DiffDriveParams)>,
    script: &[Segment],
    secs: f64,
    setup: &Setup,
) -> Run {
    let Setup {
        surface,
        slam_hz,
        noise: (sigma_xy, sigma_yaw),
        seed,
        slip,
        floor_cells,
    } = *setup;
    let start = floor_cells / 2;
    let rules = RuleSet::load(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../config/rules/surface.dl"),
    )
    .unwrap();
    let config = SimConfig {
        mode: Mode::Commanded,
        true_vehicle,
        nominal_vehicle: nominal(),
        cmd_timeout_secs: 0.0,
        start: Some(Cell {
            column: start,
            row: start,
        }),
        slip,
        slam_sigma_xy_m: sigma_xy,
        slam_sigma_yaw_rad: sigma_yaw,
        slam_period_secs: 1.0 / slam_hz,
        seed,
        ..SimConfig::default()
    };
    let mut sim = Simulator::new(floor(floor_cells, surface), rules, config).unwrap();
    let mut run = Run {
        commands: Vec::new(),
        odom: Vec::new(),
        poses: Vec::new(),
        truth: Vec::new(),
    };
    let mut last_slam = f64::NEG_INFINITY;
    let mut t_script = 0.0;
    let mut seg = 0;
    let mut current = None;
    while sim.time_secs() < secs - 1e-9 {
        let (v, w, len) = script[seg % script.len()];
        if current != Some(seg) {
            sim.set_command(v, w).unwrap();
            run.commands.push(CommandSample {
                t_secs: sim.time_secs(),
                v_mps: v,
                w_radps: w,
            });
            current = Some(seg);
        }
        if let Some((at, vehicle)) = change {
            if sim.time_secs() >= at {
                sim.set_true_vehicle(vehicle).unwrap();
                change = None;
            }
        }
        let report = sim.step(DT);
        assert!(
            !report.collided,
            "the drive left the floor at t={}",
            sim.time_secs()
        );
        t_script += DT;
        if t_script >= len - 1e-9 {
            t_script = 0.0;
            seg += 1;
        }
        let odom = sim.odometry();
        run.odom.push(OdomSample {
            t_secs: sim.time_secs(),
            pose: Pose {
                x_m: odom.pose.x_m,
                y_m: odom.pose.y_m,
                yaw_rad: odom.pose.yaw_rad,
            },
            v_mps: odom.v_mps,
            w_radps: odom.w_radps,
        });
        let p = sim.pose();
        run.truth.push((
            sim.time_secs(),
            Pose {
                x_m: p.x_m,
                y_m: p.y_m,
                yaw_rad: p.yaw_rad,
            },
        ));
        if let Some(s) = sim.slam() {
            if s.time_secs > last_slam {
                last_slam = s.time_secs;
                run.poses.push(PoseSample {
                    t_secs: s.time_secs,
                    pose: Pose {
                        x_m: s.pose.x_m,
                        y_m: s.pose.y_m,
                        yaw_rad: s.pose.yaw_rad,
                    },
                    noise: None,
                });
            }
        }
    }
    run
}
