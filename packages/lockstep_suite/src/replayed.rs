//! What a case takes from the replay's own report (`replay/report.json`) besides the modules it stepped:
//! the recorded frames the replay could not replay (their inputs precede the recording, a header is missing,
//! ...), which were therefore never compared, and the live modules' parameters that differ from the recorded
//! ones. Both are warnings of the case, so that `report.json`, `summary.json` and the JUnit XML say what a
//! pass did not check; with `fail_on_skipped` a skipped frame fails the case.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Recorded frames of one (channel, module) that the replay could not replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFrames {
    /// The output channel.
    pub channel: String,
    /// The module that computed them when recorded.
    pub module: String,
    /// How many.
    pub frames: u64,
    /// Why the first of them could not be replayed.
    pub reason: String,
}

impl SkippedFrames {
    /// `3 frames of /obstacles (obstacle_fusion) could not be replayed, so were not compared: <reason>`.
    pub(crate) fn warning(&self) -> String {
        let plural = if self.frames == 1 { "" } else { "s" };
        format!(
            "{} frame{plural} of {} ({}) could not be replayed, so were not compared: {}",
            self.frames, self.channel, self.module, self.reason
        )
    }
}

/// A live module's parameter whose value differs from the recorded one (read before the first step).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParameterDifference {
    /// The module.
    pub module: String,
    /// The parameter.
    pub parameter: String,
    /// Its recorded value, as typed text (`integer:4`).
    pub recorded: String,
    /// Its live value; `None` when the live module does not declare it.
    pub live: Option<String>,
}

impl ParameterDifference {
    /// `parameter mission_planner hold: recorded integer:4, live integer:2`, worded as `lockstep replay`
    /// words it.
    pub(crate) fn warning(&self) -> String {
        let difference = lockstep_replay::parameters::Difference {
            module: self.module.clone(),
            parameter: self.parameter.clone(),
            recorded: self.recorded.clone(),
            live: self.live.clone(),
        };
        format!("parameter {}", difference.describe())
    }
}

/// What a replay's report says a case did not check as recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// Per (channel, module), in that order.
    pub skipped: Vec<SkippedFrames>,
    /// In the replay report's order.
    pub parameters: Vec<ParameterDifference>,
}

/// The text of `value[key]`, "" when absent or not text.
fn text(value: &Value, key: &str) -> String {
    value[key].as_str().unwrap_or_default().to_owned()
}

impl Findings {
    /// Read from a replay's `report.json` (`frames_skipped`, `parameters.differences`); what it lacks is
    /// taken as nothing found.
    pub fn of(replay_report: &Value) -> Findings {
        let mut skipped: BTreeMap<(String, String), SkippedFrames> = BTreeMap::new();
        for frame in replay_report["frames_skipped"].as_array().into_iter().flatten() {
            let (channel, module) = (text(frame, "channel"), text(frame, "module"));
            skipped
                .entry((channel.clone(), module.clone()))
                .or_insert_with(|| SkippedFrames {
                    channel,
                    module,
                    frames: 0,
                    reason: text(frame, "reason"),
                })
                .frames += 1;
        }
        let differences = &replay_report["parameters"]["differences"];
        let parameters = (differences.as_array().into_iter().flatten())
            .map(|d| ParameterDifference {
                module: text(d, "module"),
                parameter: text(d, "parameter"),
                recorded: text(d, "recorded"),
                live: d["live"].as_str().map(str::to_owned),
            })
            .collect();
        Findings {
            skipped: skipped.into_values().collect(),
            parameters,
        }
    }

    /// Frames skipped in all.
    pub fn skipped_frames(&self) -> u64 {
        self.skipped.iter().map(|s| s.frames).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_without_skips_or_parameters_finds_nothing() {
        assert_eq!(Findings::of(&serde_json::json!({})), Findings::default());
        let only = serde_json::json!({"frames_skipped": [{"module": "m", "channel": "/c", "sequence_num": 1,
            "reason": "why"}]});
        let findings = Findings::of(&only);
        assert_eq!(findings.skipped_frames(), 1);
        assert_eq!(
            findings.skipped[0].warning(),
            "1 frame of /c (m) could not be replayed, so were not compared: why"
        );
        assert!(findings.parameters.is_empty());
    }
}
