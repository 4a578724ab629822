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
use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use futures::FutureExt as _;
use lockstep_bag::MetadataRecord;
use lockstep_replay::lockstep::Recording;
use lockstep_ros::parameter_text::{self, records};
use lockstep_ros::qos;
use lockstep_trace_ros::topology_topic;
use r2r::rcl_interfaces::msg::Parameter;
use r2r::rcl_interfaces::srv::{GetParameters, ListParameters, SetParameters};

/// Parameters never compared: they describe how a module runs, not its logic, and differ between a recording
/// and its replay by design.
pub const ALWAYS_IGNORED: &[&str] = &[
    "use_sim_time",
    "lockstep_step_mode",
    "start_type_description_service",
];
/// Prefixes of parameter names never compared (QoS overrides are read-only and set at start).
pub const IGNORED_PREFIXES: &[&str] = &["qos_overrides."];

/// Longest wait for a module's node to show in the graph and for its services.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for one answer before the request is sent again, and how many times it is sent.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);
const ASKS: u32 = 4;

/// The flags of `lockstep replay` about recorded parameters.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ParameterArgs {
    /// A live module's parameter that differs from the recording (or a live module whose parameters the
    /// recording lacks) is an error, before any frame is replayed, instead of a warning. Never compared:
    /// use_sim_time, lockstep_step_mode, start_type_description_service, qos_overrides.*.
    #[arg(long)]
    pub strict_parameters: bool,
    /// Set the recorded values of the differing parameters on the live modules (through
    /// `<node>/set_parameters`) before the first step; a refused set is an error naming the module, the
    /// parameter and the node's reason.
    #[arg(long)]
    pub apply_recorded_parameters: bool,
    /// Leave a parameter out of the comparison: `<name>` (of every module) or `<module>/<name>`
    /// (repeatable).
    #[arg(long = "ignore-parameter", value_name = "NAME")]
    pub ignore_parameters: Vec<String>,
}

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
    fn describe(&self) -> String {
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
type Known = Result<String, String>;

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

/// Whether `module`'s `name` is left out of the comparison.
fn ignored(args: &ParameterArgs, module: &str, name: &str) -> bool {
    ALWAYS_IGNORED.contains(&name)
        || IGNORED_PREFIXES.iter().any(|p| name.starts_with(p))
        || (args.ignore_parameters.iter()).any(|i| i == name || *i == format!("{module}/{name}"))
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
        let first = (recording.frames.iter())
            .filter(|f| f.header.module_name == *module)
            .map(|f| f.header.start_time_ns)
            .min()
            .unwrap_or(i64::MAX);
        match recorded.at(module, first) {
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
    let mut per_module: BTreeMap<String, (String, Vec<Difference>)> = BTreeMap::new();
    for (module, values) in &expected {
        let hint = recorded.modules.get(module).and_then(|m| m.node.clone());
        let node = live.node_of(module, hint);
        let now = live
            .read(&node)
            .with_context(|| format!("reading the parameters of live module {module}"))?;
        let mut diffs = Vec::new();
        for (name, value) in values {
            if ignored(args, module, name) {
                continue;
            }
            match value {
                Ok(text) if now.get(name) != Some(text) => diffs.push(Difference {
                    module: module.clone(),
                    parameter: name.clone(),
                    recorded: text.clone(),
                    live: now.get(name).cloned(),
                }),
                Ok(_) => {}
                Err(why) => report.unknown.push((module.clone(), name.clone(), why.clone())),
            }
        }
        for name in now.keys() {
            if !values.contains_key(name) && !ignored(args, module, name) {
                report.live_only.push((module.clone(), name.clone()));
            }
        }
        report.differences.extend(diffs.iter().cloned());
        if !diffs.is_empty() {
            per_module.insert(module.clone(), (node, diffs));
        }
    }
    if report.differences.is_empty() {
        return Ok(report);
    }
    if args.apply_recorded_parameters {
        for (module, (node, diffs)) in &per_module {
            live.set(module, node, diffs)?;
            for d in diffs {
                eprintln!(
                    "parameter {} {}: set to the recorded {} (was {})",
                    d.module,
                    d.parameter,
                    d.recorded,
                    d.live.as_deref().unwrap_or("not declared")
                );
            }
            report.applied.extend(diffs.iter().cloned());
        }
        return Ok(report);
    }
    if args.strict_parameters {
        let all: Vec<String> = report.differences.iter().map(Difference::describe).collect();
        bail!(
            "--strict-parameters: live parameters differ from the recording: {} (--apply-recorded-parameters sets the recorded values)",
            all.join("; ")
        );
    }
    for d in &report.differences {
        eprintln!(
            "warning: parameter {} differs from the recording (--apply-recorded-parameters sets it)",
            d.describe()
        );
    }
    Ok(report)
}

/// A short-lived node of this process talking to the live modules' parameter services.
struct Live {
    node: r2r::Node,
}

impl Live {
    fn new() -> anyhow::Result<Self> {
        let node = lockstep_ros::create_node("lockstep_replay_parameters", "")?;
        Ok(Self { node })
    }

    /// Spin the node until `future` is ready, at most [`CALL_TIMEOUT`].
    fn wait<T>(&mut self, future: impl Future<Output = T>) -> Option<T> {
        self.wait_at_most(future, CALL_TIMEOUT)
    }

    /// Spin the node until `future` is ready, at most `timeout`.
    fn wait_at_most<T>(&mut self, future: impl Future<Output = T>, timeout: Duration) -> Option<T> {
        let mut future = std::pin::pin!(future);
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(v) = future.as_mut().now_or_never() {
                return Some(v);
            }
            if Instant::now() > deadline {
                return None;
            }
            self.node.spin_once(Duration::from_millis(5));
        }
    }

    /// The node announcing `module`'s topology (waiting for the graph to show it), else `hint` (the node the
    /// recorder read), else `/<module>`.
    fn node_of(&mut self, module: &str, hint: Option<String>) -> String {
        let deadline = Instant::now() + CALL_TIMEOUT;
        loop {
            let found = self
                .node
                .get_publishers_info_by_topic(&topology_topic(module), false)
                .ok()
                .and_then(|p| p.into_iter().next())
                // A node not discovered yet is named `_NODE_NAME_UNKNOWN_`: look again.
                .filter(|p| !p.node_name.contains("_UNKNOWN_") && !p.node_namespace.contains("_UNKNOWN_"));
            if let Some(p) = found {
                return format!("{}/{}", p.node_namespace.trim_end_matches('/'), p.node_name);
            }
            if Instant::now() > deadline {
                return hint.unwrap_or_else(|| format!("/{module}"));
            }
            self.node.spin_once(Duration::from_millis(20));
        }
    }

    /// Call `service` (`<node>/<name>`) with `request`, waiting for it to be available.
    fn call<S: r2r::WrappedServiceTypeSupport + 'static>(
        &mut self,
        service: &str,
        request: &S::Request,
    ) -> anyhow::Result<S::Response> {
        let client = self
            .node
            .create_client::<S>(service, qos::reliable(10))
            .with_context(|| format!("creating a client of {service}"))?;
        let available = r2r::Node::is_available(&client)?;
        self.wait(available)
            .with_context(|| format!("{service} did not appear within {CALL_TIMEOUT:?}"))??;
        // A request sent just as the service appeared may go unanswered (the answer leaves before its way
        // back is matched): send it again after each ANSWER_TIMEOUT.
        for _ in 0..ASKS {
            let answer = client.request(request)?;
            if let Some(answered) = self.wait_at_most(answer, ANSWER_TIMEOUT) {
                return Ok(answered?);
            }
        }
        bail!("{service} did not answer {ASKS} requests, {ANSWER_TIMEOUT:?} each")
    }

    /// Every parameter of `node`: name -> typed text.
    fn read(&mut self, node: &str) -> anyhow::Result<BTreeMap<String, String>> {
        let list = ListParameters::Request {
            prefixes: Vec::new(),
            depth: 0, // every level
        };
        let names = self
            .call::<ListParameters::Service>(&format!("{node}/list_parameters"), &list)?
            .result
            .names;
        let get = GetParameters::Request { names: names.clone() };
        let values = self
            .call::<GetParameters::Service>(&format!("{node}/get_parameters"), &get)?
            .values;
        if values.len() != names.len() {
            bail!(
                "{node}/get_parameters answered {} values for {} names",
                values.len(),
                names.len()
            );
        }
        Ok(names
            .into_iter()
            .zip(values.iter().map(parameter_text::format))
            .collect())
    }

    /// Set the recorded values of `diffs` on `node` in one request, then read them back.
    fn set(&mut self, module: &str, node: &str, diffs: &[Difference]) -> anyhow::Result<()> {
        let mut request = SetParameters::Request::default();
        for d in diffs {
            let value = parameter_text::parse(&d.recorded)
                .with_context(|| format!("the recorded {} of {module}", d.parameter))?;
            request.parameters.push(Parameter {
                name: d.parameter.clone(),
                value,
            });
        }
        let service = format!("{node}/set_parameters");
        let answer = self.call::<SetParameters::Service>(&service, &request)?;
        if answer.results.len() != diffs.len() {
            bail!(
                "{service} answered {} results for {} parameters",
                answer.results.len(),
                diffs.len()
            );
        }
        for (d, result) in diffs.iter().zip(&answer.results) {
            if !result.successful {
                bail!(
                    "--apply-recorded-parameters: live module {module} refused {} = {}: {}",
                    d.parameter,
                    d.recorded,
                    if result.reason.is_empty() {
                        "no reason given"
                    } else {
                        &result.reason
                    }
                );
            }
        }
        let now = self.read(node)?;
        for d in diffs {
            if now.get(&d.parameter) != Some(&d.recorded) {
                bail!(
                    "--apply-recorded-parameters: live module {module} accepted {} = {} but holds {}",
                    d.parameter,
                    d.recorded,
                    now.get(&d.parameter).map_or("nothing", String::as_str)
                );
            }
        }
        Ok(())
    }
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

    #[test]
    fn run_time_parameters_and_listed_ones_are_ignored() {
        let args = ParameterArgs {
            ignore_parameters: vec!["mission_planner/rate_hz".into(), "processing_delay_ms".into()],
            ..ParameterArgs::default()
        };
        assert!(ignored(&args, "m", "use_sim_time"));
        assert!(ignored(&args, "m", "qos_overrides./mission.publisher.depth"));
        assert!(ignored(&args, "mission_planner", "rate_hz"));
        assert!(!ignored(&args, "other", "rate_hz"));
        assert!(ignored(&args, "other", "processing_delay_ms"));
        assert!(!ignored(&args, "m", "hold"));
    }
}
