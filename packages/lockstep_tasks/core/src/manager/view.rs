//! What the live fleet view shows, in the map's frame: each robot at the station it reached last (and how it
//! is: moving, waiting for a lane or station another holds, lost), the route it still has to drive, and the
//! lanes and stations it holds. The node draws it as `visualization_msgs/MarkerArray` for rviz and Foxglove.

use super::io::Setup;
use super::Manager;
use crate::traffic::Resource;

/// How a robot is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RobotMood {
    /// Idle, or driving.
    Going,
    /// Waiting at a station for a lane or station another robot holds.
    Waiting,
    /// None of its actuators answers.
    Lost,
}

/// One robot in the view.
#[derive(Debug, Clone, PartialEq)]
pub struct RobotMark {
    pub name: String,
    /// Where it stands (m, the map's frame).
    pub at: [f64; 2],
    pub mood: RobotMood,
    /// The stations still ahead of it on its drive, the one it stands at first.
    pub route: Vec<[f64; 2]>,
    /// The lanes it holds, each from one station to another.
    pub lanes: Vec<([f64; 2], [f64; 2])>,
    /// The stations it holds.
    pub stations: Vec<[f64; 2]>,
}

/// The whole view.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetView {
    pub frame_id: String,
    /// Sorted by name.
    pub robots: Vec<RobotMark>,
}

impl<S: Setup> Manager<S> {
    /// The fleet as the view draws it; `None` without a map (no positions to draw at).
    pub fn fleet_view(&self) -> Option<FleetView> {
        let map = self.map.as_ref()?;
        let held = (self.floor.as_ref())
            .map(|f| f.traffic.held().robots)
            .unwrap_or_default();
        let robots = (self.robots.values())
            .filter_map(|robot| {
                let at = map.position(robot.station.as_deref()?)?;
                let drive = self.floor.as_ref().and_then(|f| f.drives.get(&robot.name));
                let mood = if self.lost.contains(&robot.name) {
                    RobotMood::Lost
                } else if drive.is_some_and(|d| d.waiting.is_some()) {
                    RobotMood::Waiting
                } else {
                    RobotMood::Going
                };
                let route = (drive.into_iter())
                    .flat_map(|d| d.stations[d.at..].iter())
                    .filter_map(|s| map.position(s))
                    .collect();
                let mut lanes = Vec::new();
                let mut stations = Vec::new();
                for resource in held.get(&robot.name).into_iter().flatten() {
                    match resource {
                        Resource::Lane { from, to } => {
                            if let (Some(a), Some(b)) = (map.position(from), map.position(to)) {
                                lanes.push((a, b));
                            }
                        }
                        Resource::Station(name) => stations.extend(map.position(name)),
                        Resource::Group(_) => {}
                    }
                }
                Some(RobotMark {
                    name: robot.name.clone(),
                    at,
                    mood,
                    route,
                    lanes,
                    stations,
                })
            })
            .collect();
        Some(FleetView {
            frame_id: map.frame_id().to_owned(),
            robots,
        })
    }
}
