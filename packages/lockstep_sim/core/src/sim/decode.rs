//! Per-tick road-surface decoding and the facts that come from outside.
//!
//! Every tick the typecode of the cell under the vehicle goes into the rules as `typecode(C)`, beside
//! `sim_time(T)` (simulated seconds) and the outside facts ([`Simulator::set_facts`]: a wet floor, a load, the
//! time of day); the physics then uses the `surface(C, Accel, Decel, Speed)` row the rules derive for it. In
//! autonomous mode this is the behaviour's own evaluation; in commanded mode one evaluation of its own, skipped
//! when its facts are those of the previous one (the same code, no new outside facts, and rules that do not
//! read `sim_time`), which gives the same result.
//!
//! Which cells are obstacles (for the sensors and collisions) is the [`SurfaceTable`]: every code of the scene
//! decoded together, with `sim_time` and the outside facts. It is decoded again when the rules, the scene or
//! the outside facts change, and every tick when the rules read `sim_time`.

use lockstep_rules::{Engine, Facts};

use crate::error::Result;
use crate::surface::{Surface, SurfaceTable};

use super::sensing::{check_known_cell, collides_in};
use super::types::{Simulator, StepReport};

/// The predicate asserting the simulated time (s) in every evaluation.
pub const SIM_TIME: &str = "sim_time";

impl Simulator {
    /// `sim_time` and the outside facts, asserted in every evaluation.
    pub(super) fn env_facts(&self, facts: &mut Facts) {
        facts.add(SIM_TIME, [self.time_secs]);
        for (p, args) in self.outside.iter() {
            facts.add(p, args.iter().cloned());
        }
    }

    /// After an evaluation that asserted `typecode(code)`: the surface the physics uses this tick. A code the
    /// rules do not decode now, or decode with unusable values, keeps the last decoding (with a warning).
    pub(super) fn read_ground(&mut self, code: i64, report: &mut StepReport) {
        let rows = match self.engine.query("surface") {
            Ok(rows) => rows,
            Err(e) => {
                report.warnings.push(format!("cannot read surface: {e}"));
                return;
            }
        };
        let mine: Vec<_> = rows
            .iter()
            .filter(|r| r.first().and_then(|v| v.as_i64()) == Some(code))
            .collect();
        let name = |code: i64| {
            self.surfaces
                .get(code)
                .map_or_else(|| format!("code {code}"), |s| s.name.clone())
        };
        let decoded = match mine.as_slice() {
            [] => Err(format!(
                "no `surface` row for typecode {code} under the vehicle this tick"
            )),
            [row, ..] => {
                let num = |i: usize| row.get(i).and_then(|v| v.as_f64());
                match (num(1), num(2), num(3)) {
                    (Some(a), Some(s), Some(v)) => Surface::checked(code, name(code), (a, s, v)),
                    _ => Err(format!("`surface` row {row:?} has non-numeric values")),
                }
            }
        };
        match decoded {
            Ok(surface) => {
                if mine.len() > 1 {
                    report.warnings.push(format!(
                        "the rules decode typecode {code} {} ways this tick; taking the first",
                        mine.len()
                    ));
                }
                self.ground = Some(surface);
            }
            Err(message) => report
                .warnings
                .push(format!("{message}; the last decoding stays")),
        }
    }

    /// Commanded mode: one evaluation decodes the surface under the vehicle, unless its facts are those of the
    /// last one.
    pub(super) fn decode_ground(&mut self, report: &mut StepReport) {
        let Some(code) = self.cell_under().and_then(|c| self.scene.code(c)) else {
            return;
        };
        let key = (code, self.outside_version);
        if !self.reads_time && self.ground_key == Some(key) {
            return;
        }
        let mut facts = Facts::new();
        facts.add("typecode", [code]);
        self.env_facts(&mut facts);
        if let Err(e) = self.engine.tick(&facts) {
            report.over_time |= matches!(e, lockstep_rules::Error::TimeLimit { .. });
            let why = self.rules_failure(&e);
            report
                .warnings
                .push(format!("surface rules failed on typecode {code}: {why}"));
            return;
        }
        self.read_ground(code, report);
        self.ground_key = Some(key);
    }

    /// Every tick when the rules read `sim_time`: which codes are obstacles now. A failure keeps the last
    /// table (with a warning).
    pub(super) fn refresh_surfaces(&mut self, report: &mut StepReport) {
        if !self.reads_time {
            return;
        }
        let mut extra = Facts::new();
        self.env_facts(&mut extra);
        match SurfaceTable::decode_with(&mut self.decoder, &self.scene, &extra) {
            Ok(table) => self.surfaces = table,
            Err(crate::Error::Rules(e)) if matches!(e, lockstep_rules::Error::TimeLimit { .. }) => {
                report.over_time = true;
                let why = self.rules_failure(&e);
                report.warnings.push(format!("decoding the scene failed: {why}"));
            }
            Err(e) => report.warnings.push(format!(
                "decoding the scene at t={:.2} s failed: {e}",
                self.time_secs
            )),
        }
    }

