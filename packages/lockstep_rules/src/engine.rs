//! The host-facing API: [`RuleSet`] (parsed and checked rules), [`Facts`] (one tick's input) and
//! [`Engine`] (evaluation, queries and hot replacement of the rules).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::check;
use crate::directives::{self, Directives};
use crate::error::{Error, Result};
use crate::eval::Database;
use crate::limits::MAX_TEXT_BYTES;
use crate::lint::{self, Warning};
use crate::parser;
use crate::plan;
use crate::program::Program;
use crate::value::Value;

/// A tuple of a relation, as returned by queries.
pub type Tuple = Vec<Value>;

/// Rules and facts parsed from one or more sources and checked: arities agree, every variable is bound,
/// and the program is stratifiable. Cheap to clone (the compiled program is shared).
#[derive(Debug, Clone)]
pub struct RuleSet {
    program: Arc<Program>,
    origins: Vec<String>,
    /// Variables used once per rule.
    singletons: Arc<[Warning]>,
    /// Body predicates nothing defines, with their warning.
    undefined: Arc<[(String, Warning)]>,
    /// `.decl`, `.input`, `.output`.
    directives: Arc<Directives>,
}

impl RuleSet {
    /// Parses and checks one source; `origin` names it in diagnostics (use the file path).
    pub fn parse(text: &str, origin: &str) -> Result<RuleSet> {
        Self::parse_sources(&[(text, origin)])
    }

    /// Parses and checks several sources as one program (e.g. `surface.dl` and `behaviour.dl`).
    /// Every source's syntax errors are reported before the checks that need the whole program.
    pub fn parse_sources(sources: &[(&str, &str)]) -> Result<RuleSet> {
        let mut clauses = Vec::new();
        let mut directives = Directives::default();
        let mut errors = Vec::new();
        for (text, origin) in sources {
            match parser::parse(text, origin) {
                Ok((mut c, d)) => {
                    clauses.append(&mut c);
                    directives.decls.extend(d.decls);
                    directives.inputs.extend(d.inputs);
                    directives.outputs.extend(d.outputs);
                }
                Err(e) => errors.push(e),
            }
        }
        if let Some(err) = Error::from_list(errors) {
            return Err(err);
        }
        if let Some(err) = Error::from_list(directives::check(&clauses, &directives)) {
            return Err(err);
        }
        // Every check on all sources together, then the join plans.
        let program = check::check(&clauses).and_then(plan::compile)?;
        Ok(RuleSet {
            program: Arc::new(program),
            origins: sources.iter().map(|(_, o)| (*o).to_owned()).collect(),
            singletons: lint::singletons(&clauses).into(),
            undefined: lint::undefined(&clauses).into(),
            directives: Arc::new(directives),
        })
    }

    /// Reads, parses and checks one rule file.
    pub fn load(path: impl AsRef<Path>) -> Result<RuleSet> {
        Self::load_all(&[path.as_ref()])
    }

    /// Reads, parses and checks several rule files as one program.
    pub fn load_all<P: AsRef<Path>>(paths: &[P]) -> Result<RuleSet> {
        let mut texts = Vec::with_capacity(paths.len());
        for path in paths {
            let path = path.as_ref();
            let text = read_text(path).map_err(|source| Error::Io {
                path: PathBuf::from(path),
                source,
            })?;
            texts.push((text, path.display().to_string()));
        }
        let sources: Vec<(&str, &str)> = texts.iter().map(|(t, o)| (t.as_str(), o.as_str())).collect();
        Self::parse_sources(&sources)
    }

    /// Likely mistakes that did not stop the rules from loading, sorted by place: variables used once in a
    /// rule, and body predicates that nothing defines unless named in `inputs` or by `.input` (predicates
    /// whose facts come from outside: asserted at run time or given with `--facts`).
    pub fn warnings(&self, inputs: &[&str]) -> Vec<Warning> {
        let mut out: Vec<Warning> = self.singletons.to_vec();
        out.extend(
            (self.undefined.iter())
                .filter(|(name, _)| {
                    !inputs.contains(&name.as_str()) && !self.directives.inputs.contains(name)
                })
                .map(|(_, w)| w.clone()),
        );
        out.sort();
        out
    }

