//! What a subtask does when it fails, and its checks: `retry`, `timeout_s` and `fallback`, on a template (for
//! every subtask of that type) or on a child entry (for that one; each key replaces the template's).
//!
//! ```yaml
//! templates:
//!   go_and_drop:
//!     level: message
//!     retry: {attempts: 2, backoff_s: 5.0}   # the message may be tried 3 times in all
//!     children:
//!       - type: drive
//!         timeout_s: 120                     # a drive running 2 min fails ("timed out after 120 s")
//!         fallback: {type: drive, parameters: {route: "{detour}"}}
//!       - {type: unload}
//! ```
//!
//! - `retry.attempts`: the tries after the first failure (1 to 1000); `retry.backoff_s` (default 0): the wait
//!   before each of them.
//! - `timeout_s` (> 0): the time the subtask may run in one attempt.
//! - `fallback`: a subtask of the same level (a template and, as a child entry, its own parameters,
//!   attributes, retry, timeout and fallback) that runs in place of the subtask once it has failed for good.
//!   Not on task types. A chain of fallbacks (a fallback's own, through templates too) is at most
//!   [`MAX_FALLBACK_CHAIN`] long, and a task type decomposes into at most [`MAX_SUBTASKS`] subtasks, fallbacks
//!   included (they are decomposed with the task, before anything runs).

use std::collections::BTreeMap;

use super::types::{check_attributes, Child, Config, Retry, Template, MAX_FALLBACK_CHAIN, MAX_SUBTASKS};

/// The most tries after the first failure a `retry` may give.
const MAX_ATTEMPTS: u32 = 1000;

type Problem = (String, String);

/// The checks of a child entry at `level` (its template checked already), `key` its path.
pub(super) fn check_entry(config: &Config, entry: &Child, level: usize, key: &str) -> Result<(), Problem> {
    check_values(entry.retry.as_ref(), entry.timeout_s, key)?;
    check_fallbacks(config, entry.fallback.as_deref(), level, key)
}

/// The checks of a template's own `retry`, `timeout_s` and `fallback`, `key` its path.
pub(super) fn check_own(
    config: &Config,
    template: &Template,
    level: usize,
    key: &str,
) -> Result<(), Problem> {
    check_values(template.retry.as_ref(), template.timeout_s, key)?;
    check_fallbacks(config, template.fallback.as_deref(), level, key)
}

fn check_values(retry: Option<&Retry>, timeout_s: Option<f64>, key: &str) -> Result<(), Problem> {
    if let Some(retry) = retry {
        if !(1..=MAX_ATTEMPTS).contains(&retry.attempts) {
            return Err((
                format!("{key}.retry.attempts"),
                format!(
                    "{}: must be from 1 to {MAX_ATTEMPTS} (the tries after the first failure)",
                    retry.attempts
                ),
            ));
        }
        if !(retry.backoff_s.is_finite() && retry.backoff_s >= 0.0) {
            return Err((
                format!("{key}.retry.backoff_s"),
                format!("{}: must be a finite number >= 0", retry.backoff_s),
            ));
        }
    }
    match timeout_s {
        Some(t) if !(t.is_finite() && t > 0.0) => Err((
            format!("{key}.timeout_s"),
            format!("{t}: must be a finite number > 0"),
        )),
        _ => Ok(()),
    }
}

