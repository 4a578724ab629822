//! What the environment tells the schedulers: facts for `condition` attributes (Datalog, evaluated by
//! `lockstep_rules` over the rule files and the latest facts from `/task_facts`) and which actuators are busy
//! (from `/actuator_states`). Times are seconds on the caller's clock, given with each call: nothing here
//! reads a clock.
//!
//! A condition's query is a rule body: `clear(dock_b)`, `door(d1, open), !alarm`. It holds when the rule
//! `condition :- <query>.` derives `condition` from the rules and facts in force.

use crate::scheduler::Conditions;
use lockstep_rules::{Engine, RuleSet};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

const HEAD: &str = "lockstep_condition__";

/// How deep brackets may nest in a rule text before it is refused unparsed: the rules parser descends
/// recursively, and a message nested thousands deep would exhaust its stack. Real rules stay far below.
pub const MAX_NESTING: usize = 256;

/// Refuse a text whose brackets nest deeper than [`MAX_NESTING`] (strings and comments aside), naming the
/// byte offset where it does.
pub fn check_nesting(text: &str, origin: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'%' => i = skip_line(bytes, i),
            b'/' if bytes.get(i + 1) == Some(&b'/') => i = skip_line(bytes, i),
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = (text[i + 2..].find("*/")).map_or(bytes.len(), |end| i + 2 + end + 1);
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(format!(
                        "{origin}: byte {i}: brackets nested deeper than {MAX_NESTING}; refused unparsed"
                    ));
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// The index of the end of the line at `i`.
fn skip_line(bytes: &[u8], i: usize) -> usize {
    bytes[i..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |n| i + n)
}

/// The default of [`Environment::max_seconds`] (the task manager's parameter `rules_max_seconds`).
pub const DEFAULT_RULES_MAX_SECONDS: f64 = 1.0;

/// The rule that asks `query`.
fn rule(query: &str) -> String {
    format!("{HEAD} :- {}.", query.trim().trim_end_matches('.'))
}

/// Check a query's syntax (an AddAttribute or a configuration's condition), with the reason if it is bad.
pub fn check_query(query: &str) -> Result<(), String> {
    check_nesting(query, "condition")?;
    RuleSet::parse(&rule(query), "condition")
        .map(drop)
        .map_err(|e| format!("condition `{query}`: {e}"))
}

#[derive(Default)]
pub struct Environment {
    /// Rule files' (origin, text), loaded at start.
    rules: Vec<(String, String)>,
    /// The latest /task_facts message (Datalog facts and rules).
    facts: String,
    /// Query -> whether it holds, for the facts in force; cleared when they change.
    answers: RefCell<BTreeMap<String, bool>>,
    /// Problems evaluating a query, reported once each by the node: (query, why).
    pub errors: RefCell<Vec<(String, String)>>,
    /// (Robot, actuator name) -> its action server, fully qualified (as /actuator_states names it).
    pub servers: BTreeMap<(String, String), String>,
    /// Actuator name -> the condition that blocks it (`blocked_by`).
    pub blocked_by: BTreeMap<String, String>,
    /// Actuators that pause along their path instead of being cancelled when their task pauses (an arm).
    pub pausable: BTreeSet<String>,
    /// Action server -> (busy seconds left, when that was reported [s]).
    busy: BTreeMap<String, (f64, f64)>,
    /// Action server -> when each goal cancelled on it and not yet ended was cancelled [s].
    draining: BTreeMap<String, Vec<f64>>,
    /// How long a cancelled goal may take to end before its actuator is used again anyway [s].
    pub drain_timeout_s: f64,
    /// Wall seconds one evaluation of the rules may take (> 0): the manager's loop waits for it.
    pub max_seconds: f64,
}

/// An actuator's state as last heard, for ListTasks.
#[derive(Debug, Clone, PartialEq)]
pub struct ActuatorLoad {
    pub server: String,
    /// Busy seconds left now.
    pub remaining_s: f64,
    /// Seconds since it was heard.
    pub age_s: f64,
}

impl Environment {
    pub fn new(rules: Vec<(String, String)>) -> Self {
        Self {
            rules,
            max_seconds: DEFAULT_RULES_MAX_SECONDS,
            ..Self::default()
        }
    }

    /// New facts from /task_facts; refused (and the old ones kept) if they do not parse with the rules, or
    /// if the rules do not evaluate with them (one that never reaches a fixpoint stops at
    /// [`Self::max_seconds`]): every condition would fail on them.
    pub fn set_facts(&mut self, text: String) -> Result<(), String> {
        check_nesting(&text, "/task_facts")?;
        for (origin, rules) in &self.rules {
            check_nesting(rules, origin)?;
        }
        let mut sources: Vec<(&str, &str)> =
            self.rules.iter().map(|(o, t)| (t.as_str(), o.as_str())).collect();
        sources.push((&text, "/task_facts"));
        let rules = RuleSet::parse_sources(&sources).map_err(|e| e.to_string())?;
        let mut engine = Engine::new(rules);
        engine.set_max_seconds(self.max_seconds);
        engine.evaluate().map_err(|e| self.failure(&e))?;
        self.facts = text;
        self.answers.borrow_mut().clear();
        Ok(())
    }

    /// What a failed evaluation says: for one stopped at its time limit, the rule files and the limit.
    fn failure(&self, e: &lockstep_rules::Error) -> String {
        match e {
            lockstep_rules::Error::TimeLimit { secs } => {
                let files: Vec<&str> = self.rules.iter().map(|(o, _)| o.as_str()).collect();
                format!(
                    "evaluation stopped at its time limit of {secs} s (rules_max_seconds) without reaching a \
                     fixpoint: a rule of {} probably derives values without bound (like `p(N + 1) :- p(N).`)",
                    files.join(", ")
                )
            }
            other => other.to_string(),
        }
    }

    /// Evaluate `query` now (its answer kept for [`Self::holds`]); an evaluation that stops at its time limit
    /// is an error with the reason (which does not repeat the query). Other errors are reported when the
    /// condition is evaluated.
    pub fn check_in_time(&self, query: &str) -> Result<(), String> {
        if self.answers.borrow().contains_key(query) {
            return Ok(());
        }
        match self.evaluate(query) {
            Ok(answer) => {
                self.answers.borrow_mut().insert(query.to_owned(), answer);
                Ok(())
            }
            Err(e @ lockstep_rules::Error::TimeLimit { .. }) => Err(self.failure(&e)),
            // Other errors are reported (once) when the condition is evaluated, as before.
            Err(_) => Ok(()),
        }
    }

    /// An actuator's state from /actuator_states, heard at `now`.
    pub fn set_busy(&mut self, server: &str, busy: bool, remaining_secs: f64, now: f64) {
        let remaining = if busy && remaining_secs.is_finite() {
            remaining_secs.max(0.0)
        } else {
            0.0
        };
        self.busy.insert(server.to_owned(), (remaining, now));
    }

    /// Every actuator state heard, by server, as ListTasks reports it: the seconds left at `now` and how
    /// long ago it was heard.
    pub fn actuator_loads(&self, now: f64) -> Vec<ActuatorLoad> {
        (self.busy.iter())
            .map(|(server, (remaining, at))| ActuatorLoad {
                server: server.clone(),
                remaining_s: (remaining - (now - at)).max(0.0),
                age_s: (now - at).max(0.0),
            })
            .collect()
    }

    /// A goal on `server` was cancelled at `now`: hold its next goal back until this one ends.
    pub fn draining(&mut self, server: &str, now: f64) {
        self.draining.entry(server.to_owned()).or_default().push(now);
    }

    /// A cancelled goal on `server` ended.
    pub fn drained(&mut self, server: &str) {
        if let Some(started) = self.draining.get_mut(server) {
            if !started.is_empty() {
                started.remove(0);
            }
        }
    }

    /// The condition blocking `actuator` now, if one holds.
    pub fn blocked(&self, actuator: &str) -> Option<&str> {
        let query = self.blocked_by.get(actuator)?;
        self.holds(query).then_some(query.as_str())
    }

    fn evaluate(&self, query: &str) -> Result<bool, lockstep_rules::Error> {
        let asked = rule(query);
        let mut sources: Vec<(&str, &str)> =
            self.rules.iter().map(|(o, t)| (t.as_str(), o.as_str())).collect();
        sources.push((&self.facts, "/task_facts"));
        sources.push((&asked, "condition"));
        let mut engine = Engine::new(RuleSet::parse_sources(&sources)?);
        engine.set_max_seconds(self.max_seconds);
        engine.evaluate()?;
        Ok(engine.count(HEAD)? > 0)
    }
}

impl Environment {
    /// What `robot`'s tasks see at `now`: the shared facts, and the states of that robot's actuators.
    pub fn for_robot<'a>(&'a self, robot: &'a str, now: f64) -> RobotEnv<'a> {
        RobotEnv {
            env: self,
            robot,
            now,
        }
    }

    /// The action server of `robot`'s `actuator`, fully qualified.
    /// When `server`'s state was last heard [s], if ever.
    pub fn last_heard(&self, server: &str) -> Option<f64> {
        self.busy.get(server).map(|(_, at)| *at)
    }

    pub fn server(&self, robot: &str, actuator: &str) -> Option<&str> {
        (self.servers.get(&(robot.to_owned(), actuator.to_owned()))).map(String::as_str)
    }

    /// Whether a condition holds over the rules and the facts in force.
    pub fn holds(&self, query: &str) -> bool {
        if let Some(answer) = self.answers.borrow().get(query) {
            return *answer;
        }
        let answer = self.evaluate(query).unwrap_or_else(|e| {
            let e = self.failure(&e);
            self.errors.borrow_mut().push((query.to_owned(), e));
            false
        });
        self.answers.borrow_mut().insert(query.to_owned(), answer);
        answer
    }
}

/// The environment as one robot's tasks see it.
pub struct RobotEnv<'a> {
    env: &'a Environment,
    robot: &'a str,
    now: f64,
}

