//! What a parameter may hold, declared once per node and checked both at start (values from `-p` and
//! `--params-file`) and on every run-time set (`~/set_parameters`, `ros2 param set`), so that a bad value is
//! refused with the same one-line reason either way:
//! `parameter 'track_width_m' = NaN: must be finite and in [0.05, 5] m`.
//!
//! A node lists its rules by implementing [`ParamRules`] on its `#[derive(r2r::RosParams)]` struct and
//! declares the struct with [`crate::declare_checked_parameters`] (or wraps it in [`crate::Guarded`]
//! itself); a parameter with no rule is only type-checked (by r2r).
//!
//! ```ignore
//! use lockstep_ros::{ParamRule, ParamRules, Real};
//!
//! impl ParamRules for MyParams {
//!     fn param_rules() -> &'static [ParamRule] {
//!         const RULES: &[ParamRule] = &[
//!             ParamRule::real("rate_hz", Real::above(0.0, 1000.0, "Hz")),
//!             ParamRule::one_of("mode", &["fast", "slow"]),
//!             ParamRule::non_empty("frame_id"),
//!         ];
//!         RULES
//!     }
//! }
//! ```

use r2r::{ParameterValue, RosParams};

pub use lockstep_ranges::{number, Int, OutOfRange, Real};

/// What one parameter may hold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Check {
    /// A double: finite and inside the range.
    Real(Real),
    /// An integer inside the range.
    Int(Int),
    /// A string with something in it besides blanks.
    NonEmpty,
    /// A string, one of these.
    OneOf(&'static [&'static str]),
}

/// The rule of one parameter, by its full name (`true_vehicle.track_width_m` for a nested struct's field).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamRule {
    pub name: &'static str,
    pub check: Check,
}

impl ParamRule {
    /// A double parameter within `range`.
    pub const fn real(name: &'static str, range: Real) -> Self {
        ParamRule {
            name,
            check: Check::Real(range),
        }
    }

    /// An integer parameter within `range`.
    pub const fn int(name: &'static str, range: Int) -> Self {
        ParamRule {
            name,
            check: Check::Int(range),
        }
    }

    /// A string parameter that must not be empty.
    pub const fn non_empty(name: &'static str) -> Self {
        ParamRule {
            name,
            check: Check::NonEmpty,
        }
    }

