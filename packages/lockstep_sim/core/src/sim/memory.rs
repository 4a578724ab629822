//! What the behaviour carries from one tick to the next, as the rules name it: a derived `next_<p>(...)` is
//! asserted as `<p>(...)` on the next tick, starting from the rows of `initial_<p>(...)` when the vehicle sets
//! off (see the `behaviour` module).

use std::collections::BTreeMap;

use lockstep_rules::{Engine, Facts, RuleSet, Tuple};

/// What the behaviour carries between ticks, named by the rules (see the module's documentation).
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Memory {
    /// (`next_p`, `p`) for every derived `next_p` but `next_state` (the state is kept apart).
    carried: Vec<(String, String)>,
    /// (`initial_p`, `p`) for every derived `initial_p` but `initial_state`.
    initial: Vec<(String, String)>,
    /// The rows asserted on the coming tick, by predicate.
    values: BTreeMap<String, Vec<Tuple>>,
}

impl Memory {
    /// The carried predicates of `rules`; values of predicates they still carry are kept.
    pub(super) fn of(rules: &RuleSet, previous: Option<Memory>) -> Memory {
        let derived = rules.defined_predicates();
        let pairs = |prefix: &str| -> Vec<(String, String)> {
            derived
                .iter()
                .filter_map(|p| {
                    let rest = p.strip_prefix(prefix)?;
                    (!rest.is_empty() && rest != "state").then(|| ((*p).to_owned(), rest.to_owned()))
                })
                .collect()
        };
        let mut memory = Memory {
            carried: pairs("next_"),
            initial: pairs("initial_"),
            values: BTreeMap::new(),
        };
        if let Some(previous) = previous {
            memory.values = previous
                .values
                .into_iter()
                .filter(|(p, _)| memory.names().any(|n| n == p))
                .collect();
        }
        memory
    }

    /// The predicates asserted from memory.
    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        self.carried.iter().chain(&self.initial).map(|(_, p)| p.as_str())
    }

    /// Adds the rows carried into the coming tick to `facts`.
    pub(super) fn assert_into(&self, facts: &mut Facts) {
        for (p, rows) in &self.values {
            for row in rows {
                facts.add(p, row.iter().cloned());
            }
        }
    }

    /// The values of `pairs`' source predicates after an evaluation.
    fn read(engine: &Engine, pairs: &[(String, String)]) -> BTreeMap<String, Vec<Tuple>> {
        pairs
            .iter()
            .map(|(from, to)| (to.clone(), engine.query(from).unwrap_or_default()))
            .collect()
    }

    /// The values as the vehicle sets off.
    pub(super) fn start(&mut self, engine: &Engine) {
        self.values = Memory::read(engine, &self.initial);
    }

    /// The values for the next tick.
    pub(super) fn carry(&mut self, engine: &Engine) {
        self.values = Memory::read(engine, &self.carried);
    }

    /// The value of `predicate` asserted on the coming tick (for tests and logs).
    pub(super) fn get(&self, predicate: &str) -> &[Tuple] {
        self.values.get(predicate).map_or(&[], Vec::as_slice)
    }
}