/// The fallback written at `key` (and those written inside it), for a subtask at `level`; then the whole
/// chain, through the templates' own fallbacks, no longer than [`MAX_FALLBACK_CHAIN`].
fn check_fallbacks(config: &Config, first: Option<&Child>, level: usize, at: &str) -> Result<(), Problem> {
    let mut key = at.to_owned();
    let mut next = first;
    let mut depth = 0;
    while let Some(fallback) = next {
        key.push_str(".fallback");
        depth += 1;
        if depth > MAX_FALLBACK_CHAIN {
            return Err((key, format!("fallbacks nested deeper than {MAX_FALLBACK_CHAIN}")));
        }
        let Some(template) = config.templates.get(&fallback.template) else {
            return Err((
                format!("{key}.type"),
                format!("`{}` is not a template", fallback.template),
            ));
        };
        if config.level_index(&template.level) != Some(level) {
            return Err((
                format!("{key}.type"),
                format!(
                    "`{}` is at level `{}`; a fallback runs in place of a `{}` and must be at that level",
                    fallback.template, template.level, config.levels[level]
                ),
            ));
        }
        check_attributes(&fallback.attributes, &format!("{key}.attributes"))?;
        check_values(fallback.retry.as_ref(), fallback.timeout_s, &key)?;
        next = fallback.fallback.as_deref();
    }
    if let Err(names) = chain(config, first) {
        return Err((
            format!("{at}.fallback"),
            format!(
                "the chain of fallbacks is longer than {MAX_FALLBACK_CHAIN} (through the templates' own): {}",
                names.join(" -> ")
            ),
        ));
    }
    Ok(())
}

/// What runs in place of a subtask made from `entry` once it failed for good: the entry's fallback, else its
/// template's.
pub(crate) fn fallback_of<'a>(config: &'a Config, entry: &'a Child) -> Option<&'a Child> {
    let own = config
        .templates
        .get(&entry.template)
        .and_then(|t| t.fallback.as_deref());
    entry.fallback.as_deref().or(own)
}

/// The fallbacks that would run one after the other from `first`: each one's own, else its template's. The
/// template names of the first [`MAX_FALLBACK_CHAIN`] + 1 when it is longer (a cycle through templates).
pub(crate) fn chain<'a>(config: &'a Config, first: Option<&'a Child>) -> Result<Vec<&'a Child>, Vec<String>> {
    let mut out: Vec<&Child> = Vec::new();
    let mut next = first;
    while let Some(fallback) = next {
        if out.len() == MAX_FALLBACK_CHAIN {
            let mut names: Vec<String> = out.iter().map(|c| c.template.clone()).collect();
            names.push(fallback.template.clone());
            return Err(names);
        }
        out.push(fallback);
        next = fallback_of(config, fallback);
    }
    Ok(out)
}

/// Every task type decomposes into at most [`MAX_SUBTASKS`] subtasks, fallbacks included. Sizes are known from
/// the configuration alone; computed from the last level up (no recursion).
pub(super) fn check_sizes(config: &Config) -> Result<(), Problem> {
    let cap = MAX_SUBTASKS as u64 + 1;
    let mut base: BTreeMap<&str, u64> = BTreeMap::new();
    // A subtask made from `entry`, with the fallbacks that may run in its place.
    let entry_size = |base: &BTreeMap<&str, u64>, entry: &Child| -> u64 {
        let of = |c: &Child| base.get(c.template.as_str()).copied().unwrap_or(cap);
        let chain = chain(config, fallback_of(config, entry)).unwrap_or_default();
        let size = chain.iter().fold(of(entry), |sum, c| sum.saturating_add(of(c)));
        size.min(cap)
    };
    let mut by_level: Vec<Vec<(&str, &Template)>> = vec![Vec::new(); config.levels.len()];
    for (name, t) in &config.templates {
        if let Some(level) = config.level_index(&t.level) {
            by_level[level].push((name.as_str(), t));
        }
    }
    for templates in by_level.iter().rev() {
        for (name, t) in templates {
            let size = (t.children.iter()).fold(1u64, |sum, c| sum.saturating_add(entry_size(&base, c)));
            base.insert(name, size.min(cap));
        }
    }
    for task in config.task_types() {
        let size = base.get(task).copied().unwrap_or(cap);
        if size > MAX_SUBTASKS as u64 {
            return Err((
                format!("templates.{task}"),
                format!("decomposes into more than {MAX_SUBTASKS} subtasks (fallbacks included)"),
            ));
        }
    }
    Ok(())
}
