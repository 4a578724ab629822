//! The per-window pieces on simulated data with known parameters.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use lockstep_calibrator::{determined, estimate_delay, fit, residual, History, Observability, PoseNoise};

const NOISE: PoseNoise = PoseNoise {
    sigma_xy_m: 0.02,
    sigma_yaw_rad: 0.5 * std::f64::consts::PI / 180.0,
};

fn history(run: &Run) -> History {
    let mut h = History::new(model(&nominal()), 1e9);
    run.feed(&mut h);
    h
}

#[test]
fn the_delay_is_found_on_high_and_low_grip() {
    for surface in [1, 6] {
        let run = simulate(
            true_vehicle(),
            &mixed_drive(),
            30.0,
            surface,
            20.0,
            (0.02, 0.0087),
            1,
        );
        let h = history(&run);
        let mut found = Vec::new();
        for k in 0..10 {
            let t0 = 0.5 + 3.0 * k as f64;
            let w = h.window(t0, t0 + 3.0, 0.5);
            if let Ok(d) = estimate_delay(&w, 0.5) {
                found.push(d.delay_secs);
            }
        }
        assert!(found.len() >= 5, "surface {surface}: {found:?}");
        for d in &found {
            assert!((d - 0.08).abs() <= 0.01, "surface {surface}: {found:?}");
        }
    }
}

#[test]
fn a_mixed_window_fits_radius_and_track() {
    let run = simulate(true_vehicle(), &mixed_drive(), 60.0, 1, 20.0, (0.02, 0.0087), 2);
    let h = history(&run);
    let truth = model(&true_vehicle());
    let start = model(&nominal());
    let mut radius = Vec::new();
    let mut track = Vec::new();
    for k in 0..19 {
        let t0 = 0.5 + 3.0 * k as f64;
        let w = h.window(t0, t0 + 3.0, 0.5);
        let d = determined(&w, &Observability::default());
        let before = residual(&w, &start, NOISE).unwrap();
        let Some(f) = fit(&w, &start, d.fit, NOISE) else {
            continue;
        };
        if d.free.radius {
            radius.push((f.params.wheel_radius_m, f.std[0]));
        }
        if d.free.track_width {
            track.push((f.params.track_width_m, f.std[1]));
        }
        eprintln!(
            "window {t0}: {:?} refused {:?} before {before:.2} after {:.2} {:?}",
            d.free, d.refused, f.rms, f.params
        );
    }
    let mean = |v: &[(f64, f64)]| {
        let wsum: f64 = v.iter().map(|(_, s)| 1.0 / (s * s)).sum();
        v.iter().map(|(x, s)| x / (s * s)).sum::<f64>() / wsum
    };
    let r = mean(&radius);
    let b = mean(&track);
    eprintln!(
        "radius {r} ({} windows) track {b} ({} windows)",
        radius.len(),
        track.len()
    );
    assert!(
        (r / truth.wheel_radius_m - 1.0).abs() < 0.005,
        "radius {r} vs {}",
        truth.wheel_radius_m
    );
    assert!(
        (b / truth.track_width_m - 1.0).abs() < 0.005,
        "track {b} vs {}",
        truth.track_width_m
    );
}