    /// The `.decl`, `.input` and `.output` directives of the sources.
    pub fn directives(&self) -> &Directives {
        &self.directives
    }

    /// The origin names of the sources, in load order.
    pub fn origins(&self) -> &[String] {
        &self.origins
    }

    /// Every predicate the rules mention, with its arity, sorted by name.
    pub fn predicates(&self) -> Vec<(&str, usize)> {
        let mut v: Vec<(&str, usize)> = self
            .program
            .preds
            .iter()
            .map(|p| (p.name.as_str(), p.arity))
            .collect();
        v.sort_unstable();
        v
    }

    /// The predicates some rule derives (the IDB), sorted by name.
    pub fn derived_predicates(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .program
            .preds
            .iter()
            .filter(|p| p.derived)
            .map(|p| p.name.as_str())
            .collect();
        v.sort_unstable();
        v
    }

    /// The predicates the sources define, by a rule or by a fact, sorted by name.
    pub fn defined_predicates(&self) -> Vec<&str> {
        let p = &self.program;
        let mut has_facts = vec![false; p.preds.len()];
        for (f, _) in &p.base_facts {
            has_facts[*f] = true;
        }
        let mut v: Vec<&str> = (p.preds.iter().enumerate())
            .filter(|(id, info)| info.derived || has_facts[*id])
            .map(|(_, info)| info.name.as_str())
            .collect();
        v.sort_unstable();
        v
    }

    /// The arity of `predicate`, if the rules mention it.
    pub fn arity(&self, predicate: &str) -> Option<usize> {
        self.program
            .pred_id(predicate)
            .map(|id| self.program.preds[id].arity)
    }

    /// Number of rules (a rule with `|` counts once per alternative).
    pub fn rule_count(&self) -> usize {
        self.program.strata.iter().map(|s| s.rules.len()).sum()
    }
}

/// Reads a rule file as UTF-8 text: at most one byte past [`MAX_TEXT_BYTES`] is read (the parser refuses a
/// longer text with the limit), and a byte that is not UTF-8 is named by its offset.
fn read_text(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    // A FIFO would block the open for ever, `/dev/zero` never end: only a regular file is read.
    lockstep_ranges::file::check_regular(path, u64::MAX).map_err(std::io::Error::other)?;
    let mut bytes = Vec::new();
    let limit = u64::try_from(MAX_TEXT_BYTES)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    std::fs::File::open(path)?.take(limit).read_to_end(&mut bytes)?;
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text: invalid byte at offset {offset}"),
        )
    })
}

/// A batch of facts, e.g. one tick's sensor readings.
///
/// ```
/// use lockstep_rules::Facts;
/// let mut facts = Facts::new();
/// facts.add("free_front", [2.5]).add("state", ["explore"]).flag("at_destination");
/// facts.add("cell", [lockstep_rules::Value::from(3), "gravel".into()]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Facts {
    rows: Vec<(String, Tuple)>,
}

impl Facts {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `predicate(args...)`.
    pub fn add<I, V>(&mut self, predicate: &str, args: I) -> &mut Self
    where
        I: IntoIterator<Item = V>,
        V: Into<Value>,
    {
        self.rows
            .push((predicate.to_owned(), args.into_iter().map(Into::into).collect()));
        self
    }

    /// Adds the argument-less fact `predicate` (e.g. `at_destination`).
    pub fn flag(&mut self, predicate: &str) -> &mut Self {
        self.rows.push((predicate.to_owned(), Vec::new()));
        self
    }

    /// Number of facts.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The facts in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[Value])> {
        self.rows.iter().map(|(p, t)| (p.as_str(), t.as_slice()))
    }
}

/// Default for [`Engine::set_max_seconds`].
pub const DEFAULT_MAX_SECONDS: f64 = 60.0;

/// Default for [`Engine::set_max_tuples`].
pub const DEFAULT_MAX_TUPLES: usize = 50_000_000;

