//! A robot kept waiting: past `replan_after_s` at a station, a robot whose next station is held plans the
//! rest of its drive around that station, if the map has another way (a WAITING event says which way).
//! A robot standing idle on a junction, or a queue in a corridor, then no longer holds up the robots behind
//! it when the map lets them go round.

use std::collections::BTreeSet;

use serde_json::json;

use super::io::Setup;
use super::Manager;

impl<S: Setup> Manager<S> {
    /// Plan `robot`'s waiting drive around the station ahead of it. `true`: it has a new way.
    pub(crate) fn plan_around(&mut self, robot: &str) -> bool {
        let (Some(map), Some(floor)) = (self.map.as_ref(), self.floor.as_ref()) else {
            return false;
        };
        let Some(drive) = floor.drives.get(robot) else {
            return false;
        };
        let (Some(next), Some(destination)) = (drive.stations.get(drive.at + 1), drive.stations.last())
        else {
            return false;
        };
        if next == destination || drive.past_at || drive.stop_at.is_some() {
            return false;
        }
        let here = &drive.stations[drive.at];
        let avoid = BTreeSet::from([next.clone()]);
        let Ok(around) = map.plan_around(here, destination, &avoid) else {
            return false;
        };
        let waited_s = self.now - drive.waiting_since.unwrap_or(self.now);
        let reason = format!(
            "plans around station {next} after waiting {waited_s:.0} s at {here}: via {}",
            around.stations[1..].join(", ")
        );
        let (task, path) = (drive.task.clone(), drive.path.clone());
        let points = (around.points.iter())
            .map(|[x, y]| json!({"x": x, "y": y}))
            .collect();
        if let Some(drive) = self.floor.as_mut().and_then(|f| f.drives.get_mut(robot)) {
            // The first point stays the one the robot's goals used for this station.
            let mut points: Vec<_> = points;
            if let (Some(first), Some(used)) = (points.first_mut(), drive.points.get(drive.at)) {
                *first = used.clone();
            }
            (drive.stations, drive.points, drive.at) = (around.stations, points, 0);
            (drive.waiting, drive.waiting_since) = (None, None);
        }
        self.wait_event(&task, robot, &path, reason);
        true
    }
}
