//! The candidate a step weighs: the parameters in use with what the joint estimate determined, whether it
//! differs enough from them to be worth publishing, and the best-of-candidates thresholds.

use super::{Calibrator, SHARPER};
use crate::batch::{fit_windows, N};
use crate::fit::fit;
use crate::history::Window;
use crate::model::ModelParams;
use crate::observe::determined;

impl Calibrator {
    /// The parameters in use with the determined ones replaced by the joint estimate and the delay's mean:
    /// the candidate, its standard deviations (radius, track width, delay, beta), the asymmetry's and the
    /// lateral slip's, and beta's estimate when it is negative (beta is then kept at 0).
    pub(super) fn candidate(
        &self,
        determined: [bool; N],
        delay: Option<(f64, f64)>,
    ) -> (ModelParams, [f64; 4], [f64; 2], Option<f64>) {
        let mut p = self.current;
        let mut std = self.std;
        let mut extra = self.extra_std;
        let mut negative = None;
        if let Some(e) = &self.estimate {
            if determined[0] {
                (p.wheel_radius_m, std[0]) = (e.params.wheel_radius_m, e.std[0]);
            }
            if determined[1] {
                (p.track_width_m, std[1]) = (e.params.track_width_m, e.std[1]);
            }
            if determined[2] {
                (p.centripetal_factor, std[3]) = (e.params.centripetal_factor, e.std[2]);
                if p.centripetal_factor < 0.0 {
                    negative = Some(p.centripetal_factor);
                    p.centripetal_factor = 0.0;
                }
            }
            if determined[3] {
                (p.wheel_radius_asymmetry, extra[0]) = (e.params.wheel_radius_asymmetry, e.std[3]);
            }
            if determined[4] {
                (p.lateral_slip_s, extra[1]) = (e.params.lateral_slip_s, e.std[4]);
            }
        }
        if let Some((d, s)) = delay {
            (p.delay_secs, std[2]) = (d, s);
        }
        (p, std, extra, negative)
    }

    /// Whether `candidate` differs from the parameters in use by more than `significance_sigmas` of its
    /// standard deviation in any parameter, or is markedly more certain.
    pub(super) fn significant(&self, candidate: &ModelParams, std: &[f64; 4], extra: &[f64; 2]) -> bool {
        let sigmas = self.config.significance_sigmas;
        let now = self.current;
        [
            (candidate.wheel_radius_m, now.wheel_radius_m, std[0]),
            (candidate.track_width_m, now.track_width_m, std[1]),
            (candidate.delay_secs, now.delay_secs, std[2]),
            (candidate.centripetal_factor, now.centripetal_factor, std[3]),
            (
                candidate.wheel_radius_asymmetry,
                now.wheel_radius_asymmetry,
                extra[0],
            ),
            (candidate.lateral_slip_s, now.lateral_slip_s, extra[1]),
        ]
        .iter()
        .any(|(a, b, s)| (a - b).abs() > sigmas * s && a != b)
            || self.sharper(std, extra)
    }

    /// Whether the estimate has become markedly more certain than the parameters in use (its standard
    /// deviation below `SHARPER` of theirs in some parameter): worth publishing even when it moved little,
    /// so what is in use carries the evidence gathered since.
    fn sharper(&self, std: &[f64; 4], extra: &[f64; 2]) -> bool {
        let now = [
            self.std[0],
            self.std[1],
            self.std[3],
            self.extra_std[0],
            self.extra_std[1],
        ];
        let new = [std[0], std[1], std[3], extra[0], extra[1]];
        now.iter()
            .zip(new)
            .any(|(old, new)| *old > 0.0 && new < SHARPER * old)
    }

    /// The smallest residual among fits of `w` started from the nominal, the current and perturbed
    /// parameters.
    pub(super) fn best_window_candidate(&self, w: &Window) -> f64 {
        let d = determined(w, &self.config.observability);
        self.starts()
            .iter()
            .filter_map(|s| fit(w, s, d.fit, self.config.noise))
            .map(|f| f.rms)
            .fold(f64::INFINITY, f64::min)
    }

    /// The smallest RMS among joint fits started from the nominal, the current and perturbed parameters.
    pub(super) fn best_batch_candidate(&self) -> f64 {
        let Some(e) = &self.estimate else {
            return f64::INFINITY;
        };
        let windows: Vec<&Window> = self
            .segments
            .iter()
            .filter(|s| !s.held_out)
            .map(|s| &s.window)
            .collect();
        self.starts()
            .iter()
            .filter_map(|s| fit_windows(&windows, s, None, e.free, self.config.noise, false))
            .map(|f| f.rms)
            .fold(e.rms, f64::min)
    }

    fn starts(&self) -> Vec<ModelParams> {
        let mut starts = vec![self.reference, self.current];
        for f in [0.97, 1.03] {
            starts.push(ModelParams {
                wheel_radius_m: self.current.wheel_radius_m * f,
                track_width_m: self.current.track_width_m * f,
                ..self.current
            });
        }
        starts
    }
}
