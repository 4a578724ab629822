//! Detection of each folder kind from the files in it, the one-line refusal of anything else, and the
//! replay and calibration reports.

use super::{calibration_folder, put, replay_folder, tiny_png, CALIBRATION, REPLAY_JSON};
use crate::*;
use std::fs;

fn one_line(e: &ReportError) -> String {
    let text = e.to_string();
    assert!(!text.contains('\n'), "{text}");
    text
}

#[test]
fn each_kind_is_recognised_by_its_files_whatever_the_folder_is_called() {
    let demo = tempfile::tempdir().unwrap();
    put(
        demo.path(),
        "report.json",
        r#"{"stages":{},"figures":{},"plots":{}}"#,
    );
    assert_eq!(detect(demo.path()).unwrap(), Kind::Demo);
    let replay = replay_folder();
    assert_eq!(detect(replay.path()).unwrap(), Kind::Replay);
    let calibration = calibration_folder();
    assert_eq!(detect(calibration.path()).unwrap(), Kind::Calibration);
    // The least each needs: the replay's report.json without its plot, calibration.yaml alone.
    let bare = tempfile::tempdir().unwrap();
    put(
        bare.path(),
        "report.json",
        r#"{"channels":{},"frames_replayed":0}"#,
    );
    assert_eq!(detect(bare.path()).unwrap(), Kind::Replay);
    let bare = tempfile::tempdir().unwrap();
    put(bare.path(), "calibration.yaml", CALIBRATION);
    assert_eq!(detect(bare.path()).unwrap(), Kind::Calibration);
    // A folder named like another kind is still what its files say.
    let named = tempfile::tempdir().unwrap();
    let d = named.path().join("calibration");
    put(&d, "report.json", REPLAY_JSON);
    assert_eq!(detect(&d).unwrap(), Kind::Replay);
}

#[test]
fn an_unknown_folder_is_refused_in_one_line_saying_what_was_expected() {
    let empty = tempfile::tempdir().unwrap();
    let e = render(empty.path()).unwrap_err();
    assert_eq!(
        one_line(&e),
        format!(
            "{}: not a Lockstep output folder (expected report.json from the demo or lockstep replay, or \
             calibration.yaml from lockstep calibrate)",
            empty.path().display()
        )
    );
    // Other files only: the same.
    put(empty.path(), "notes.txt", "x");
    put(empty.path(), "metadata.yaml", "rosbag2_bagfile_information: {}\n");
    assert!(matches!(
        detect(empty.path()),
        Err(ReportError::NotOutputFolder { why: None, .. })
    ));
    assert!(!empty.path().join("report.html").exists());
    // Missing, or a file.
    let missing = empty.path().join("nowhere");
    let e = one_line(&detect(&missing).unwrap_err());
    assert!(
        e.starts_with(&format!(
            "{}: not a Lockstep output folder (no such folder; expected report.json",
            missing.display()
        )),
        "{e}"
    );
    let e = one_line(&detect(&empty.path().join("notes.txt")).unwrap_err());
    assert!(e.contains("(a file, not a folder; expected"), "{e}");
}

#[test]
fn a_report_json_or_calibration_yaml_of_another_shape_says_so_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "report.json", r#"{"results":[1,2,3]}"#);
    let e = one_line(&detect(dir.path()).unwrap_err());
    assert!(
        e.contains("report.json: not a report a Lockstep tool writes (expected the demo's `stages`"),
        "{e}"
    );
    put(dir.path(), "report.json", "{\"stages\": [1,");
    let e = one_line(&detect(dir.path()).unwrap_err());
    assert!(e.contains("report.json: ") && e.contains("line 1"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "calibration.yaml", "camera:\n  fx: 500\n");
    let e = one_line(&detect(dir.path()).unwrap_err());
    assert!(
        e.contains("calibration.yaml: not a calibration lockstep calibrate writes: no lockstep_sim_node"),
        "{e}"
    );
    put(
        dir.path(),
        "calibration.yaml",
        CALIBRATION.replace("delay_secs: 0.0400", "delay_secs: soon"),
    );
    let e = one_line(&detect(dir.path()).unwrap_err());
    assert!(
        e.contains("nominal_vehicle.delay_secs is missing or not a number"),
        "{e}"
    );
    put(dir.path(), "calibration.yaml", "a: [1,\n");
    let e = one_line(&detect(dir.path()).unwrap_err());
    assert!(
        e.starts_with(&format!("{}", dir.path().join("calibration.yaml").display())),
        "{e}"
    );
}

