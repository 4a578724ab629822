//! Unit tests: each folder kind recognised from a minimal folder and rendered end to end, an unknown folder
//! refused in one line, the demo's failed stages with their whole error and their log, bad input named.

use std::fs;
use std::path::Path;

mod demo;
mod kinds;

/// A small PNG as a tool would write it.
fn tiny_png() -> Vec<u8> {
    let mut panel = lockstep_plot::Panel::new("p", "x", "y");
    panel
        .series
        .push(lockstep_plot::Series::line("a", vec![(0.0, 0.0), (1.0, 1.0)]));
    let mut figure = lockstep_plot::Figure::new("tool plot").with_panel(panel);
    figure.width_px = 400;
    figure.panel_height_px = 200;
    figure.to_png().unwrap()
}

fn put(dir: &Path, rel: &str, bytes: impl AsRef<[u8]>) {
    let path = dir.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

/// The report.json `lockstep replay` writes (as replay_cli.rs builds it), one channel differing, one skipped
/// frame without a number (a recorded output whose header the recording lacks).
const REPLAY_JSON: &str = r#"{
  "mode": "in-process",
  "frames_selected": 120,
  "frames_replayed": 118,
  "frames_skipped": [
    {"module": "obstacle_detector", "channel": "/obstacles", "sequence_num": 0, "reason": "its input went out before the recording started"},
    {"module": "obstacle_detector", "channel": "/obstacles", "sequence_num": null, "reason": "its input went out before the recording started"}
  ],
  "modules_not_live": [],
  "channels_published_from_recording": [],
  "channels": {
    "/cmd_vel": {"recorded": 60, "simulated": 59, "exact": 57, "exact_ratio": 0.966,
      "first_difference": {"module": "controller", "sequence_num": 12, "epoch": 1, "log_time_ns": 1000},
      "numeric": {"max_abs": 0.25, "mean_abs": 0.01, "compared": 118},
      "fields": {"linear.x": {"max_abs": 0.25, "mean_abs": 0.02, "compared": 59},
                 "angular.z": {"max_abs": 0.0, "mean_abs": 0.0, "compared": 59}},
      "undecodable": 0},
    "/obstacles": {"recorded": 61, "simulated": 59, "exact": 59, "exact_ratio": 1.0, "first_difference": null,
      "numeric": {"max_abs": 0.0, "mean_abs": 0.0, "compared": 0}, "fields": {}, "undecodable": 0}
  },
  "modules": {"controller": {"frames": 59, "inputs_as_recorded": 59, "recorded_process_time_ns": 5200000.0,
                             "simulated_process_time_ns": 40000.0}},
  "wiring": null,
  "plot": "differences.png",
  "timing": {"wall_s": 0.42, "frames_per_s": 280.9, "overhead_per_frame_ms": 0.031}
}
"#;

/// A replay folder as `lockstep replay --output` leaves it.
fn replay_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    put(d, "report.json", REPLAY_JSON);
    put(d, "differences.png", tiny_png());
    put(d, "metadata.yaml", "rosbag2_bagfile_information: {}\n");
    put(d, "replay_0.mcap", b"");
    dir
}

/// calibration.yaml as `lockstep calibrate` writes it.
const CALIBRATION: &str = "\
# Differential-drive motion model calibrated by `lockstep calibrate`.
# bag: /data/run
# topic: /cmd_vel_out (geometry_msgs/msg/Twist)
# topic: /odom (nav_msgs/msg/Odometry)
# topic: /slam_pose (geometry_msgs/msg/PoseStamped)
# A ROS 2 parameter file: `--params-file calibration.yaml` gives the simulator these nominal parameters;
# a real base takes the radius and track width into its controller's parameters.
lockstep_sim_node:
  ros__parameters:
    nominal_vehicle:
      wheel_radius_m: 0.052020   # std 0.000012, nominal 0.05
      track_width_m: 0.416000    # std 0.000200, nominal 0.4
      delay_secs: 0.0400         # std 0.001000
      centripetal_factor: 0.0000 # not estimated (reconstruction: yaw rate = omega / (1 + beta*|v*omega|))
# calibration:
#   times: seconds since the first sample's stamp, 12.000000 s
#   windows: 12 accepted, 1 rejected, 3 unchanged, 0 skipped, 0 waiting
#   residual over the bag (normalized RMS per 3 s window, mean of 20): nominal 5.123, calibrated 1.012
#   dead reckoning from the first observed pose, RMS distance to the observed poses: nominal 1.130 m, calibrated 0.130 m
#   messages read: cmd_vel 400, odom 4000, pose 1600; not decodable: cmd_vel 0, odom 0, pose 0
#   dropped not finite: cmd_vel 0, odom 0, pose 0; dropped out of order: cmd_vel 0, odom 0, pose 0
";

/// A calibration folder as `lockstep calibrate --output` leaves it.
fn calibration_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "calibration.yaml", CALIBRATION);
    put(dir.path(), "trajectories.png", tiny_png());
    dir
}
