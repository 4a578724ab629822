//! `lockstep calibrate <bag>` (feature `cli`) on MCAP rosbag2 bags written from simulated drives with known
//! parameters (radius +5 %, track width -4 %, delay 80 ms, beta 0.3; SLAM 20 Hz, 2 cm / 0.5 deg).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;
use lockstep_bag::cdr::{ArrayKind, FieldType, Primitive, Schema, Value};
use lockstep_bag::{BagWriter, MessageDefinition, TopicSpec, WriterOptions};
use lockstep_calibrator::cli::{calibrate, run, CalibrateArgs, Report};

const NOISE: (f64, f64) = (0.02, 0.5 * std::f64::consts::PI / 180.0);

/// Wall-clock log times of the bags start here (ns).
const WALL_NS: u64 = 1_700_000_000_000_000_000;

// ---- ros2msg definitions, as rosbag2 stores them (comments left out) ----

const SEPARATOR: &str = "================================================================================\n";

fn text_of(name: &str) -> &'static str {
    match name {
        "builtin_interfaces/Time" => "int32 sec\nuint32 nanosec\n",
        "std_msgs/Header" => "builtin_interfaces/Time stamp\nstring frame_id\n",
        "geometry_msgs/Vector3" | "geometry_msgs/Point" => "float64 x\nfloat64 y\nfloat64 z\n",
        "geometry_msgs/Quaternion" => "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n",
        "geometry_msgs/Pose" => "Point position\nQuaternion orientation\n",
        "geometry_msgs/PoseWithCovariance" => "Pose pose\nfloat64[36] covariance\n",
        "geometry_msgs/Twist" => "Vector3  linear\nVector3  angular\n",
        "geometry_msgs/TwistWithCovariance" => "Twist twist\nfloat64[36] covariance\n",
        "geometry_msgs/TwistStamped" => "std_msgs/Header header\nTwist twist\n",
        "geometry_msgs/PoseStamped" => "std_msgs/Header header\nPose pose\n",
        "geometry_msgs/PoseWithCovarianceStamped" => "std_msgs/Header header\nPoseWithCovariance pose\n",
        "nav_msgs/Odometry" => "std_msgs/Header header\nstring child_frame_id\ngeometry_msgs/PoseWithCovariance pose\ngeometry_msgs/TwistWithCovariance twist\n",
        other => panic!("no definition of {other}"),
    }
}

/// The message types `name`'s fields use, with their package, depth first, each once (as rosbag2 lists
/// a definition's dependencies).
fn dependencies(name: &str, deps: &mut Vec<String>) {
    let package = name.split('/').next().unwrap();
    for line in text_of(name).lines() {
        let ty = line.split([' ', '[']).next().unwrap();
        if ty.starts_with(|c: char| c.is_ascii_lowercase()) && !ty.contains('/') {
            continue; // a primitive
        }
        let ty = if ty.contains('/') {
            ty.to_string()
        } else {
            format!("{package}/{ty}")
        };
        if !deps.contains(&ty) {
            deps.push(ty.clone());
            dependencies(&ty, deps);
        }
    }
}

/// The ros2msg text of `pkg/msg/Type`: its own text, then each dependency after a separator line.
fn definition(type_name: &str) -> String {
    let short = type_name.replace("/msg/", "/");
    let mut deps = Vec::new();
    dependencies(&short, &mut deps);
    let mut text = text_of(&short).to_string();
    for d in deps {
        text.push('\n');
        text.push_str(SEPARATOR);
        text.push_str(&format!("MSG: {d}\n"));
        text.push_str(text_of(&d));
    }
    text
}

/// A message of type `ty` with every field zero (empty strings and sequences).
fn zero(schema: &Schema, ty: &str) -> Value {
    let t = schema.get(ty).unwrap();
    Value::Message(
        t.fields
            .iter()
            .map(|f| {
                let one = || match &f.ty {
                    FieldType::Message(m) => zero(schema, m),
                    FieldType::Primitive(Primitive::Bool) => Value::Bool(false),
                    FieldType::Primitive(Primitive::String | Primitive::WString) => {
                        Value::String(String::new())
                    }
                    FieldType::Primitive(_) => Value::UInt(0),
                };
                let v = match f.array {
                    ArrayKind::Single => one(),
                    ArrayKind::Fixed(n) => Value::Array((0..n).map(|_| one()).collect()),
                    _ => Value::Array(Vec::new()),
                };
                (f.name.clone(), v)
            })
            .collect(),
    )
}

