//! The rules interface: what the simulator asserts each tick, what it reads back, what it carries from one
//! tick to the next, and the contract a rule set must meet to be loaded.
//!
//! No behaviour is written here. The rules name the state the vehicle sets off in (`initial_state(S)`), the
//! states in which it is done (`terminal(S)`), and every value the behaviour keeps between ticks: a derived
//! `next_<p>(...)` is asserted as `<p>(...)` on the next tick (`next_state` -> `state`, `next_backups` ->
//! `backups`), starting from the rows of `initial_<p>(...)` when the vehicle sets off. A value the rules do
//! not carry on (no `next_<p>` row this tick) is gone on the next one.
//! The carried values themselves are kept in `Memory` (module `memory`).

use lockstep_rules::{Engine, Facts, RuleSet, Tuple, Value};

use crate::config::Mode;
use crate::error::{Error, Result};
use crate::input::check_command;

use super::types::{Simulator, StepReport};

/// The state before any destination is known (a simulator state, not one of the rules').
pub const IDLE_STATE: &str = "idle";
/// The state reported in commanded mode, where the rules do not drive.
pub const COMMANDED_STATE: &str = "commanded";

/// Predicates the simulator reads back, with their arities.
const SURFACE_CONTRACT: [(&str, usize); 1] = [("surface", 4)];
const BEHAVIOUR_CONTRACT: [(&str, usize); 3] = [("next_state", 1), ("drive", 2), ("initial_state", 1)];
/// Read when the rules have them, with these arities.
const OPTIONAL_CONTRACT: [(&str, usize); 2] = [("terminal", 1), ("obstacle", 1)];

/// Checks that the rules derive what the simulator reads in `mode`, with the right arities.
pub(super) fn check_contract(rules: &RuleSet, mode: Mode) -> Result<()> {
    let mut needed: Vec<(&str, usize)> = SURFACE_CONTRACT.to_vec();
    if mode == Mode::Autonomous {
        needed.extend(BEHAVIOUR_CONTRACT);
    }
    let defined = rules.defined_predicates();
    let contract = |message: String| Error::RulesContract {
        files: rules.origins().join(", "),
        message,
    };
    for (pred, arity) in needed {
        let problem = match rules.arity(pred) {
            None => Some(format!(
                "no rule derives `{pred}` ({arity} argument(s)), which the simulator reads"
            )),
            Some(a) if a != arity => Some(format!(
                "`{pred}` has {a} argument(s) but the simulator reads it with {arity}"
            )),
            Some(_) if !defined.contains(&pred) => Some(format!(
                "no fact or rule defines `{pred}`, which the simulator reads"
            )),
            Some(_) => None,
        };
        if let Some(message) = problem {
            return Err(contract(message));
        }
    }
    for (pred, arity) in OPTIONAL_CONTRACT {
        if let Some(a) = rules.arity(pred).filter(|&a| a != arity) {
            return Err(contract(format!(
                "`{pred}` has {a} argument(s) but the simulator reads it with {arity}"
            )));
        }
    }
    Ok(())
}

