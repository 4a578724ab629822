//! The calibrator's memory: commands, wheel motion (recovered from odometry through the nominal
//! parameters the odometry was computed with) and observed poses, time-ordered, bounded in age. A sample
//! that is not finite, older than its stream's latest, or stamped far in the future (more than the history
//! kept ahead of every stream's latest sample: one stamp of year 2038 would otherwise push out every other
//! sample and block the stream for good) is dropped and counted, never stored. A real jump of the clock is
//! followed after [`FAR_FUTURE_CONFIRM`] samples in a row.

use std::collections::VecDeque;

use crate::model::{wrap, ModelParams, Pose};

/// A velocity command, stamped when the base received it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CommandSample {
    /// Time (s).
    pub t_secs: f64,
    /// Linear velocity (m/s).
    pub v_mps: f64,
    /// Angular velocity (rad/s).
    pub w_radps: f64,
}

/// An odometry message: the integrated pose and the twist, as the base computed them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OdomSample {
    /// Time (s).
    pub t_secs: f64,
    /// Integrated pose in the odometry frame.
    pub pose: Pose,
    /// Linear velocity (m/s).
    pub v_mps: f64,
    /// Angular velocity (rad/s).
    pub w_radps: f64,
}

/// Wheel encoders (sensor_msgs/JointState): the accumulated angle of each wheel, and its speed when the
/// message carries one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WheelSample {
    /// Time (s).
    pub t_secs: f64,
    /// Left wheel angle, accumulated (rad).
    pub left_rad: f64,
    /// Right wheel angle, accumulated (rad).
    pub right_rad: f64,
    /// Left wheel speed (rad/s); `None`: from the angle change since the previous sample.
    pub left_radps: Option<f64>,
    /// Right wheel speed (rad/s); `None`: from the angle change since the previous sample.
    pub right_radps: Option<f64>,
}

/// Noise of the observed poses: the unit of the pose fit's residuals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoseNoise {
    /// Standard deviation of x and y (m).
    pub sigma_xy_m: f64,
    /// Standard deviation of the heading (rad).
    pub sigma_yaw_rad: f64,
}

/// An observed pose (SLAM, motion capture, GPS).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoseSample {
    /// Time (s).
    pub t_secs: f64,
    /// Pose in the map frame.
    pub pose: Pose,
    /// The pose's own noise when its message carries a covariance (weights this sample in the fit);
    /// `None`: the configured noise.
    pub noise: Option<PoseNoise>,
}

/// Wheel motion between two consecutive odometry (or wheel encoder) samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WheelStep {
    /// Start (s).
    pub t0_secs: f64,
    /// End (s).
    pub t1_secs: f64,
    /// Left wheel angle increment (rad).
    pub d_left_rad: f64,
    /// Right wheel angle increment (rad).
    pub d_right_rad: f64,
    /// Left wheel speed at the end (rad/s), from the odometry's twist (or the encoders).
    pub left_radps: f64,
    /// Right wheel speed at the end (rad/s).
    pub right_radps: f64,
}

/// The three input streams, for counts and messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stream {
    /// cmd_vel.
    Command,
    /// odom, or the wheel encoders (joint_states) in its place.
    Odometry,
    /// The observed pose.
    Pose,
}

impl std::fmt::Display for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stream::Command => "cmd_vel",
            Stream::Odometry => "odom",
            Stream::Pose => "pose",
        })
    }
}

/// Why a sample was dropped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Dropped {
    /// A field is NaN or infinite.
    #[error("{stream} at t={t_secs}: {field} is not finite")]
    NotFinite {
        /// Its stream.
        stream: Stream,
        /// Its stamp.
        t_secs: f64,
        /// The first bad field.
        field: &'static str,
    },
    /// Stamped more than `max_lead_secs` after the newest sample of every stream.
    #[error(
        "{stream} at t={t_secs}: more than {max_lead_secs} s after the newest sample (t={newest_secs}); \
         a stamp in the far future"
    )]
    FarFuture {
        /// Its stream.
        stream: Stream,
        /// Its stamp.
        t_secs: f64,
        /// The newest accepted stamp of any stream.
        newest_secs: f64,
        /// How far ahead a sample may be (the history kept).
        max_lead_secs: f64,
    },
    /// Not newer than the stream's latest sample.
    #[error("{stream} at t={t_secs}: not after the latest sample (t={latest_secs})")]
    OutOfOrder {
        /// Its stream.
        stream: Stream,
        /// Its stamp.
        t_secs: f64,
        /// The latest accepted stamp.
        latest_secs: f64,
    },
}

