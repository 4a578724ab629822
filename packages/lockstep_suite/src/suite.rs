//! The suite file (YAML): which recordings, how to start the modules under test and their variants, what
//! counts as a pass per channel and field, optional Datalog assertions, and the baseline to compare with.
//! Every error names the suite file and the key path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lockstep_replay::lockstep::fold_indices;
use serde_norway::Value;

use crate::error::{Error, Result};
use crate::paths::Found;

/// Longest suite file read: a suite is a page of YAML, not a data file.
pub const MAX_SUITE_BYTES: u64 = 1 << 20;
/// Most variants in one suite (each multiplies the cases).
pub const MAX_VARIANTS: usize = 1000;
/// Most recordings after the globs are expanded.
pub const MAX_RECORDINGS: usize = 100_000;

/// Absolute and relative tolerance of a numeric field: `|new - baseline| <= abs + rel * |baseline|`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Tolerance {
    /// Absolute tolerance, in the field's unit.
    pub abs: f64,
    /// Relative tolerance (0.01 = 1 %).
    pub rel: f64,
}

impl Tolerance {
    /// Whether `new` passes against `baseline` (two NaNs are equal; a NaN against a number is not).
    pub fn admits(&self, baseline: f64, new: f64) -> bool {
        if baseline.is_nan() || new.is_nan() {
            return baseline.is_nan() && new.is_nan();
        }
        baseline == new || (new - baseline).abs() <= self.abs + self.rel * baseline.abs()
    }
}

/// What a channel must meet to pass.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChannelExpect {
    /// Tolerance of every numeric field not named in `fields`; `None`: the message must be byte-identical
    /// (unless `fields` names tolerances, then the other fields must be equal).
    pub default: Option<Tolerance>,
    /// Per field path (array indices written `[]`: `poses[].position.x`).
    pub fields: BTreeMap<String, Tolerance>,
    /// Largest fraction of compared messages allowed to differ (0 to 1).
    pub max_differing_fraction: f64,
}

impl ChannelExpect {
    /// Whether messages must be byte-identical (no tolerance anywhere).
    pub fn is_exact(&self) -> bool {
        self.default.is_none() && self.fields.is_empty()
    }
}

/// One set of launch arguments the modules run with.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// Its name (part of each case's name).
    pub name: String,
    /// The launch file that starts the modules in step mode.
    pub launch: PathBuf,
    /// Launch arguments, `name:=value`.
    pub arguments: BTreeMap<String, String>,
    /// The launch file starts unmodified nodes: it runs with `--trace-replay` (each process under the rcl
    /// interceptor in replay mode).
    pub unmodified: bool,
}

/// What the outputs are compared with.
#[derive(Debug, Clone, PartialEq)]
pub enum Baseline {
    /// The recording itself (what the robot's software really did).
    Recording,
    /// The output folder of an earlier `lockstep test` run of the same cases (A/B: new version against old).
    Run(PathBuf),
}

/// How each replay runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplaySettings {
    /// Longest wait for one step's answer, milliseconds.
    pub timeout_ms: u64,
    /// How long to wait for the live modules to answer, milliseconds.
    pub discovery_ms: u64,
    /// `all` or a module name.
    pub frames: String,
    /// Replays per case: with more than one, a module whose outputs differ between runs fails the case.
    pub repeat: u64,
    /// A recorded frame the replay could not replay (its inputs precede the recording, ...) fails the case;
    /// otherwise it is a warning of the case.
    pub fail_on_skipped: bool,
}

/// A suite file, checked.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The suite file.
    pub file: PathBuf,
    /// Its name (the file name without extension): the JUnit test suite name.
    pub name: String,
    /// The recordings, globs expanded, sorted, each once.
    pub recordings: Vec<PathBuf>,
    /// The modules that must answer their step service (default: every module of the recording).
    pub live: Option<Vec<String>>,
    /// The variants, in the file's order (one named `default` when the file names none).
    pub variants: Vec<Variant>,
    /// Replay settings.
    pub replay: ReplaySettings,
    /// Per channel; channels not named must be byte-identical.
    pub expect: BTreeMap<String, ChannelExpect>,
    /// Assertion rules as (text, origin); every `violation` they derive fails the case.
    pub rules: Vec<(String, String)>,
    /// What the outputs are compared with.
    pub baseline: Baseline,
}

/// A YAML node with the key path that leads to it, for errors.
struct Node<'a> {
    file: &'a Path,
    key: String,
    value: &'a Value,
}

impl<'a> Node<'a> {
    fn err(&self, reason: impl Into<String>) -> Error {
        Error::suite(self.file, &self.key, reason)
    }

