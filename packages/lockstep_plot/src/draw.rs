//! The plotters side: lays the figure out on an RGB buffer.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::model::{Figure, Panel, SeriesKind};

/// Height of the figure's title band, pixels.
pub(crate) const TITLE_BAND_PX: u32 = 40;

/// Curve colours, in order (the "tab10" palette without its red, which limits use).
const PALETTE: [RGBColor; 9] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Colour of limit lines.
pub(crate) const LIMIT_COLOUR: RGBColor = RGBColor(214, 39, 40);

/// The colour of the `index`-th series of a panel.
pub(crate) fn series_colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

fn text<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Draws `figure` on `buffer` (RGB, `figure.size_px()`).
pub(crate) fn draw(figure: &Figure, buffer: &mut [u8]) -> Result<(), String> {
    let size = figure.size_px();
    let root = BitMapBackend::with_buffer(buffer, size).into_drawing_area();
    root.fill(&WHITE).map_err(text)?;
    let (title, body) = root.split_vertically(TITLE_BAND_PX);
    title.titled(&figure.title, ("sans-serif", 22)).map_err(text)?;
    if figure.panels.is_empty() {
        return body
            .draw_text(
                "nothing to plot",
                &("sans-serif", 16).into_text_style(&body),
                (20, 20),
            )
            .map_err(text);
    }
    let areas = body.split_evenly((figure.panels.len(), 1));
    for (panel, area) in figure.panels.iter().zip(&areas) {
        draw_panel(panel, area)?;
    }
    root.present().map_err(text)
}

/// Room for the y labels: 72 px, or more for long category names (about 7 px a character at 13 px).
pub(crate) fn y_label_area_px(panel: &Panel) -> u32 {
    let longest = panel
        .y_categories
        .iter()
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(0);
    (72_u32).max(
        u32::try_from(longest)
            .unwrap_or(u32::MAX)
            .saturating_mul(7)
            .saturating_add(24),
    )
}

/// Height of the x labels and the x axis' description under a panel, pixels.
const X_LABEL_AREA_PX: u32 = 38;

/// The chart of one panel: f64 axes on the figure's bitmap.
type Chart<'a, 'b> = ChartContext<
    'a,
    BitMapBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Draws one panel: its title, axes and grid, series, limit lines, note and legend.
fn draw_panel(panel: &Panel, area: &DrawingArea<BitMapBackend<'_>, Shift>) -> Result<(), String> {
    // The margins and the caption as ChartBuilder lays them out (margins, then the title), done here so that
    // the plotting area's size is known before the ranges are chosen (equal_aspect needs it).
    let inner = area
        .margin(8, 8, 8, 20)
        .titled(&panel.title, ("sans-serif", 17))
        .map_err(text)?;
    let y_label_area = y_label_area_px(panel);
    let (w, h) = inner.dim_in_pixel();
    let ((x0, x1), (y0, y1)) =
        panel.ranges_in(w.saturating_sub(y_label_area), h.saturating_sub(X_LABEL_AREA_PX));
    let mut chart = ChartBuilder::on(&inner)
        .x_label_area_size(X_LABEL_AREA_PX)
        .y_label_area_size(y_label_area)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(text)?;
    draw_mesh(&mut chart, panel)?;
    let series_labelled = draw_series(&mut chart, panel)?;
    let limits_labelled = draw_limits(&mut chart, panel, (x0, x1))?;
    if let Some(note) = &panel.note {
        draw_note(&mut chart, note, ((x0, x1), (y0, y1)))?;
    }
    if series_labelled || limits_labelled {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(text)?;
    }
    Ok(())
}

/// The axes, their descriptions and the light grid; one label per row for a panel of categories.
fn draw_mesh(chart: &mut Chart<'_, '_>, panel: &Panel) -> Result<(), String> {
    let category = |y: &f64| panel.category_at(*y).unwrap_or_default().to_string();
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(&panel.x_label)
        .y_desc(&panel.y_label)
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 14))
        .light_line_style(RGBColor(235, 235, 235));
    if !panel.y_categories.is_empty() {
        // One label a row: ask for a tick per half row so that every integer is a tick.
        mesh.y_labels(2 * panel.y_categories.len() + 2)
            .y_label_formatter(&category);
    }
    mesh.draw().map_err(text)
}

/// Each series in its colour (non-finite points left out); returns whether any has a legend entry.
fn draw_series(chart: &mut Chart<'_, '_>, panel: &Panel) -> Result<bool, String> {
    let mut labelled = false;
    for (i, series) in panel.series.iter().enumerate() {
        let colour = series_colour(i);
        let points = series
            .points
            .iter()
            .copied()
            .filter(|(x, y)| x.is_finite() && y.is_finite());
        let drawn = match series.kind {
            SeriesKind::Line => chart
                .draw_series(LineSeries::new(points, colour.stroke_width(2)))
                .map_err(text)?,
            SeriesKind::Points => chart
                .draw_series(points.map(|p| Circle::new(p, 3, colour.filled())))
                .map_err(text)?,
            SeriesKind::Rects => chart
                .draw_series(
                    series
                        .rect_corners()
                        .into_iter()
                        .map(|(a, b)| Rectangle::new([a, b], colour.filled())),
                )
                .map_err(text)?,
        };
        if !series.label.is_empty() {
            labelled = true;
            if series.kind == SeriesKind::Rects {
                drawn
                    .label(&series.label)
                    .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 20, y + 5)], colour.filled()));
            } else {
                drawn.label(&series.label).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
            }
        }
    }
    Ok(labelled)
}

/// Each finite limit as a dashed line across the x range; returns whether any has a legend entry.
fn draw_limits(chart: &mut Chart<'_, '_>, panel: &Panel, (x0, x1): (f64, f64)) -> Result<bool, String> {
    let mut labelled = false;
    for limit in panel.limits.iter().filter(|l| l.y.is_finite()) {
        let style = LIMIT_COLOUR.stroke_width(2);
        let drawn = chart
            .draw_series(DashedLineSeries::new([(x0, limit.y), (x1, limit.y)], 8, 5, style))
            .map_err(text)?;
        if !limit.label.is_empty() {
            labelled = true;
            drawn
                .label(&limit.label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        }
    }
    Ok(labelled)
}

/// The panel's note, grey and centred, at 70 % of its height.
fn draw_note(
    chart: &mut Chart<'_, '_>,
    note: &str,
    ((x0, x1), (y0, y1)): ((f64, f64), (f64, f64)),
) -> Result<(), String> {
    let style = ("sans-serif", 16).into_font().color(&RGBColor(90, 90, 90)).pos(
        plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Center,
            plotters::style::text_anchor::VPos::Center,
        ),
    );
    chart
        .draw_series(std::iter::once(Text::new(
            note.to_owned(),
            ((x0 + x1) / 2.0, y0 + 0.7 * (y1 - y0)),
            style,
        )))
        .map_err(text)?;
    Ok(())
}
