//! A loaded task configuration and, per robot, the clients of its actuators.

use std::collections::BTreeMap;
use std::path::Path;

use lockstep_ros::{lock, SharedNode};
use lockstep_tasks::Config;

use crate::actuators::{self, Client, Pauser};
use lockstep_tasks::manager::environment;
use lockstep_tasks::manager::Setup;
use lockstep_tasks::robots::{qualified, Robot};
use serde_json::Value;

/// A configuration and its actuator clients.
pub struct Loaded {
    pub config: Config,
    /// Robot -> actuator -> its action client.
    pub clients: BTreeMap<String, BTreeMap<String, Box<dyn Client>>>,
    /// Robot -> actuator -> its pause and resume services (actuators with `pause`).
    pub pausers: BTreeMap<String, BTreeMap<String, Pauser>>,
    /// (Robot, actuator) -> its action server, fully qualified.
    pub servers: BTreeMap<(String, String), String>,
}

impl Loaded {
    pub fn load(node: &SharedNode, path: &Path, robots: &BTreeMap<String, Robot>) -> anyhow::Result<Self> {
        let config = Config::read(path)?;
        for (name, actuator) in &config.actuators {
            if let Some(query) = &actuator.blocked_by {
                environment::check_query(query)
                    .map_err(|e| anyhow::anyhow!("{}: actuators.{name}.blocked_by: {e}", path.display()))?;
            }
        }
        let mut n = lock(node)?;
        let namespace = n.namespace()?;
        let mut clients = BTreeMap::new();
        let mut pausers = BTreeMap::new();
        let mut servers = BTreeMap::new();
        for robot in robots.values() {
            let made = actuators::clients(&mut n, &config.actuators, robot)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            clients.insert(robot.name.clone(), made);
            let mut robot_pausers = BTreeMap::new();
            for (name, actuator) in &config.actuators {
                servers.insert(
                    (robot.name.clone(), name.clone()),
                    qualified(&namespace, &robot.server(&actuator.server)),
                );
                if let Some(pauser) = Pauser::new(&mut n, actuator, robot)? {
                    robot_pausers.insert(name.clone(), pauser);
                }
            }
            pausers.insert(robot.name.clone(), robot_pausers);
        }
        Ok(Self {
            config,
            clients,
            pausers,
            servers,
        })
    }

    /// Every action server, for the log.
    pub fn server_list(&self) -> String {
        let mut all: Vec<&str> = self.servers.values().map(String::as_str).collect();
        all.sort();
        all.dedup();
        all.join(", ")
    }
}

/// What the manager's state machine needs of a loaded configuration: the configuration, the servers, and a
/// goal's check against its actuator's goal type (the typed client's).
impl Setup for Loaded {
    fn config(&self) -> &Config {
        &self.config
    }

    fn servers(&self) -> &BTreeMap<(String, String), String> {
        &self.servers
    }

    fn check_goal(&self, robot: &str, actuator: &str, goal: &Value) -> Result<(), String> {
        let client = (self.clients.get(robot))
            .ok_or_else(|| format!("no robot `{robot}`"))?
            .get(actuator)
            .ok_or_else(|| format!("actuator `{actuator}` is not configured"))?;
        client.check(goal)
    }
}
