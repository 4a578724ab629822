//! A loaded task configuration and, per robot, the clients of its actuators.

use std::collections::BTreeMap;
use std::path::Path;

use lockstep_ros::{lock, SharedNode};
use lockstep_tasks::Config;

use crate::actuators::{self, Client, Pauser};
use crate::environment;
use crate::fleet::{qualified, Robot};

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

    /// Actuator name -> the condition that blocks it.
    pub fn blocked_by(&self) -> BTreeMap<String, String> {
        (self.config.actuators.iter())
            .filter_map(|(name, a)| Some((name.clone(), a.blocked_by.clone()?)))
            .collect()
    }

    /// Actuators that pause along their path.
    pub fn pausable(&self) -> std::collections::BTreeSet<String> {
        (self.config.actuators.iter())
            .filter(|(_, a)| a.pause.is_some())
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Every action server, for the log.
    pub fn server_list(&self) -> String {
        let mut all: Vec<&str> = self.servers.values().map(String::as_str).collect();
        all.sort();
        all.dedup();
        all.join(", ")
    }
}
