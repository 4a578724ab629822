//! What a case did not check is said in every report: frames the replay could not replay and live parameters
//! that differ from the recorded ones become warnings of the case, in `report.json`, `summary.json` and the
//! JUnit XML; with `fail_on_skipped` a skipped frame fails the case.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lockstep_suite::plan::Case;
use lockstep_suite::replayed::Findings;
use lockstep_suite::report::{junit, CaseReport, ChannelReport, Summary};
use lockstep_suite::suite::Variant;

fn case() -> Case {
    Case {
        id: "cut__recorded".into(),
        recording: PathBuf::from("/corpus/cut.mcap"),
        variant: Variant {
            name: "recorded".into(),
            launch: PathBuf::from("/launch/replay_system.launch.xml"),
            arguments: BTreeMap::new(),
            unmodified: false,
        },
    }
}

/// A case whose channels all passed, as the comparison leaves it.
fn passed_case() -> CaseReport {
    let mut report = CaseReport::for_case(&case(), "recording".into());
    report.passed = true;
    let channel = ChannelReport {
        passed: true,
        compared: 7,
        identical: 7,
        differing: 0,
        max_differing_fraction: 0.0,
        baseline_only: 3,
        new_only: 0,
        undecodable: 0,
        first_difference: None,
        fields: BTreeMap::new(),
        skipped: 0,
    };
    report.channels.insert("/obstacles".into(), channel);
    report
}

/// `replay/report.json` of a replay that skipped three /obstacles frames and one /cmd_vel frame, with a live
/// module whose parameter differs from the recorded one.
fn replay_report() -> serde_json::Value {
    let skip = |channel: &str, module: &str, seq: Option<u32>, reason: &str| serde_json::json!({"module": module, "channel": channel, "sequence_num": seq, "reason": reason});
    let early = "input /scan_front #3 was not simulated (its frame was skipped or precedes the recording)";
    serde_json::json!({
        "frames_selected": 20,
        "frames_replayed": 16,
        "frames_skipped": [
            skip("/obstacles", "obstacle_fusion", Some(0), early),
            skip("/obstacles", "obstacle_fusion", Some(1), "another reason"),
            skip("/cmd_vel", "motion_controller", Some(0), "input /obstacles #0 was not simulated"),
            skip("/obstacles", "obstacle_fusion", None, "the recorded message has no dependency header"),
        ],
        "modules": {"obstacle_fusion": {}, "motion_controller": {}},
        "parameters": {
            "differences": [
                {"module": "mission_planner", "parameter": "hold", "recorded": "integer:4", "live": "integer:2"},
                {"module": "obstacle_fusion", "parameter": "gone", "recorded": "bool:true", "live": null},
            ],
            "applied": [], "not_recorded": [], "unknown": [], "live_only": [],
        },
    })
}

#[test]
fn skipped_frames_and_differing_parameters_are_warnings_of_the_case() {
    let findings = Findings::of(&replay_report());
    let mut report = passed_case();
    report.note_findings(&findings);
    report.judge_skipped(&findings, false);
    assert!(
        report.passed,
        "warnings do not fail a case: {:?}",
        report.failures
    );
    let skipped: Vec<(&str, &str, u64)> = report
        .skipped
        .iter()
        .map(|s| (s.channel.as_str(), s.module.as_str(), s.frames))
        .collect();
    assert_eq!(
        skipped,
        [
            ("/cmd_vel", "motion_controller", 1),
            ("/obstacles", "obstacle_fusion", 3)
        ]
    );
    assert_eq!(report.channels["/obstacles"].skipped, 3);
    let warnings = report.warnings.join("\n");
    assert!(
        warnings.contains(
            "3 frames of /obstacles (obstacle_fusion) could not be replayed, so were not compared: input \
             /scan_front #3 was not simulated"
        ),
        "{warnings}"
    );
    assert!(
        warnings.contains("1 frame of /cmd_vel (motion_controller) could not be replayed"),
        "{warnings}"
    );
    assert!(
        warnings.contains("parameter mission_planner hold: recorded integer:4, live integer:2"),
        "{warnings}"
    );
    assert!(
        warnings.contains("parameter obstacle_fusion gone: recorded bool:true, live (not declared)"),
        "{warnings}"
    );
    let names: Vec<(&str, &str, Option<&str>)> = report
        .parameter_differences
        .iter()
        .map(|d| (d.module.as_str(), d.parameter.as_str(), d.live.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("mission_planner", "hold", Some("integer:2")),
            ("obstacle_fusion", "gone", None)
        ]
    );
    // The case report keeps them when read back (what a Ray run collects).
    let dir = tempfile::tempdir().unwrap();
    report.write(&dir.path().join("report.json")).unwrap();
    assert_eq!(CaseReport::read(&dir.path().join("report.json")).unwrap(), report);
}

#[test]
fn fail_on_skipped_fails_the_case_naming_each_channel_and_its_count() {
    let findings = Findings::of(&replay_report());
    let mut report = passed_case();
    report.note_findings(&findings);
    report.judge_skipped(&findings, true);
    assert!(!report.passed);
    let reason = report.reason().unwrap();
    assert_eq!(
        reason,
        "fail_on_skipped: 4 frames could not be replayed: 1 of /cmd_vel (motion_controller), 3 of \
         /obstacles (obstacle_fusion)"
    );
    // Nothing skipped: nothing to fail.
    let clean = Findings::of(&serde_json::json!({"frames_skipped": [], "modules": {}}));
    let mut report = passed_case();
    report.note_findings(&clean);
    report.judge_skipped(&clean, true);
    assert!(report.passed && report.warnings.is_empty(), "{report:?}");
}

#[test]
fn warnings_reach_summary_json_and_the_junit_xml() {
    let findings = Findings::of(&replay_report());
    let mut report = passed_case();
    report.note_findings(&findings);
    report.judge_skipped(&findings, false);
    let reports = [report.clone()];

    let summary = Summary::of(Path::new("/suites/s.yaml"), &reports, 1.0, "1 at once".into());
    let json = serde_json::to_value(&summary).unwrap();
    let case = &json["cases"][0];
    assert_eq!(case["passed"], true);
    assert_eq!(case["skipped_frames"], 4);
    let warnings: Vec<String> = serde_json::from_value(case["warnings"].clone()).unwrap();
    assert_eq!(warnings, report.warnings);
    assert_eq!(json["with_warnings"], 1);

    let xml = junit("s", &reports).unwrap();
    assert!(
        xml.contains("<property name=\"skipped_frames\" value=\"4\"/>"),
        "{xml}"
    );
    assert!(
        xml.contains("<property name=\"parameter_differences\" value=\"2\"/>"),
        "{xml}"
    );
    assert!(xml.contains("<system-out>"), "{xml}");
    assert!(
        xml.contains("warning: 3 frames of /obstacles (obstacle_fusion) could not be replayed"),
        "{xml}"
    );
    assert!(
        xml.contains("warning: parameter mission_planner hold: recorded integer:4, live integer:2"),
        "{xml}"
    );
    assert!(!xml.contains("<failure"), "a warning is not a failure: {xml}");
}

#[test]
fn a_case_with_nothing_to_say_has_no_system_out() {
    let xml = junit("s", &[passed_case()]).unwrap();
    assert!(!xml.contains("<system-out>"), "{xml}");
    assert!(
        xml.contains("<property name=\"skipped_frames\" value=\"0\"/>"),
        "{xml}"
    );
}
