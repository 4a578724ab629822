//! Ranges of numbers, for parameters and command-line options, without ROS; and files a user names,
//! read as regular files within a size cap ([`file`]).
//!
//! A [`Real`] is a finite interval with a unit; an [`Int`] an integer interval. Both check a value and say
//! what was expected in one line (`must be finite and in [0.05, 5] m`). The same ranges serve a node's
//! parameters (through `lockstep_ros::ParamRules`) and the `lockstep` subcommands' numeric options, through
//! the clap value parsers [`real_arg`] and [`int_arg`]:
//!
//! ```
//! use lockstep_ranges::{real_arg, Real};
//!
//! const PERIOD_S: Real = Real::closed(1e-5, 10.0, "s");
//!
//! let parse = real_arg(PERIOD_S);
//! assert_eq!(parse("0.002"), Ok(0.002));
//! assert_eq!(parse("1e-300").unwrap_err(), "1e-300 is out of range: must be finite and in [1e-5, 10] s");
//! ```
//!
//! A closure `Fn(&str) -> Result<T, String>` is a clap `TypedValueParser`, so `#[arg(value_parser =
//! real_arg(PERIOD_S))]` needs no clap in this crate.

use std::fmt;

pub mod file;
#[cfg(feature = "proptest")]
pub mod hostile;

/// A finite interval of real numbers, closed or open at its lower end, with the unit its values are in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Real {
    pub min: f64,
    pub max: f64,
    /// The lower bound itself is outside (`(0, 10]`): for periods, rates and sizes that must be positive.
    pub min_exclusive: bool,
    /// The unit written after the range (`m`, `s`, `rad/s`); "" for none.
    pub unit: &'static str,
}

impl Real {
    /// `[min, max]`.
    pub const fn closed(min: f64, max: f64, unit: &'static str) -> Self {
        Real {
            min,
            max,
            min_exclusive: false,
            unit,
        }
    }

    /// `(min, max]`: above `min`, at most `max`.
    pub const fn above(min: f64, max: f64, unit: &'static str) -> Self {
        Real {
            min,
            max,
            min_exclusive: true,
            unit,
        }
    }

    /// Whether `value` is finite and inside.
    pub fn contains(&self, value: f64) -> bool {
        value.is_finite()
            && value <= self.max
            && if self.min_exclusive {
                value > self.min
            } else {
                value >= self.min
            }
    }

    /// `value` if it is finite and inside; otherwise what was expected.
    pub fn check(&self, value: f64) -> Result<f64, OutOfRange> {
        if self.contains(value) {
            Ok(value)
        } else {
            Err(OutOfRange {
                value: number(value),
                expected: self.to_string(),
            })
        }
    }
}

/// `finite and in [0.05, 5] m`; an end at the largest finite number or beyond is unbounded and written
/// `...` (`[0, ...]`), not as the 309 digits of `f64::MAX`. `{:#}` writes the interval alone: `[0.05, 5]`.
impl fmt::Display for Real {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let open = if self.min_exclusive { '(' } else { '[' };
        let end = |value: f64| {
            if value.abs() >= f64::MAX {
                "...".to_owned()
            } else {
                number(value)
            }
        };
        if !f.alternate() {
            f.write_str("finite and in ")?;
        }
        write!(f, "{open}{}, {}]", end(self.min), end(self.max))?;
        if !self.unit.is_empty() && !f.alternate() {
            write!(f, " {}", self.unit)?;
        }
        Ok(())
    }
}

/// A closed interval of integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Int {
    pub min: i64,
    pub max: i64,
    /// What is counted (`points`), written after the range; "" for none.
    pub unit: &'static str,
}

impl Int {
    /// `[min, max]`.
    pub const fn closed(min: i64, max: i64, unit: &'static str) -> Self {
        Int { min, max, unit }
    }

    /// Whether `value` is inside.
    pub fn contains(&self, value: i64) -> bool {
        (self.min..=self.max).contains(&value)
    }

    /// `value` if it is inside; otherwise what was expected.
    pub fn check(&self, value: i64) -> Result<i64, OutOfRange> {
        if self.contains(value) {
            Ok(value)
        } else {
            Err(OutOfRange {
                value: value.to_string(),
                expected: self.to_string(),
            })
        }
    }
}

/// `an integer in [1, 1000] points`.
impl fmt::Display for Int {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an integer in [{}, {}]", self.min, self.max)?;
        if !self.unit.is_empty() {
            write!(f, " {}", self.unit)?;
        }
        Ok(())
    }
}

/// A value outside its range: the value as written and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value} is out of range: must be {expected}")]
pub struct OutOfRange {
    pub value: String,
    pub expected: String,
}

/// A number written short: `0.05`, `10000`, `1e-300`, `1.5e20`, `NaN`, `inf` (never 300 digits).
pub fn number(value: f64) -> String {
    let magnitude = value.abs();
    if value == 0.0 || !value.is_finite() || (1e-4..1e15).contains(&magnitude) {
        format!("{value}")
    } else {
        format!("{value:e}")
    }
}

/// A clap value parser for a real option within `range`: the error gives the range (`--period-s 0`:
/// `0 is out of range: must be finite and in (0, 10] s`).
pub fn real_arg(range: Real) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |text: &str| {
        let value: f64 = text
            .trim()
            .parse()
            .map_err(|_| format!("`{text}` is not a number: must be {range}"))?;
        range.check(value).map_err(|e| e.to_string())
    }
}

