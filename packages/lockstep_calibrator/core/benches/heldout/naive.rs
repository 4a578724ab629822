//! The naive windowed baseline: what an engineer writes in an afternoon. The run is cut into 2 s windows;
//! the wheel motion of each is turned into odometry distance and rotation with the nominal parameters.
//! - Straight runs (odometry turned < 0.02 rad, went > 0.4 m): observed distance / odometry distance is the
//!   radius ratio; least squares over all of them.
//! - Turns in place (odometry went < 0.03 m along the path, turned > 0.8 rad): observed / odometry heading
//!   change is the ratio of radius / track width; least squares.
//! - Arcs (turned > 0.5 rad and went > 0.4 m): with radius and track width from above, beta from the
//!   kinematic vs observed heading change, `Theta_k / Theta_obs - 1 = beta |v omega_k|`; least squares.
//! - Delay: the median time from a change of the commanded speed to the odometry's first response.

use lockstep_calibrator::{wrap, History, ModelParams};

/// What the baseline estimated (NaN where it found no window of the kind it needs).
#[derive(Debug, Clone, Copy)]
pub struct Naive {
    pub wheel_radius_m: f64,
    pub track_width_m: f64,
    pub delay_secs: f64,
    pub centripetal_factor: f64,
}

const WINDOW_SECS: f64 = 2.0;

pub fn calibrate(h: &History, nominal: &ModelParams, secs: f64) -> Naive {
    let (mut rr_num, mut rr_den, mut yr_num, mut yr_den) = (0.0, 0.0, 0.0, 0.0);
    let mut arcs = Vec::new();
    let mut t0 = 0.0;
    while t0 + WINDOW_SECS <= secs {
        let w = h.window(t0, t0 + WINDOW_SECS, 0.0);
        t0 += WINDOW_SECS;
        let (Some(first), Some(last)) = (w.poses.first(), w.poses.last()) else {
            continue;
        };
        let (mut path, mut along, mut turn) = (0.0, 0.0, 0.0);
        for s in &w.steps {
            let l = s.d_left_rad * nominal.wheel_radius_m;
            let r = s.d_right_rad * nominal.wheel_radius_m;
            path += 0.5 * (l + r);
            along += (0.5 * (l + r)).abs();
            turn += (r - l) / nominal.track_width_m;
        }
        let seen = (last.pose.x_m - first.pose.x_m).hypot(last.pose.y_m - first.pose.y_m);
        let seen_turn = wrap(last.pose.yaw_rad - first.pose.yaw_rad);
        let dt = last.t_secs - first.t_secs;
        if turn.abs() < 0.02 && path.abs() > 0.4 {
            rr_num += seen * path.abs();
            rr_den += path * path;
        } else if along < 0.03 && turn.abs() > 0.8 {
            yr_num += seen_turn * turn;
            yr_den += turn * turn;
        } else if turn.abs() > 0.5 && along > 0.4 && dt > 0.0 {
            arcs.push((path, turn, seen_turn, dt));
        }
    }
    let radius_ratio = rr_num / rr_den;
    let yaw_ratio = yr_num / yr_den;
    let (mut b_num, mut b_den) = (0.0, 0.0);
    for (path, turn, seen_turn, dt) in arcs {
        let kinematic = turn * yaw_ratio;
        let x = (path * radius_ratio / dt * kinematic / dt).abs();
        let y = kinematic / seen_turn - 1.0;
        if x.is_finite() && y.is_finite() {
            b_num += x * y;
            b_den += x * x;
        }
    }
    Naive {
        wheel_radius_m: nominal.wheel_radius_m * radius_ratio,
        track_width_m: nominal.track_width_m * radius_ratio / yaw_ratio,
        delay_secs: delay(h, nominal, secs),
        centripetal_factor: b_num / b_den,
    }
}

/// The median time from a change of the commanded speed to the first odometry step whose speed moved
/// 0.02 m/s toward the new command.
fn delay(h: &History, nominal: &ModelParams, secs: f64) -> f64 {
    let w = h.window(0.0, secs, 0.5);
    let speed = |s: &lockstep_calibrator::history::WheelStep| {
        0.5 * (s.left_radps + s.right_radps) * nominal.wheel_radius_m
    };
    let mut lags = Vec::new();
    for pair in w.commands.windows(2) {
        let (before, after) = (pair[0].v_mps, pair[1].v_mps);
        if (after - before).abs() < 0.1 {
            continue;
        }
        let t = pair[1].t_secs;
        let Some(i) = w.steps.iter().position(|s| s.t1_secs > t) else {
            continue;
        };
        let start = speed(&w.steps[i]);
        if let Some(s) = w.steps[i..]
            .iter()
            .take_while(|s| s.t1_secs < t + 0.5)
            .find(|s| (speed(s) - start) * (after - before).signum() > 0.02)
        {
            lags.push(s.t1_secs - t);
        }
    }
    lags.sort_by(f64::total_cmp);
    lags.get(lags.len() / 2).copied().unwrap_or(f64::NAN)
}
