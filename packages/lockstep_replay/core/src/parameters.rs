//! The recorded module parameters against the live ones, without ROS: which parameters are compared, the
//! comparison of one module's recorded values with its live ones, the texts a replay prints about them and
//! `report.json`'s `parameters`. The node reads the recording's parameter records and the live values
//! through the modules' parameter services.

use std::collections::BTreeMap;

use crate::lockstep::Recording;

/// Parameters never compared: they describe how a module runs, not its logic, and differ between a recording
/// and its replay by design (`wait_for_subscribers`: how many readers a module waits for before it takes its
/// first input, as `ros2 topic pub --wait-matching-subscriptions`; a launch file that records sets it so the
/// recorder misses no output, a replay has no use for it).
pub const ALWAYS_IGNORED: &[&str] = &[
    "use_sim_time",
    "lockstep_step_mode",
    "start_type_description_service",
    "wait_for_subscribers",
];
/// Prefixes of parameter names never compared (QoS overrides are read-only and set at start).
pub const IGNORED_PREFIXES: &[&str] = &["qos_overrides."];

/// One parameter whose live value is not the recorded one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The module.
    pub module: String,
    /// The parameter's name.
    pub parameter: String,
    /// The recorded value (typed text).
    pub recorded: String,
    /// The live value, `None` when the live module does not have the parameter.
    pub live: Option<String>,
}

impl Difference {
    /// `<module> <parameter>: recorded <value>, live <value>`, as warnings and errors name it.
    pub fn describe(&self) -> String {
        format!(
            "{} {}: recorded {}, live {}",
            self.module,
            self.parameter,
            self.recorded,
            self.live.as_deref().unwrap_or("(not declared)")
        )
    }
}

/// What the comparison found and did.
#[derive(Debug, Clone, Default)]
pub struct ParameterReport {
    /// Parameters whose live value differed from the recording (before any was set).
    pub differences: Vec<Difference>,
    /// Those set to the recorded value (`--apply-recorded-parameters`).
    pub applied: Vec<Difference>,
    /// (module, why): live modules whose recorded parameters are not known.
    pub not_recorded: Vec<(String, String)>,
    /// (module, parameter, why): parameters whose value at the first frame is not known.
    pub unknown: Vec<(String, String, String)>,
    /// (module, parameter): live parameters the recording does not have (a newer module).
    pub live_only: Vec<(String, String)>,
}

impl ParameterReport {
    /// The report as `report.json`'s `parameters`.
    pub fn to_json(&self) -> serde_json::Value {
        let diff = |d: &Difference| serde_json::json!({"module": d.module, "parameter": d.parameter, "recorded": d.recorded, "live": d.live});
        serde_json::json!({
            "differences": self.differences.iter().map(diff).collect::<Vec<_>>(),
            "applied": self.applied.iter().map(diff).collect::<Vec<_>>(),
            "not_recorded": self.not_recorded.iter().map(|(m, why)| serde_json::json!({"module": m, "reason": why})).collect::<Vec<_>>(),
            "unknown": self.unknown.iter().map(|(m, p, why)| serde_json::json!({"module": m, "parameter": p, "reason": why})).collect::<Vec<_>>(),
            "live_only": self.live_only.iter().map(|(m, p)| serde_json::json!({"module": m, "parameter": p})).collect::<Vec<_>>(),
        })
    }
}

/// A recorded value at some time: known text, or why it is not known.
pub type Known = Result<String, String>;

/// Whether `module`'s `name` is left out of the comparison: always ignored, or named by one of `ignore`
/// (`<name>` of every module, or `<module>/<name>`).
pub fn ignored(ignore: &[String], module: &str, name: &str) -> bool {
    ALWAYS_IGNORED.contains(&name)
        || IGNORED_PREFIXES.iter().any(|p| name.starts_with(p))
        || ignore
            .iter()
            .any(|i| i == name || *i == format!("{module}/{name}"))
}

/// The start stamp of `module`'s first recorded frame (`i64::MAX` when it has none): the time its recorded
/// parameters are taken at.
pub fn first_frame_ns(recording: &Recording, module: &str) -> i64 {
    (recording.frames.iter())
        .filter(|f| f.header.module_name == module)
        .map(|f| f.header.start_time_ns)
        .min()
        .unwrap_or(i64::MAX)
}