    fn child(&self, key: &str, value: &'a Value) -> Node<'a> {
        let key = if self.key.is_empty() {
            key.to_owned()
        } else if key.starts_with('[') {
            format!("{}{key}", self.key)
        } else {
            format!("{}.{key}", self.key)
        };
        Node {
            file: self.file,
            key,
            value,
        }
    }

    /// The mapping's entries; unknown keys are an error naming the ones allowed.
    fn mapping(&self, allowed: &[&str]) -> Result<Vec<(String, Node<'a>)>> {
        let Value::Mapping(map) = self.value else {
            return Err(self.err(format!("expected a mapping, found {}", kind(self.value))));
        };
        let mut out = Vec::with_capacity(map.len());
        for (k, v) in map {
            let Some(name) = k.as_str() else {
                return Err(self.err(format!("keys must be text, found {}", kind(k))));
            };
            if !allowed.is_empty() && !allowed.contains(&name) {
                return Err(self
                    .child(name, v)
                    .err(format!("unknown key (expected one of: {})", allowed.join(", "))));
            }
            out.push((name.to_owned(), self.child(name, v)));
        }
        Ok(out)
    }

    fn text(&self) -> Result<String> {
        scalar_text(self.value).ok_or_else(|| self.err(format!("expected text, found {}", kind(self.value))))
    }

    fn list(&self) -> Result<Vec<Node<'a>>> {
        match self.value {
            Value::Sequence(items) => Ok(items
                .iter()
                .enumerate()
                .map(|(i, v)| self.child(&format!("[{i}]"), v))
                .collect()),
            other => Err(self.err(format!("expected a list, found {}", kind(other)))),
        }
    }

    fn boolean(&self) -> Result<bool> {
        match self.value {
            Value::Bool(b) => Ok(*b),
            other => Err(self.err(format!("expected true or false, found {}", kind(other)))),
        }
    }

    /// A whole number of runs, 1 to 100.
    fn runs(&self) -> Result<u64> {
        let x = self.number((1.0, 100.0))?;
        if x.fract() != 0.0 {
            return Err(self.err(format!("{x} is not a whole number of runs")));
        }
        Ok(x as u64)
    }