fn set(v: &mut Value, path: &str, x: Value) {
    let mut cur = v;
    for name in path.split('.') {
        let Value::Message(fields) = cur else {
            panic!("{path}")
        };
        cur = &mut fields.iter_mut().find(|(n, _)| n == name).unwrap().1;
    }
    *cur = x;
}

fn set_stamp(v: &mut Value, ns: u64) {
    set(v, "header.stamp.sec", Value::Int((ns / 1_000_000_000) as i64));
    set(v, "header.stamp.nanosec", Value::UInt(ns % 1_000_000_000));
}

fn set_pose(v: &mut Value, prefix: &str, p: &lockstep_calibrator::Pose) {
    set(v, &format!("{prefix}.position.x"), Value::Float(p.x_m));
    set(v, &format!("{prefix}.position.y"), Value::Float(p.y_m));
    let half = 0.5 * p.yaw_rad;
    set(v, &format!("{prefix}.orientation.z"), Value::Float(half.sin()));
    set(v, &format!("{prefix}.orientation.w"), Value::Float(half.cos()));
}

/// How the drive is recorded.
struct Recording {
    cmd_type: &'static str,
    pose_type: &'static str,
    /// Header stamps are simulated time from 0 (the simulator node's clock) while log times are wall
    /// time; otherwise both are wall time.
    sim_clock_headers: bool,
    /// One NaN pose and one odometry message repeating the previous stamp.
    inject_bad: bool,
}

/// Writes `run` as an MCAP rosbag2 bag at `dir` (/cmd_vel, /odom, /slam_pose).
fn write_bag(dir: &Path, run: &Run, rec: &Recording) {
    let ns = |t: f64| (t * 1e9).round() as u64;
    let header_ns = |t: f64| {
        if rec.sim_clock_headers {
            ns(t)
        } else {
            WALL_NS + ns(t)
        }
    };
    let topics = [
        ("/cmd_vel", rec.cmd_type),
        ("/odom", "nav_msgs/msg/Odometry"),
        ("/slam_pose", rec.pose_type),
    ];
    let schemas: Vec<Schema> = topics
        .iter()
        .map(|(_, ty)| Schema::parse(ty, &definition(ty)).unwrap())
        .collect();
    // (log time, topic index, message)
    let mut messages: Vec<(u64, usize, Value)> = Vec::new();
    for c in &run.commands {
        let mut v = zero(&schemas[0], schemas[0].root().name.as_str());
        let twist = if rec.cmd_type.ends_with("Stamped") {
            set_stamp(&mut v, header_ns(c.t_secs));
            "twist."
        } else {
            ""
        };
        set(&mut v, &format!("{twist}linear.x"), Value::Float(c.v_mps));
        set(&mut v, &format!("{twist}angular.z"), Value::Float(c.w_radps));
        messages.push((WALL_NS + ns(c.t_secs), 0, v));
    }
    for (i, o) in run.odom.iter().enumerate() {
        let mut v = zero(&schemas[1], "nav_msgs/msg/Odometry");
        set_stamp(&mut v, header_ns(o.t_secs));
        set_pose(&mut v, "pose.pose", &o.pose);
        set(&mut v, "twist.twist.linear.x", Value::Float(o.v_mps));
        set(&mut v, "twist.twist.angular.z", Value::Float(o.w_radps));
        // Odometry reaches the recorder 1 ms after its stamp.
        let log = WALL_NS + ns(o.t_secs) + 1_000_000;
        if rec.inject_bad && i == 500 {
            messages.push((log + 100, 1, v.clone()));
        }
        messages.push((log, 1, v));
    }
    let pose_prefix = if rec.pose_type.ends_with("WithCovarianceStamped") {
        "pose.pose"
    } else {
        "pose"
    };
    for (i, p) in run.poses.iter().enumerate() {
        let mut v = zero(&schemas[2], schemas[2].root().name.as_str());
        set_stamp(&mut v, header_ns(p.t_secs));
        let mut pose = p.pose;
        if rec.inject_bad && i == 300 {
            pose.x_m = f64::NAN;
        }
        set_pose(&mut v, pose_prefix, &pose);
        // SLAM publishes 5 ms after the pose's stamp.
        messages.push((WALL_NS + ns(p.t_secs) + 5_000_000, 2, v));
    }
    messages.sort_by_key(|m| (m.0, m.1));
    let mut w = BagWriter::create(dir, WriterOptions::default()).unwrap();
    for (name, ty) in &topics {
        let spec = TopicSpec::new(*name, *ty).with_definition(MessageDefinition {
            encoding: "ros2msg".into(),
            text: definition(ty),
        });
        w.add_topic(spec).unwrap();
    }
    for (log, topic, v) in &messages {
        w.write(topics[*topic].0, *log, &schemas[*topic].encode(v).unwrap())
            .unwrap();
    }
    w.finish().unwrap();
}

