//! What the task manager starts with: its parameters read and checked, the station map, the robots, the
//! state file's content, the configuration with its actuator clients, and the condition rules. Anything that
//! cannot be read stops the node before it serves anything.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;

use anyhow::Context as _;
use lockstep_ros::SharedNode;
use lockstep_tasks::manager::Environment;
use lockstep_tasks::map::StationMap;
use lockstep_tasks::robots::{self, Robot};

use crate::loaded::Loaded;
use crate::params::ManagerParams;

/// The largest rule file read.
const MAX_RULES_FILE_BYTES: u64 = 16 << 20;

/// What the node starts with.
pub struct Start {
    pub p: ManagerParams,
    pub config_path: PathBuf,
    pub map: Option<StationMap>,
    pub robots: BTreeMap<String, Robot>,
    pub state_file: Option<PathBuf>,
    pub saved: Option<lockstep_tasks::journal::State>,
    pub loaded: Rc<Loaded>,
    pub env: Environment,
}

pub fn start(node: &SharedNode) -> anyhow::Result<Start> {
    // Checked against RULES at start (a bad value stops the node, naming the parameter and its range) and on
    // every run-time set; all are read at start only, so a run-time set is refused saying so.
    let p = lockstep_ros::declare_start_only_parameters(node, ManagerParams::default())?;
    let config_path = PathBuf::from(&p.config_file);
    let map = match p.map_file.trim() {
        "" => None,
        file => {
            Some(StationMap::read(std::path::Path::new(file)).map_err(|e| anyhow::anyhow!("map_file: {e}"))?)
        }
    };
    let robots = robots::robots(
        &lockstep_ros::param_list(&p.robots),
        &lockstep_ros::param_list(&p.start_stations),
        map.as_ref(),
    )
    .map_err(|e| anyhow::anyhow!(e))?;
    let state_file = (!p.state_file.trim().is_empty()).then(|| PathBuf::from(p.state_file.trim()));
    // Read before anything runs: a state file that cannot be read stops the node and is left as it is.
    let saved = match &state_file {
        Some(path) => lockstep_tasks::journal::read(path).map_err(|e| anyhow::anyhow!(e))?,
        None => None,
    };
    let loaded = Rc::new(Loaded::load(node, &config_path, &robots)?);
    let mut rules = Vec::new();
    for file in lockstep_ros::param_list(&p.rules_files) {
        let text = lockstep_ranges::file::read_text(std::path::Path::new(&file), MAX_RULES_FILE_BYTES)
            .with_context(|| format!("rules_files: reading {file}"))?;
        rules.push((file, text));
    }
    let mut env = Environment::new(rules);
    env.max_seconds = p.rules_max_seconds;
    env.set_facts(String::new())
        .map_err(|e| anyhow::anyhow!("rules_files: {e}"))?;
    // In range (RULES), so this conversion cannot panic.
    env.drain_timeout_s = p.server_wait_s;
    Ok(Start {
        p,
        config_path,
        map,
        robots,
        state_file,
        saved,
        loaded,
        env,
    })
}