/// Compare `module`'s recorded `values` with its `live` ones (parameters in `ignore` left out): returns the
/// differences and adds the parameters whose recorded value is unknown and those only the live module has to
/// `report`.
pub fn compare_module(
    module: &str,
    values: &BTreeMap<String, Known>,
    live: &BTreeMap<String, String>,
    ignore: &[String],
    report: &mut ParameterReport,
) -> Vec<Difference> {
    let mut diffs = Vec::new();
    for (name, value) in values {
        if ignored(ignore, module, name) {
            continue;
        }
        match value {
            Ok(text) if live.get(name) != Some(text) => diffs.push(Difference {
                module: module.to_owned(),
                parameter: name.clone(),
                recorded: text.clone(),
                live: live.get(name).cloned(),
            }),
            Ok(_) => {}
            Err(why) => report
                .unknown
                .push((module.to_owned(), name.clone(), why.clone())),
        }
    }
    for name in live.keys() {
        if !values.contains_key(name) && !ignored(ignore, module, name) {
            report.live_only.push((module.to_owned(), name.clone()));
        }
    }
    diffs
}

/// The line printed for a parameter set to its recorded value.
pub fn applied_line(d: &Difference) -> String {
    format!(
        "parameter {} {}: set to the recorded {} (was {})",
        d.module,
        d.parameter,
        d.recorded,
        d.live.as_deref().unwrap_or("not declared")
    )
}

/// The warning printed for a parameter that differs and is left as it is.
pub fn difference_warning(d: &Difference) -> String {
    format!(
        "warning: parameter {} differs from the recording (--apply-recorded-parameters sets it)",
        d.describe()
    )
}

/// The error of `--strict-parameters` when parameters differ.
pub fn strict_error(differences: &[Difference]) -> String {
    let all: Vec<String> = differences.iter().map(Difference::describe).collect();
    format!(
        "--strict-parameters: live parameters differ from the recording: {} (--apply-recorded-parameters sets the recorded values)",
        all.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_time_parameters_and_listed_ones_are_ignored() {
        let ignore: Vec<String> = vec!["mission_planner/rate_hz".into(), "processing_delay_ms".into()];
        let args = &ignore[..];
        assert!(ignored(args, "m", "use_sim_time"));
        assert!(ignored(args, "m", "qos_overrides./mission.publisher.depth"));
        assert!(ignored(args, "motion_controller", "wait_for_subscribers"));
        assert!(ignored(args, "mission_planner", "rate_hz"));
        assert!(!ignored(args, "other", "rate_hz"));
        assert!(ignored(args, "other", "processing_delay_ms"));
        assert!(!ignored(args, "m", "hold"));
    }

    #[test]
    fn a_module_compares_known_values_and_lists_unknown_and_live_only_ones() {
        let values: BTreeMap<String, Known> = [
            ("hold".to_owned(), Ok("integer:4".to_owned())),
            ("rate_hz".to_owned(), Ok("double:5.0".to_owned())),
            ("blob".to_owned(), Err("not recorded: too long".to_owned())),
            ("gone".to_owned(), Ok("bool:true".to_owned())),
            ("use_sim_time".to_owned(), Ok("bool:false".to_owned())),
        ]
        .into_iter()
        .collect();
        let live: BTreeMap<String, String> = [
            ("hold", "integer:4"),
            ("rate_hz", "double:2.0"),
            ("extra", "integer:1"),
            ("use_sim_time", "bool:true"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let mut report = ParameterReport::default();
        let diffs = compare_module("m", &values, &live, &[], &mut report);
        let named: Vec<(&str, Option<&str>)> = diffs
            .iter()
            .map(|d| (d.parameter.as_str(), d.live.as_deref()))
            .collect();
        assert_eq!(named, vec![("gone", None), ("rate_hz", Some("double:2.0"))]);
        assert_eq!(
            report.unknown,
            vec![("m".into(), "blob".into(), "not recorded: too long".into())]
        );
        assert_eq!(report.live_only, vec![("m".into(), "extra".into())]);
        assert_eq!(
            strict_error(&diffs[1..]),
            "--strict-parameters: live parameters differ from the recording: m rate_hz: recorded double:5.0, live \
             double:2.0 (--apply-recorded-parameters sets the recorded values)"
        );
        assert_eq!(
            applied_line(&diffs[0]),
            "parameter m gone: set to the recorded bool:true (was not declared)"
        );
    }
}
