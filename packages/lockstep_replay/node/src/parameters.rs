//! The recorded module parameters at a DDS replay: each live module's parameters, read through its node's
//! standard services (`<node>/list_parameters`, `<node>/get_parameters`), are compared with the values it
//! had when the recording reached its first frame (the values read when recording started, plus the changes
//! seen on `/parameter_events` before that frame). A difference is a warning naming the module, the parameter,
//! the recorded and the live value, and is listed in `report.json` (`parameters`); `--strict-parameters` makes
//! it an error before any frame is replayed; `--apply-recorded-parameters` sets the recorded values through
//! `<node>/set_parameters` first.
//!
//! The node of a module is the one announcing its topology (`/lockstep/topology/<module>`), else the node the
//! recorder read, else `/<module>`. Values are compared as typed text (`integer:4`, `double:0.5`, see
//! `lockstep_ros::parameter_text`): an integer 1 and a double 1.0 differ.

use std::collections::BTreeMap;

use anyhow::{bail, Context as _};
use lockstep_bag::MetadataRecord;
pub use lockstep_replay::args::ParameterArgs;
use lockstep_replay::lockstep::Recording;
use lockstep_replay::parameters::{
    applied_line, compare_module, difference_warning, first_frame_ns, strict_error, Known,
};
pub use lockstep_replay::parameters::{Difference, ParameterReport, ALWAYS_IGNORED, IGNORED_PREFIXES};
use lockstep_ros::parameter_text::records;

use crate::live_parameters::Live;

/// What the recording holds about one module's parameters.
#[derive(Debug, Clone, Default)]
struct ModuleRecord {
    node: Option<String>,
    read_ns: Option<u64>,
    error: Option<String>,
    values: BTreeMap<String, String>,
}

/// The parameters a recording holds (its `lockstep_parameter*` metadata records, merged in file order).
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    modules: BTreeMap<String, ModuleRecord>,
    /// (received_ns, n, module, parameter, text), sorted.
    changes: Vec<(u64, u64, String, String, String)>,
    dropped: BTreeMap<String, u64>,
}

impl Recorded {
    /// Merge the parameter records among `records`.
    pub fn from_records(all: &[MetadataRecord]) -> Self {
        let mut out = Recorded::default();
        for r in all {
            match r.name.as_str() {
                records::VALUES => {
                    for (key, text) in &r.entries {
                        if let Some((module, name)) = records::split_name(key) {
                            let m = out.modules.entry(module.to_owned()).or_default();
                            m.values.insert(name.to_owned(), text.clone());
                        }
                    }
                }
                records::NODES => {
                    for (module, about) in &r.entries {
                        let m = out.modules.entry(module.clone()).or_default();
                        for field in about.splitn(3, ';') {
                            match field.split_once('=') {
                                Some(("node", v)) => m.node = Some(v.to_owned()),
                                Some(("read_ns", v)) => m.read_ns = v.parse().ok(),
                                Some(("error", v)) => m.error = Some(v.to_owned()),
                                _ => {}
                            }
                        }
                    }
                }
                records::CHANGES => {
                    for (key, text) in &r.entries {
                        if let Some((ns, n, module, name)) = records::parse_change_key(key) {
                            let change = (ns, n, module.to_owned(), name.to_owned(), text.clone());
                            out.changes.push(change);
                        }
                    }
                }
                records::DROPPED => {
                    for (module, n) in &r.entries {
                        out.dropped.insert(module.clone(), n.parse().unwrap_or(u64::MAX));
                    }
                }
                _ => {}
            }
        }
        out.changes.sort();
        out
    }

    /// `module`'s parameters at `at_ns` (system time): the values read, then the changes received after the
    /// read and up to `at_ns`. A parameter changed between `at_ns` and the read is not known. `Err`: why the
    /// recording has nothing for the module.
    fn at(&self, module: &str, at_ns: i64) -> Result<BTreeMap<String, Known>, String> {
        let Some(m) = self.modules.get(module) else {
            return Err("the recording holds no parameters of it (recorded without them)".into());
        };
        let Some(read_ns) = m.read_ns else {
            let why = m.error.as_deref().unwrap_or("not read");
            return Err(format!("its parameters could not be read when recording: {why}"));
        };
        let at = u64::try_from(at_ns).unwrap_or(0);
        let mut out: BTreeMap<String, Known> =
            (m.values.iter()).map(|(n, v)| (n.clone(), known(v))).collect();
        for (ns, _, cm, name, text) in &self.changes {
            if cm != module || *ns <= read_ns {
                continue;
            }
            if *ns <= at {
                if text == records::DELETED {
                    out.remove(name);
                } else {
                    out.insert(name.clone(), known(text));
                }
            } else if at < read_ns && *ns <= read_ns {
                out.insert(
                    name.clone(),
                    Err("changed after the first frame, before it was read".into()),
                );
            }
        }
        if self.dropped.get(module).is_some_and(|n| *n > 0) {
            for v in out.values_mut() {
                if v.is_ok() {
                    *v = Err("some of its module's changes were not recorded".into());
                }
            }
        }
        Ok(out)
    }
}

