//! Who the motion being played answers to: a MovePlay goal, a FollowJointTrajectory goal with the tolerances
//! it is judged by, a trajectory from the `joint_trajectory` topic (nobody to answer), or a goal already
//! answered whose stop is under way.

use lockstep_interpolation::tolerance::Tolerances;
use lockstep_interpolation::trajectory::ErrorCode;
use r2r::control_msgs::action::FollowJointTrajectory as Fjt;
use r2r::lockstep_interfaces::action::MovePlay;

/// The goal the motion being played belongs to.
pub(crate) enum Goal {
    MovePlay(r2r::ActionServerGoal<MovePlay::Action>),
    Follow(Box<FollowGoal>),
    /// A trajectory from the `joint_trajectory` topic, held to the node's default path tolerances.
    Topic(Tolerances),
    /// A goal already answered (aborted on a tolerance): its controlled stop is under way.
    Answered,
}

/// A FollowJointTrajectory goal and the tolerances it is judged by.
pub(crate) struct FollowGoal {
    pub(crate) handle: r2r::ActionServerGoal<Fjt::Action>,
    pub(crate) tolerances: Tolerances,
    /// Ticks since the motion reached its last point.
    pub(crate) ended_ticks: u64,
}

/// The result a FollowJointTrajectory goal ends with.
pub(crate) fn fjt_result(code: ErrorCode, message: impl Into<String>) -> Fjt::Result {
    Fjt::Result {
        error_code: code.value(),
        error_string: message.into(),
    }
}

impl Goal {
    /// A newer goal took over the motion: this one ends as a joint_trajectory_controller ends it.
    pub(crate) fn preempted(self) {
        match self {
            Self::Follow(mut f) => {
                let _ = f.handle.abort(fjt_result(
                    ErrorCode::InvalidGoal,
                    "Current goal preempted by new incoming action.",
                ));
            }
            Self::MovePlay(mut g) => {
                let _ = g.abort(MovePlay::Result {
                    message: "replaced by a joint trajectory".into(),
                    ..Default::default()
                });
            }
            Self::Topic(_) | Self::Answered => {}
        }
    }

    /// Whether this is the action goal with this id.
    pub(crate) fn is(&self, uuid: &r2r::uuid::Uuid) -> bool {
        match self {
            Self::MovePlay(g) => g.uuid == *uuid,
            Self::Follow(f) => f.handle.uuid == *uuid,
            Self::Topic(_) | Self::Answered => false,
        }
    }

    /// Whether this goal is a trajectory one (FollowJointTrajectory or the topic), which a new trajectory
    /// may replace.
    pub(crate) fn is_trajectory(&self) -> bool {
        !matches!(self, Self::MovePlay(_))
    }
}
