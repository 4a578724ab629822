//! s_max, the largest speed factor at which a file section plays within every joint limit, computed one way
//! for the player node (the `s_max` of its SetSpeed answer) and for `lockstep player check`: on the
//! interpolation the node plays, chosen by the same `linear|cubic|auto` setting.

use std::sync::Arc;

use crate::file::InterpolationFile;
use crate::limits::AxisLimits;
pub use crate::limits::{jerk_limited, Bound};
use crate::spline::Interpolation;
use crate::stream::Stream;

/// The `interpolation` setting: the node's parameter and `check`'s `--interpolation` option.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum InterpolationChoice {
    /// Straight lines between file points.
    Linear,
    /// A C2 cubic spline through the file points (bounded jerk).
    Cubic,
    /// Cubic when a played joint has a jerk limit, else linear.
    #[default]
    Auto,
}

impl std::str::FromStr for InterpolationChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "linear" => Ok(Self::Linear),
            "cubic" => Ok(Self::Cubic),
            "auto" => Ok(Self::Auto),
            other => Err(format!("`{other}`: expected `linear`, `cubic` or `auto`")),
        }
    }
}

impl InterpolationChoice {
    /// The interpolation for joints with `limits`: `auto` is cubic when one of them has a jerk limit.
    pub fn resolve(self, limits: &[AxisLimits]) -> Interpolation {
        match self {
            Self::Linear => Interpolation::Linear,
            Self::Cubic => Interpolation::Cubic,
            Self::Auto if jerk_limited(limits).is_some() => Interpolation::Cubic,
            Self::Auto => Interpolation::Linear,
        }
    }
}

/// The stream that plays points `first..=last` of `file` at output period `period_secs` with
/// `interpolation`: the one s_max is computed on.
pub fn section(
    file: Arc<InterpolationFile>,
    limits: Vec<AxisLimits>,
    period_secs: f64,
    first: usize,
    last: usize,
    interpolation: Interpolation,
) -> Stream {
    Stream::new(file, limits, period_secs, first, last).interpolated(interpolation)
}

/// s_max of a section (see [`section`]): the largest constant factor at which it plays within every axis's
/// velocity, acceleration and (where set) jerk limit at the output period.
pub fn s_max(section: &Stream) -> f64 {
    crate::plan::s_max(section)
}

/// s_max of a file section under an interpolation setting, and the interpolation it resolved to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeedLimit {
    pub interpolation: Interpolation,
    pub s_max: f64,
}

/// What the node answers as `s_max` for a goal playing points `first..=last` of `file` at `period_secs`
/// with its `interpolation` parameter set to `choice`.
pub fn speed_limit(
    file: Arc<InterpolationFile>,
    limits: Vec<AxisLimits>,
    period_secs: f64,
    first: usize,
    last: usize,
    choice: InterpolationChoice,
) -> SpeedLimit {
    let interpolation = choice.resolve(&limits);
    let stream = section(file, limits, period_secs, first, last, interpolation);
    SpeedLimit {
        interpolation,
        s_max: s_max(&stream),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn axis(jerk: Option<f64>) -> AxisLimits {
        AxisLimits {
            max_velocity: 1.0,
            max_acceleration: 2.0,
            max_jerk: jerk,
        }
    }

    #[test]
    fn auto_is_cubic_exactly_when_an_axis_has_a_jerk_limit() {
        let plain = [axis(None), axis(None)];
        let jerk = [axis(None), axis(Some(20.0))];
        assert_eq!(InterpolationChoice::Auto.resolve(&plain), Interpolation::Linear);
        assert_eq!(InterpolationChoice::Auto.resolve(&jerk), Interpolation::Cubic);
        assert_eq!(InterpolationChoice::Linear.resolve(&jerk), Interpolation::Linear);
        assert_eq!(InterpolationChoice::Cubic.resolve(&plain), Interpolation::Cubic);
        assert_eq!("auto".parse(), Ok(InterpolationChoice::Auto));
        assert!("spline"
            .parse::<InterpolationChoice>()
            .unwrap_err()
            .contains("`auto`"));
        assert_eq!(Bound::of(&plain).to_string(), "acceleration limit");
        assert_eq!(Bound::of(&jerk).to_string(), "acceleration and jerk limits");
    }
}
