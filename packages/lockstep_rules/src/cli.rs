//! `lockstep rules eval|check`: evaluate or check rule files from the command line.
//!
//! ```text
//! lockstep rules eval config/rules/surface.dl config/rules/behaviour.dl --facts tick.json --output next_state
//! lockstep rules check config/rules/*.dl
//! ```
//!
//! `facts.json` is `{"pred": [[arg, ...], ...]}`: integers, floats and strings (symbols). The output is the
//! same shape with every tuple list sorted, for the relations named by `--output` or, by default, every
//! relation some rule derives. Diagnostics go to stderr, one `file:line:column: error: ...` per line, and the
//! exit status is non-zero.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, bail, Context};
use clap::{Args, Subcommand};
use serde_json::Value as Json;

use crate::{Engine, Facts, RuleSet, Value};

/// Arguments of `lockstep rules`.
#[derive(Debug, Args)]
pub struct RulesArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: RulesCommand,
}

/// The `lockstep rules` subcommands.
#[derive(Debug, Subcommand)]
pub enum RulesCommand {
    /// Evaluate rule files (with optional facts) and print relations as JSON.
    Eval {
        /// Rule files, loaded as one program (facts may be written in them too).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// JSON facts: {"pred": [[args...], ...]}.
        #[arg(long)]
        facts: Option<PathBuf>,
        /// Soufflé-style: read each `.input` relation from DIR/<relation>.facts (tab-separated).
        #[arg(long, value_name = "DIR")]
        facts_dir: Option<PathBuf>,
        /// Soufflé-style: write each `.output` relation to DIR/<relation>.csv (tab-separated) instead of JSON.
        #[arg(long, value_name = "DIR")]
        output_dir: Option<PathBuf>,
        /// Relation to print (repeatable); default: every derived relation.
        #[arg(long = "output", value_name = "PRED")]
        outputs: Vec<String>,
        /// Print tuple counts instead of tuples: {"pred": N}.
        #[arg(long)]
        count: bool,
        /// Print load and evaluation times to stderr.
        #[arg(long)]
        time: bool,
        /// Stop with an error once evaluation holds more tuples than this.
        #[arg(long, default_value_t = crate::DEFAULT_MAX_TUPLES)]
        max_tuples: usize,
        /// Stop with an error once evaluation has run this many seconds without reaching a fixpoint.
        #[arg(long, default_value_t = crate::DEFAULT_MAX_SECONDS, value_parser = max_seconds)]
        max_seconds: f64,
    },
    /// Parse and check rule files; print every diagnostic, then the warnings (variables used once, predicates
    /// nothing defines).
    Check {
        /// Rule files, checked as one program.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// A predicate whose facts come from outside (asserted at run time): not "never defined". Repeatable,
        /// or comma-separated.
        #[arg(long = "input", value_name = "PRED", value_delimiter = ',')]
        inputs: Vec<String>,
    },
}

/// `--max-seconds`: a finite number of seconds > 0 (at most a day).
fn max_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!(
            "`{}` is not a number of seconds in (0, 86400]",
            text.chars().take(40).collect::<String>()
        )),
    }
}

/// Runs `lockstep rules ...`.
pub fn run(args: RulesArgs) -> anyhow::Result<()> {
    match args.command {
        RulesCommand::Check { files, inputs } => check(&files, &inputs),
        RulesCommand::Eval {
            files,
            facts,
            facts_dir,
            output_dir,
            outputs,
            count,
            time,
            max_tuples,
            max_seconds,
        } => {
            let start = Instant::now();
            let mut engine = load_engine(&files, facts.as_deref(), facts_dir.as_deref(), max_tuples)?;
            engine.set_max_seconds(max_seconds);
            let loaded = start.elapsed();
            let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            (engine.evaluate()).with_context(|| format!("evaluating {}", names.join(", ")))?;
            let evaluated = start.elapsed() - loaded;
            if time {
                eprintln!(
                    "load {:.3} ms, evaluate {:.3} ms",
                    loaded.as_secs_f64() * 1e3,
                    evaluated.as_secs_f64() * 1e3
                );
            }
            if let Some(dir) = &output_dir {
                for path in crate::tsv::write_outputs(&engine, dir)? {
                    eprintln!("wrote {path}");
                }
                return Ok(());
            }
            print_relations(&engine, outputs, count)
        }
    }
}