impl Conditions for RobotEnv<'_> {
    fn holds(&self, query: &str) -> bool {
        self.env.holds(query)
    }

    fn available(&self, actuator: &str) -> bool {
        let drained = (self.env.server(self.robot, actuator))
            .and_then(|server| self.env.draining.get(server))
            .is_none_or(|started| (started.iter()).all(|t| self.now - t >= self.env.drain_timeout_s));
        drained && self.env.blocked(actuator).is_none()
    }

    fn busy_secs(&self, actuator: &str) -> Option<f64> {
        let (remaining, at) = self.env.busy.get(self.env.server(self.robot, actuator)?)?;
        let left = remaining - (self.now - at);
        (left > 0.0).then_some(left)
    }

    fn pausable(&self, actuator: &str) -> bool {
        self.env.pausable.contains(actuator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_holds_once_its_facts_arrive() {
        let mut env = Environment::new(vec![(
            "rules.dl".into(),
            "clear(D) :- dock(D), !blocked(D).".into(),
        )]);
        assert!(!env.holds("clear(dock_b)"));
        env.set_facts("dock(dock_b). blocked(dock_b).".into()).unwrap();
        assert!(!env.holds("clear(dock_b)"));
        env.set_facts("dock(dock_b).".into()).unwrap();
        assert!(env.holds("clear(dock_b)"));
        assert!(env.set_facts("dock(dock_b".into()).is_err());
        assert!(
            env.holds("clear(dock_b)"),
            "bad facts are refused; the old ones stay"
        );
        assert!(check_query("clear(").is_err());
    }

    #[test]
    fn facts_whose_evaluation_overruns_the_limit_are_refused_naming_the_rules_and_the_limit() {
        let mut env = Environment::new(vec![(
            "runaway.dl".into(),
            "runaway(0) :- go.\nrunaway(N + 1) :- runaway(N).\nclear(d) :- dock(d).".into(),
        )]);
        env.max_seconds = 0.2;
        env.set_facts("dock(d).".into()).unwrap();
        assert!(env.holds("clear(d)"));
        let started = std::time::Instant::now();
        let e = env.set_facts("go. dock(d).".into()).unwrap_err();
        assert!(started.elapsed().as_secs_f64() < 10.0);
        assert!(
            e.contains("runaway.dl") && e.contains("time limit of 0.2 s (rules_max_seconds)"),
            "{e}"
        );
        assert!(env.holds("clear(d)"), "the previous facts stay");
    }

    #[test]
    fn a_condition_whose_evaluation_overruns_the_limit_is_an_error() {
        let mut env = Environment::new(vec![(
            "count.dl".into(),
            "n(0).\nn(N + 1) :- n(N), N < 500.".into(),
        )]);
        env.set_facts(String::new()).unwrap();
        env.max_seconds = 1e-9;
        let e = env.check_in_time("n(500)").unwrap_err();
        assert!(
            e.starts_with("evaluation stopped at its time limit of 0.000000001 s") && e.contains("count.dl"),
            "{e}"
        );
        env.max_seconds = DEFAULT_RULES_MAX_SECONDS;
        assert_eq!(env.check_in_time("n(500)"), Ok(()));
        assert!(env.holds("n(500)"));
    }

    #[test]
    fn deep_nesting_is_refused_before_parsing_and_the_node_survives_it() {
        let mut env = Environment::new(Vec::new());
        let deep = format!("p({}1{}).", "(".repeat(2000), ")".repeat(2000));
        let e = env.set_facts(deep).unwrap_err();
        assert!(
            e.starts_with("/task_facts: byte ") && e.contains("deeper than 256"),
            "{e}"
        );
        assert!(check_query(&format!("q({}1{})", "[".repeat(300), "]".repeat(300))).is_err());
        // At the limit, and brackets inside strings and comments, are fine.
        let ok = format!("{}1{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
        assert!(check_nesting(&ok, "t").is_ok());
        let quoted = format!(
            "p(\"{}\"). % {}\n/* {} */ q(1).",
            "(".repeat(999),
            "(".repeat(999),
            "[".repeat(999)
        );
        assert!(check_nesting(&quoted, "t").is_ok());
        env.set_facts("dock(d).".into()).unwrap();
    }
}
