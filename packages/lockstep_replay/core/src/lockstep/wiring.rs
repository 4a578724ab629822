//! The live modules' wiring against the recorded one: what a DDS replay checks before the first step
//! (no ROS here; the node reads the live wiring from each module's latched topology).

use std::collections::{BTreeMap, BTreeSet};

use lockstep_trace::Component;

use super::recording::Recording;
use super::types::NewModule;

/// The differences between the recorded and the live wiring.
#[derive(Debug, Clone, Default)]
pub struct WiringDrift {
    /// (module, channel) a live module reads that its recorded wiring did not.
    pub new_inputs: Vec<(String, String)>,
    /// (module, channel) the recorded wiring read that the live module no longer does.
    pub missing_inputs: Vec<(String, String)>,
    /// (module, channel) a live module writes that its recorded wiring did not.
    pub new_outputs: Vec<(String, String)>,
    /// (module, channel) the recorded wiring wrote that the live module no longer does.
    pub missing_outputs: Vec<(String, String)>,
}

/// The wiring of the live modules the recording does not have: each must be live, read its trigger and
/// write at least one channel.
pub fn new_module_wiring(
    recording: &Recording,
    new_modules: &[(String, String)],
    live: &BTreeMap<String, Component>,
) -> Result<Vec<NewModule>, String> {
    let mut out = Vec::new();
    for (name, trigger) in new_modules {
        let Some(component) = live.get(name) else {
            return Err(format!(
                "--new-module {name}:{trigger}: no module `{name}` answered on its step service"
            ));
        };
        if !component.reader_channels.contains(trigger) {
            return Err(format!(
                "--new-module {name}:{trigger}: `{name}` does not read {trigger} (it reads {})",
                component
                    .reader_channels
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !recording.channels.contains_key(trigger) && recording.producer(trigger).is_none() {
            return Err(format!(
                "--new-module {name}:{trigger}: the recording has no {trigger}"
            ));
        }
        if component.writer_channels.is_empty() {
            return Err(format!(
                "--new-module {name}:{trigger}: `{name}` writes no channel"
            ));
        }
        out.push(NewModule {
            name: name.clone(),
            trigger: trigger.clone(),
            writes: component.writer_channels.iter().cloned().collect(),
            types: BTreeMap::new(), // from the ROS graph, once every module is found
        });
    }
    Ok(out)
}

/// Compare the live wiring with the recorded one. A live module reading a channel that the recording lacks
/// and no live module writes is an error naming both; other differences are listed.
pub fn compare_wiring(
    recording: &Recording,
    live: &BTreeMap<String, Component>,
) -> Result<WiringDrift, String> {
    let live_written: BTreeSet<&String> = live.values().flat_map(|c| &c.writer_channels).collect();
    let mut drift = WiringDrift::default();
    for (module, component) in live {
        let Some(recorded) = recording.topology.component(module) else {
            continue;
        };
        for channel in component.reader_channels.difference(&recorded.reader_channels) {
            if !recording.channels.contains_key(channel) && !live_written.contains(channel) {
                return Err(format!(
                    "live module `{module}` reads {channel}, which the recording lacks and no live module writes: nothing to replay it from"
                ));
            }
            drift.new_inputs.push((module.clone(), channel.clone()));
        }
        for channel in recorded.reader_channels.difference(&component.reader_channels) {
            drift.missing_inputs.push((module.clone(), channel.clone()));
        }
        for channel in component.writer_channels.difference(&recorded.writer_channels) {
            drift.new_outputs.push((module.clone(), channel.clone()));
        }
        for channel in recorded.writer_channels.difference(&component.writer_channels) {
            drift.missing_outputs.push((module.clone(), channel.clone()));
        }
    }
    Ok(drift)
}

/// Per recorded channel the live modules read: how many of them read it. The replay publishes the
/// recording of each: of the channels no live module writes (external inputs, outputs of modules not
/// running) as the modules' inputs, and of those a live module writes as the backup input of a frame whose
/// upstream output was not simulated.
pub fn live_readers(recording: &Recording, live: &BTreeMap<String, Component>) -> BTreeMap<String, usize> {
    let mut readers: BTreeMap<String, usize> = BTreeMap::new();
    for c in live.values() {
        for channel in &c.reader_channels {
            if recording.channels.contains_key(channel) {
                *readers.entry(channel.clone()).or_default() += 1;
            }
        }
    }
    readers
}

/// The channels of `readers` that no live module writes: those the replay feeds from the recording.
pub fn fed_channels(readers: &BTreeMap<String, usize>, live: &BTreeMap<String, Component>) -> Vec<String> {
    let live_written: BTreeSet<&String> = live.values().flat_map(|c| &c.writer_channels).collect();
    readers
        .keys()
        .filter(|c| !live_written.contains(c))
        .cloned()
        .collect()
}
