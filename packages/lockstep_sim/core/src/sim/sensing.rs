//! Sensing on the grid: free distances by exact ray traversal, footprint collisions, and the checks that a
//! cell can hold the vehicle.

use crate::config::SimConfig;
use crate::error::{Error, Result};
use crate::scene::{Cell, Scene};
use crate::surface::SurfaceTable;
use crate::vehicle::{normalize_angle, Pose2D};

use super::types::{Perception, Simulator};

impl Simulator {
    /// The sensors and navigation facts for the current true pose.
    pub fn perceive(&self) -> Perception {
        let r = self.config.vehicle_radius_m;
        let yaw = self.pose.yaw_rad;
        let half_pi = std::f64::consts::FRAC_PI_2;
        let clearance = |d: f64| (d - r).max(0.0);
        let free_front_m = clearance(self.cast_wide(yaw));
        let free_left_m = clearance(self.cast(self.pose.x_m, self.pose.y_m, yaw + half_pi));
        let free_right_m = clearance(self.cast(self.pose.x_m, self.pose.y_m, yaw - half_pi));
        let (dest_distance_m, heading_error_rad, goal_free_m) = match self.destination {
            Some(dest) => {
                let (dx, dy) = self.scene.cell_center(dest);
                let bearing = (dy - self.pose.y_m).atan2(dx - self.pose.x_m);
                let distance = (dx - self.pose.x_m).hypot(dy - self.pose.y_m);
                (
                    distance,
                    normalize_angle(bearing - yaw),
                    clearance(self.cast_wide(bearing)),
                )
            }
            None => (0.0, 0.0, 0.0),
        };
        Perception {
            free_front_m,
            free_left_m,
            free_right_m,
            dest_distance_m,
            heading_error_rad,
            goal_free_m,
            at_destination: self.destination.is_some() && dest_distance_m <= self.config.arrival_tolerance_m,
        }
    }

    /// What the range sensors `scan_front` and `scan_rear` read (m): the free distance ahead of and behind the
    /// footprint, each over three parallel rays spanning the vehicle's width, capped at the sensor range.
    pub fn front_rear_ranges(&self) -> (f64, f64) {
        let r = self.config.vehicle_radius_m;
        let yaw = self.pose.yaw_rad;
        let clearance = |d: f64| (d - r).max(0.0);
        (
            clearance(self.cast_wide(yaw)),
            clearance(self.cast_wide(normalize_angle(yaw + std::f64::consts::PI))),
        )
    }

    /// The range sensors' limit (m): a reading at it shows no obstacle.
    pub fn sensor_range_m(&self) -> f64 {
        self.config.sensor_range_m
    }

    /// Free distance along `bearing` over three parallel rays: the centre line and the footprint's two sides.
    fn cast_wide(&self, bearing: f64) -> f64 {
        let r = self.config.vehicle_radius_m;
        let (s, c) = bearing.sin_cos();
        [-r, 0.0, r]
            .iter()
            .map(|off| self.cast(self.pose.x_m - off * s, self.pose.y_m + off * c, bearing))
            .fold(f64::INFINITY, f64::min)
    }

    /// Distance from a point along `bearing` to the first blocked cell (an obstacle or outside the grid),
    /// capped at the sensor range: an exact grid traversal (Amanatides & Woo).
    fn cast(&self, x_m: f64, y_m: f64, bearing: f64) -> f64 {
        let range = self.config.sensor_range_m;
        let cs = self.scene.cell_size_m();
        let rows = self.scene.rows() as i64;
        let (gx, gy) = (x_m / cs, y_m / cs);
        let (mut ix, mut iy) = (gx.floor() as i64, gy.floor() as i64);
        if self.blocked(ix, rows - 1 - iy) {
            return 0.0;
        }
        let (dy, dx) = bearing.sin_cos();
        let step_x: i64 = if dx > 0.0 { 1 } else { -1 };
        let step_y: i64 = if dy > 0.0 { 1 } else { -1 };
        let boundary = |g: f64, i: i64, d: f64| -> f64 {
            if d > 1e-12 {
                ((i + 1) as f64 - g) / d
            } else if d < -1e-12 {
                (g - i as f64) / -d
            } else {
                f64::INFINITY
            }
        };
        let delta = |d: f64| {
            if d.abs() > 1e-12 {
                1.0 / d.abs()
            } else {
                f64::INFINITY
            }
        };
        let mut t_max_x = boundary(gx, ix, dx);
        let mut t_max_y = boundary(gy, iy, dy);
        let (t_delta_x, t_delta_y) = (delta(dx), delta(dy));
        loop {
            let t = if t_max_x < t_max_y {
                let t = t_max_x;
                ix += step_x;
                t_max_x += t_delta_x;
                t
            } else {
                let t = t_max_y;
                iy += step_y;
                t_max_y += t_delta_y;
                t
            };
            let distance = t * cs;
            // A NaN distance (a NaN bearing) ends the ray too rather than looping forever.
            if distance >= range || distance.is_nan() {
                return range;
            }
            if self.blocked(ix, rows - 1 - iy) {
                return distance;
            }
        }
    }

