//! Assertions over a case's outputs: every numeric field of every output becomes a fact
//! `<channel>(T, "field.path", V)` (channel `/robot1/cmd_vel` -> predicate `robot1_cmd_vel`, T the output's
//! log time in nanoseconds: that of its data message, the time the bag tools show for it, not that of its
//! dependency header logged after it), the suite's rules run over them, and every `violation` row fails the
//! case.

use lockstep_replay::lockstep::Recording;
use lockstep_rules::{Engine, Facts, RuleSet, Value};

use crate::error::{Error, Result};

/// Most facts built from one case's outputs: past that the case fails rather than exhaust memory.
pub const MAX_FACTS: usize = 5_000_000;

/// The predicate name of a channel: its name without the leading '/', other non-alphanumerics as '_',
/// lowercase (a Datalog predicate starts with a lowercase letter).
pub fn predicate(channel: &str) -> String {
    let mut name: String = channel
        .trim_start_matches('/')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        name.insert(0, 't');
    }
    name
}

/// The `violation` rows of `rules` (text, origin) over the outputs of `new`, each printed as a tuple.
pub fn violations(rules: &[(String, String)], new: &Recording) -> Result<Vec<String>> {
    if rules.is_empty() {
        return Ok(Vec::new());
    }
    let sources: Vec<(&str, &str)> = rules.iter().map(|(t, o)| (t.as_str(), o.as_str())).collect();
    let mut engine = Engine::new(RuleSet::parse_sources(&sources)?);
    let mut facts = Facts::new();
    for frame in &new.frames {
        let channel = &frame.header.channel_name;
        let Some(c) = new.channels.get(channel) else {
            continue;
        };
        let Some(schema) = c.schema.as_ref() else { continue };
        let Ok(data) = new.payload(channel, frame.header.payload_digest) else {
            continue;
        };
        let Ok(value) = schema.decode(&data) else { continue };
        // The data message's log time (the output's header is logged a little later).
        let t = Value::from(i64::try_from(new.data_log_time_ns(frame)).unwrap_or(i64::MAX));
        let name = predicate(channel);
        for (path, x) in value.numeric_leaves() {
            facts.add(&name, [t, Value::from(path), Value::from(x)]);
        }
        if facts.len() > MAX_FACTS {
            return Err(Error::Case(format!(
                "assert: the outputs give more than {MAX_FACTS} facts; assert over fewer recordings or a shorter one"
            )));
        }
    }
    engine.assert_facts(&facts)?;
    engine.evaluate()?;
    let rows = engine.query("violation")?;
    Ok(rows
        .iter()
        .map(|row| {
            let cells: Vec<String> = row.iter().map(ToString::to_string).collect();
            format!("violation({})", cells.join(", "))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::predicate;

    #[test]
    fn channels_become_predicates() {
        assert_eq!(predicate("/cmd_vel"), "cmd_vel");
        assert_eq!(predicate("/robot1/Cmd-Vel"), "robot1_cmd_vel");
        assert_eq!(predicate("/2d/pose"), "t2d_pose");
    }
}