/// A fresh directory under the test target's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("offline_{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn args(bag: &Path, output: &Path) -> CalibrateArgs {
    CalibrateArgs {
        bag: bag.to_path_buf(),
        cmd_topic: "/cmd_vel".into(),
        odom_topic: "/odom".into(),
        pose_topic: "/slam_pose".into(),
        output: Some(output.to_path_buf()),
        nominal_radius_m: 0.05,
        nominal_track_m: 0.40,
        window_secs: 3.0,
        pose_sigma_xy_m: 0.02,
        pose_sigma_yaw_rad: 0.0087,
        holdout_secs: 20.0,
        controller_name: "diff_drive_controller".into(),
        quiet: true,
    }
}

/// The number after `key:` on the YAML line holding it.
fn yaml_number(yaml: &str, key: &str) -> f64 {
    let line = yaml
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{key}:")))
        .unwrap_or_else(|| panic!("no {key} in\n{yaml}"));
    let value = line.split(':').nth(1).unwrap().split('#').next().unwrap().trim();
    value.parse().unwrap_or_else(|_| panic!("{line}"))
}

/// `diff_drive_controller.yaml` read strictly (comments and blank lines aside): `<node>:`, then
/// `  ros__parameters:`, then `    <key>: <value>` lines whose values are ROS 2 doubles (with a decimal point).
fn controller_file(out: &Path) -> (String, BTreeMap<String, f64>) {
    let text = std::fs::read_to_string(out.join("diff_drive_controller.yaml")).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.split('#').next().unwrap().trim_end())
        .filter(|l| !l.is_empty())
        .collect();
    let node = lines[0].strip_suffix(':').filter(|n| !n.starts_with(' '));
    assert!(node.is_some() && lines[1] == "  ros__parameters:", "{text}");
    let mut values = BTreeMap::new();
    for line in &lines[2..] {
        let (key, value) = line.strip_prefix("    ").unwrap().split_once(": ").unwrap();
        assert!(value.contains('.'), "not a double: {line}");
        values.insert(key.to_string(), value.parse().unwrap());
    }
    let keys: Vec<String> = values.keys().cloned().collect();
    let expected = ["left_wheel_radius", "right_wheel_radius", "wheel_separation"];
    assert_eq!(keys, expected.map(|k| format!("{k}_multiplier")), "{text}");
    (node.unwrap().to_string(), values)
}