    fn blocked(&self, column: i64, row: i64) -> bool {
        blocked_in(&self.scene, &self.surfaces, column, row)
    }

    pub(super) fn collides(&self, pose: &Pose2D) -> bool {
        collides_in(&self.scene, &self.surfaces, pose, self.config.vehicle_radius_m)
    }

    pub(super) fn cell_under(&self) -> Option<Cell> {
        self.scene.cell_at(self.pose.x_m, self.pose.y_m)
    }
}

fn blocked_in(scene: &Scene, surfaces: &SurfaceTable, column: i64, row: i64) -> bool {
    match scene.checked_cell(column, row).and_then(|c| scene.code(c)) {
        None => true,
        Some(code) => !matches!(surfaces.get(code), Some(s) if !s.obstacle),
    }
}

/// Whether a footprint of `radius_m` at `pose` overlaps a blocked cell (an obstacle or outside the grid).
pub(super) fn collides_in(scene: &Scene, surfaces: &SurfaceTable, pose: &Pose2D, radius_m: f64) -> bool {
    let cs = scene.cell_size_m();
    let (c0, r_top) = scene.signed_cell_at(pose.x_m - radius_m, pose.y_m + radius_m);
    let (c1, r_bottom) = scene.signed_cell_at(pose.x_m + radius_m, pose.y_m - radius_m);
    for row in r_top..=r_bottom {
        for column in c0..=c1 {
            if !blocked_in(scene, surfaces, column, row) {
                continue;
            }
            let (x0, y0) = scene.cell_min_corner(column, row);
            let nx = pose.x_m.clamp(x0, x0 + cs);
            let ny = pose.y_m.clamp(y0, y0 + cs);
            if (pose.x_m - nx).hypot(pose.y_m - ny) < radius_m - 1e-9 {
                return true;
            }
        }
    }
    false
}

/// The cell `(column, row)` if the vehicle may stand on it (as `what`: start, destination); else why not.
pub(super) fn check_cell(
    scene: &Scene,
    surfaces: &SurfaceTable,
    column: i64,
    row: i64,
    what: &str,
) -> Result<Cell> {
    let Some(cell) = scene.checked_cell(column, row) else {
        return Err(Error::BadCell {
            column,
            row,
            reason: format!(
                "cannot be the {what}: it is outside the {} x {} grid (columns 0..{}, rows 0..{})",
                scene.columns(),
                scene.rows(),
                scene.columns() - 1,
                scene.rows() - 1
            ),
        });
    };
    let code = scene.code(cell).unwrap_or(0);
    match surfaces.get(code) {
        Some(s) if !s.obstacle => Ok(cell),
        Some(s) => Err(Error::BadCell {
            column,
            row,
            reason: format!(
                "cannot be the {what}: it is an obstacle (typecode {code}, {})",
                s.name
            ),
        }),
        None => Err(Error::BadCell {
            column,
            row,
            reason: format!("cannot be the {what}: typecode {code} is not decoded"),
        }),
    }
}

/// [`check_cell`] for a cell already known to lie on some grid (a start or destination kept across reloads).
pub(super) fn check_known_cell(
    scene: &Scene,
    surfaces: &SurfaceTable,
    cell: Cell,
    what: &str,
) -> Result<Cell> {
    check_cell(scene, surfaces, cell.column as i64, cell.row as i64, what)
}

/// The start cell of `config`, or the first enterable cell; the destination, if any, must be enterable too.
pub(super) fn start_cell(scene: &Scene, surfaces: &SurfaceTable, config: &SimConfig) -> Result<Cell> {
    let start = match config.start {
        Some(cell) => check_known_cell(scene, surfaces, cell, "start")?,
        None => first_free_cell(scene, surfaces).ok_or_else(|| Error::BadCell {
            column: 0,
            row: 0,
            reason: "cannot start the vehicle: every cell of the scene is an obstacle".into(),
        })?,
    };
    if let Some(dest) = config.destination {
        check_known_cell(scene, surfaces, dest, "destination")?;
    }
    Ok(start)
}

/// The first enterable cell in row-major order.
pub(super) fn first_free_cell(scene: &Scene, surfaces: &SurfaceTable) -> Option<Cell> {
    (0..scene.rows())
        .flat_map(|row| (0..scene.columns()).map(move |column| Cell { column, row }))
        .find(|&c| {
            scene
                .code(c)
                .and_then(|code| surfaces.get(code))
                .is_some_and(|s| !s.obstacle)
        })
}
