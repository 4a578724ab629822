//! What `lockstep calibrate` writes: `calibration.yaml`, `trajectories.png` and `holdout.png`, from the
//! report and its evaluations (module `evaluation`).

use lockstep_plot::{Figure, Panel, Series};

use super::evaluation::Evaluation;
use super::holdout::HeldOut;
use super::report::Report;
use crate::model::ModelParams;

/// The comment after a value: its standard deviation (and the nominal value, when given), or that it
/// was not estimated.
fn std_text(std: f64, nominal: Option<f64>) -> String {
    match (std > 0.0, nominal) {
        (true, Some(n)) => format!("std {std:.6}, nominal {n}"),
        (true, None) => format!("std {std:.6}"),
        (false, _) => "not estimated, kept nominal (see above)".to_string(),
    }
}

fn option(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.3}"))
}

/// `calibration.yaml`: a ROS 2 parameter file setting `lockstep_sim_node`'s nominal vehicle (the
/// parameters a base controller should use), the statistics as comments.
pub(crate) fn yaml(r: &Report) -> String {
    let mut out = String::new();
    yaml_header(r, &mut out);
    yaml_parameters(r, &mut out);
    yaml_statistics(r, &mut out);
    out
}

/// Where the calibration comes from, how to use it, and what it could not estimate.
fn yaml_header(r: &Report, out: &mut String) {
    let w = &r.windows;
    out.push_str(
        "# Differential-drive motion model calibrated by `lockstep calibrate` (lockstep_calibrator).\n",
    );
    out.push_str(&format!("# bag: {}\n", r.bag.display()));
    for (topic, type_name) in &r.topics {
        out.push_str(&format!("# topic: {topic} ({type_name})\n"));
    }
    out.push_str("# A ROS 2 parameter file: `--params-file calibration.yaml` gives the simulator these nominal parameters;\n");
    out.push_str("# a real base takes the radius and track width into its controller's parameters.\n");
    if r.nothing_estimated() {
        out.push_str("# Nothing could be estimated: no window of the drive determined any parameter, these are the nominal parameters.\n");
    } else if w.accepted == 0 {
        out.push_str("# No window was accepted: these are the nominal parameters.\n");
    }
    if !r.needs.is_empty() {
        out.push_str("# Not estimated, kept nominal (and the driving that would determine each):\n");
        for need in &r.needs {
            out.push_str(&format!("#   {need}\n"));
        }
    }
}

/// The parameter file proper: the simulator's nominal vehicle, each value with its standard deviation.
fn yaml_parameters(r: &Report, out: &mut String) {
    let p = &r.params;
    let n = &r.nominal;
    out.push_str("lockstep_sim_node:\n  ros__parameters:\n    nominal_vehicle:\n");
    out.push_str(&format!(
        "      wheel_radius_m: {:.6}   # {}\n",
        p.wheel_radius_m,
        std_text(r.std[0], Some(n.wheel_radius_m))
    ));
    out.push_str(&format!(
        "      # left_wheel_radius_m: {:.6}, right_wheel_radius_m: {:.6}{}\n",
        p.left_radius_m(),
        p.right_radius_m(),
        if p.wheel_radius_asymmetry == 0.0 {
            " (taken as equal: the difference between the wheels is not estimated)"
        } else {
            ""
        }
    ));
    out.push_str(&format!(
        "      track_width_m: {:.6}    # {}\n",
        p.track_width_m,
        std_text(r.std[1], Some(n.track_width_m))
    ));
    out.push_str(&format!(
        "      delay_secs: {:.4}         # {}\n",
        p.delay_secs,
        std_text(r.std[2], None)
    ));
    out.push_str(&format!(
        "      centripetal_factor: {:.4} # {} (reconstruction: yaw rate = omega / (1 + beta*|v*omega|))\n",
        p.centripetal_factor,
        std_text(r.std[3], None)
    ));
}