/// The multipliers are the calibrated over the nominal values; near the truth (radius x1.05, track
/// x0.96) within `tolerance` (track, radius) where given.
fn check_multipliers(r: &Report, m: &BTreeMap<String, f64>, tolerance: [Option<f64>; 2]) {
    let (p, n) = (r.params, r.nominal);
    let separation = (p.track_width_m / n.track_width_m, 0.96, tolerance[0]);
    let left = (p.left_radius_m() / n.wheel_radius_m, 1.05, tolerance[1]);
    let right = (p.right_radius_m() / n.wheel_radius_m, 1.05, tolerance[1]);
    let all = [
        ("wheel_separation", separation),
        ("left_wheel_radius", left),
        ("right_wheel_radius", right),
    ];
    for (key, (want, truth, tolerance)) in all {
        let got = m[&format!("{key}_multiplier")];
        assert!(
            (got - want).abs() < 1e-9,
            "{key}: {got}, calibrated / nominal {want}"
        );
        if let Some(t) = tolerance {
            assert!((got / truth - 1.0).abs() < t, "{key}: {got}, truth {truth}");
        }
    }
}

/// The errors (nominal, calibrated) of the summary's `held-out` line, after checking that calibration.yaml
/// has the same line as a comment.
fn held_out_errors(summary: &str, yaml: &str) -> (f64, f64) {
    let line = summary
        .lines()
        .find(|l| l.starts_with("held-out "))
        .unwrap_or_else(|| panic!("no held-out line in\n{summary}"));
    assert!(
        yaml.contains(&format!("\n#   {line} (")),
        "{line}\nnot in\n{yaml}"
    );
    let rest = line.split(": position RMS error ").nth(1).unwrap();
    let (a, b) = rest
        .strip_suffix(" m calibrated")
        .unwrap()
        .split_once(" m nominal, ")
        .unwrap();
    (a.parse().unwrap(), b.parse().unwrap())
}

/// Width and height from a PNG's IHDR, after checking the signature and that the chunks run, with their
/// lengths, from IHDR through at least one IDAT to IEND at the file's end.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let mut at = 8;
    let mut kinds = Vec::new();
    while at + 12 <= bytes.len() {
        let len = be(&bytes[at..]) as usize;
        kinds.push(String::from_utf8_lossy(&bytes[at + 4..at + 8]).into_owned());
        at += 12 + len;
    }
    assert_eq!(at, bytes.len(), "chunks end at the file's end");
    assert_eq!(kinds.first().map(String::as_str), Some("IHDR"));
    assert_eq!(kinds.last().map(String::as_str), Some("IEND"));
    assert!(kinds.iter().any(|k| k == "IDAT"));
    (be(&bytes[16..]), be(&bytes[20..]))
}

#[test]
fn a_bag_of_a_mixed_drive_calibrates_radius_and_track_within_one_percent() {
    let dir = scratch("mixed");
    let bag = dir.join("drive");
    let run_data = simulate(true_vehicle(), &mixed_drive(), 150.0, 1, 20.0, NOISE, 3);
    let rec = Recording {
        cmd_type: "geometry_msgs/msg/Twist",
        pose_type: "geometry_msgs/msg/PoseWithCovarianceStamped",
        sim_clock_headers: true,
        inject_bad: true,
    };
    write_bag(&bag, &run_data, &rec);
    let out = dir.join("calibration");
    let report = calibrate(&args(&bag, &out)).unwrap();
    let summary = report.summary();
    print!("{summary}");
    let yaml = std::fs::read_to_string(out.join("calibration.yaml")).unwrap();
    let truth = model(&true_vehicle());
    let radius = yaml_number(&yaml, "wheel_radius_m");
    let track = yaml_number(&yaml, "track_width_m");
    println!("{yaml}");
    println!(
        "radius error {:+.3} %, track width error {:+.3} %",
        100.0 * (radius / truth.wheel_radius_m - 1.0),
        100.0 * (track / truth.track_width_m - 1.0)
    );
    assert!((radius / truth.wheel_radius_m - 1.0).abs() < 0.01, "{yaml}");
    assert!((track / truth.track_width_m - 1.0).abs() < 0.01, "{yaml}");
    assert!(
        yaml.starts_with("# ")
            && yaml.contains("lockstep_sim_node:\n  ros__parameters:\n    nominal_vehicle:\n")
    );
    // The NaN pose and the repeated odometry stamp were dropped and counted; the Twist's wall-clock log
    // times were moved onto the simulated clock of the header stamps.
    assert!(
        yaml.contains(
            "dropped not finite: cmd_vel 0, odom 0, pose 1; dropped out of order: cmd_vel 0, odom 1, pose 0"
        ),
        "{yaml}"
    );
    assert!(yaml.contains("moved onto the header clock"), "{yaml}");
    let png = std::fs::read(out.join("trajectories.png")).unwrap();
    assert_eq!(png_size(&png), (1000, 40 + 3 * 600));
    let (node, multipliers) = controller_file(&out);
    assert_eq!(node, "diff_drive_controller");
    check_multipliers(&report, &multipliers, [Some(0.005); 2]);
    // The last 20 s were kept from the calibrator; dead reckoning over them is better calibrated.
    let (nominal_m, calibrated_m) = held_out_errors(&summary, &yaml);
    assert!(summary.contains("\nheld-out 130.0-150.0 s: "), "{summary}");
    assert!(calibrated_m < nominal_m, "{summary}");
    let png = std::fs::read(out.join("holdout.png")).unwrap();
    assert_eq!(png_size(&png), (1000, 40 + 3 * 600));
}