    /// A string parameter that must be one of `choices`.
    pub const fn one_of(name: &'static str, choices: &'static [&'static str]) -> Self {
        ParamRule {
            name,
            check: Check::OneOf(choices),
        }
    }

    /// Checks `value`; the error is the whole one-line reason, naming the parameter, the value and the range.
    /// A value of another type than the rule's passes here: r2r refuses it by its type.
    /// What the parameter may hold, in the words of the error a bad value gets: `finite and in (0, 1000] Hz`,
    /// `in [2, 10000] points`, `not empty`, ``one of `forward`, `trajectory` ``. The README's parameter rows and
    /// `--help` show it as `(allowed: ...)`.
    pub fn allowed(&self) -> String {
        match &self.check {
            Check::Real(range) => range.to_string(),
            Check::Int(range) => range.to_string(),
            Check::NonEmpty => "not empty".to_owned(),
            Check::OneOf(choices) => format!(
                "one of {}",
                choices
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    pub fn check(&self, value: &ParameterValue) -> Result<(), String> {
        let name = self.name;
        match (&self.check, value) {
            (Check::Real(range), ParameterValue::Double(v)) if !range.contains(*v) => {
                Err(format!("parameter '{name}' = {}: must be {range}", number(*v)))
            }
            (Check::Int(range), ParameterValue::Integer(v)) if !range.contains(*v) => {
                Err(format!("parameter '{name}' = {v}: must be {range}"))
            }
            (Check::NonEmpty, ParameterValue::String(s)) if s.trim().is_empty() => {
                Err(format!("parameter '{name}' = {s:?}: must not be empty"))
            }
            (Check::OneOf(choices), ParameterValue::String(s)) if !choices.contains(&s.as_str()) => {
                Err(format!(
                    "parameter '{name}' = {s:?}: must be one of {}",
                    choices
                        .iter()
                        .map(|c| format!("`{c}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
            _ => Ok(()),
        }
    }
}

/// The rules of a parameter struct; parameters not listed are only type-checked.
pub trait ParamRules {
    /// One rule per checked parameter.
    fn param_rules() -> &'static [ParamRule] {
        &[]
    }
}

/// Checks a set of `name` to `value` against `rules` (no rule for `name`: taken).
pub fn check_parameter(rules: &[ParamRule], name: &str, value: &ParameterValue) -> Result<(), String> {
    rules
        .iter()
        .filter(|rule| rule.name == name)
        .try_for_each(|rule| rule.check(value))
}

/// Checks every ruled parameter's current value in `params` (at start, after `-p` and `--params-file` were
/// applied); the first bad one is the error. A rule naming no parameter of `params` is an error too (a typo
/// in the rules must not switch a check off).
pub fn check_all<P: RosParams + ParamRules>(params: &mut P) -> Result<(), String> {
    for rule in P::param_rules() {
        let value = params
            .get_parameter(rule.name)
            .map_err(|e| format!("the rule of parameter '{}' names no parameter: {e}", rule.name))?;
        rule.check(&value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[derive(r2r::RosParams, Debug, Clone)]
    struct Wheel {
        /// Wheel radius [m].
        radius_m: f64,
    }

    #[derive(r2r::RosParams, Debug, Clone)]
    struct Params {
        /// Track width [m].
        track_width_m: f64,
        /// Points kept.
        max_points: i64,
        /// Frame.
        frame: String,
        /// Mode.
        mode: String,
        /// A wheel.
        wheel: Wheel,
    }

    impl Default for Params {
        fn default() -> Self {
            Params {
                track_width_m: 0.4,
                max_points: 10,
                frame: "map".into(),
                mode: "fast".into(),
                wheel: Wheel { radius_m: 0.05 },
            }
        }
    }

    const RULES: &[ParamRule] = &[
        ParamRule::real("track_width_m", Real::closed(0.05, 5.0, "m")),
        ParamRule::int("max_points", Int::closed(2, 1000, "points")),
        ParamRule::non_empty("frame"),
        ParamRule::one_of("mode", &["fast", "slow"]),
        ParamRule::real("wheel.radius_m", Real::above(0.0, 2.0, "m")),
    ];

    impl ParamRules for Params {
        fn param_rules() -> &'static [ParamRule] {
            RULES
        }
    }

    fn check(name: &str, value: ParameterValue) -> Result<(), String> {
        check_parameter(Params::param_rules(), name, &value)
    }

    #[test]
    fn each_kind_of_rule_refuses_with_the_parameter_the_value_and_the_range() {
        assert_eq!(
            check("track_width_m", ParameterValue::Double(f64::NAN)).unwrap_err(),
            "parameter 'track_width_m' = NaN: must be finite and in [0.05, 5] m"
        );
        assert_eq!(
            check("wheel.radius_m", ParameterValue::Double(0.0)).unwrap_err(),
            "parameter 'wheel.radius_m' = 0: must be finite and in (0, 2] m"
        );
        assert_eq!(
            check("max_points", ParameterValue::Integer(i64::MIN)).unwrap_err(),
            "parameter 'max_points' = -9223372036854775808: must be an integer in [2, 1000] points"
        );
        assert_eq!(
            check("frame", ParameterValue::String("  ".into())).unwrap_err(),
            "parameter 'frame' = \"  \": must not be empty"
        );
        assert_eq!(
            check("mode", ParameterValue::String("fly".into())).unwrap_err(),
            "parameter 'mode' = \"fly\": must be one of `fast`, `slow`"
        );
        assert!(check("track_width_m", ParameterValue::Double(5.0)).is_ok());
        assert!(check("unruled", ParameterValue::Double(f64::NAN)).is_ok());
        // Another type is r2r's to refuse.
        assert!(check("track_width_m", ParameterValue::Integer(7)).is_ok());
    }

    #[test]
    fn start_values_are_checked_through_the_struct() {
        let mut p = Params::default();
        assert_eq!(check_all(&mut p), Ok(()));
        p.wheel.radius_m = f64::INFINITY;
        assert_eq!(
            check_all(&mut p).unwrap_err(),
            "parameter 'wheel.radius_m' = inf: must be finite and in (0, 2] m"
        );
    }

    #[test]
    fn a_rule_naming_no_parameter_is_an_error() {
        #[derive(r2r::RosParams, Debug, Default)]
        struct Small {
            /// Rate.
            rate_hz: f64,
        }
        impl ParamRules for Small {
            fn param_rules() -> &'static [ParamRule] {
                const R: &[ParamRule] = &[ParamRule::real("rate", Real::above(0.0, 1e3, "Hz"))];
                R
            }
        }
        let e = check_all(&mut Small { rate_hz: 1.0 }).unwrap_err();
        assert!(
            e.contains("the rule of parameter 'rate' names no parameter"),
            "{e}"
        );
    }
}