/// The statistics of the calibration, as comments.
fn yaml_statistics(r: &Report, out: &mut String) {
    let w = &r.windows;
    let d = &r.dropped;
    let e = &r.evaluation;
    out.push_str("# calibration:\n");
    out.push_str(&format!(
        "#   times: seconds since the first sample's stamp, {:.6} s\n",
        r.time_origin_ns as f64 * 1e-9
    ));
    out.push_str(&format!(
        "#   windows: {} accepted, {} rejected, {} unchanged, {} skipped, {} waiting\n",
        w.accepted, w.rejected, w.unchanged, w.skipped, w.waiting
    ));
    if let Some(a) = &r.last_accepted {
        out.push_str(&format!(
            "#   last accepted window: residual before {:.3}, after {:.3}; validation segments: {}\n",
            a.residual_before,
            a.residual_after,
            a.validation
                .iter()
                .map(|s| format!("{:.1}-{:.1} s: {:.3}", s.t0_secs, s.t1_secs, s.residual))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if let Some(b) = a.beta_wants_negative {
            out.push_str(&format!(
                "#   the unconstrained fit wants beta {b:.4} < 0: kept at 0\n"
            ));
        }
        for alarm in &a.alarms {
            out.push_str(&format!("#   alarm: {alarm}\n"));
        }
    }
    out.push_str(&format!(
        "#   residual over the bag (normalized RMS per {} s window, mean of {}): nominal {}, calibrated {}\n",
        r.window_secs,
        e.residual_windows,
        option(e.residual_nominal),
        option(e.residual_calibrated)
    ));
    out.push_str(&format!(
        "#   dead reckoning from the first observed pose, RMS distance to the observed poses: nominal {:.3} m, calibrated {:.3} m\n",
        e.rms_error_nominal_m, e.rms_error_calibrated_m
    ));
    if let Some(h) = &r.holdout {
        out.push_str(&format!(
            "#   {} (not given to the calibrator; dead reckoning from the stretch's first observed pose)\n",
            h.line()
        ));
    }
    if let Some(rej) = &r.last_rejection {
        out.push_str(&format!("#   last rejection: {rej}\n"));
    }
    for (count, text) in r.refusals.values() {
        out.push_str(&format!("#   refused in {count} windows: {text}\n"));
    }
    out.push_str(&format!(
        "#   messages read: cmd_vel {}, odom {}, pose {}; not decodable: cmd_vel {}, odom {}, pose {}\n",
        r.read[0], r.read[1], r.read[2], r.undecodable[0], r.undecodable[1], r.undecodable[2]
    ));
    out.push_str(&format!(
        "#   dropped not finite: cmd_vel {}, odom {}, pose {}; dropped out of order: cmd_vel {}, odom {}, pose {}\n",
        d.not_finite[0], d.not_finite[1], d.not_finite[2], d.out_of_order[0], d.out_of_order[1], d.out_of_order[2]
    ));
    for note in &r.notes {
        out.push_str(&format!("#   note: {note}\n"));
    }
}

/// Width and height of the figure's panels (pixels).
const WIDTH_PX: u32 = 1000;
const PANEL_PX: u32 = 600;

/// Same scale on both axes: lockstep_plot's `equal_aspect` squares the ranges, not the pixels, so the
/// ranges are set here to the plot area's shape (its margins and label areas taken off the panel, about
/// 100 px across and 80 px down).
fn equal_aspect(panel: &mut Panel) {
    let points = panel.series.iter().flat_map(|s| s.points.iter());
    let mut b = (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
    for &(x, y) in points.filter(|(x, y)| x.is_finite() && y.is_finite()) {
        b = (b.0.min(x), b.1.max(x), b.2.min(y), b.3.max(y));
    }
    if !b.0.is_finite() {
        return;
    }
    let (pw, ph) = (f64::from(WIDTH_PX) - 100.0, f64::from(PANEL_PX) - 80.0);
    let scale = ((b.1 - b.0).max(0.1) / pw).max((b.3 - b.2).max(0.1) / ph) * 1.08;
    let (cx, cy) = ((b.0 + b.1) / 2.0, (b.2 + b.3) / 2.0);
    panel.x_range = Some((cx - scale * pw / 2.0, cx + scale * pw / 2.0));
    panel.y_range = Some((cy - scale * ph / 2.0, cy + scale * ph / 2.0));
    panel.equal_aspect = true;
}

/// At most about `max` of `points`, evenly spaced (the observed poses of a long bag).
fn thin(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    let stride = points.len().div_ceil(max.max(1)).max(1);
    points.iter().step_by(stride).copied().collect()
}

fn params_text(p: &ModelParams) -> String {
    format!(
        "radius {:.5} m, track {:.4} m, beta {:.3}",
        p.wheel_radius_m, p.track_width_m, p.centripetal_factor
    )
}

/// Observed poses against dead reckoning with the nominal parameters (before) and the calibrated ones
/// (after), and the distance between them over time: `trajectories.png` and `holdout.png`. Colours stay
/// with their meaning across panels (unlabelled empty series hold the palette's place).
fn dead_reckoning_figure(title: String, r: &Report, e: &Evaluation) -> Figure {
    let pose_topic = &r.topics[2].0;
    let observed = Series::points(format!("observed poses ({pose_topic})"), thin(&e.observed, 4000));
    let mut before = Panel::new(
        format!(
            "Before: dead reckoning with the nominal parameters ({}), RMS error {:.3} m",
            params_text(&r.nominal),
            e.rms_error_nominal_m
        ),
        "x [m]",
        "y [m]",
    );
    before.series = vec![
        observed.clone(),
        Series::line("predicted, nominal", e.nominal_path.clone()),
    ];
    let mut after = Panel::new(
        format!(
            "After: calibrated ({}), RMS error {:.3} m",
            params_text(&r.params),
            e.rms_error_calibrated_m
        ),
        "x [m]",
        "y [m]",
    );
    after.series = vec![
        observed,
        Series::line("", Vec::new()),
        Series::line("predicted, calibrated", e.calibrated_path.clone()),
    ];
    let distance = |path: &[(f64, f64)]| -> Vec<(f64, f64)> {
        e.times
            .iter()
            .zip(path.iter().zip(&e.observed))
            .map(|(t, (p, o))| (*t, (p.0 - o.0).hypot(p.1 - o.1)))
            .collect()
    };
    let mut error = Panel::new(
        "Distance between dead reckoning and the observed poses",
        "time since the first sample [s]",
        "position error [m]",
    );
    error.series = vec![
        Series::line("", Vec::new()),
        Series::line("nominal", distance(&e.nominal_path)),
        Series::line("calibrated", distance(&e.calibrated_path)),
    ];
    for panel in [&mut before, &mut after] {
        equal_aspect(panel);
    }
    if e.observed.is_empty() {
        for panel in [&mut before, &mut after, &mut error] {
            panel.note = Some("no observed pose with odometry before it".into());
        }
    }
    let mut figure = Figure::new(title)
        .with_panel(before)
        .with_panel(after)
        .with_panel(error);
    figure.width_px = WIDTH_PX;
    figure.panel_height_px = PANEL_PX;
    figure
}

/// `trajectories.png`: dead reckoning over the whole bag.
pub(crate) fn figure(r: &Report) -> Figure {
    let title = format!("lockstep calibrate: {}", r.bag.display());
    dead_reckoning_figure(title, r, &r.evaluation)
}

/// `holdout.png`: dead reckoning over the held-out stretch, from its first observed pose.
pub(crate) fn holdout_figure(r: &Report, h: &HeldOut) -> Figure {
    // The bag's name only: the title must fit one line.
    let name = r.bag.file_name().unwrap_or(r.bag.as_os_str());
    let title = format!(
        "lockstep calibrate {}: held-out {:.1}-{:.1} s, not given to the calibrator",
        name.to_string_lossy(),
        h.t0_secs,
        h.t1_secs
    );
    dead_reckoning_figure(title, r, &h.evaluation)
}