#[test]
fn stamped_commands_and_pose_stamped_on_one_clock_with_the_default_output_directory() {
    let dir = scratch("stamped");
    let bag = dir.join("drive");
    let run_data = simulate(true_vehicle(), &mixed_drive(), 60.0, 1, 20.0, NOISE, 8);
    let rec = Recording {
        cmd_type: "geometry_msgs/msg/TwistStamped",
        pose_type: "geometry_msgs/msg/PoseStamped",
        sim_clock_headers: false,
        inject_bad: false,
    };
    write_bag(&bag, &run_data, &rec);
    let mut a = args(&bag, &dir);
    a.output = None;
    a.controller_name = "/robot/base_controller".into();
    let report = calibrate(&a).unwrap();
    assert_eq!(report.yaml_path, dir.join("drive_calibration/calibration.yaml"));
    let out = dir.join("drive_calibration");
    assert_eq!(controller_file(&out).0, "/robot/base_controller");
    let yaml = std::fs::read_to_string(&report.yaml_path).unwrap();
    let (nominal_m, calibrated_m) = held_out_errors(&report.summary(), &yaml);
    assert!(calibrated_m < nominal_m, "{}", report.summary());
    // The held-out stretch is not given to the calibrator: the bag cut where it starts, calibrated whole,
    // gives the very same parameters.
    let t0 = report.holdout.as_ref().unwrap().t0_secs;
    let ns = |t: f64| (t * 1e9).round() as i64;
    let (mut commands, mut odom, mut poses) = (run_data.commands, run_data.odom, run_data.poses);
    let origin = ns(commands[0].t_secs.min(odom[0].t_secs).min(poses[0].t_secs));
    let before = |t: f64| ((ns(t) - origin) as f64 * 1e-9) < t0;
    commands.retain(|c| before(c.t_secs));
    odom.retain(|o| before(o.t_secs));
    poses.retain(|p| before(p.t_secs));
    let cut = Run {
        commands,
        odom,
        poses,
        truth: Vec::new(),
    };
    write_bag(&dir.join("cut"), &cut, &rec);
    let mut a = args(&dir.join("cut"), &dir.join("cut_out"));
    a.holdout_secs = 0.0;
    let whole_cut = calibrate(&a).unwrap();
    assert_eq!(whole_cut.params, report.params, "{}", whole_cut.summary());
    assert_eq!(whole_cut.windows, report.windows);
    assert!(report.png_path.exists());
    assert!(report.windows.accepted > 0, "{}", report.summary());
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    assert_eq!(report.topics[0].1, "geometry_msgs/msg/TwistStamped");
    let e = &report.evaluation;
    assert!(
        e.rms_error_calibrated_m < e.rms_error_nominal_m,
        "{}",
        report.summary()
    );
}

