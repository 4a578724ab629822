//! What a suite run writes: `cases/<case>/report.json` per case, and for the suite `summary.json`,
//! `junit.xml` (one test case per case, as CI systems and `colcon test-result` read it) and `summary.html`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::compare::{ChannelResult, Comparison, FirstDifference};
use crate::error::{Error, Result};
use crate::plan::Case;
use crate::replayed::{Findings, ParameterDifference, SkippedFrames};

/// One case's report (`cases/<case>/report.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseReport {
    /// `<recording>__<variant>`.
    pub case: String,
    /// The recording replayed.
    pub recording: String,
    /// The variant's name.
    pub variant: String,
    /// The launch file and its arguments.
    pub launch: String,
    /// Launch arguments of the variant.
    pub arguments: BTreeMap<String, String>,
    /// `recording`, or the earlier run's output bag compared with.
    pub baseline: String,
    /// Whether every channel met its expectation, no assertion fired and the case ran to the end.
    pub passed: bool,
    /// Why the case could not be run to the end (modules not started, replay failed, ...).
    pub error: Option<String>,
    /// One line per failing channel, plus one for violations.
    pub failures: Vec<String>,
    /// Per output channel.
    pub channels: BTreeMap<String, ChannelReport>,
    /// `violation(...)` rows of the assertions.
    pub violations: Vec<String>,
    /// Things worth knowing that do not fail the case: frames not replayed (so not compared), parameters
    /// that differ from the recording, ...
    pub warnings: Vec<String>,
    /// Per (channel, module): recorded frames the replay could not replay, so never compared.
    #[serde(default)]
    pub skipped: Vec<SkippedFrames>,
    /// Live module parameters whose value differs from the recorded one.
    #[serde(default)]
    pub parameter_differences: Vec<ParameterDifference>,
    /// Where the time went.
    pub timings: Timings,
}

/// Seconds spent in each part of a case.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// The whole case.
    pub total_s: f64,
    /// The replay (from start to its last output), the part that is not the runner's own.
    pub replay_s: f64,
    /// Stopping the modules.
    pub stop_s: f64,
    /// Comparing, asserting and writing the report.
    pub compare_s: f64,
}

/// One channel in a case report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelReport {
    /// Whether it met its expectation.
    pub passed: bool,
    /// Outputs paired with the baseline.
    pub compared: u64,
    /// Byte-identical ones.
    pub identical: u64,
    /// Out of expectation.
    pub differing: u64,
    /// Fraction allowed to differ.
    pub max_differing_fraction: f64,
    /// Baseline outputs the run did not produce.
    pub baseline_only: u64,
    /// Of the recorded outputs, those the replay could not replay (counted in `baseline_only` too when the
    /// recording is the baseline).
    #[serde(default)]
    pub skipped: u64,
    /// Outputs the baseline does not have.
    pub new_only: u64,
    /// Outputs that could not be decoded where a tolerance needed their fields.
    pub undecodable: u64,
    /// The first differing output.
    pub first_difference: Option<FirstDifference>,
    /// Per field (array indices as `[]`) that differs anywhere: largest |difference| ("inf" when a value is
    /// missing on one side) and how many values were out of tolerance.
    pub fields: BTreeMap<String, FieldReport>,
}

/// One field's differences.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldReport {
    /// Largest |new - baseline|, or "inf".
    pub max_abs: serde_json::Value,
    /// Values out of tolerance.
    pub out_of_tolerance: u64,
}

impl ChannelReport {
    /// The report of a compared channel.
    pub fn of(result: &ChannelResult) -> ChannelReport {
        ChannelReport {
            passed: result.passed(),
            compared: result.compared,
            identical: result.identical,
            differing: result.differing,
            max_differing_fraction: result.max_differing_fraction,
            baseline_only: result.baseline_only,
            skipped: 0,
            new_only: result.new_only,
            undecodable: result.undecodable,
            first_difference: result.first_difference.clone(),
            fields: result
                .fields
                .iter()
                .map(|(k, f)| {
                    let max_abs = if f.max_abs.is_finite() {
                        serde_json::json!(f.max_abs)
                    } else {
                        serde_json::json!("inf")
                    };
                    (
                        k.clone(),
                        FieldReport {
                            max_abs,
                            out_of_tolerance: f.out_of_tolerance,
                        },
                    )
                })
                .collect(),
        }
    }
}

/// The channels' reports and failure lines of a comparison.
pub fn channel_reports(comparison: &Comparison) -> (BTreeMap<String, ChannelReport>, Vec<String>) {
    let reports = comparison
        .iter()
        .map(|(c, r)| (c.clone(), ChannelReport::of(r)))
        .collect();
    let failures = comparison.iter().filter_map(|(c, r)| r.failure(c)).collect();
    (reports, failures)
}