/// Evaluates a [`RuleSet`] over its own facts plus per-tick facts.
///
/// A tick is: [`Engine::assert_facts`] (any number of times), [`Engine::evaluate`], then [`Engine::query`].
/// Facts asserted for a tick are consumed by `evaluate`, so the next tick starts from the rule files' facts
/// alone; the results stay queryable until the next `evaluate`.
#[derive(Debug)]
pub struct Engine {
    rules: RuleSet,
    db: Database,
    /// This tick's facts for predicates the rules know, by predicate id.
    tick: Vec<(usize, Tuple)>,
    /// Facts for predicates the rules do not mention: kept so that queries still see them, by name.
    extra: BTreeMap<String, Vec<Tuple>>,
    /// Result of the last evaluation for `extra` predicates.
    extra_result: BTreeMap<String, Vec<Tuple>>,
    max_tuples: usize,
    /// Seconds one evaluation may take (infinite: no limit).
    max_secs: f64,
    evaluated: bool,
}

impl Engine {
    /// An engine running `rules`.
    pub fn new(rules: RuleSet) -> Self {
        let db = Database::new(&rules.program);
        Engine {
            rules,
            db,
            tick: Vec::new(),
            extra: BTreeMap::new(),
            extra_result: BTreeMap::new(),
            max_tuples: DEFAULT_MAX_TUPLES,
            max_secs: DEFAULT_MAX_SECONDS,
            evaluated: false,
        }
    }

    /// The rules in force.
    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// Replaces the rules. Loading and checking happen before this call (a [`RuleSet`] is always valid), so
    /// a rule file that fails to load never reaches the engine and the previous rules stay in force.
    /// Facts already asserted for the coming tick are kept when the new rules agree on their arity.
    pub fn replace_rules(&mut self, rules: RuleSet) {
        let pending: Vec<(String, Tuple)> = self
            .tick
            .drain(..)
            .map(|(p, t)| (self.rules.program.preds[p].name.clone(), t))
            .chain(
                self.extra
                    .iter()
                    .flat_map(|(p, ts)| ts.iter().map(|t| (p.clone(), t.clone()))),
            )
            .collect();
        self.extra.clear();
        self.db = Database::new(&rules.program);
        self.rules = rules;
        self.evaluated = false;
        let facts = Facts { rows: pending };
        // Facts whose arity no longer fits the new rules are dropped: they were meant for the old ones.
        for (p, t) in facts.iter() {
            let mut one = Facts::new();
            one.add(p, t.iter().copied());
            let _ = self.assert_facts(&one);
        }
    }

    /// Loads `paths` as a new rule set and swaps it in; on any error the current rules stay in force and
    /// the error is returned.
    pub fn reload<P: AsRef<Path>>(&mut self, paths: &[P]) -> Result<()> {
        let rules = RuleSet::load_all(paths)?;
        self.replace_rules(rules);
        Ok(())
    }

    /// Caps the number of tuples one evaluation may hold, so that a rule generating values without bound
    /// fails with [`Error::TupleLimit`] instead of exhausting memory.
    pub fn set_max_tuples(&mut self, max_tuples: usize) {
        self.max_tuples = max_tuples;
    }

    /// Caps the time one evaluation may take, so that a rule deriving one new row per round without end fails
    /// with [`Error::TimeLimit`] instead of running for ever (the tuple cap would take hours to reach);
    /// infinity: no limit.
    pub fn set_max_seconds(&mut self, secs: f64) {
        self.max_secs = secs;
    }

    /// Adds facts for the coming evaluation. The batch is checked first: on an arity error nothing is added.
    pub fn assert_facts(&mut self, facts: &Facts) -> Result<()> {
        let program = &self.rules.program;
        let mut extra_arity: BTreeMap<&str, usize> = BTreeMap::new();
        for (name, tuple) in facts.iter() {
            match program.pred_id(name) {
                Some(id) => {
                    let info = &program.preds[id];
                    if info.arity != tuple.len() {
                        return Err(Error::FactArity {
                            predicate: name.to_owned(),
                            expected: info.arity,
                            found: tuple.len(),
                            location: info.location.clone(),
                        });
                    }
                }
                None => {
                    let first = self
                        .extra
                        .get(name)
                        .and_then(|ts| ts.first().map(Vec::len))
                        .or_else(|| extra_arity.get(name).copied());
                    match first {
                        Some(a) if a != tuple.len() => {
                            return Err(Error::InconsistentFacts {
                                predicate: name.to_owned(),
                                first: a,
                                found: tuple.len(),
                            })
                        }
                        _ => {
                            extra_arity.insert(name, tuple.len());
                        }
                    }
                }
            }
        }
        for (name, tuple) in facts.iter() {
            match program.pred_id(name) {
                Some(id) => self.tick.push((id, tuple.to_vec())),
                None => self
                    .extra
                    .entry(name.to_owned())
                    .or_default()
                    .push(tuple.to_vec()),
            }
        }
        Ok(())
    }

