//! A joint_trajectory_controller's speed scaling input (`control_msgs/SpeedScalingFactor`) as the player
//! carries it out: each factor becomes the pause, resume or speed change that reaches it within every limit,
//! instead of time jumping to the new rate.

use crate::session::Request;
use crate::stream::{Phase, Stream};

/// What `factor` asks of `stream` (whose motion allows at most `s_max`): 0 pauses, a factor after a pause
/// resumes, any other a speed change; a factor above `s_max` is clamped to it. `None`: nothing to do (done,
/// already paused or pausing for 0, or a cancel's stop under way, which a factor does not call off).
pub fn request_for(stream: &Stream, s_max: f64, factor: f64) -> Option<Request> {
    if stream.cancelling() {
        return None;
    }
    let to = factor.min(s_max);
    match (stream.phase(), factor == 0.0) {
        (Phase::Done, _) | (Phase::Paused | Phase::Pausing, true) => None,
        (_, true) => Some(Request::Pause { stop_secs: None }),
        (Phase::Paused | Phase::Pausing, false) => Some(Request::Resume {
            start_secs: None,
            factor: Some(to),
        }),
        (_, false) => Some(Request::SetSpeed { factor: to }),
    }
}