    /// Replaces the facts from outside (a wet floor, a load, the time of day), asserted in every evaluation
    /// from the next step on. Refused, with nothing changed, when a typecode of the scene is not decoded
    /// with them, or the vehicle or its destination would stand on an obstacle.
    pub fn set_facts(&mut self, facts: Facts) -> Result<()> {
        let previous = std::mem::replace(&mut self.outside, facts);
        let mut extra = Facts::new();
        self.env_facts(&mut extra);
        let checked = SurfaceTable::decode_with(&mut self.decoder, &self.scene, &extra).and_then(|table| {
            self.fits(&table)?;
            Ok(table)
        });
        match checked {
            Ok(table) => {
                self.surfaces = table;
                self.outside_version += 1;
                Ok(())
            }
            Err(e) => {
                self.outside = previous;
                Err(e)
            }
        }
    }

    /// The facts from outside in force.
    pub fn outside_facts(&self) -> &Facts {
        &self.outside
    }

    /// Whether the running vehicle fits a decoding of the current scene: its destination enterable, its
    /// footprint clear.
    fn fits(&self, table: &SurfaceTable) -> Result<()> {
        if let Some(dest) = self.destination {
            check_known_cell(&self.scene, table, dest, "destination")?;
        }
        if collides_in(&self.scene, table, &self.pose, self.config.vehicle_radius_m) {
            let (column, row) = self.scene.signed_cell_at(self.pose.x_m, self.pose.y_m);
            return Err(crate::Error::BadCell {
                column,
                row,
                reason: "holds the vehicle, which would overlap an obstacle".into(),
            });
        }
        Ok(())
    }

    /// The surface the physics used in the last step: the per-tick decoding of the cell under the vehicle.
    pub fn surface_under(&self) -> Option<&Surface> {
        self.ground.as_ref()
    }

    /// The smallest useful step asserted as `min_step(D)`: `min_step_m`, or half the cell size when it is 0.
    pub fn min_step_m(&self) -> f64 {
        if self.config.min_step_m > 0.0 {
            self.config.min_step_m
        } else {
            self.scene.cell_size_m() / 2.0
        }
    }

    /// Changes `min_step_m` (0 = half the cell size) from the next tick on; not finite or negative: an error
    /// naming it, nothing changes.
    pub fn set_min_step_m(&mut self, min_step_m: f64) -> Result<()> {
        crate::error::check_finite("min_step_m", min_step_m, false)?;
        self.config.min_step_m = min_step_m;
        Ok(())
    }

    /// A decoder engine for `rules` (one evaluation stopped after `max_seconds`), and whether they read the
    /// simulated time.
    pub(super) fn decoder_for(rules: &lockstep_rules::RuleSet, max_seconds: f64) -> (Engine, bool) {
        let reads_time = rules.predicates().iter().any(|(p, _)| *p == SIM_TIME);
        let mut decoder = Engine::new(rules.clone());
        decoder.set_max_seconds(max_seconds);
        (decoder, reads_time)
    }

    /// What a failed evaluation says in a warning: the rule files and the error; for one stopped at its
    /// time limit, the limit and the setting that sets it.
    pub(super) fn rules_failure(&self, e: &lockstep_rules::Error) -> String {
        let files = self.engine.rules().origins().join(", ");
        match e {
            lockstep_rules::Error::TimeLimit { secs } => format!(
                "{files}: evaluation stopped at its time limit of {secs} s (rules_max_seconds) without reaching \
                 a fixpoint: a rule probably derives values without bound (like `p(N + 1) :- p(N).`)"
            ),
            other => format!("{files}: {other}"),
        }
    }
}

/// Facts written as Datalog (`wet_floor. load_kg(120.0).`), e.g. a `sim_facts` message, for
/// [`Simulator::set_facts`]; `origin` names the text in errors (`origin:line:column`). Rules are refused:
/// they belong in the rule files, which are checked and reloaded as a whole.
pub fn parse_facts(text: &str, origin: &str) -> Result<Facts> {
    let rules = lockstep_rules::RuleSet::parse(text, origin)?;
    if rules.rule_count() > 0 {
        return Err(crate::Error::BadInput {
            input: "sim_facts",
            reason: format!(
                "{origin} holds {} rule(s); only facts are taken (rules go in the rule files)",
                rules.rule_count()
            ),
        });
    }
    let predicates: Vec<String> = rules.predicates().iter().map(|(p, _)| (*p).to_owned()).collect();
    let mut engine = Engine::new(rules);
    engine.evaluate()?;
    let mut facts = Facts::new();
    for p in &predicates {
        for row in engine.query(p)? {
            facts.add(p, row);
        }
    }
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_parse_and_rules_or_bad_syntax_are_refused_with_the_place() {
        let facts = parse_facts("wet_floor.\nload_kg(120.0).\n", "sim_facts").unwrap();
        let got: Vec<(&str, usize)> = facts.iter().map(|(p, a)| (p, a.len())).collect();
        assert_eq!(got, [("load_kg", 1), ("wet_floor", 0)]);
        let e = parse_facts("slow :- wet_floor.\n", "sim_facts").unwrap_err();
        assert!(e.to_string().contains("1 rule(s)"), "{e}");
        let e = parse_facts("wet_floor.\nload_kg(120.0 kg).\n", "sim_facts").unwrap_err();
        assert!(e.to_string().contains("sim_facts:2:15: error"), "{e}");
    }
}