#[test]
fn a_missing_topic_a_wrong_type_a_non_bag_and_a_short_bag_are_one_line_errors() {
    let dir = scratch("errors");
    let bag = dir.join("short");
    let run_data = simulate(true_vehicle(), &mixed_drive(), 5.0, 1, 20.0, NOISE, 9);
    let rec = Recording {
        cmd_type: "geometry_msgs/msg/Twist",
        pose_type: "geometry_msgs/msg/PoseStamped",
        sim_clock_headers: false,
        inject_bad: false,
    };
    write_bag(&bag, &run_data, &rec);
    let out = dir.join("out");
    let error = |a: CalibrateArgs| lockstep_bag::error_chain(run(a).unwrap_err().as_ref());

    let mut a = args(&bag, &out);
    a.pose_topic = "/amcl_pose".into();
    let e = error(a);
    assert_eq!(
        e,
        "pose topic /amcl_pose is not in the bag (it holds: /cmd_vel (geometry_msgs/msg/Twist), /odom (nav_msgs/msg/Odometry), /slam_pose (geometry_msgs/msg/PoseStamped)); accepted types: geometry_msgs/msg/PoseStamped or geometry_msgs/msg/PoseWithCovarianceStamped"
    );

    let mut a = args(&bag, &out);
    a.cmd_topic = "/odom".into();
    assert_eq!(
        error(a),
        "cmd_vel topic /odom has type nav_msgs/msg/Odometry, accepted types: geometry_msgs/msg/Twist or geometry_msgs/msg/TwistStamped"
    );

    let not_a_bag = dir.join("notes.txt");
    std::fs::write(&not_a_bag, "hello").unwrap();
    let e = error(args(&not_a_bag, &out));
    assert!(e.starts_with("cannot open bag: ") && !e.contains('\n'), "{e}");
    let e = error(args(&dir.join("nowhere"), &out));
    assert!(e.starts_with("cannot open bag: ") && e.contains("nowhere"), "{e}");

    // 5 s of data: the validation segments (2 x 3 s) never fit before a window.
    let e = error(args(&bag, &out));
    assert!(
        e.starts_with("no usable data: no window could be calibrated")
            && e.contains("no history to validate against yet"),
        "{e}"
    );
    assert!(!out.join("calibration.yaml").exists());
}

fn twist_bag(name: &str, script: &[Segment], secs: f64, seed: u64) -> (PathBuf, PathBuf) {
    let dir = scratch(name);
    let bag = dir.join("drive");
    let run_data = simulate(true_vehicle(), script, secs, 1, 20.0, NOISE, seed);
    let rec = Recording {
        cmd_type: "geometry_msgs/msg/Twist",
        pose_type: "geometry_msgs/msg/PoseWithCovarianceStamped",
        sim_clock_headers: false,
        inject_bad: false,
    };
    write_bag(&bag, &run_data, &rec);
    (bag, dir.join("out"))
}