#[test]
fn a_replay_folder_renders_its_figures_and_its_plot() {
    let dir = replay_folder();
    let rendered = render(dir.path()).unwrap();
    assert_eq!(rendered.kind, Kind::Replay);
    assert_eq!(rendered.plots, vec!["differences.png"]);
    assert!(rendered.missing.is_empty());
    let page = fs::read_to_string(&rendered.html).unwrap();
    assert!(page.contains("<h1>Lock-step replay report</h1>"));
    assert!(
        page.contains("<td>frames replayed</td><td>118 of 120 selected</td>"),
        "{page}"
    );
    // 116 of 118 outputs equal: not all, so not met; the differing channel named.
    assert!(page.contains(
        "<td>outputs equal to the recording</td><td>116 of 118 (98.3 %)</td><td class=\"bad\">NO</td>"
    ));
    assert!(page.contains("<td>channels that differ</td><td>/cmd_vel</td>"));
    assert!(page.contains("<td class=\"path\">/cmd_vel</td><td>57 of 59 (96.6 %)</td><td>60</td><td>controller #12 (run 1)</td><td>0.250000</td>"));
    // Only the fields that differ.
    assert!(page.contains("<td class=\"path\">linear.x</td>") && !page.contains(">angular.z<"));
    assert!(page.contains("<td>controller</td><td>59</td><td>59 (100.0 %)</td><td>5.200</td><td>0.040</td>"));
    assert!(page.contains("<td>obstacle_detector</td><td class=\"path\">/obstacles</td><td>2</td>"));
    assert!(page.contains("0.420 s (281 frames/s, 0.031 ms overhead per frame)"));
    assert_eq!(page.matches("<figure id=\"plot-replay_differences\">").count(), 1);
    assert_eq!(page.matches("src=\"data:image/png;base64,").count(), 1);
    assert!(!page.contains("http://") && !page.contains("https://"));

    // Without its PNG the page still renders, and says what is missing.
    fs::remove_file(dir.path().join("differences.png")).unwrap();
    let rendered = render(dir.path()).unwrap();
    assert_eq!(rendered.missing[0].why, "differences.png is not in the folder");
    // A PNG that is not one is an error naming it.
    put(dir.path(), "differences.png", "text");
    let e = render(dir.path()).unwrap_err().to_string();
    assert!(e.ends_with("differences.png: not a PNG image"), "{e}");
}

#[test]
fn a_calibration_folder_renders_its_parameters_figures_and_plot() {
    let dir = calibration_folder();
    let rendered = render(dir.path()).unwrap();
    assert_eq!(rendered.kind, Kind::Calibration);
    assert_eq!(rendered.plots, vec!["trajectories.png"]);
    let page = fs::read_to_string(&rendered.html).unwrap();
    assert!(page.contains("<h1>Motion model calibration report</h1>"));
    assert!(page.contains(
        "<td>wheel radius</td><td>0.052020 m</td><td>0.000012 m</td><td>0.050000 m</td><td>+4.04 %</td>"
    ));
    assert!(page.contains(
        "<td>track width</td><td>0.416000 m</td><td>0.000200 m</td><td>0.400000 m</td><td>+4.00 %</td>"
    ));
    assert!(page.contains("<td>delay</td><td>0.0400 s</td><td>0.0010 s</td><td></td><td></td>"));
    assert!(page.contains("<td>centripetal factor (beta)</td><td>0.0000</td><td>not estimated</td>"));
    assert!(page.contains(
        "<td>nominal 1.130 m -&gt; calibrated 0.130 m (8.7 times smaller)</td><td class=\"ok\">yes</td>"
    ));
    assert!(page.contains(
        "<td>nominal 5.123, calibrated 1.012 (normalized RMS per 3 s window, mean of 20)</td><td class=\"ok\">yes</td>"
    ));
    assert!(page.contains("<td>windows</td><td>12 accepted, 1 rejected, 3 unchanged, 0 skipped, 0 waiting</td><td class=\"ok\">yes</td>"));
    assert!(page.contains("<td class=\"path\">/slam_pose (geometry_msgs/msg/PoseStamped)</td>"));
    assert_eq!(page.matches("<figure id=\"plot-calibration\">").count(), 1);
    // The whole file, as written.
    assert!(page.contains(&format!(
        "<pre id=\"calibration-yaml\">{}</pre>",
        escape(CALIBRATION)
    )));

    // Nothing accepted: the file's own warning on top, the windows not met.
    let text = CALIBRATION
        .replace(
            "lockstep_sim_node:",
            "# No window was accepted: these are the nominal parameters.\nlockstep_sim_node:",
        )
        .replace("12 accepted", "0 accepted");
    put(dir.path(), "calibration.yaml", text);
    let page = fs::read_to_string(render(dir.path()).unwrap().html).unwrap();
    assert!(page.contains("<p>No window was accepted: these are the nominal parameters.</p>"));
    assert!(page.contains("<td>windows</td><td>0 accepted, 1 rejected, 3 unchanged, 0 skipped, 0 waiting</td><td class=\"bad\">NO</td>"));
}

#[test]
fn a_calibration_folder_without_its_plot_still_renders() {
    let dir = calibration_folder();
    fs::remove_file(dir.path().join("trajectories.png")).unwrap();
    let rendered = render(dir.path()).unwrap();
    assert!(rendered.plots.is_empty());
    assert_eq!(rendered.missing[0].key, "calibration");
    put(dir.path(), "trajectories.png", tiny_png());
    assert_eq!(render(dir.path()).unwrap().plots.len(), 1);
}