/// `lockstep rules check`: loads the files (printing every diagnostic), then prints the warnings.
fn check(files: &[PathBuf], inputs: &[String]) -> anyhow::Result<()> {
    let rules = load(files)?;
    let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let warnings = rules.warnings(&inputs);
    for w in &warnings {
        eprintln!("{w}");
    }
    eprintln!(
        "ok: {} rule(s), {} predicate(s) in {} file(s), {} warning(s)",
        rules.rule_count(),
        rules.predicates().len(),
        files.len(),
        warnings.len()
    );
    Ok(())
}

/// An engine over the rule `files`, holding the facts of the JSON file `facts` and of the `.facts`
/// files in `facts_dir`.
fn load_engine(
    files: &[PathBuf],
    facts: Option<&Path>,
    facts_dir: Option<&Path>,
    max_tuples: usize,
) -> anyhow::Result<Engine> {
    let rules = load(files)?;
    let mut engine = Engine::new(rules);
    engine.set_max_tuples(max_tuples);
    if let Some(path) = facts {
        let batch = read_facts(path)?;
        engine
            .assert_facts(&batch)
            .with_context(|| format!("facts in {}", path.display()))?;
    }
    if let Some(dir) = facts_dir {
        let batch = crate::tsv::read_inputs(engine.rules(), dir)?;
        engine
            .assert_facts(&batch)
            .with_context(|| format!("facts in {}", dir.display()))?;
    }
    Ok(engine)
}

/// Prints the relations `outputs` (default: every derived one) as one JSON object: each relation's
/// tuples, or with `count` its number of tuples.
fn print_relations(engine: &Engine, outputs: Vec<String>, count: bool) -> anyhow::Result<()> {
    let names: Vec<String> = if outputs.is_empty() {
        engine
            .rules()
            .derived_predicates()
            .into_iter()
            .map(str::to_owned)
            .collect()
    } else {
        outputs
    };
    let mut out = serde_json::Map::new();
    for name in names {
        let value = if count {
            Json::from(engine.count(&name)?)
        } else {
            Json::Array(
                engine
                    .query(&name)?
                    .iter()
                    .map(|t| Json::Array(t.iter().map(|v| to_json(*v)).collect()))
                    .collect(),
            )
        };
        out.insert(name, value);
    }
    println!("{}", Json::Object(out));
    Ok(())
}

fn load(files: &[PathBuf]) -> anyhow::Result<RuleSet> {
    RuleSet::load_all(files).map_err(|err| {
        let diagnostics = err.diagnostics();
        for d in &diagnostics {
            eprintln!("{d}");
        }
        anyhow!("{} error(s); rules not loaded", diagnostics.len())
    })
}

fn to_json(v: Value) -> Json {
    match v {
        Value::Int(i) => Json::from(i),
        Value::Float(x) => Json::from(x.get()),
        Value::Sym(s) => Json::from(s.as_str()),
    }
}

/// Reads `{"pred": [[args...], ...]}`, naming the offending `pred[row][column]` on a bad value.
pub fn read_facts(path: &Path) -> anyhow::Result<Facts> {
    let text = lockstep_ranges::file::read_text(path, crate::limits::MAX_TEXT_BYTES as u64)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let json: Json =
        serde_json::from_str(&text).with_context(|| format!("{} is not valid JSON", path.display()))?;
    let Json::Object(map) = json else {
        bail!(
            "{}: expected an object {{\"pred\": [[args...], ...]}}",
            path.display()
        );
    };
    let sorted: BTreeMap<String, Json> = map.into_iter().collect();
    let mut facts = Facts::new();
    for (pred, rows) in sorted {
        let Json::Array(rows) = rows else {
            bail!("{}: `{pred}` must be an array of argument arrays", path.display());
        };
        for (r, row) in rows.iter().enumerate() {
            let Json::Array(args) = row else {
                bail!("{}: `{pred}[{r}]` must be an array of arguments", path.display());
            };
            let mut tuple = Vec::with_capacity(args.len());
            for (c, arg) in args.iter().enumerate() {
                tuple.push(match arg {
                    Json::Number(n) => match (n.as_i64(), n.as_f64()) {
                        (Some(i), _) => Value::Int(i),
                        (None, Some(x)) => Value::from(x),
                        _ => bail!(
                            "{}: `{pred}[{r}][{c}]`: number {n} is out of range",
                            path.display()
                        ),
                    },
                    Json::String(s) => Value::from(s.as_str()),
                    other => bail!(
                        "{}: `{pred}[{r}][{c}]`: expected a number or a string, found {other}",
                        path.display()
                    ),
                });
            }
            facts.add(&pred, tuple);
        }
    }
    Ok(facts)
}
