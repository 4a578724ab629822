//! Rendering: PNG bytes decode to the figure's size, curves land where their values say, limits are
//! drawn in their colour, output is deterministic, and a bad path is an error naming it.

use lockstep_plot::{Figure, Limit, Panel, PlotError, Series};

/// Mean pixel row of every pixel of exactly `rgb` (None if there is none).
fn mean_row(w: u32, rgb: &[u8], colour: [u8; 3]) -> Option<f64> {
    let mut rows = 0.0;
    let mut n = 0.0;
    for (i, px) in rgb.chunks_exact(3).enumerate() {
        if px == colour {
            rows += (i as u32 / w) as f64;
            n += 1.0;
        }
    }
    (n > 0.0).then(|| rows / n)
}

const FIRST: [u8; 3] = [31, 119, 180];
const SECOND: [u8; 3] = [255, 127, 14];
const LIMIT: [u8; 3] = [214, 39, 40];

fn two_levels() -> Figure {
    let mut panel = Panel::new("levels", "t [s]", "value");
    // No labels: no legend whose samples would share the curves' colours.
    panel.series.push(Series::line("", vec![(0.0, 0.0), (5.0, 0.0)]));
    panel
        .series
        .push(Series::line("", vec![(0.0, 10.0), (5.0, 10.0)]));
    Figure::new("two levels").with_panel(panel)
}

#[test]
fn a_higher_value_is_drawn_higher() {
    let (w, h, rgb) = two_levels().to_rgb().unwrap();
    assert_eq!((w, h), (1000, 340));
    let low = mean_row(w, &rgb, FIRST).expect("the first series is drawn");
    let high = mean_row(w, &rgb, SECOND).expect("the second series is drawn");
    assert!(high + 100.0 < low, "value 10 at row {high}, value 0 at row {low}");
    assert!(mean_row(w, &rgb, LIMIT).is_none(), "no limit, no limit colour");
}

#[test]
fn a_limit_is_drawn_in_its_colour_at_its_height() {
    let mut figure = two_levels();
    figure.panels[0].limits.push(Limit {
        label: String::new(),
        y: 10.0,
    });
    let (w, _, rgb) = figure.to_rgb().unwrap();
    let limit = mean_row(w, &rgb, LIMIT).expect("the limit is drawn");
    let high = mean_row(w, &rgb, SECOND).unwrap();
    assert!(
        (limit - high).abs() < 3.0,
        "limit at row {limit}, value 10 at row {high}"
    );
}

#[test]
fn panels_stack_and_the_png_decodes_to_the_figure_size() {
    let mut figure = two_levels();
    let mut empty = Panel::new("nothing", "t [s]", "value");
    empty.note = Some("no numeric fields".into());
    figure.panels.push(empty);
    let png = figure.to_png().unwrap();
    let decoded = image::load_from_memory(&png).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (1000, 40 + 2 * 300));
}

#[test]
fn the_same_figure_gives_the_same_bytes() {
    let a = two_levels().to_png().unwrap();
    let b = two_levels().to_png().unwrap();
    assert_eq!(a, b);
}

#[test]
fn labels_legend_points_and_no_panels_render() {
    let mut panel = Panel::new("with legend", "x [m]", "y [m]");
    panel.equal_aspect = true;
    panel
        .series
        .push(Series::line("path", vec![(0.0, 0.0), (3.0, 1.0)]));
    panel.series.push(Series::points("goals", vec![(3.0, 1.0)]));
    panel.limits.push(Limit {
        label: "v_max".into(),
        y: 0.5,
    });
    Figure::new("legend").with_panel(panel).to_png().unwrap();
    Figure::new("empty").to_png().unwrap();
}

#[test]
fn an_unwritable_path_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing").join("plot.png");
    let err = two_levels().write_png(&path).unwrap_err();
    assert!(matches!(err, PlotError::Write { .. }));
    assert!(err.to_string().contains("missing/plot.png"), "{err}");
}

