//! The evaluation's plot: per output channel, the largest absolute numeric difference of each simulated
//! output from its recorded counterpart, over the recording's log time.

use lockstep_plot::{Figure, Panel, Series};

use super::evaluate::Evaluation;

/// One panel per output channel (sorted by name), x = seconds since the first compared output (one time
/// axis for all panels), y = the largest absolute difference over the output's numeric fields, from 0. A
/// channel whose outputs were all equal, or could not be decoded, says so in its panel.
pub fn differences_figure(evaluation: &Evaluation) -> Figure {
    differences_figure_against(evaluation, "the recording")
}

/// [`differences_figure`] of outputs compared with `against` (`the recording`, `the baseline run`).
pub fn differences_figure_against(evaluation: &Evaluation, against: &str) -> Figure {
    let times = || {
        evaluation
            .channels
            .values()
            .flat_map(|c| c.over_time.iter().map(|(t, _)| *t))
    };
    let start_ns = times().min().unwrap_or(0);
    let end_s = times().max().unwrap_or(0).saturating_sub(start_ns) as f64 / 1e9;
    let mut figure = Figure::new(format!("Lock-step replay: simulated outputs against {against}"));
    figure.panel_height_px = 260;
    for (channel, e) in &evaluation.channels {
        let mut panel = Panel::new(
            format!(
                "{channel}: {}/{} outputs equal to {against}",
                e.exact, e.simulated
            ),
            "recording time [s]",
            "max |difference|",
        );
        let mut points: Vec<(f64, f64)> = e
            .over_time
            .iter()
            .map(|&(t, d)| (t.saturating_sub(start_ns) as f64 / 1e9, d))
            .collect();
        // Replay order is frame order; the curve runs in log time.
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        panel.x_range = Some((0.0, end_s));
        let top = points
            .iter()
            .map(|p| p.1)
            .filter(|d| d.is_finite())
            .fold(0.0, f64::max);
        panel.y_range = Some((0.0, if top > 0.0 { top * 1.05 } else { 1.0 }));
        panel.note = if points.is_empty() {
            Some(format!(
                "{} outputs, none decodable: no numeric comparison",
                e.undecodable
            ))
        } else if e.exact == e.simulated {
            Some(format!("every output byte-identical to {against}"))
        } else if top == 0.0 {
            Some("outputs differ, but no numeric field does".to_owned())
        } else {
            None
        };
        panel.series.push(Series::line("", points));
        figure.panels.push(panel);
    }
    figure
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lockstep::ChannelEvaluation;

    #[test]
    fn one_panel_per_channel_with_time_from_the_first_output() {
        let mut evaluation = Evaluation::default();
        evaluation.channels.insert(
            "/b".into(),
            ChannelEvaluation {
                simulated: 2,
                exact: 1,
                over_time: vec![(4_000_000_000, 0.25), (3_000_000_000, 0.0)],
                ..Default::default()
            },
        );
        evaluation.channels.insert(
            "/a".into(),
            ChannelEvaluation {
                simulated: 1,
                exact: 1,
                over_time: vec![(2_000_000_000, 0.0)],
                ..Default::default()
            },
        );
        let figure = differences_figure(&evaluation);
        assert_eq!(figure.panels.len(), 2);
        assert!(figure.panels[0].title.starts_with("/a: 1/1"));
        assert_eq!(figure.panels[1].series[0].points, vec![(1.0, 0.0), (2.0, 0.25)]);
        assert_eq!(figure.panels[0].x_range, Some((0.0, 2.0)));
        assert_eq!(figure.panels[0].y_range, Some((0.0, 1.0)));
        assert_eq!(figure.panels[1].note, None);
        assert!(figure.panels[0]
            .note
            .as_deref()
            .unwrap_or("")
            .contains("byte-identical"));
    }
}
