//! What the simulator looks like: the grid coloured by surface (for rviz markers) and an ASCII map (for
//! terminals and test failures). Pure data; the node turns it into messages.

use crate::scene::{Cell, Scene};
use crate::sim::Simulator;
use crate::surface::{Surface, SurfaceTable};

/// A colour: red, green, blue, alpha in [0, 1].
pub type Rgba = [f32; 4];

/// The colour of obstacle cells.
pub const OBSTACLE_COLOR: Rgba = [0.15, 0.15, 0.15, 1.0];

/// A colour per surface: named surfaces get their own; others greyer the faster they are advised to be.
pub fn surface_color(name: &str, advised_speed_mps: f64) -> Rgba {
    match name {
        "ice" => [0.6, 0.85, 1.0, 1.0],
        "grass" => [0.3, 0.7, 0.3, 1.0],
        "mud" => [0.45, 0.3, 0.15, 1.0],
        "sand" => [0.9, 0.8, 0.5, 1.0],
        "gravel" => [0.6, 0.55, 0.5, 1.0],
        _ => {
            let k = if advised_speed_mps.is_finite() {
                (advised_speed_mps / 2.5).clamp(0.0, 1.0) as f32
            } else {
                0.0
            };
            [0.35 + 0.4 * k, 0.35 + 0.4 * k, 0.4 + 0.4 * k, 1.0]
        }
    }
}

/// One cell of the grid as drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GridCell {
    /// The cell.
    pub cell: Cell,
    /// Centre x in the map frame (m).
    pub x_m: f64,
    /// Centre y in the map frame (m).
    pub y_m: f64,
    /// An obstacle (drawn as a wall) or a surface (drawn as floor).
    pub obstacle: bool,
    /// Its colour.
    pub color: Rgba,
}

/// Every cell whose typecode is decoded, in row-major order.
pub fn grid_cells(scene: &Scene, surfaces: &SurfaceTable) -> Vec<GridCell> {
    cells(scene, surfaces)
        .filter_map(|(cell, surface)| {
            let surface = surface?;
            let (x_m, y_m) = scene.cell_center(cell);
            Some(GridCell {
                cell,
                x_m,
                y_m,
                obstacle: surface.obstacle,
                color: if surface.obstacle {
                    OBSTACLE_COLOR
                } else {
                    surface_color(&surface.name, surface.advised_speed_mps)
                },
            })
        })
        .collect()
}

/// Each cell in row-major order with its decoded surface, if any.
fn cells<'a>(
    scene: &'a Scene,
    surfaces: &'a SurfaceTable,
) -> impl Iterator<Item = (Cell, Option<&'a Surface>)> + 'a {
    (0..scene.rows())
        .flat_map(|row| (0..scene.columns()).map(move |column| Cell { column, row }))
        .map(|cell| (cell, scene.code(cell).and_then(|code| surfaces.get(code))))
}

impl Simulator {
    /// The grid as text, first matrix row first: `#` obstacle, the typecode's last digit for a surface, `*`
    /// the path, `S` start, `D` destination, `@` the vehicle.
    pub fn ascii_map(&self) -> String {
        let scene = self.scene();
        let mut grid: Vec<Vec<char>> = vec![vec!['#'; scene.columns()]; scene.rows()];
        for (cell, surface) in cells(scene, self.surfaces()) {
            if let Some(s) = surface.filter(|s| !s.obstacle) {
                grid[cell.row][cell.column] =
                    char::from_digit(s.code.rem_euclid(10) as u32, 10).unwrap_or('?');
            }
        }
        let mut mark = |x: f64, y: f64, ch: char| {
            if let Some(cell) = scene.cell_at(x, y) {
                grid[cell.row][cell.column] = ch;
            }
        };
        for &(_, x, y) in self.path() {
            mark(x, y, '*');
        }
        let start = self.start_pose();
        mark(start.x_m, start.y_m, 'S');
        if let Some(d) = self.destination() {
            let (x, y) = scene.cell_center(d);
            mark(x, y, 'D');
        }
        let pose = self.pose();
        mark(pose.x_m, pose.y_m, '@');
        grid.into_iter()
            .map(|r| r.into_iter().collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_are_in_range_even_for_garbage_speeds() {
        for speed in [f64::NAN, f64::INFINITY, -3.0, 0.0, 1.0, 1e308] {
            let c = surface_color("asphalt", speed);
            assert!(c.iter().all(|v| (0.0..=1.0).contains(v)), "{speed}: {c:?}");
        }
        assert_eq!(surface_color("ice", 0.0), [0.6, 0.85, 1.0, 1.0]);
    }
}
