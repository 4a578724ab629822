//! One step's phases of motion: the command wanted now, its delay, the wheel speeds the surface lets the
//! wheels reach, and the ground moving the vehicle (or a collision stopping it).

use crate::config::Mode;

use super::types::{Simulator, StepReport};

impl Simulator {
    /// The command for this step: the rules' drive (autonomous), or the latest command while it is fresh
    /// (commanded; a stale one stops the vehicle).
    pub(super) fn desired_command(&mut self, report: &mut StepReport) -> (f64, f64) {
        match self.config.mode {
            Mode::Autonomous => self.decide(report),
            Mode::Commanded => {
                self.decode_ground(report);
                match self.commanded {
                    Some((v, w, stamp))
                        if self.config.cmd_timeout_secs <= 0.0
                            || self.time_secs - stamp <= self.config.cmd_timeout_secs + 1e-9 =>
                    {
                        (v, w)
                    }
                    _ => (0.0, 0.0),
                }
            }
        }
    }

    /// Issues `desired` now; the command in force is the one issued the TRUE delay ago.
    pub(super) fn delay_command(&mut self, desired: (f64, f64)) {
        self.issued = (self.time_secs, desired.0, desired.1);
        // The command takes effect after the TRUE delay.
        self.queue.push_back((self.time_secs, desired.0, desired.1));
        let due = self.time_secs - self.config.true_vehicle.delay_secs + 1e-9;
        while self.queue.len() > 1 && self.queue[1].0 <= due {
            self.queue.pop_front();
        }
        if let Some(&(issued, v, w)) = self.queue.front() {
            if issued <= due {
                self.applied = (v, w);
            }
        }
    }

    /// The wheel speeds (left, right) reached after `dt_secs`.
    pub(super) fn wheel_speeds_reached(&self, dt_secs: f64) -> (f64, f64) {
        // The base controller turns the command into wheel speeds with the NOMINAL parameters...
        let (target_l, target_r) = self
            .config
            .nominal_vehicle
            .wheel_speeds(self.applied.0, self.applied.1);
        // ...which the wheels reach within the surface's acceleration limits (both wheels scaled alike so
        // that the path's curvature is kept while speeding up or braking).
        let (accel, decel) = self
            .surface_under()
            .map_or((1.0, 1.0), |s| (s.accel_mps2, s.decel_mps2));
        let radius = self.config.true_vehicle.wheel_radius_m;
        let fraction = |current: f64, target: f64| -> f64 {
            let dv = (target - current) * radius;
            if dv == 0.0 {
                return 1.0;
            }
            let speeding_up = target.abs() > current.abs() && target * current >= 0.0;
            let limit = if speeding_up { accel } else { decel } * dt_secs;
            (limit / dv.abs()).min(1.0)
        };
        let f = fraction(self.wheels.left_velocity_radps, target_l)
            .min(fraction(self.wheels.right_velocity_radps, target_r));
        let wl = self.wheels.left_velocity_radps + f * (target_l - self.wheels.left_velocity_radps);
        let wr = self.wheels.right_velocity_radps + f * (target_r - self.wheels.right_velocity_radps);
        (wl, wr)
    }

    /// Moves the vehicle on the ground with wheel speeds `(wl, wr)` for `dt_secs`: the encoders and the
    /// odometry follow the wheels; a collision or a motion that is not finite stops the wheels instead.
    pub(super) fn move_vehicle(&mut self, wl: f64, wr: f64, dt_secs: f64, report: &mut StepReport) {
        // The ground moves the vehicle with the TRUE parameters and the slip model; the encoders below count
        // wheel rotation only.
        let motion = self.ground_motion(wl, wr, dt_secs);
        let next = motion.pose;
        let finite = [wl, wr, next.x_m, next.y_m, next.yaw_rad]
            .iter()
            .all(|x| x.is_finite());
        if !finite {
            // The inputs are checked where they enter, so this is a last line of defence: NaN never
            // compares, and one NaN in the state would stay there for good.
            report.warnings.push(format!(
                "the motion for command {:?} is not finite; the wheels stop",
                self.applied
            ));
            self.applied = (0.0, 0.0);
            self.queue.clear();
            self.ground_twist = (0.0, 0.0);
            self.wheels.left_velocity_radps = 0.0;
            self.wheels.right_velocity_radps = 0.0;
            self.odom
                .integrate(&self.config.nominal_vehicle, 0.0, 0.0, dt_secs);
        } else if self.collides(&next) {
            // A collision stops the vehicle where it was: the wheels stall, the encoders see nothing.
            self.bumped = true;
            self.collisions += 1;
            report.collided = true;
            self.ground_twist = (0.0, 0.0);
            self.wheels.left_velocity_radps = 0.0;
            self.wheels.right_velocity_radps = 0.0;
            self.odom
                .integrate(&self.config.nominal_vehicle, 0.0, 0.0, dt_secs);
        } else {
            self.bumped = false;
            let (dl, dr) = (wl * dt_secs, wr * dt_secs);
            self.wheels.left_position_rad += dl;
            self.wheels.right_position_rad += dr;
            self.wheels.left_velocity_radps = wl;
            self.wheels.right_velocity_radps = wr;
            self.ground_twist = motion.twist;
            self.odom.integrate(&self.config.nominal_vehicle, dl, dr, dt_secs);
            self.distance_m += self.pose.distance_to(&next);
            self.pose = next;
        }
    }
}
