//! The plots drawn here from the demo's JSON series: the vehicle's path on the map, the player's speed and
//! acceleration against the limits, the task's timeline. Each is drawn [`PAGE_WIDTH_PX`] wide, the width the
//! page shows it at.

use std::collections::BTreeMap;

use lockstep_plot::{Figure, Limit, Panel, Series};
use serde::Deserialize;

use crate::html::PAGE_WIDTH_PX;

/// The scene's grid (`data/vehicle_path.json` → `scene`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Scene {
    /// Columns of the grid.
    pub columns: u32,
    /// Rows of the grid (row 0 at the top of the map).
    pub rows: u32,
    /// Cell size, metres.
    pub cell_m: f64,
    /// Obstacle cells, `[column, row]`.
    #[serde(default)]
    pub obstacles: Vec<[u32; 2]>,
}

/// `data/vehicle_path.json`: the map and where the vehicle went, in the `map` frame (metres).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct VehiclePath {
    /// The grid.
    pub scene: Scene,
    /// Start position `[x, y]`.
    pub start: [f64; 2],
    /// Destinations of the tour, `[x, y]` each.
    #[serde(default)]
    pub destinations: Vec<[f64; 2]>,
    /// Ground-truth positions in time order, `[x, y]` each.
    pub truth: Vec<[f64; 2]>,
}

/// `data/player.json`: the player's commands as fractions of the joint limits, one value per period.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PlayerSeries {
    /// Command period, seconds.
    pub period_s: f64,
    /// Joint names, in the order to draw.
    pub joints: Vec<String>,
    /// Joint -> |velocity| / limit, one per command step.
    pub velocity_fraction: BTreeMap<String, Vec<f64>>,
    /// Joint -> |acceleration| / limit, one per command step.
    pub acceleration_fraction: BTreeMap<String, Vec<f64>>,
    /// Requests made while playing (pause, resume, speed change), at command time `t_s`.
    #[serde(default)]
    pub events: Vec<PlayerEvent>,
}

/// A request to the player, at command time `t_s`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PlayerEvent {
    /// What was asked.
    pub label: String,
    /// When, seconds from the first command.
    pub t_s: f64,
}

/// `data/task_timeline.json`: when each subtask was in which status.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TaskTimeline {
    /// The task type.
    pub task: String,
    /// How it ended.
    #[serde(default)]
    pub outcome: String,
    /// One bar per status interval.
    pub bars: Vec<Bar>,
    /// Subtask path -> its name (the template it was made from: `load`, `drive`, `unload`, ...), the row's
    /// label. A subtask without a name here or on its bars is labelled with the end of its path.
    #[serde(default)]
    pub names: BTreeMap<String, String>,
}

/// A subtask in one status from `start_s` to `end_s`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Bar {
    /// e.g. `task/duty[0]/message[1]/action[0]`.
    pub path: String,
    /// The subtask's name, e.g. `drive` (the row's label).
    #[serde(default)]
    pub name: Option<String>,
    /// 0 = the task.
    pub level: u32,
    /// running, delayed, interrupted, ...
    pub status: String,
    /// Start, seconds from the task's first event.
    pub start_s: f64,
    /// End, seconds.
    pub end_s: f64,
}

/// Half the height of a timeline bar, in rows.
const BAR_HALF: f64 = 0.3;

/// Room around a panel's plotting area in a figure [`PAGE_WIDTH_PX`] wide, pixels: across, the margins and
/// the y labels; down, the margins, the panel's title and the x labels.
const PANEL_FRAME_PX: (u32, u32) = (100, 80);

/// The vehicle's path on the map: obstacle cells, the path, start and destinations, one metre as long on
/// both axes; the figure's height follows the map's shape so little of it is left blank.
pub fn path_figure(data: &VehiclePath) -> Figure {
    let s = data.scene.cell_m;
    let rows = f64::from(data.scene.rows);
    let mut panel = Panel::new("ground truth in the map frame", "x [m]", "y [m]");
    panel.equal_aspect = true;
    let cells = data
        .scene
        .obstacles
        .iter()
        .map(|&[c, r]| {
            let (x, y) = (f64::from(c) * s, (rows - 1.0 - f64::from(r)) * s);
            ((x, y), (x + s, y + s))
        })
        .collect();
    panel.series.push(Series::rects("racks and walls", cells));
    panel.series.push(Series::line(
        "path",
        data.truth.iter().map(|&[x, y]| (x, y)).collect(),
    ));
    panel.series.push(Series::points(
        "destinations",
        data.destinations.iter().map(|&[x, y]| (x, y)).collect(),
    ));
    panel
        .series
        .push(Series::points("start", vec![(data.start[0], data.start[1])]));
    if data.truth.is_empty() {
        panel.note = Some("no ground truth recorded".into());
    }
    let ((x0, x1), (y0, y1)) = panel.ranges();
    let plot_w = f64::from(PAGE_WIDTH_PX - PANEL_FRAME_PX.0);
    let plot_h = (plot_w * (y1 - y0) / (x1 - x0)).clamp(200.0, 1400.0);
    let mut figure = Figure::new("Vehicle path on the warehouse map").with_panel(panel);
    figure.width_px = PAGE_WIDTH_PX;
    figure.panel_height_px = plot_h.round() as u32 + PANEL_FRAME_PX.1;
    figure
}