#[test]
fn rects_fill_their_cells_and_categories_name_the_rows() {
    let mut panel = Panel::new("timeline", "t [s]", "");
    panel.y_categories = vec!["task".into(), "drive".into()];
    // Row 0 from t = 0 to 2, row 1 from t = 5 to 10.
    panel.series.push(Series::rects(
        "",
        vec![((0.0, -0.3), (2.0, 0.3)), ((5.0, 0.7), (10.0, 1.3))],
    ));
    assert_eq!(panel.category_at(1.0), Some("drive"));
    assert_eq!(panel.category_at(0.5), None);
    assert_eq!(panel.category_at(2.0), None);
    let ((x0, x1), (y0, y1)) = panel.ranges();
    assert_eq!((x0, x1, y0, y1), (0.0, 10.0, -0.5, 1.5));
    let (w, _, rgb) = Figure::new("rects").with_panel(panel).to_rgb().unwrap();
    let filled: Vec<(u32, u32)> = rgb
        .chunks_exact(3)
        .enumerate()
        .filter(|(_, px)| *px == FIRST)
        .map(|(i, _)| (i as u32 % w, i as u32 / w))
        .collect();
    assert!(filled.len() > 2000, "filled area {} px", filled.len());
    // The bar of row 1 (drawn higher) lies right of the bar of row 0.
    let left: Vec<_> = filled.iter().filter(|(x, _)| *x < w / 3).collect();
    let right: Vec<_> = filled.iter().filter(|(x, _)| *x > w / 2).collect();
    assert!(!left.is_empty() && !right.is_empty());
    let mean = |v: &[&(u32, u32)]| v.iter().map(|p| p.1 as f64).sum::<f64>() / v.len() as f64;
    assert!(mean(&right) + 50.0 < mean(&left), "row 1 above row 0");
}

#[test]
fn a_rect_with_a_non_finite_corner_is_left_out() {
    let s = Series::rects(
        "cells",
        vec![((0.0, 0.0), (1.0, 1.0)), ((f64::NAN, 0.0), (1.0, 1.0))],
    );
    assert_eq!(s.rect_corners(), vec![((0.0, 0.0), (1.0, 1.0))]);
    let mut panel = Panel::new("map", "x [m]", "y [m]");
    panel.series.push(s);
    let png = Figure::new("cells").with_panel(panel).to_png().unwrap();
    assert_eq!(&png[1..4], b"PNG");
}

/// The bounding box (x0, y0, x1, y1) of every pixel of exactly `colour`.
fn bounding_box(w: u32, rgb: &[u8], colour: [u8; 3]) -> Option<(u32, u32, u32, u32)> {
    let mut b: Option<(u32, u32, u32, u32)> = None;
    for (i, px) in rgb.chunks_exact(3).enumerate() {
        if px == colour {
            let (x, y) = (i as u32 % w, i as u32 / w);
            b = Some(b.map_or((x, y, x, y), |b| (b.0.min(x), b.1.min(y), b.2.max(x), b.3.max(y))));
        }
    }
    b
}

#[test]
fn equal_aspect_draws_a_square_as_a_square_whatever_the_figure_shape() {
    for (width_px, panel_height_px) in [(1200, 400), (500, 900)] {
        let mut panel = Panel::new("map", "x [m]", "y [m]");
        panel.equal_aspect = true;
        // A 2 m x 2 m cell in a 10 m x 4 m map: drawn as wide as high in pixels.
        panel
            .series
            .push(Series::rects("", vec![((4.0, 1.0), (6.0, 3.0))]));
        panel
            .series
            .push(Series::points("", vec![(0.0, 0.0), (10.0, 4.0)]));
        let mut figure = Figure::new("equal").with_panel(panel);
        figure.width_px = width_px;
        figure.panel_height_px = panel_height_px;
        let (w, _, rgb) = figure.to_rgb().unwrap();
        let (x0, y0, x1, y1) = bounding_box(w, &rgb, FIRST).expect("the cell is drawn");
        let (cw, ch) = (f64::from(x1 - x0), f64::from(y1 - y0));
        assert!(
            cw > 20.0 && (cw - ch).abs() <= 2.0,
            "{width_px}x{panel_height_px}: cell {cw} x {ch} px"
        );
    }
}