#[test]
fn a_creeping_straight_drive_estimates_nothing_and_names_the_driving_each_parameter_needs() {
    // 20 s straight at 5 cm/s on one command: 0.15 m per window, no turn, no command step.
    let (bag, out) = twist_bag("creep", &[(0.05, 0.0, 1.0)], 20.0, 11);
    let report = calibrate(&args(&bag, &out)).unwrap();
    let summary = report.summary();
    println!("{summary}");
    assert_eq!(
        report.exit_code(),
        lockstep_calibrator::cli::EXIT_NOTHING_ESTIMATED
    );
    assert_eq!(report.exit_code(), 2);
    assert!(summary.starts_with("nothing could be estimated\n"), "{summary}");
    for line in [
        "  wheel radius stays nominal at 0.050000 m: needs straight runs of at least 0.3 m within one 3 s window, i.e. 0.10 m/s or faster (the farthest any 3 s window went was 0.1",
        "  track width stays nominal at 0.40000 m: needs turns in place of at least 0.5 rad (29 deg) within one 3 s window",
        "  delay stays nominal at 0.0000 s: needs command steps: changes of the commanded speed or turn rate",
        "  centripetal factor (beta) stays nominal at 0.000: needs turns of at least 0.5 rad (29 deg) within one 3 s window, at two or more different |v*omega| levels over the drive (speed times turn rate at least 0.05 m/s^2 apart)",
    ] {
        assert!(summary.contains(line), "{line}\nnot in\n{summary}");
    }
    assert!(summary.contains("(no window held a command step)"), "{summary}");
    assert!(summary.contains("(no window turned more than 0.0"), "{summary}");
    assert!(
        summary.contains("\nkept nominal: wheel radius 0.050000 m (nominal, not estimated)"),
        "{summary}"
    );
    // The files are written all the same, the YAML saying why its values are nominal.
    let yaml = std::fs::read_to_string(out.join("calibration.yaml")).unwrap();
    assert!(
        yaml.contains("# Nothing could be estimated: no window of the drive determined any parameter"),
        "{yaml}"
    );
    assert!(
        yaml.contains("#   track width: needs turns in place of at least 0.5 rad"),
        "{yaml}"
    );
    assert_eq!(yaml_number(&yaml, "wheel_radius_m"), 0.05);
    assert!(yaml.contains("lockstep_sim_node:\n  ros__parameters:\n    nominal_vehicle:\n"));
    assert!(out.join("trajectories.png").exists());
    // 20 s is too short to hold 20 s out: all of it calibrates, and the report says so.
    assert!(
        summary.contains("\nnote: no held-out check: the bag's ")
            && summary.contains(" s are less than twice --holdout-secs 20 s"),
        "{summary}"
    );
    assert!(report.holdout.is_none() && !out.join("holdout.png").exists());
    let (_, multipliers) = controller_file(&out);
    assert!(multipliers.values().all(|&m| m == 1.0), "{multipliers:?}");
}

#[test]
fn a_straight_drive_estimates_the_radius_and_says_the_track_width_needs_turns_in_place() {
    let (bag, out) = twist_bag("straight", &straight_drive(), 40.0, 12);
    let mut a = args(&bag, &out);
    a.holdout_secs = 0.0;
    let report = calibrate(&a).unwrap();
    let summary = report.summary();
    println!("{summary}");
    assert_eq!(report.exit_code(), 0, "{summary}");
    assert!(!summary.contains("nothing could be estimated"), "{summary}");
    let radius = report.params.wheel_radius_m / model(&true_vehicle()).wheel_radius_m - 1.0;
    assert!(report.std[0] > 0.0 && radius.abs() < 0.01, "{summary}");
    assert!(
        summary.contains("track width 0.40000 m (nominal, not estimated)")
            && summary.contains("\nnot estimated, kept nominal:\n  track width stays nominal at 0.40000 m: needs turns in place of at least 0.5 rad (29 deg) within one 3 s window")
            && summary.contains("  centripetal factor (beta) stays nominal at 0.000: needs turns of at least 0.5 rad"),
        "{summary}"
    );
    assert!(!summary.contains("wheel radius stays nominal"), "{summary}");
    let yaml = std::fs::read_to_string(out.join("calibration.yaml")).unwrap();
    assert!(
        yaml.contains("# Not estimated, kept nominal (and the driving that would determine each):\n#   track width: needs turns in place")
            && yaml.contains("track_width_m: 0.400000    # not estimated, kept nominal (see above)"),
        "{yaml}"
    );
    assert!(!yaml.contains("#   wheel radius: needs"), "{yaml}");
    // --holdout-secs 0: no held-out check; the track width multiplier stays 1.0, saying why.
    assert!(report.holdout.is_none() && !out.join("holdout.png").exists());
    assert!(
        !summary.contains("held-out") && !yaml.contains("held-out"),
        "{summary}"
    );
    let (_, multipliers) = controller_file(&out);
    check_multipliers(&report, &multipliers, [None, Some(0.01)]);
    assert_eq!(multipliers["wheel_separation_multiplier"], 1.0);
    let text = std::fs::read_to_string(out.join("diff_drive_controller.yaml")).unwrap();
    assert!(
        text.contains("wheel_separation_multiplier: 1.0000000000    # track width not estimated: kept 1.0"),
        "{text}"
    );
}