/// The player's |v| and |a| as fractions of the limits, one line per joint, the limit at 1, the requests
/// marked as points on the x axis.
pub fn player_figure(data: &PlayerSeries) -> Figure {
    let t = |i: usize| i as f64 * data.period_s;
    let events: Vec<(f64, f64)> = data.events.iter().map(|e| (e.t_s, 0.0)).collect();
    let mut panels = Vec::new();
    for (title, y_label, series) in [
        ("|velocity| / limit", "fraction of v_max", &data.velocity_fraction),
        (
            "|acceleration| / limit",
            "fraction of a_max",
            &data.acceleration_fraction,
        ),
    ] {
        let mut panel = Panel::new(title, "command time [s]", y_label);
        for joint in &data.joints {
            let values = series.get(joint).map(Vec::as_slice).unwrap_or_default();
            panel.series.push(Series::line(
                joint.clone(),
                values.iter().enumerate().map(|(i, &v)| (t(i), v)).collect(),
            ));
        }
        if !events.is_empty() {
            let label = data
                .events
                .iter()
                .map(|e| e.label.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            panel.series.push(Series::points(label, events.clone()));
        }
        panel.limits.push(Limit {
            label: "limit".into(),
            y: 1.0,
        });
        panel.y_range = Some((0.0, 1.15));
        panels.push(panel);
    }
    let mut figure = Figure::new("Interpolation player: speed and acceleration against the limits");
    figure.panels = panels;
    figure.width_px = PAGE_WIDTH_PX;
    figure
}

/// The task's subtasks as rows (in first-seen order, the task at the top) labelled with their names, a bar
/// per status interval.
pub fn timeline_figure(data: &TaskTimeline) -> Figure {
    // Rows: the task on top, then the subtasks in the order they started.
    let mut order: Vec<(&str, f64)> = Vec::new();
    for bar in &data.bars {
        match order.iter_mut().find(|(p, _)| *p == bar.path) {
            Some(entry) => entry.1 = entry.1.min(bar.start_s),
            None => order.push((bar.path.as_str(), bar.start_s)),
        }
    }
    order.sort_by(|a, b| {
        let depth = |p: &str| p.matches('/').count();
        a.1.total_cmp(&b.1)
            .then(depth(a.0).cmp(&depth(b.0)))
            .then(a.0.cmp(b.0))
    });
    let n = order.len();
    // Row 0 is drawn at the bottom: the first row (the task) gets the highest y.
    let row_of = |path: &str| {
        order
            .iter()
            .position(|(p, _)| *p == path)
            .map_or(0.0, |i| (n - 1 - i) as f64)
    };
    let mut statuses: Vec<&str> = data.bars.iter().map(|b| b.status.as_str()).collect();
    statuses.sort_unstable();
    statuses.dedup();
    let mut panel = Panel::new(
        format!("{} ({})", data.task, data.outcome),
        "time since the task started [s]",
        "",
    );
    panel.y_categories = order.iter().rev().map(|(p, _)| label(data, p)).collect();
    for status in statuses {
        let rects = data
            .bars
            .iter()
            .filter(|b| b.status == status)
            .map(|b| {
                let y = row_of(&b.path);
                ((b.start_s, y - BAR_HALF), (b.end_s.max(b.start_s), y + BAR_HALF))
            })
            .collect();
        panel.series.push(Series::rects(status, rects));
    }
    if data.bars.is_empty() {
        panel.note = Some("no task events".into());
    }
    let mut figure = Figure::new("Warehouse task timeline").with_panel(panel);
    figure.width_px = PAGE_WIDTH_PX;
    figure.panel_height_px = (120 + 40 * n as u32).max(300);
    figure
}

/// A row's label: the subtask's name (from its bars, else from `names`), else the end of its path.
fn label(data: &TaskTimeline, path: &str) -> String {
    data.bars
        .iter()
        .filter(|b| b.path == path)
        .find_map(|b| b.name.clone())
        .or_else(|| data.names.get(path).cloned())
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| short(path))
}

/// `task/duty[0]/message[1]/action[0]` -> `message[1]/action[0]`: the last two levels, enough to tell rows
/// apart beside the axis.
fn short(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').collect();
    parts[parts.len().saturating_sub(2)..].join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_keep_the_last_two_levels() {
        assert_eq!(short("task"), "task");
        assert_eq!(short("task/duty[0]"), "task/duty[0]");
        assert_eq!(short("task/duty[0]/message[1]/action[0]"), "message[1]/action[0]");
    }
}