    /// A number within `range` (`f64::MAX` as an end: unbounded, written `...` in the error).
    fn number(&self, range: (f64, f64)) -> Result<f64> {
        let x = match self.value {
            Value::Number(n) => n.as_f64(),
            _ => None,
        }
        .ok_or_else(|| self.err(format!("expected a number, found {}", kind(self.value))))?;
        let range = lockstep_ranges::Real::closed(range.0, range.1, "");
        if !range.contains(x) {
            // The value and the range written short (`-1e300 is out of range [0, ...]`).
            let x = lockstep_ranges::number(x);
            return Err(self.err(format!("{x} is out of range {range:#}")));
        }
        Ok(x)
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl Suite {
    /// Reads and checks the suite file `path` (paths in it are relative to its folder).
    pub fn load(path: &Path) -> Result<Suite> {
        let text = lockstep_ranges::file::read_text(path, MAX_SUITE_BYTES)
            .map_err(|e| Error::io(path, std::io::Error::other(e)))?;
        Suite::parse(&text, path)
    }

    /// Checks the suite `text`, read from `file`.
    pub fn parse(text: &str, file: &Path) -> Result<Suite> {
        let value: Value = serde_norway::from_str(text).map_err(|e| {
            let at = e
                .location()
                .map_or_else(|| "(file)".to_owned(), |l| format!("line {}", l.line()));
            Error::suite(file, at, e.to_string())
        })?;
        let dir = file.parent().unwrap_or(Path::new(".")).to_owned();
        let root = Node {
            file,
            key: String::new(),
            value: &value,
        };
        let mut recordings = None;
        let mut modules = None;
        let mut replay = ReplaySettings {
            timeout_ms: 2000,
            discovery_ms: 60_000,
            frames: "all".into(),
            repeat: 1,
            fail_on_skipped: false,
        };
        let mut expect = BTreeMap::new();
        let mut rules = Vec::new();
        let mut baseline = Baseline::Recording;
        let top = [
            "recordings",
            "modules",
            "replay",
            "expect",
            "assert",
            "baseline",
            "repeat",
            "fail_on_skipped",
        ];
        for (key, node) in root.mapping(&top)? {
            match key.as_str() {
                "recordings" => recordings = Some(parse_recordings(&node, &dir)?),
                "modules" => modules = Some(parse_modules(&node, &dir)?),
                "replay" => replay = parse_replay(&node, replay)?,
                "expect" => expect = parse_expect(&node)?,
                "assert" => rules = parse_assert(&node, &dir)?,
                "repeat" => replay.repeat = node.runs()?,
                "fail_on_skipped" => replay.fail_on_skipped = node.boolean()?,
                _ => {
                    let text = node.text()?;
                    baseline = if text == "recording" {
                        Baseline::Recording
                    } else {
                        Baseline::Run(dir.join(text))
                    };
                }
            }
        }
        let missing = |k: &str| Error::suite(file, k, "missing (required)");
        let recordings = recordings.ok_or_else(|| missing("recordings"))?;
        let (variants, live) = modules.ok_or_else(|| missing("modules"))?;
        let name = file
            .file_stem()
            .map_or_else(|| "suite".into(), |s| s.to_string_lossy().into_owned());
        Ok(Suite {
            file: file.to_owned(),
            name,
            recordings,
            live,
            variants,
            replay,
            expect,
            rules,
            baseline,
        })
    }
}

fn parse_recordings(node: &Node<'_>, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = Vec::new();
    for item in node.list()? {
        let pattern = item.text()?;
        let paths =
            crate::paths::expand(&dir.join(&pattern)).map_err(|e| item.err(format!("{pattern}: {e}")))?;
        let mut found = Vec::new();
        for path in paths {
            match crate::paths::classify(&path) {
                Found::Bag => found.push(path),
                Found::Other => {}
                Found::Refused(why) => return Err(item.err(format!("{pattern}: {why}"))),
            }
        }
        if found.is_empty() {
            return Err(item.err(format!(
                "{pattern}: matches no recording (a bag folder, .mcap or .db3 file)"
            )));
        }
        found.sort();
        for p in found {
            if !out.contains(&p) {
                out.push(p);
            }
        }
        if out.len() > MAX_RECORDINGS {
            return Err(item.err(format!("more than {MAX_RECORDINGS} recordings")));
        }
    }
    if out.is_empty() {
        return Err(node.err("names no recording"));
    }
    Ok(out)
}

type Modules = (Vec<Variant>, Option<Vec<String>>);

fn parse_arguments(node: &Node<'_>) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for (name, value) in node.mapping(&[])? {
        out.insert(name, value.text()?);
    }
    Ok(out)
}

fn parse_modules(node: &Node<'_>, dir: &Path) -> Result<Modules> {
    let mut launch = None;
    let mut arguments = BTreeMap::new();
    let mut live = None;
    let mut unmodified = false;
    let mut variant_nodes = Vec::new();
    for (key, child) in node.mapping(&["launch", "arguments", "live", "variants", "unmodified"])? {
        match key.as_str() {
            "launch" => launch = Some(existing_file(&child, dir)?),
            "unmodified" => unmodified = child.boolean()?,
            "arguments" => arguments = parse_arguments(&child)?,
            "live" => {
                let names = child.list()?.iter().map(Node::text).collect::<Result<Vec<_>>>()?;
                live = Some(names);
            }
            _ => variant_nodes = child.mapping(&[])?,
        }
    }
    let launch = launch.ok_or_else(|| node.child("launch", node.value).err("missing (required)"))?;
    if variant_nodes.len() > MAX_VARIANTS {
        return Err(node.err(format!("more than {MAX_VARIANTS} variants")));
    }
    let mut variants = Vec::new();
    for (name, v) in variant_nodes {
        if name.is_empty()
            || name.chars().all(|c| c == '.')
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        {
            return Err(v.err(
                "a variant's name is letters, digits, '_', '-' and '.', not dots alone (it names files)",
            ));
        }
        let mut variant = Variant {
            name,
            launch: launch.clone(),
            arguments: arguments.clone(),
            unmodified,
        };
        if !matches!(v.value, Value::Null) {
            for (key, child) in v.mapping(&["arguments", "launch"])? {
                if key == "launch" {
                    variant.launch = existing_file(&child, dir)?;
                } else {
                    variant.arguments.extend(parse_arguments(&child)?);
                }
            }
        }
        variants.push(variant);
    }
    if variants.is_empty() {
        variants.push(Variant {
            name: "default".into(),
            launch,
            arguments,
            unmodified,
        });
    }
    Ok((variants, live))
}

fn existing_file(node: &Node<'_>, dir: &Path) -> Result<PathBuf> {
    let text = node.text()?;
    let path = dir.join(&text);
    if !path.is_file() {
        return Err(node.err(format!("{}: no such file", path.display())));
    }
    Ok(path)
}

fn parse_replay(node: &Node<'_>, mut settings: ReplaySettings) -> Result<ReplaySettings> {
    let allowed = ["timeout_ms", "discovery_s", "frames", "repeat", "fail_on_skipped"];
    for (key, child) in node.mapping(&allowed)? {
        match key.as_str() {
            "timeout_ms" => settings.timeout_ms = child.number((1.0, 3_600_000.0))? as u64,
            "repeat" => settings.repeat = child.runs()?,
            "fail_on_skipped" => settings.fail_on_skipped = child.boolean()?,
            "discovery_s" => settings.discovery_ms = (child.number((0.0, 3600.0))? * 1000.0) as u64,
            _ => {
                let frames = child.text()?;
                if frames != "all" && !is_node_name(&frames) {
                    return Err(child.err(format!(
                        "`{frames}` is neither `all` nor a module's node name (letters, digits, '_', '/', \
                         not starting with a digit)"
                    )));
                }
                settings.frames = frames;
            }
        }
    }
    Ok(settings)
}

fn parse_tolerance(node: &Node<'_>, into: &mut Tolerance) -> Result<bool> {
    let mut any = false;
    for (key, child) in node.mapping(&[])? {
        match key.as_str() {
            "abs_tol" => into.abs = child.number((0.0, f64::MAX))?,
            "rel_tol" => into.rel = child.number((0.0, f64::MAX))?,
            "exact" => {
                if child.value != &Value::Bool(true) {
                    return Err(
                        child.err("only `exact: true` is meaningful (give abs_tol or rel_tol instead)")
                    );
                }
            }
            _ => continue,
        }
        any = true;
    }
    Ok(any)
}

fn parse_expect(node: &Node<'_>) -> Result<BTreeMap<String, ChannelExpect>> {
    let mut out = BTreeMap::new();
    for (channel, child) in node.mapping(&[])? {
        if !channel.starts_with('/') {
            return Err(child.err("a channel is a fully qualified topic name (starting with '/')"));
        }
        let mut expect = ChannelExpect::default();
        if child.value == &Value::String("exact".into()) {
            out.insert(channel, expect);
            continue;
        }
        let allowed = ["exact", "abs_tol", "rel_tol", "max_differing_fraction", "fields"];
        let mut tolerance = Tolerance::default();
        for (key, grand) in child.mapping(&allowed)? {
            match key.as_str() {
                "max_differing_fraction" => expect.max_differing_fraction = grand.number((0.0, 1.0))?,
                "fields" => {
                    for (field, spec) in grand.mapping(&[])? {
                        if !is_field_path(&field) {
                            return Err(spec.err(format!(
                                "`{field}` is not a field path: names joined by '.', an array's elements \
                                 written `[]` (`poses[].position.x`)"
                            )));
                        }
                        let mut t = Tolerance::default();
                        if spec.value != &Value::String("exact".into()) {
                            spec.mapping(&["exact", "abs_tol", "rel_tol"])?;
                            parse_tolerance(&spec, &mut t)?;
                        }
                        expect.fields.insert(fold_indices(&field), t);
                    }
                }
                _ => {}
            }
        }
        if parse_tolerance(&child, &mut tolerance)? && tolerance != Tolerance::default() {
            expect.default = Some(tolerance);
        }
        out.insert(channel, expect);
    }
    Ok(out)
}

fn parse_assert(node: &Node<'_>, dir: &Path) -> Result<Vec<(String, String)>> {
    let mut sources = Vec::new();
    if let Value::String(text) = node.value {
        sources.push((text.clone(), format!("{}", node.file.display())));
    } else {
        for (key, child) in node.mapping(&["rules", "files"])? {
            if key == "rules" {
                sources.push((child.text()?, format!("{} (assert.rules)", node.file.display())));
                continue;
            }
            for item in child.list()? {
                let path = existing_file(&item, dir)?;
                let text = lockstep_ranges::file::read_text(&path, MAX_SUITE_BYTES)
                    .map_err(|e| item.err(format!("{}: {e}", path.display())))?;
                sources.push((text, path.display().to_string()));
            }
        }
    }
    let borrowed: Vec<(&str, &str)> = sources.iter().map(|(t, o)| (t.as_str(), o.as_str())).collect();
    let rules = lockstep_rules::RuleSet::parse_sources(&borrowed).map_err(|e| node.err(e.to_string()))?;
    if !rules.derived_predicates().contains(&"violation") {
        return Err(node.err("the rules derive no `violation`: write e.g. `violation(T) :- cmd_vel(T, \"linear.x\", V), V > 1.0.`"));
    }
    Ok(sources)
}

/// A ROS node name as a module is named in a recording's topology, optionally with its namespace.
fn is_node_name(text: &str) -> bool {
    let base = text.rsplit('/').next().unwrap_or_default();
    !base.is_empty()
        && !base.starts_with(|c: char| c.is_ascii_digit())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/')
}

/// `poses[].position.x`, `data`, `a[3].b`: names joined by '.', each with optional `[]` / `[N]` suffixes.
fn is_field_path(text: &str) -> bool {
    text.split('.').all(|segment| {
        let name = segment.split('[').next().unwrap_or_default();
        let indices = &segment[name.len()..];
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && indices.split_inclusive(']').all(|index| {
                index.starts_with('[')
                    && index.ends_with(']')
                    && index[1..index.len() - 1].chars().all(|c| c.is_ascii_digit())
            })
    })
}
