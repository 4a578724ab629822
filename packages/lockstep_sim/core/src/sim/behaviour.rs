//! The rules interface: what the simulator asserts each tick, what it reads back (`next_state`, `drive`), and
//! the contract a rule set must meet to be loaded.

use lockstep_rules::{Facts, RuleSet, Value};

use crate::config::Mode;
use crate::error::{Error, Result};
use crate::input::check_command;

use super::{Simulator, StepReport};

/// The state before any destination is known (a simulator state, not one of the rules').
pub const IDLE_STATE: &str = "idle";
/// The state reported in commanded mode, where the rules do not drive.
pub const COMMANDED_STATE: &str = "commanded";
/// The state the behaviour starts in once a destination is set.
pub const INITIAL_STATE: &str = "explore";

/// Predicates the simulator reads back, with their arities.
const SURFACE_CONTRACT: [(&str, usize); 1] = [("surface", 4)];
const BEHAVIOUR_CONTRACT: [(&str, usize); 2] = [("next_state", 1), ("drive", 2)];

/// Checks that the rules derive what the simulator reads in `mode`, with the right arities.
pub(super) fn check_contract(rules: &RuleSet, mode: Mode) -> Result<()> {
    let mut needed: Vec<(&str, usize)> = SURFACE_CONTRACT.to_vec();
    if mode == Mode::Autonomous {
        needed.extend(BEHAVIOUR_CONTRACT);
    }
    let derived = rules.derived_predicates();
    for (pred, arity) in needed {
        let problem = match rules.arity(pred) {
            None => Some(format!(
                "no rule derives `{pred}` ({arity} argument(s)), which the simulator reads"
            )),
            Some(a) if a != arity => Some(format!(
                "`{pred}` has {a} argument(s) but the simulator reads it with {arity}"
            )),
            Some(_) if !derived.contains(&pred) => {
                Some(format!("no rule derives `{pred}`, which the simulator reads"))
            }
            Some(_) => None,
        };
        if let Some(message) = problem {
            return Err(Error::RulesContract {
                files: rules.origins().join(", "),
                message,
            });
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

/// The predicates the simulator asserts each tick (and `typecode` for the surface rules): their facts come
/// from outside the rule files, so they are not "never defined".
pub const INPUT_PREDICATES: [&str; 13] = [
    "state",
    "free_front",
    "free_left",
    "free_right",
    "min_step",
    "heading_error",
    "backups",
    "dest_distance",
    "goal_free",
    "state_time",
    "typecode",
    "at_destination",
    "bumped",
];

impl Simulator {
    /// One behaviour tick: assert the facts, evaluate, read `next_state` and `drive`.
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
            .add("min_step", [self.config.min_step_m])
            .add("heading_error", [p.heading_error_rad])
            .add("backups", [self.backups])
            .add("dest_distance", [p.dest_distance_m])
            .add("goal_free", [p.goal_free_m])
            .add("state_time", [self.time_secs - self.state_since_secs]);
        if let Some(code) = self.cell_under().and_then(|c| self.scene.code(c)) {
            facts.add("typecode", [code]);
        }
        if p.at_destination {
            facts.flag("at_destination");
        }
        if self.bumped {
            facts.flag("bumped");
        }
        if let Err(e) = self.engine.tick(&facts) {
            report.warnings.push(format!(
                "behaviour rules failed in state `{}`: {e}; holding still",
                self.state
            ));
            return (0.0, 0.0);
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
        if next != self.state {
            report.transition = Some((self.state.clone(), next.clone()));
            if next == "back_up" {
                self.backups += 1;
            } else if next == INITIAL_STATE {
                self.backups = 0;
            }
            if next == "arrived" && self.arrived_at_secs.is_none() {
                self.arrived_at_secs = Some(self.time_secs);
            }
            self.change_state(next);
        }
        drive
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