/// A recorded text as a known value, unless it says it was not recorded.
fn known(text: &str) -> Known {
    match text.strip_prefix(records::UNRECORDED) {
        Some(why) => Err(format!("not recorded: {why}")),
        None => Ok(text.to_owned()),
    }
}

/// Compare the parameters of the live `modules` with `recording`'s (from `all_records`, the bag's metadata
/// records), warn on stderr or fail (`--strict-parameters`), or set the recorded values
/// (`--apply-recorded-parameters`).
pub fn check(
    all_records: &[MetadataRecord],
    recording: &Recording,
    modules: &[String],
    args: &ParameterArgs,
) -> anyhow::Result<ParameterReport> {
    let recorded = Recorded::from_records(all_records);
    let mut report = ParameterReport::default();
    let mut expected: BTreeMap<String, BTreeMap<String, Known>> = BTreeMap::new();
    for module in modules {
        match recorded.at(module, first_frame_ns(recording, module)) {
            Ok(values) => {
                expected.insert(module.clone(), values);
            }
            Err(why) => report.not_recorded.push((module.clone(), why)),
        }
    }
    if args.strict_parameters {
        if let Some((module, why)) = report.not_recorded.first() {
            bail!("--strict-parameters: live module {module}: {why}");
        }
    }
    for (module, why) in &report.not_recorded {
        eprintln!("warning: parameters of {module} are not compared: {why}");
    }
    if expected.is_empty() {
        return Ok(report);
    }
    let mut live = Live::new()?;
    let per_module = compare_live(&mut live, &recorded, &expected, args, &mut report)?;
    if report.differences.is_empty() {
        return Ok(report);
    }
    if args.apply_recorded_parameters {
        for (module, (node, diffs)) in &per_module {
            live.set(module, node, diffs)?;
            for d in diffs {
                eprintln!("{}", applied_line(d));
            }
            report.applied.extend(diffs.iter().cloned());
        }
        return Ok(report);
    }
    if args.strict_parameters {
        bail!("{}", strict_error(&report.differences));
    }
    for d in &report.differences {
        eprintln!("{}", difference_warning(d));
    }
    Ok(report)
}

/// Read each expected module's live parameters and compare them with the recorded `expected` values; the
/// differences go into `report` and, per module with any, are returned with the module's node.
fn compare_live(
    live: &mut Live,
    recorded: &Recorded,
    expected: &BTreeMap<String, BTreeMap<String, Known>>,
    args: &ParameterArgs,
    report: &mut ParameterReport,
) -> anyhow::Result<BTreeMap<String, (String, Vec<Difference>)>> {
    let mut per_module = BTreeMap::new();
    for (module, values) in expected {
        let hint = recorded.modules.get(module).and_then(|m| m.node.clone());
        let node = live.node_of(module, hint);
        let now = live
            .read(&node)
            .with_context(|| format!("reading the parameters of live module {module}"))?;
        let diffs = compare_module(module, values, &now, &args.ignore_parameters, report);
        report.differences.extend(diffs.iter().cloned());
        if !diffs.is_empty() {
            per_module.insert(module.clone(), (node, diffs));
        }
    }
    Ok(per_module)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, entries: &[(&str, &str)]) -> MetadataRecord {
        MetadataRecord {
            file_index: 0,
            name: name.into(),
            entries: entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn recorded() -> Recorded {
        Recorded::from_records(&[
            record(
                records::VALUES,
                &[
                    ("mission_planner/hold", "integer:4"),
                    ("mission_planner/rate_hz", "double:5.0"),
                ],
            ),
            record(
                records::NODES,
                &[("mission_planner", "node=/mission_planner;read_ns=100")],
            ),
            record(
                records::CHANGES,
                &[
                    (
                        &records::change_key(150, 0, "mission_planner", "hold"),
                        "integer:5",
                    ),
                    (
                        &records::change_key(300, 1, "mission_planner", "rate_hz"),
                        "deleted",
                    ),
                ],
            ),
        ])
    }

    #[test]
    fn the_value_at_a_frame_is_the_start_value_plus_the_changes_before_it() {
        let r = recorded();
        let at = |t| r.at("mission_planner", t).unwrap();
        assert_eq!(at(120)["hold"], Ok("integer:4".into()));
        assert_eq!(at(200)["hold"], Ok("integer:5".into()));
        assert_eq!(at(200)["rate_hz"], Ok("double:5.0".into()));
        assert!(!at(400).contains_key("rate_hz"));
        assert!(r.at("obstacle_fusion", 0).is_err());
    }

    #[test]
    fn a_value_too_long_to_record_or_with_lost_changes_is_unknown() {
        let mut r = Recorded::from_records(&[
            record(
                records::VALUES,
                &[("m/blob", "unrecorded:9000 bytes of text, over 4096")],
            ),
            record(records::NODES, &[("m", "node=/m;read_ns=1")]),
        ]);
        assert!(r.at("m", 5).unwrap()["blob"].is_err());
        r.dropped.insert("m".into(), 0);
        r.modules
            .get_mut("m")
            .unwrap()
            .values
            .insert("x".into(), "bool:true".into());
        assert_eq!(r.at("m", 5).unwrap()["x"], Ok("bool:true".into()));
        r.dropped.insert("m".into(), 2);
        assert!(r.at("m", 5).unwrap()["x"].is_err());
    }
}