/// A clap value parser for an integer option within `range`, converted to `T` (`usize`, `u32`, ...); the
/// range must fit in `T`.
pub fn int_arg<T>(range: Int) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<i64> + Clone + Send + Sync + 'static,
{
    move |text: &str| {
        let value: i64 = text
            .trim()
            .parse()
            .map_err(|_| format!("`{text}` is not {range}"))?;
        let value = range.check(value).map_err(|e| e.to_string())?;
        T::try_from(value).map_err(|_| format!("{value} is out of range: must be {range}"))
    }
}

/// A clap value parser for a real option where 0 means "off" (`--max-bag-duration 0`: never split) and any
/// other value must be within `range`: `0.0001` is refused as well as `NaN`.
pub fn real_arg_or_zero(range: Real) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    let parse = real_arg(range);
    move |text: &str| {
        if text.trim().parse::<f64>().is_ok_and(|value| value == 0.0) {
            Ok(0.0)
        } else {
            parse(text).map_err(|e| format!("{e} (or 0: off)"))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const WIDTH: Real = Real::closed(0.05, 5.0, "m");
    const PERIOD: Real = Real::above(0.0, 3600.0, "s");

    #[test]
    fn zero_means_off_and_anything_else_must_be_in_range() {
        let parse = real_arg_or_zero(Real::closed(0.001, 10.0, "s"));
        assert_eq!(parse("0"), Ok(0.0));
        assert_eq!(parse("-0"), Ok(0.0));
        assert_eq!(parse("2.5"), Ok(2.5));
        let err = parse("1e-300").unwrap_err();
        assert!(
            err.contains("[0.001, 10] s") && err.ends_with("(or 0: off)"),
            "{err}"
        );
        assert!(parse("nan").is_err());
    }

    #[test]
    fn ranges_take_what_is_inside_and_say_what_was_expected() {
        assert_eq!(WIDTH.check(0.05), Ok(0.05));
        assert_eq!(WIDTH.check(5.0), Ok(5.0));
        assert_eq!(
            WIDTH.check(f64::NAN).unwrap_err().to_string(),
            "NaN is out of range: must be finite and in [0.05, 5] m"
        );
        assert!(
            PERIOD.check(0.0).is_err(),
            "the lower bound of (0, 3600] is outside"
        );
        assert_eq!(
            PERIOD.check(-1e308).unwrap_err().to_string(),
            "-1e308 is out of range: must be finite and in (0, 3600] s"
        );
        for bad in [f64::INFINITY, f64::NEG_INFINITY, 5.000001, 0.0499] {
            assert!(!WIDTH.contains(bad), "{bad}");
        }
        let count = Int::closed(1, 1000, "points");
        assert_eq!(count.check(1000), Ok(1000));
        assert_eq!(
            count.check(0).unwrap_err().to_string(),
            "0 is out of range: must be an integer in [1, 1000] points"
        );
    }

    #[test]
    fn unbounded_ends_are_written_as_dots_not_as_300_digits() {
        let any_size = Real::closed(0.0, f64::MAX, "");
        assert_eq!(
            any_size.check(-1.0).unwrap_err().to_string(),
            "-1 is out of range: must be finite and in [0, ...]"
        );
        assert_eq!(
            Real::above(f64::NEG_INFINITY, f64::INFINITY, "m").to_string(),
            "finite and in (..., ...] m"
        );
        assert_eq!(format!("{any_size:#}"), "[0, ...]", "the interval alone");
        assert_eq!(format!("{:#}", PERIOD), "(0, 3600]");
        assert_eq!(
            format!("{:#}", Real::closed(-1e-300, 1e20, "")),
            "[-1e-300, 1e20]"
        );
    }

    #[test]
    fn numbers_are_written_short() {
        assert_eq!(number(0.05), "0.05");
        assert_eq!(number(1e4), "10000");
        assert_eq!(number(1e-300), "1e-300");
        assert_eq!(number(5e-324), "5e-324");
        assert_eq!(number(-1.5e20), "-1.5e20");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::NEG_INFINITY), "-inf");
        assert_eq!(number(0.0), "0");
    }

    #[test]
    fn argument_parsers_refuse_text_and_numbers_outside_with_the_range() {
        let parse = real_arg(PERIOD);
        assert_eq!(parse(" 0.5 "), Ok(0.5));
        assert_eq!(
            parse("fast").unwrap_err(),
            "`fast` is not a number: must be finite and in (0, 3600] s"
        );
        assert!(parse("NaN").unwrap_err().contains("(0, 3600] s"));
        assert!(parse("1e-400").is_err(), "underflows to 0, which is outside");
        let count = int_arg::<usize>(Int::closed(1, 10, ""));
        assert_eq!(count("3"), Ok(3));
        assert_eq!(count("1e3").unwrap_err(), "`1e3` is not an integer in [1, 10]");
        assert_eq!(
            count("99999999999999999999").unwrap_err(),
            "`99999999999999999999` is not an integer in [1, 10]"
        );
        let narrow = int_arg::<u8>(Int::closed(0, 1000, ""));
        assert_eq!(
            narrow("300").unwrap_err(),
            "300 is out of range: must be an integer in [0, 1000]"
        );
    }

    proptest::proptest! {
        /// Any f64 as text: either inside (and returned unchanged) or refused with the range; never a panic.
        #[test]
        fn any_real_is_taken_or_refused_with_the_range(bits in proptest::num::u64::ANY) {
            let value = f64::from_bits(bits);
            let parse = real_arg(WIDTH);
            match parse(&value.to_string()) {
                Ok(v) => proptest::prop_assert!(WIDTH.contains(v) && v == value),
                Err(e) => {
                    proptest::prop_assert!(!WIDTH.contains(value));
                    proptest::prop_assert!(e.ends_with("must be finite and in [0.05, 5] m"), "{}", e);
                }
            }
        }
    }
}
