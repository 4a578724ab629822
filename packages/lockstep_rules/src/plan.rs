//! Planning: groups the checked rules into strata and compiles each rule into join plans (the order in
//! which its body literals run, and the hash indexes its lookups need).

use rustc_hash::FxHashMap;

use crate::ast::Literal;
use crate::check::{Checked, ResolvedRule};
use crate::error::{Error, Result};
use crate::limits::MAX_PLAN_STEPS;
use crate::program::{assign_memos, CRule, Program, Stratum};

mod join;
mod slots;

use join::{join_plan, Shape};
use slots::{InStratum, IndexSpecs, Slots};

/// Compiles a checked program: one [`Stratum`] per component that some rule derives, in evaluation order.
/// Refused when its join plans would hold more than [`MAX_PLAN_STEPS`] steps in all.
pub(crate) fn compile(checked: Checked<'_>) -> Result<Program> {
    let Checked {
        preds,
        pred_ids,
        base_facts,
        rules,
        components,
    } = checked;
    let mut index_specs = IndexSpecs::new(preds.len());
    // Each predicate's component, and each component's rules: one pass each, so that a program of many
    // small components stays linear.
    let mut component = vec![0usize; preds.len()];
    for (c, (members, _)) in components.iter().enumerate() {
        for &p in members {
            component[p] = c;
        }
    }
    let mut rules_of: Vec<Vec<&ResolvedRule<'_>>> = vec![Vec::new(); components.len()];
    for rule in &rules {
        rules_of[component[rule.head]].push(rule);
    }
    let mut strata = Vec::new();
    let mut total_steps = 0usize;
    for (c, ((members, recursive), stratum_rules)) in components.into_iter().zip(rules_of).enumerate() {
        let in_stratum = InStratum {
            component: &component,
            id: c,
        };
        for rule in &stratum_rules {
            total_steps += plan_steps(rule, in_stratum, recursive);
            if total_steps > MAX_PLAN_STEPS {
                return Err(Error::Unsupported {
                    location: rule.clause.head.location.clone(),
                    message: format!(
                        "the rules need more than {MAX_PLAN_STEPS} join steps in all (a rule runs once per \
                         recursive body atom, each time over its whole body); shorten this rule's body or \
                         its recursive atoms"
                    ),
                });
            }
        }
        let compiled: Vec<CRule> = (stratum_rules.into_iter())
            .map(|rule| compile_rule(rule, in_stratum, recursive, &mut index_specs))
            .collect();
        if !compiled.is_empty() {
            strata.push(Stratum::new(members, compiled, recursive));
        }
    }
    Ok(Program {
        preds,
        pred_ids,
        base_facts,
        strata,
        index_specs: index_specs.specs,
    })
}

/// The steps of `rule`'s plans: one per body literal, in the full plan and in one delta plan per body atom
/// of its own stratum.
fn plan_steps(rule: &ResolvedRule<'_>, in_stratum: InStratum<'_>, recursive: bool) -> usize {
    let body = &rule.clause.body;
    let deltas = match recursive {
        true => (body.iter().zip(&rule.body_preds))
            .filter(|(lit, pred)| matches!((lit, pred), (Literal::Pos(_), Some(p)) if in_stratum.has(*p)))
            .count(),
        false => 0,
    };
    (1 + deltas) * body.len().max(1)
}

fn compile_rule(
    rule: &ResolvedRule<'_>,
    in_stratum: InStratum<'_>,
    recursive: bool,
    specs: &mut IndexSpecs,
) -> CRule {
    let mut slots = Slots {
        names: FxHashMap::default(),
        compiled: FxHashMap::default(),
    };
    let shape = Shape::new(rule);
    let mut full = join_plan(rule, &shape, None, in_stratum, &mut slots, specs);
    let mut memo = assign_memos(&mut full);
    let mut deltas = Vec::new();
    if recursive {
        for (i, (lit, pred)) in rule.clause.body.iter().zip(&rule.body_preds).enumerate() {
            if let (Literal::Pos(_), Some(p)) = (lit, *pred) {
                if in_stratum.has(p) {
                    let mut plan = join_plan(rule, &shape, Some(i), in_stratum, &mut slots, specs);
                    memo = memo.max(assign_memos(&mut plan));
                    deltas.push((p, plan));
                }
            }
        }
    }
    let head_args = rule.clause.head.args.iter().map(|a| slots.build(a)).collect();
    CRule {
        head: rule.head,
        head_args,
        slots: slots.names.len(),
        full,
        deltas,
        memo,
    }
}