/// Counts of dropped samples per stream.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DropCounts {
    /// Not finite: cmd_vel, odom, pose.
    pub not_finite: [u64; 3],
    /// Out of order: cmd_vel, odom, pose (the far-future ones included).
    pub out_of_order: [u64; 3],
    /// Of those out of order, the ones stamped far in the future: cmd_vel, odom, pose.
    pub far_future: [u64; 3],
}

/// A stream whose samples are all far ahead of the rest this many times in a row has really jumped (a
/// restarted recording with another time origin): its next far-ahead sample is taken.
pub const FAR_FUTURE_CONFIRM: u32 = 10;

fn check(
    stream: Stream,
    t_secs: f64,
    fields: &[(&'static str, f64)],
    latest: Option<f64>,
) -> Result<(), Dropped> {
    if let Some((field, _)) = std::iter::once(("stamp", t_secs))
        .chain(fields.iter().copied())
        .find(|(_, v)| !v.is_finite())
    {
        return Err(Dropped::NotFinite {
            stream,
            t_secs,
            field,
        });
    }
    match latest {
        Some(latest_secs) if t_secs <= latest_secs => Err(Dropped::OutOfOrder {
            stream,
            t_secs,
            latest_secs,
        }),
        _ => Ok(()),
    }
}

/// Time-ordered inputs, at most `keep_secs` old (relative to the newest sample of any stream).
#[derive(Debug, Clone)]
pub struct History {
    nominal: ModelParams,
    keep_secs: f64,
    commands: VecDeque<CommandSample>,
    steps: VecDeque<WheelStep>,
    poses: VecDeque<PoseSample>,
    last_odom: Option<OdomSample>,
    last_wheels: Option<WheelSample>,
    latest: [Option<f64>; 3],
    /// Far-future samples in a row, per stream.
    far_streak: [u32; 3],
    dropped: DropCounts,
}

impl History {
    /// An empty history for odometry computed with `nominal`, keeping `keep_secs` of data.
    pub fn new(nominal: ModelParams, keep_secs: f64) -> Self {
        Self {
            nominal,
            keep_secs,
            commands: VecDeque::new(),
            steps: VecDeque::new(),
            poses: VecDeque::new(),
            last_odom: None,
            last_wheels: None,
            latest: [None; 3],
            far_streak: [0; 3],
            dropped: DropCounts::default(),
        }
    }

    /// Forgets every sample and every stream's latest stamp (after a reset, data with any stamps is taken
    /// again); the nominal parameters, the history's length and the drop counts stay.
    pub fn clear(&mut self) {
        *self = Self {
            dropped: self.dropped,
            ..Self::new(self.nominal, self.keep_secs)
        };
    }

    /// The parameters the odometry is computed with.
    pub fn nominal(&self) -> ModelParams {
        self.nominal
    }

    /// The odometry is computed with new parameters from now on (after a push): no wheel step spans the
    /// change.
    pub fn set_nominal(&mut self, nominal: ModelParams) {
        self.nominal = nominal;
        self.last_odom = None;
    }

    /// Samples dropped so far.
    pub fn dropped(&self) -> DropCounts {
        self.dropped
    }

    /// Checks a sample of `stream` stamped `t_secs`: a dropped one is counted, an accepted one becomes
    /// the stream's latest.
    fn admit(&mut self, stream: Stream, t_secs: f64, fields: &[(&'static str, f64)]) -> Result<(), Dropped> {
        let i = stream as usize;
        let result = check(stream, t_secs, fields, self.latest[i]).and_then(|()| self.lead(stream, t_secs));
        match &result {
            Ok(()) => {
                self.latest[i] = Some(t_secs);
                self.far_streak[i] = 0;
            }
            Err(Dropped::NotFinite { .. }) => self.dropped.not_finite[i] += 1,
            Err(Dropped::OutOfOrder { .. }) => self.dropped.out_of_order[i] += 1,
            Err(Dropped::FarFuture { .. }) => {
                self.dropped.out_of_order[i] += 1;
                self.dropped.far_future[i] += 1;
            }
        }
        result
    }

    /// Whether `t_secs` is within the history's length of the newest sample of any stream (or taken as a
    /// confirmed jump of the clock).
    fn lead(&mut self, stream: Stream, t_secs: f64) -> Result<(), Dropped> {
        let i = stream as usize;
        let Some(newest_secs) = self.latest.iter().flatten().copied().reduce(f64::max) else {
            return Ok(());
        };
        if t_secs - newest_secs <= self.keep_secs {
            return Ok(());
        }
        self.far_streak[i] += 1;
        if self.far_streak[i] > FAR_FUTURE_CONFIRM {
            return Ok(());
        }
        Err(Dropped::FarFuture {
            stream,
            t_secs,
            newest_secs,
            max_lead_secs: self.keep_secs,
        })
    }

    /// Adds a command.
    pub fn push_command(&mut self, c: CommandSample) -> Result<(), Dropped> {
        self.admit(
            Stream::Command,
            c.t_secs,
            &[("linear.x", c.v_mps), ("angular.z", c.w_radps)],
        )?;
        self.commands.push_back(c);
        self.forget(c.t_secs);
        Ok(())
    }

    /// Adds an odometry sample; with the previous one it gives a wheel step.
    pub fn push_odom(&mut self, o: OdomSample) -> Result<(), Dropped> {
        self.admit(
            Stream::Odometry,
            o.t_secs,
            &[
                ("pose.x", o.pose.x_m),
                ("pose.y", o.pose.y_m),
                ("pose.yaw", o.pose.yaw_rad),
                ("twist.linear.x", o.v_mps),
                ("twist.angular.z", o.w_radps),
            ],
        )?;
        if let Some(prev) = self.last_odom {
            // Inverse of the odometry's integration (mid-heading chord): distance and heading change, then
            // the wheel angles the nominal parameters turn them into.
            let theta = wrap(o.pose.yaw_rad - prev.pose.yaw_rad);
            let mid = prev.pose.yaw_rad + 0.5 * theta;
            let distance =
                (o.pose.x_m - prev.pose.x_m) * mid.cos() + (o.pose.y_m - prev.pose.y_m) * mid.sin();
            // A base that knows beta slipped its heading: undo that before turning it into wheel angles.
            let dt = o.t_secs - prev.t_secs;
            let kinematic = self.nominal.unslipped_rotation(distance, theta, dt);
            let (d_left_rad, d_right_rad) = self.nominal.wheel_angles(distance, kinematic);
            let w_kinematic = self.nominal.unslipped_rotation(o.v_mps, o.w_radps, 1.0);
            let (left_radps, right_radps) = self.nominal.wheel_speeds(o.v_mps, w_kinematic);
            self.steps.push_back(WheelStep {
                t0_secs: prev.t_secs,
                t1_secs: o.t_secs,
                d_left_rad,
                d_right_rad,
                left_radps,
                right_radps,
            });
        }
        self.last_odom = Some(o);
        self.forget(o.t_secs);
        Ok(())
    }

    /// Adds a wheel encoder sample; with the previous one it gives a wheel step, as [`Self::push_odom`]
    /// does (the encoders are the odometry's stream: feed one or the other). The angles need no nominal
    /// parameters; a speed the sample lacks is the angle change over the time since the previous sample.
    pub fn push_wheels(&mut self, s: WheelSample) -> Result<(), Dropped> {
        self.admit(
            Stream::Odometry,
            s.t_secs,
            &[
                ("left wheel position", s.left_rad),
                ("right wheel position", s.right_rad),
                ("left wheel velocity", s.left_radps.unwrap_or(0.0)),
                ("right wheel velocity", s.right_radps.unwrap_or(0.0)),
            ],
        )?;
        if let Some(prev) = self.last_wheels {
            let dt = s.t_secs - prev.t_secs;
            let (d_left_rad, d_right_rad) = (s.left_rad - prev.left_rad, s.right_rad - prev.right_rad);
            self.steps.push_back(WheelStep {
                t0_secs: prev.t_secs,
                t1_secs: s.t_secs,
                d_left_rad,
                d_right_rad,
                left_radps: s.left_radps.unwrap_or(d_left_rad / dt),
                right_radps: s.right_radps.unwrap_or(d_right_rad / dt),
            });
        }
        self.last_wheels = Some(s);
        self.forget(s.t_secs);
        Ok(())
    }

    /// Adds an observed pose.
    pub fn push_pose(&mut self, p: PoseSample) -> Result<(), Dropped> {
        self.admit(
            Stream::Pose,
            p.t_secs,
            &[("x", p.pose.x_m), ("y", p.pose.y_m), ("yaw", p.pose.yaw_rad)],
        )?;
        self.poses.push_back(p);
        self.forget(p.t_secs);
        Ok(())
    }

    fn forget(&mut self, now_secs: f64) {
        let oldest = now_secs - self.keep_secs;
        while self.commands.len() > 1 && self.commands[1].t_secs < oldest {
            self.commands.pop_front();
        }
        while self.steps.front().is_some_and(|s| s.t0_secs < oldest) {
            self.steps.pop_front();
        }
        while self.poses.front().is_some_and(|p| p.t_secs < oldest) {
            self.poses.pop_front();
        }
    }

    /// Time of the newest wheel step and pose both (the data is complete up to there).
    pub fn complete_until(&self) -> Option<f64> {
        let s = self.steps.back()?.t1_secs;
        let p = self.poses.back()?.t_secs;
        Some(s.min(p))
    }

    /// Time of the oldest wheel step and pose both.
    pub fn complete_from(&self) -> Option<f64> {
        let s = self.steps.front()?.t0_secs;
        let p = self.poses.front()?.t_secs;
        Some(s.max(p))
    }

    /// The data of `[t0, t1]`: wheel steps inside it, poses inside it, and the commands from
    /// `t0 - lead_secs` (the one in effect then included) to `t1`.
    pub fn window(&self, t0_secs: f64, t1_secs: f64, lead_secs: f64) -> Window {
        let from = t0_secs - lead_secs;
        let first_cmd = self
            .commands
            .partition_point(|c| c.t_secs <= from)
            .saturating_sub(1);
        Window {
            t0_secs,
            t1_secs,
            commands: self
                .commands
                .range(first_cmd..)
                .take_while(|c| c.t_secs <= t1_secs)
                .copied()
                .collect(),
            steps: self
                .steps
                .iter()
                .filter(|s| s.t0_secs >= t0_secs - 1e-9 && s.t1_secs <= t1_secs + 1e-9)
                .copied()
                .collect(),
            poses: self
                .poses
                .iter()
                .filter(|p| p.t_secs >= t0_secs - 1e-9 && p.t_secs <= t1_secs + 1e-9)
                .copied()
                .collect(),
            nominal: self.nominal,
        }
    }
}

/// The data of one time window.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// Start (s).
    pub t0_secs: f64,
    /// End (s).
    pub t1_secs: f64,
    /// Commands, oldest first, from before the start (the delay's lead) to the end.
    pub commands: Vec<CommandSample>,
    /// Wheel steps inside the window.
    pub steps: Vec<WheelStep>,
    /// Observed poses inside the window.
    pub poses: Vec<PoseSample>,
    /// The parameters the odometry was computed with.
    pub nominal: ModelParams,
}

impl Window {
    /// The command in effect at `t` (zero before the first).
    pub fn command_at(&self, t_secs: f64) -> (f64, f64) {
        let i = self.commands.partition_point(|c| c.t_secs <= t_secs);
        if i == 0 {
            (0.0, 0.0)
        } else {
            (self.commands[i - 1].v_mps, self.commands[i - 1].w_radps)
        }
    }
}

#[cfg(test)]
mod tests;