fn value_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::Sym(s)) => s.as_str().to_owned(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

/// The predicates the simulator asserts (besides the carried values the rules name and the outside facts):
/// their facts come from outside the rule files, so they are not "never defined".
pub const INPUT_PREDICATES: [&str; 13] = [
    "state",
    "free_front",
    "free_left",
    "free_right",
    "min_step",
    "heading_error",
    "dest_distance",
    "goal_free",
    "state_time",
    "sim_time",
    "typecode",
    "at_destination",
    "bumped",
];

/// The one `initial_state` that `engine`'s rules derive from `env`; an error names the rule files.
pub(super) fn initial_state_in(engine: &mut Engine, env: &Facts) -> Result<String> {
    engine.tick(env)?;
    let rows = engine.query("initial_state")?;
    match rows.as_slice() {
        [one] => Ok(value_text(one.first())),
        _ => Err(Error::RulesContract {
            files: engine.rules().origins().join(", "),
            message: format!(
                "`initial_state` must derive exactly one state; it derives {} ({})",
                rows.len(),
                rows.iter()
                    .map(|r| value_text(r.first()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

impl Simulator {
    /// One behaviour tick: assert the facts, evaluate, read `next_state`, `drive`, the surface under the
    /// vehicle and the carried values.
    pub(super) fn decide(&mut self, report: &mut StepReport) -> (f64, f64) {
        if self.state == IDLE_STATE || self.destination.is_none() {
            return (0.0, 0.0);
        }
        let p = self.perceive();
        self.last_perception = Some(p);
        let mut facts = Facts::new();
        facts
            .add("state", [self.state.as_str()])
            .add("free_front", [p.free_front_m])
            .add("free_left", [p.free_left_m])
            .add("free_right", [p.free_right_m])
            .add("min_step", [self.min_step_m()])
            .add("heading_error", [p.heading_error_rad])
            .add("dest_distance", [p.dest_distance_m])
            .add("goal_free", [p.goal_free_m])
            .add("state_time", [self.time_secs - self.state_since_secs]);
        self.memory.assert_into(&mut facts);
        self.env_facts(&mut facts);
        let code = self.cell_under().and_then(|c| self.scene.code(c));
        if let Some(code) = code {
            facts.add("typecode", [code]);
        }
        if p.at_destination {
            facts.flag("at_destination");
        }
        if self.bumped {
            facts.flag("bumped");
        }
        if let Err(e) = self.engine.tick(&facts) {
            report.over_time |= matches!(e, lockstep_rules::Error::TimeLimit { .. });
            report.warnings.push(format!(
                "behaviour rules failed in state `{}`: {}; holding still",
                self.state,
                self.rules_failure(&e)
            ));
            return (0.0, 0.0);
        }
        if let Some(code) = code {
            self.read_ground(code, report);
        }
        let Some(next) = self.read_next_state(report) else {
            return (0.0, 0.0);
        };
        if let Ok(rows) = self.engine.query("ambiguous_state") {
            if !rows.is_empty() {
                report.warnings.push(format!(
                    "behaviour rules report ambiguous_state {rows:?} in state `{}`",
                    self.state
                ));
            }
        }
        let drive = self.read_drive(&next, report);
        self.memory.carry(&self.engine);
        if next != self.state {
            report.transition = Some((self.state.clone(), next.clone()));
            if p.at_destination && self.arrived_at_secs.is_none() && self.is_terminal(&next) {
                self.arrived_at_secs = Some(self.time_secs);
            }
            self.change_state(next);
        }
        drive
    }

    /// Whether the last evaluation derived `terminal(state)`.
    fn is_terminal(&self, state: &str) -> bool {
        self.engine.contains("terminal", [state]).unwrap_or(false)
    }

    /// The facts every evaluation starts from when the vehicle is not moving: the time and the outside facts.
    fn evaluate_environment(&mut self) -> Result<()> {
        let mut facts = Facts::new();
        self.env_facts(&mut facts);
        Ok(self.engine.tick(&facts)?)
    }

    /// Whether the current state is one the rules call `terminal` (evaluated now).
    pub(super) fn in_terminal_state(&mut self) -> Result<bool> {
        self.evaluate_environment()?;
        Ok(self.is_terminal(&self.state.clone()))
    }

    /// The vehicle sets off: the state becomes the rules' `initial_state` and the carried values their
    /// `initial_*` rows. On error (not exactly one initial state) nothing changes.
    pub(super) fn start_behaviour(&mut self) -> Result<()> {
        let state = self.initial_state()?;
        self.memory.start(&self.engine);
        self.change_state(state);
        Ok(())
    }

    /// The rules' one `initial_state` (evaluated now); an error names the rule files.
    pub(super) fn initial_state(&mut self) -> Result<String> {
        let mut env = Facts::new();
        self.env_facts(&mut env);
        initial_state_in(&mut self.engine, &env)
    }

    /// The value of a carried predicate asserted on the coming tick (`backups` in the shipped rules).
    pub fn carried(&self, predicate: &str) -> &[Tuple] {
        self.memory.get(predicate)
    }

    /// `next_state` after a tick; `None` (with a warning) when there is none.
    fn read_next_state(&self, report: &mut StepReport) -> Option<String> {
        match self.engine.query("next_state") {
            Ok(rows) if !rows.is_empty() => {
                if rows.len() > 1 {
                    report.warnings.push(format!(
                        "behaviour rules derived {} next states in state `{}`: {}; taking the first",
                        rows.len(),
                        self.state,
                        rows.iter()
                            .map(|r| value_text(r.first()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                Some(value_text(rows[0].first()))
            }
            Ok(_) => {
                report.warnings.push(format!(
                    "behaviour rules derived no next_state in state `{}`; holding still",
                    self.state
                ));
                None
            }
            Err(e) => {
                report.warnings.push(format!("cannot read next_state: {e}"));
                None
            }
        }
    }

    /// `drive(V, W)` after a tick: numeric, finite and within the command limits, else a stop (with a warning).
    fn read_drive(&self, next: &str, report: &mut StepReport) -> (f64, f64) {
        let rows = match self.engine.query("drive") {
            Ok(rows) if !rows.is_empty() => rows,
            Ok(_) => {
                report.warnings.push(format!(
                    "behaviour rules derived no drive command for state `{next}`; holding still"
                ));
                return (0.0, 0.0);
            }
            Err(e) => {
                report.warnings.push(format!("cannot read drive: {e}"));
                return (0.0, 0.0);
            }
        };
        if rows.len() > 1 {
            report.warnings.push(format!(
                "behaviour rules derived {} drive commands for state `{next}`; taking the first",
                rows.len()
            ));
        }
        let num = |i: usize| rows[0].get(i).and_then(|v| v.as_f64());
        let (Some(v), Some(w)) = (num(0), num(1)) else {
            report
                .warnings
                .push(format!("drive {:?} is not numeric; holding still", rows[0]));
            return (0.0, 0.0);
        };
        match check_command("drive", v, w, &self.config.limits) {
            Ok(()) => (v, w),
            Err(e) => {
                report.warnings.push(format!("{e}; holding still"));
                (0.0, 0.0)
            }
        }
    }

    pub(super) fn change_state(&mut self, next: String) {
        self.state_since_secs = self.time_secs;
        self.states_visited.push((self.time_secs, next.clone()));
        self.state = next;
    }
}
