//! The robots the manager drives. Each robot is a namespace (`robot1`) holding its own actuators: an actuator
//! server with a relative name in the configuration (`navigate`) resolves under the robot (`robot1/navigate`,
//! relative to the manager's namespace), an absolute one (`/hmi`) is shared by every robot. With no `robots`
//! parameter the manager drives one robot, named "", whose servers resolve in the manager's own namespace, as
//! before fleets existed.

use std::collections::BTreeMap;

use crate::map::StationMap;

/// One robot: its name, where it is, and what it was last sent to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Robot {
    /// "" for the manager's own namespace.
    pub name: String,
    /// The station it is at (updated as its drives complete), if known.
    pub station: Option<String>,
}

impl Robot {
    /// Where an actuator server named `server` in the configuration is for this robot, relative to the
    /// manager's namespace (absolute names stay as they are).
    pub fn server(&self, server: &str) -> String {
        if server.starts_with('/') || self.name.is_empty() {
            server.to_owned()
        } else {
            format!("{}/{server}", self.name)
        }
    }

    /// A topic the robot's actuators publish (`actuator_states`), relative to the manager's namespace.
    pub fn topic(&self, topic: &str) -> String {
        self.server(topic)
    }
}

/// `name` resolved against a namespace, as ROS resolves a relative name (no remapping): `/robot1/navigate`
/// for `navigate` in `/robot1`; an absolute name stays as it is.
pub fn qualified(namespace: &str, name: &str) -> String {
    if name.starts_with('/') {
        name.to_owned()
    } else if namespace.is_empty() || namespace == "/" {
        format!("/{name}")
    } else {
        format!("{}/{name}", namespace.trim_end_matches('/'))
    }
}

/// The robots from the `robots` and `start_stations` parameters (comma-separated, same order), checked
/// against the station map. Errors name the parameter and the entry.
pub fn robots(
    names: &[String],
    stations: &[String],
    map: Option<&StationMap>,
) -> Result<BTreeMap<String, Robot>, String> {
    let names: Vec<String> = if names.is_empty() {
        vec![String::new()]
    } else {
        names.to_vec()
    };
    if !stations.is_empty() && stations.len() != names.len() {
        return Err(format!(
            "parameter 'start_stations': {} stations for {} robots (one per robot, in the order of 'robots')",
            stations.len(),
            names.len()
        ));
    }
    let mut out = BTreeMap::new();
    for (i, name) in names.iter().enumerate() {
        let valid = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !valid && !name.is_empty() {
            return Err(format!(
                "parameter 'robots': `{name}` is not a valid namespace (letters, digits and _, not starting with a digit)"
            ));
        }
        let station = stations.get(i).cloned();
        if let (Some(station), Some(map)) = (&station, map) {
            if map.position(station).is_none() {
                return Err(format!(
                    "parameter 'start_stations': `{station}` (robot `{name}`) is not a station of the map"
                ));
            }
        }
        let robot = Robot {
            name: name.clone(),
            station,
        };
        if out.insert(name.clone(), robot).is_some() {
            return Err(format!("parameter 'robots': `{name}` is listed twice"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_resolve_under_the_robot_unless_absolute() {
        let r = Robot {
            name: "robot1".into(),
            station: None,
        };
        assert_eq!(r.server("navigate"), "robot1/navigate");
        assert_eq!(r.server("/hmi"), "/hmi");
        let alone = Robot {
            name: String::new(),
            station: None,
        };
        assert_eq!(alone.server("navigate"), "navigate");
        assert_eq!(qualified("/", "robot1/navigate"), "/robot1/navigate");
        assert_eq!(qualified("/site", "navigate"), "/site/navigate");
        assert_eq!(qualified("/site", "/navigate"), "/navigate");
    }

    #[test]
    fn the_robots_parameters_are_checked() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let one = robots(&[], &[], None).unwrap();
        assert_eq!(one.keys().collect::<Vec<_>>(), [""]);
        let three = robots(&names(&["r1", "r2", "r3"]), &names(&["A", "B", "C"]), None).unwrap();
        assert_eq!(three["r2"].station.as_deref(), Some("B"));
        assert!(robots(&names(&["r1", "r2"]), &names(&["A"]), None)
            .unwrap_err()
            .contains("1 stations for 2 robots"));
        assert!(robots(&names(&["r1", "r1"]), &[], None)
            .unwrap_err()
            .contains("twice"));
        assert!(robots(&names(&["1x"]), &[], None)
            .unwrap_err()
            .contains("not a valid namespace"));
    }
}
