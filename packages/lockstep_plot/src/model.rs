//! What a plot shows: figures, panels, series and limit lines, and the ranges a panel covers. Plain data
//! with no drawing, so that the drawing code and the crate root both build on it.

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesKind {
    /// Points joined in order.
    Line,
    /// Small filled circles, not joined (events, sparse samples).
    Points,
    /// Filled rectangles: the points taken in pairs, each pair two opposite corners (cells of a map, the
    /// bars of a timeline). A pair with a non-finite corner, or an odd last point, is left out.
    Rects,
}

/// One named curve of a panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Shown in the panel's legend.
    pub label: String,
    /// (x, y) in drawing order; non-finite points are left out.
    pub points: Vec<(f64, f64)>,
    /// Line or points.
    pub kind: SeriesKind,
}

impl Series {
    /// A line through `points`.
    pub fn line(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            label: label.into(),
            points,
            kind: SeriesKind::Line,
        }
    }

    /// Unjoined points.
    pub fn points(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            label: label.into(),
            points,
            kind: SeriesKind::Points,
        }
    }

    /// Filled rectangles, each given by two opposite corners.
    pub fn rects(label: impl Into<String>, rects: Vec<((f64, f64), (f64, f64))>) -> Self {
        Self {
            label: label.into(),
            points: rects.into_iter().flat_map(|(a, b)| [a, b]).collect(),
            kind: SeriesKind::Rects,
        }
    }

    /// The rectangles of a [`SeriesKind::Rects`] series (opposite corners, both finite).
    pub fn rect_corners(&self) -> Vec<((f64, f64), (f64, f64))> {
        self.points
            .chunks_exact(2)
            .map(|c| (c[0], c[1]))
            .filter(|(a, b)| a.0.is_finite() && a.1.is_finite() && b.0.is_finite() && b.1.is_finite())
            .collect()
    }
}

/// A horizontal line across a panel (drawn dashed-red-ish, labelled in the legend).
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    /// Shown in the legend, e.g. `v_max 1.0 m/s`.
    pub label: String,
    /// Its height in the panel's y unit.
    pub y: f64,
}

/// One panel: axes, curves and limit lines.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Panel {
    /// Above the panel.
    pub title: String,
    /// Under the x axis, with its unit.
    pub x_label: String,
    /// Beside the y axis, with its unit.
    pub y_label: String,
    /// Its curves, drawn in order, coloured from a fixed palette.
    pub series: Vec<Series>,
    /// Horizontal lines.
    pub limits: Vec<Limit>,
    /// Written in the middle of the panel (e.g. why it is empty).
    pub note: Option<String>,
    /// Same scale on both axes: a unit on x spans as many pixels as a unit on y (a path on a map, 1 m = 1 m).
    /// The range that is too short for the plotting area's shape is widened about its centre, whether it
    /// comes from the data or from `x_range` / `y_range`.
    pub equal_aspect: bool,
    /// The x range to show instead of the data's (panels of one figure sharing a time axis).
    pub x_range: Option<(f64, f64)>,
    /// The y range to show instead of the data's (a quantity that is never negative starts at 0).
    pub y_range: Option<(f64, f64)>,
    /// A categorical y axis: the i-th name labels y = i (the rows of a timeline); the data range then holds
    /// every row with half a row of room, and only the rows are labelled.
    pub y_categories: Vec<String>,
}

impl Panel {
    /// An empty panel with its title and axis labels.
    pub fn new(title: impl Into<String>, x_label: impl Into<String>, y_label: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            ..Self::default()
        }
    }

    /// The name of the category at `y` (the nearest row, if `y` is within 0.01 of it).
    pub fn category_at(&self, y: f64) -> Option<&str> {
        let row = y.round();
        if (y - row).abs() > 0.01 || row < 0.0 {
            return None;
        }
        self.y_categories.get(row as usize).map(String::as_str)
    }

    /// The x and y ranges to show: `x_range` / `y_range` where set, otherwise the ranges that hold every
    /// finite point and limit (y with a 5 % margin), widened so that neither is empty. `equal_aspect` is not
    /// applied here (it needs the plotting area's size: [`Panel::ranges_in`]).
    pub fn ranges(&self) -> ((f64, f64), (f64, f64)) {
        let (x, y) = self.data_ranges();
        (self.x_range.map_or(x, widen), self.y_range.map_or(y, widen))
    }

    /// The ranges shown in a plotting area of `width_px` x `height_px`: [`Panel::ranges`], and with
    /// `equal_aspect` the shorter one widened about its centre until a unit spans as many pixels on both axes.
    pub fn ranges_in(&self, width_px: u32, height_px: u32) -> ((f64, f64), (f64, f64)) {
        let (x, y) = self.ranges();
        if !self.equal_aspect {
            return (x, y);
        }
        // plotters maps a range onto the area's pixels from the first to the last: one fewer steps than pixels.
        let (w, h) = (
            f64::from(width_px.saturating_sub(1).max(1)),
            f64::from(height_px.saturating_sub(1).max(1)),
        );
        let per_px = ((x.1 - x.0) / w).max((y.1 - y.0) / h);
        let fit = |(lo, hi): (f64, f64), px: f64| {
            let (centre, half) = ((lo + hi) / 2.0, per_px * px / 2.0);
            (centre - half, centre + half)
        };
        (fit(x, w), fit(y, h))
    }

    fn data_ranges(&self) -> ((f64, f64), (f64, f64)) {
        let points = self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|(x, y)| x.is_finite() && y.is_finite());
        let mut x = (f64::INFINITY, f64::NEG_INFINITY);
        let mut y = (f64::INFINITY, f64::NEG_INFINITY);
        for &(px, py) in points {
            x = (x.0.min(px), x.1.max(px));
            y = (y.0.min(py), y.1.max(py));
        }
        for l in self.limits.iter().filter(|l| l.y.is_finite()) {
            y = (y.0.min(l.y), y.1.max(l.y));
        }
        let x = widen(x);
        let mut y = widen(y);
        if self.y_categories.is_empty() {
            let margin = (y.1 - y.0) * 0.05;
            y = (y.0 - margin, y.1 + margin);
        } else {
            let last = self.y_categories.len() as f64 - 1.0;
            y = (y.0.min(-0.5), y.1.max(last + 0.5));
        }
        (x, y)
    }
}

