//! Interpolation-file playback, without ROS.
//!
//! - [`file`]: the file format, parsing and its line-numbered errors; the linear interpolation.
//! - [`generate`]: interpolation files from waypoints within the limits (Ruckig segments).
//! - [`limits`]: per-axis velocity, acceleration and jerk limits from a ros2_control joint-limits YAML.
//! - [`validate`]: what a file asks of each axis at speed 1, with the line at fault.
//! - [`mock`]: the mock joints' logic (commands, trajectories, lag, overspeed alarms).
//! - [`monitor`]: finite differences of a commanded stream against the limits (shared with the mock hardware).
//! - [`ramp`]: changes of the speed factor s (linear, or S-curves under jerk limits).
//! - [`spline`]: the interpolation between file points: linear, or a C2 cubic spline.
//! - [`speed_limit`]: s_max and the `linear|cubic|auto` choice, shared by the node and `lockstep player check`.
//! - [`stream`]: one time variable tau advanced by s * T_c per output tick.
//! - [`plan`]: pause, resume, speed override and cancel, each checked by simulation before it is applied.
//! - [`roots`]: files only from configured directories.
//! - [`session`]: one MovePlay goal: alignment to the first point, then the section.
//! - [`answers`]: the services' requests and answers without their message types, and how far ahead a
//!   request is planned.
//! - [`window`]: a tick's command in the controller's joint order, and when a trajectory window is sent.
//! - [`trajectory`]: a FollowJointTrajectory goal or `joint_trajectory` message checked, with its standard
//!   error codes.
//! - [`follow`]: a checked trajectory sampled from the current state and played as a session.
//! - [`tolerance`]: path and goal tolerances, as a joint_trajectory_controller resolves and checks them.
//! - [`scaling`]: a speed scaling factor as the pause, resume or speed change that reaches it.
//! - [`preview`]: a session's next commands, from a copy (a trajectory output's window of future points).

pub mod answers;
#[cfg(feature = "cli")]
pub mod cli;
pub mod file;
pub mod follow;
pub mod generate;
pub mod limits;
pub mod mock;
pub mod monitor;
mod period;
pub mod plan;
pub mod preview;
pub mod ramp;
pub mod roots;
pub mod scaling;
pub mod session;
pub mod speed_limit;
pub mod spline;
pub mod stream;
pub mod timing;
pub mod tolerance;
pub mod trajectory;
pub mod validate;
pub mod window;

pub use answers::{goal_factor, PlanningTimes};
pub use file::{FileError, InterpolationFile};
pub use limits::{AxisLimits, JointLimits, LimitsError};
pub use monitor::{Monitor, Quantity, Violation};
pub use period::PERIOD_S;
pub use plan::{Plan, Refusal};
pub use ramp::{axis_stop_secs, Ramp};
pub use speed_limit::{Bound, InterpolationChoice, SpeedLimit};
pub use spline::{Curve, Interpolation};
pub use stream::{Phase, Stream};
