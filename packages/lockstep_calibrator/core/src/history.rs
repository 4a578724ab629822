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

/// An observed pose (SLAM, motion capture, GPS).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoseSample {
    /// Time (s).
    pub t_secs: f64,
    /// Pose in the map frame.
    pub pose: Pose,
    /// The pose's own noise when its message carries a covariance (weights this sample in the fit);
    /// `None`: the configured noise.
    pub noise: Option<crate::fit::PoseNoise>,
}

/// Wheel motion between two consecutive odometry samples.
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
    /// Left wheel speed at the end (rad/s), from the odometry's twist.
    pub left_radps: f64,
    /// Right wheel speed at the end (rad/s).
    pub right_radps: f64,
}

/// The three input streams, for counts and messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stream {
    /// cmd_vel.
    Command,
    /// odom.
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
mod tests {
    use super::*;

    fn odom(t: f64, x: f64) -> OdomSample {
        OdomSample {
            t_secs: t,
            pose: Pose {
                x_m: x,
                ..Pose::default()
            },
            v_mps: 0.5,
            w_radps: 0.0,
        }
    }

    #[test]
    fn nan_and_out_of_order_samples_are_dropped_counted_and_named() {
        let mut h = History::new(ModelParams::default(), 100.0);
        h.push_odom(odom(1.0, 0.0)).unwrap();
        let e = h.push_odom(odom(2.0, f64::NAN)).unwrap_err();
        assert_eq!(e.to_string(), "odom at t=2: pose.x is not finite");
        let e = h.push_odom(odom(0.5, 0.0)).unwrap_err();
        assert!(e.to_string().contains("not after the latest sample (t=1)"), "{e}");
        h.push_odom(odom(2.0, 0.5)).unwrap();
        let e = h
            .push_command(CommandSample {
                t_secs: f64::INFINITY,
                v_mps: 0.0,
                w_radps: 0.0,
            })
            .unwrap_err();
        assert!(matches!(e, Dropped::NotFinite { field: "stamp", .. }));
        let d = h.dropped();
        assert_eq!((d.not_finite, d.out_of_order), ([1, 1, 0], [0, 1, 0]));
        // The good samples made one wheel step: 0.5 m straight = 10 rad on each 0.05 m wheel.
        let w = h.window(0.0, 3.0, 0.0);
        assert_eq!(w.steps.len(), 1);
        assert!((w.steps[0].d_left_rad - 10.0).abs() < 1e-9 && (w.steps[0].d_right_rad - 10.0).abs() < 1e-9);
    }

    fn pose(t: f64) -> PoseSample {
        PoseSample {
            t_secs: t,
            pose: Pose::default(),
            noise: None,
        }
    }

    #[test]
    fn a_far_future_stamp_is_dropped_and_counted_and_does_not_block_the_stream() {
        let mut h = History::new(ModelParams::default(), 100.0);
        for i in 0..5 {
            h.push_odom(odom(f64::from(i), 0.0)).unwrap();
            h.push_pose(pose(f64::from(i))).unwrap();
        }
        let e = h.push_pose(pose(2_147_483_647.0)).unwrap_err();
        assert!(matches!(e, Dropped::FarFuture { .. }), "{e}");
        assert!(e.to_string().contains("a stamp in the far future"), "{e}");
        // The stream goes on, and nothing was forgotten.
        h.push_pose(pose(5.0)).unwrap();
        h.push_odom(odom(5.0, 0.0)).unwrap();
        assert_eq!(h.complete_until(), Some(5.0));
        assert_eq!(h.window(0.0, 5.0, 0.0).poses.len(), 6);
        let d = h.dropped();
        assert_eq!((d.far_future, d.out_of_order), ([0, 0, 1], [0, 0, 1]));
    }

    #[test]
    fn a_real_jump_of_the_clock_is_followed_and_clear_takes_any_stamp_again() {
        let mut h = History::new(ModelParams::default(), 100.0);
        h.push_pose(pose(1.0)).unwrap();
        let far = 1e6;
        for k in 0..FAR_FUTURE_CONFIRM {
            assert!(h.push_pose(pose(far + f64::from(k))).is_err());
        }
        h.push_pose(pose(far + 100.0)).unwrap();
        h.push_odom(odom(far + 100.5, 0.0)).unwrap();
        // Before a reset, older stamps are out of order; after it, any stamp starts over.
        assert!(h.push_pose(pose(2.0)).is_err());
        h.clear();
        h.push_pose(pose(2.0)).unwrap();
        assert_eq!(h.dropped().far_future, [0, 0, u64::from(FAR_FUTURE_CONFIRM)]);
    }

    #[test]
    fn old_data_is_forgotten() {
        let mut h = History::new(ModelParams::default(), 5.0);
        for i in 0..20 {
            h.push_odom(odom(f64::from(i), f64::from(i))).unwrap();
        }
        assert_eq!(h.complete_from(), None, "no pose yet");
        let w = h.window(0.0, 20.0, 0.0);
        assert!(w.steps.iter().all(|s| s.t0_secs >= 14.0), "{:?}", w.steps.first());
    }
}