impl CaseReport {
    /// The report of `case` before it has run (not passed, nothing compared), against `baseline`.
    pub fn for_case(case: &Case, baseline: String) -> CaseReport {
        CaseReport {
            case: case.id.clone(),
            recording: case.recording.display().to_string(),
            variant: case.variant.name.clone(),
            launch: case.variant.launch.display().to_string(),
            arguments: case.variant.arguments.clone(),
            baseline,
            passed: false,
            error: None,
            failures: Vec::new(),
            channels: BTreeMap::new(),
            violations: Vec::new(),
            warnings: Vec::new(),
            skipped: Vec::new(),
            parameter_differences: Vec::new(),
            timings: Timings::default(),
        }
    }

    /// The first line that says why it did not pass.
    pub fn reason(&self) -> Option<String> {
        if self.passed {
            return None;
        }
        self.error
            .clone()
            .or_else(|| self.failures.first().cloned())
            .or_else(|| Some("failed".into()))
    }

    /// Reads `report.json`.
    pub fn read(path: &Path) -> Result<CaseReport> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        serde_json::from_str(&text)
            .map_err(|e| Error::Case(format!("{}: not a case report: {e}", path.display())))
    }

    /// Writes `report.json`.
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(|e| Error::Case(e.to_string()))? + "\n";
        std::fs::write(path, text).map_err(|e| Error::io(path, e))
    }
}

/// The suite's summary (`summary.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// The suite file.
    pub suite: String,
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed (including those that could not run).
    pub failed: usize,
    /// Of the failed ones, those that could not run to the end.
    pub errors: usize,
    /// Cases with warnings (frames not replayed, parameters differing from the recording, ...), passed or not.
    #[serde(default)]
    pub with_warnings: usize,
    /// Wall time of the whole run, seconds.
    pub duration_s: f64,
    /// Cases run at once (`--jobs`, or the Ray cluster's).
    pub parallel: String,
    /// One entry per case, in case order.
    pub cases: Vec<SummaryCase>,
}

/// One case in the summary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SummaryCase {
    /// Case name.
    pub case: String,
    /// Recording.
    pub recording: String,
    /// Variant.
    pub variant: String,
    /// Passed?
    pub passed: bool,
    /// Why not.
    pub reason: Option<String>,
    /// What the case did not check or found different without failing (its report's `warnings`).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Recorded frames the replay could not replay, so never compared.
    #[serde(default)]
    pub skipped_frames: u64,
    /// Seconds.
    pub total_s: f64,
    /// Seconds in the replay.
    pub replay_s: f64,
    /// `cases/<case>/report.json`.
    pub report: String,
}

impl Summary {
    /// The summary of `reports` (in case order).
    pub fn of(suite: &Path, reports: &[CaseReport], duration_s: f64, parallel: String) -> Summary {
        let cases: Vec<SummaryCase> = reports
            .iter()
            .map(|r| SummaryCase {
                case: r.case.clone(),
                recording: r.recording.clone(),
                variant: r.variant.clone(),
                passed: r.passed,
                reason: r.reason(),
                warnings: r.warnings.clone(),
                skipped_frames: r.skipped.iter().map(|s| s.frames).sum(),
                total_s: r.timings.total_s,
                replay_s: r.timings.replay_s,
                report: format!("cases/{}/report.json", r.case),
            })
            .collect();
        let passed = cases.iter().filter(|c| c.passed).count();
        Summary {
            suite: suite.display().to_string(),
            passed,
            failed: cases.len() - passed,
            errors: reports.iter().filter(|r| r.error.is_some()).count(),
            with_warnings: reports.iter().filter(|r| !r.warnings.is_empty()).count(),
            duration_s,
            parallel,
            cases,
        }
    }
}