/// An empty or single-valued range becomes one of width 1 (or 10 % of the value) around it.
fn widen((lo, hi): (f64, f64)) -> (f64, f64) {
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo > f64::EPSILON * hi.abs().max(1.0) {
        return (lo, hi);
    }
    let half = if lo == 0.0 { 0.5 } else { lo.abs() * 0.05 };
    (lo - half, hi + half)
}

/// A title over panels stacked top to bottom.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// At the top.
    pub title: String,
    /// Top to bottom.
    pub panels: Vec<Panel>,
    /// Width of the image, pixels.
    pub width_px: u32,
    /// Height of each panel, pixels (the title adds its own band).
    pub panel_height_px: u32,
}

impl Figure {
    /// A figure 1000 px wide with 300 px panels.
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            panels: Vec::new(),
            width_px: 1000,
            panel_height_px: 300,
        }
    }

    /// Adds a panel at the bottom.
    pub fn with_panel(mut self, panel: Panel) -> Self {
        self.panels.push(panel);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_range_is_widened() {
        assert_eq!(widen((f64::INFINITY, f64::NEG_INFINITY)), (0.0, 1.0));
        assert_eq!(widen((0.0, 0.0)), (-0.5, 0.5));
        assert_eq!(widen((2.0, 2.0)), (1.9, 2.1));
        assert_eq!(widen((1.0, 3.0)), (1.0, 3.0));
    }

    #[test]
    fn ranges_hold_points_and_limits_and_skip_non_finite_points() {
        let mut p = Panel::new("t", "x", "y");
        p.series
            .push(Series::line("a", vec![(0.0, 1.0), (2.0, 3.0), (f64::NAN, 100.0)]));
        p.limits.push(Limit {
            label: "max".into(),
            y: 5.0,
        });
        let ((x0, x1), (y0, y1)) = p.ranges();
        assert_eq!((x0, x1), (0.0, 2.0));
        assert!(y0 < 1.0 && y0 > 0.7, "{y0}");
        assert!(y1 > 5.0 && y1 < 5.3, "{y1}");
    }

    #[test]
    fn equal_aspect_ranges_take_the_plotting_area_shape() {
        let mut p = Panel::new("t", "x", "y");
        p.series.push(Series::line("a", vec![(0.0, 0.0), (10.0, 1.0)]));
        p.y_range = Some((0.0, 1.0));
        // Off: the ranges whatever the area.
        assert_eq!(p.ranges_in(201, 101), ((0.0, 10.0), (0.0, 1.0)));
        p.equal_aspect = true;
        // 10 units over 200 pixel steps across: 0.05 a pixel, so 100 steps down span 5 units about y = 0.5.
        let ((x0, x1), (y0, y1)) = p.ranges_in(201, 101);
        assert_eq!((x0, x1), (0.0, 10.0));
        assert!((y0 + 2.0).abs() < 1e-9 && (y1 - 3.0).abs() < 1e-9, "{y0} {y1}");
        // A flat area (1 unit over 10 steps down: 0.1 a pixel) widens x instead, to 20 units about x = 5.
        let ((x0, x1), (y0, y1)) = p.ranges_in(201, 11);
        assert_eq!((y0, y1), (0.0, 1.0));
        assert!((x0 + 5.0).abs() < 1e-9 && (x1 - 15.0).abs() < 1e-9, "{x0} {x1}");
    }

    #[test]
    fn set_ranges_win_over_the_data() {
        let mut p = Panel::new("t", "x", "y");
        p.series.push(Series::line("a", vec![(1.0, 0.0), (2.0, 0.0)]));
        p.x_range = Some((0.0, 10.0));
        p.y_range = Some((0.0, 0.0));
        assert_eq!(p.ranges(), ((0.0, 10.0), (-0.5, 0.5)));
        p.y_range = Some((0.0, 2.0));
        assert_eq!(p.ranges(), ((0.0, 10.0), (0.0, 2.0)));
    }
}
