//! The ranges the calibrator's numbers must be in, shared by the node's parameters and `lockstep calibrate`'s
//! options, so both refuse the same values with the same words.

use lockstep_ranges::Real;

/// Track width [m].
pub const TRACK_WIDTH_M: Real = Real::closed(0.01, 10.0, "m");
/// Wheel radius [m].
pub const WHEEL_RADIUS_M: Real = Real::closed(0.001, 5.0, "m");
/// Command delay [s].
pub const DELAY_SECS: Real = Real::closed(0.0, 10.0, "s");
/// Centripetal factor beta [s^2/m].
pub const CENTRIPETAL_FACTOR: Real = Real::closed(0.0, 100.0, "s^2/m");
/// Length of a fitting window [s of data time]: shorter ones hold too few samples to fit anything.
pub const WINDOW_SECS: Real = Real::closed(0.1, 3600.0, "s");
/// Standard deviation of an observed pose's x and y [m]: the residuals are divided by it.
pub const POSE_SIGMA_XY_M: Real = Real::closed(1e-6, 100.0, "m");
/// Standard deviation of an observed pose's heading [rad].
pub const POSE_SIGMA_YAW_RAD: Real = Real::closed(1e-6, 10.0, "rad");