/// JUnit XML: one test suite named after the suite file, one test case per case (class name
/// `<suite>.<variant>`, name the recording's), a failure with the first differing frame and field, an error
/// for a case that could not run. Each case's warnings are its `<system-out>` (one `warning: ` line each),
/// and its properties count them (`warnings`, `skipped_frames`, `parameter_differences`), so that a pass
/// with frames never compared shows as such.
pub fn junit(suite_name: &str, reports: &[CaseReport]) -> Result<String> {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let mut report = Report::new(format!("lockstep test {suite_name}"));
    let mut suite = TestSuite::new(suite_name);
    for r in reports {
        let status = if r.passed {
            TestCaseStatus::success()
        } else {
            let kind = if r.error.is_some() {
                NonSuccessKind::Error
            } else {
                NonSuccessKind::Failure
            };
            let mut status = TestCaseStatus::non_success(kind);
            if let TestCaseStatus::NonSuccess {
                message, description, ..
            } = &mut status
            {
                // Every failing channel in the message: CI systems and `colcon test-result` show only it.
                *message = match (&r.error, r.failures.is_empty()) {
                    (None, false) => Some(r.failures.join("; ").into()),
                    _ => r.reason().map(Into::into),
                };
                let mut lines = r.failures.clone();
                lines.extend(r.violations.iter().cloned());
                *description = Some(lines.join("\n").into());
            }
            status
        };
        let mut case = TestCase::new(r.case.clone(), status);
        case.set_classname(format!("{suite_name}.{}", r.variant));
        let skipped: u64 = r.skipped.iter().map(|s| s.frames).sum();
        case.add_property(("warnings", r.warnings.len().to_string().as_str()));
        case.add_property(("skipped_frames", skipped.to_string().as_str()));
        let differences = r.parameter_differences.len().to_string();
        case.add_property(("parameter_differences", differences.as_str()));
        if !r.warnings.is_empty() {
            let lines: Vec<String> = r.warnings.iter().map(|w| format!("warning: {w}\n")).collect();
            case.set_system_out(lines.concat());
        }
        case.set_time(std::time::Duration::from_secs_f64(r.timings.total_s.max(0.0)));
        suite.add_test_case(case);
    }
    report.add_test_suite(suite);
    report
        .to_string()
        .map_err(|e| Error::Case(format!("cannot write the JUnit XML: {e}")))
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One self-contained page: the cases' table (status, first failure, first warning, times) with each case's
/// plot.
pub fn html(summary: &Summary) -> String {
    let mut rows = String::new();
    for c in &summary.cases {
        let (class, status) = if c.passed {
            ("pass", "passed")
        } else {
            ("fail", "FAILED")
        };
        let warnings = match c.warnings.as_slice() {
            [] => String::new(),
            [one] => one.clone(),
            [first, ..] => format!("{first} (and {} more)", c.warnings.len() - 1),
        };
        rows.push_str(&format!(
            "<tr class=\"{class}\"><td>{case}</td><td>{variant}</td><td>{status}</td><td>{reason}</td>\
<td>{warnings}</td><td>{total:.1}</td><td>{replay:.1}</td><td><a href=\"cases/{case}/report.json\">report</a></td>\
<td><a href=\"cases/{case}/differences.png\"><img src=\"cases/{case}/differences.png\" height=\"80\" alt=\"plot\"></a></td></tr>\n",
            case = escape(&c.case),
            variant = escape(&c.variant),
            reason = escape(c.reason.as_deref().unwrap_or("")),
            warnings = escape(&warnings),
            total = c.total_s,
            replay = c.replay_s,
        ));
    }
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>lockstep test: {suite}</title>\n<style>\
body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}\
 tr.pass td:nth-child(3){{color:#161}} tr.fail td:nth-child(3){{color:#b11;font-weight:bold}}</style></head>\n<body>\
<h1>lockstep test: {suite}</h1>\n<p>{passed} passed, {failed} failed ({errors} could not run) in {duration:.1} s, {parallel}; \
{with_warnings} with warnings.</p>\n\
<table><tr><th>case</th><th>variant</th><th>status</th><th>first failure</th><th>warnings</th><th>total [s]</th><th>replay [s]</th><th></th><th>differences</th></tr>\n{rows}</table>\n</body></html>\n",
        suite = escape(&summary.suite),
        passed = summary.passed,
        failed = summary.failed,
        errors = summary.errors,
        with_warnings = summary.with_warnings,
        duration = summary.duration_s,
        parallel = escape(&summary.parallel),
    )
}

impl CaseReport {
    /// Records what the replay's report says was not checked as recorded, with a warning each: done as soon
    /// as the replay ends, so that a case that cannot be compared afterwards still says what was skipped.
    pub fn note_findings(&mut self, findings: &Findings) {
        self.skipped = findings.skipped.clone();
        self.parameter_differences = findings.parameters.clone();
        (self.warnings).extend(findings.skipped.iter().map(SkippedFrames::warning));
        (self.warnings).extend(findings.parameters.iter().map(ParameterDifference::warning));
    }

    /// After the comparison: each compared channel's count of skipped frames, and with `fail_on_skipped` a
    /// failure naming every channel with frames skipped and how many.
    pub fn judge_skipped(&mut self, findings: &Findings, fail_on_skipped: bool) {
        for s in &findings.skipped {
            if let Some(channel) = self.channels.get_mut(&s.channel) {
                channel.skipped += s.frames;
            }
        }
        if !fail_on_skipped || findings.skipped.is_empty() {
            return;
        }
        let each: Vec<String> = (findings.skipped.iter())
            .map(|s| format!("{} of {} ({})", s.frames, s.channel, s.module))
            .collect();
        self.passed = false;
        self.failures.push(format!(
            "fail_on_skipped: {} frames could not be replayed: {}",
            findings.skipped_frames(),
            each.join(", ")
        ));
    }
}