    /// Adds one fact for the coming evaluation.
    pub fn assert_fact<I, V>(&mut self, predicate: &str, args: I) -> Result<()>
    where
        I: IntoIterator<Item = V>,
        V: Into<Value>,
    {
        let mut facts = Facts::new();
        facts.add(predicate, args);
        self.assert_facts(&facts)
    }

    /// Drops the facts asserted since the last evaluation.
    pub fn clear_facts(&mut self) {
        self.tick.clear();
        self.extra.clear();
    }

    /// Computes every relation from the rule files' facts and the asserted facts, which are then cleared.
    /// On [`Error::TupleLimit`] the results are empty until the next successful evaluation.
    pub fn evaluate(&mut self) -> Result<()> {
        let program = Arc::clone(&self.rules.program);
        self.db.clear();
        for (pred, tuple) in &program.base_facts {
            self.db.rels[*pred].insert(tuple);
        }
        for (pred, tuple) in self.tick.drain(..) {
            self.db.rels[pred].insert(&tuple);
        }
        self.extra_result = std::mem::take(&mut self.extra);
        let bounds = crate::eval::Bounds {
            max_tuples: self.max_tuples,
            deadline: (self.max_secs.is_finite() && self.max_secs > 0.0).then(|| {
                (
                    std::time::Instant::now() + std::time::Duration::from_secs_f64(self.max_secs),
                    self.max_secs,
                )
            }),
        };
        let result = self.db.evaluate(&program, bounds);
        if result.is_err() {
            self.db.clear();
        }
        self.evaluated = true;
        result
    }

    /// Evaluates `facts` as one tick: clears anything asserted before, asserts `facts`, evaluates.
    pub fn tick(&mut self, facts: &Facts) -> Result<()> {
        self.clear_facts();
        self.assert_facts(facts)?;
        self.evaluate()
    }

    /// The tuples of `predicate` after the last evaluation, sorted.
    pub fn query(&self, predicate: &str) -> Result<Vec<Tuple>> {
        let mut out = Vec::new();
        self.query_into(predicate, |t| out.push(t.to_vec()))?;
        out.sort_unstable();
        Ok(out)
    }

    /// Calls `f` on every tuple of `predicate` after the last evaluation, in no particular order and
    /// without allocating: for hosts that only scan a result.
    pub fn query_into(&self, predicate: &str, mut f: impl FnMut(&[Value])) -> Result<()> {
        match self.rules.program.pred_id(predicate) {
            Some(id) => {
                if self.evaluated {
                    let rel = &self.db.rels[id];
                    for r in 0..rel.len() {
                        f(rel.row(r));
                    }
                }
                Ok(())
            }
            None => match self.extra_result.get(predicate) {
                Some(ts) => {
                    let mut sorted = ts.clone();
                    sorted.sort_unstable();
                    sorted.dedup();
                    sorted.iter().for_each(|t| f(t));
                    Ok(())
                }
                None => Err(Error::UnknownPredicate {
                    predicate: predicate.to_owned(),
                }),
            },
        }
    }

    /// Number of tuples of `predicate` after the last evaluation.
    pub fn count(&self, predicate: &str) -> Result<usize> {
        match self.rules.program.pred_id(predicate) {
            Some(id) => Ok(if self.evaluated { self.db.rels[id].len() } else { 0 }),
            None => self.query(predicate).map(|v| v.len()),
        }
    }

    /// Whether `predicate(args...)` holds after the last evaluation (`contains("at_destination", [])`).
    pub fn contains<I, V>(&self, predicate: &str, args: I) -> Result<bool>
    where
        I: IntoIterator<Item = V>,
        V: Into<Value>,
    {
        let tuple: Tuple = args.into_iter().map(Into::into).collect();
        match self.rules.program.pred_id(predicate) {
            Some(id) => Ok(self.evaluated && self.db.rels[id].contains(&tuple)),
            None => Ok(self.query(predicate)?.contains(&tuple)),
        }
    }
}
