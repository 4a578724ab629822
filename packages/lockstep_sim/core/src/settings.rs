//! What the node's parameters turn into: cells given as a column and a row (-1 for none), counts with a
//! least value, rates that must be positive (or zero for "off") and the periods they give. The node reads
//! its parameters; what they mean and which values are refused is decided here, with errors that name the
//! parameter.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::scene::Cell;

/// The cell of a `(column, row)` pair of parameters: `(-1, -1)` is none; both must be `>= 0` otherwise.
pub fn cell_setting(column: i64, row: i64, name: &str) -> Result<Option<Cell>> {
    match (column, row) {
        (-1, -1) => Ok(None),
        (c, r) if c >= 0 && r >= 0 => Ok(Some(Cell {
            column: c as usize,
            row: r as usize,
        })),
        (column, row) => Err(Error::CellParameter {
            name: name.to_owned(),
            column,
            row,
        }),
    }
}

/// A count parameter that must be at least `min`.
pub fn count_setting(name: &str, value: i64, min: usize) -> Result<usize> {
    usize::try_from(value)
        .ok()
        .filter(|&v| v >= min)
        .ok_or_else(|| refused(name, value, format!(">= {min}")))
}

/// `Ok` for a finite value `> 0`.
pub fn positive_setting(name: &str, value: f64) -> Result<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(refused(name, value, "> 0".into()))
    }
}

/// `Ok` for a finite value `>= 0` (0 meaning "off").
pub fn non_negative_setting(name: &str, value: f64) -> Result<()> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(refused(name, value, ">= 0".into()))
    }
}

/// The period of a rate; a rate of 0 (off) gives 0.
pub fn period_of_rate(rate_hz: f64) -> f64 {
    if rate_hz > 0.0 {
        1.0 / rate_hz
    } else {
        0.0
    }
}

/// How often the watched files are looked at, kept within [10 ms, 1 h].
pub fn watch_period(secs: f64) -> Duration {
    Duration::from_secs_f64(secs.clamp(0.01, 3600.0))
}

/// The period of a marker rate, kept within [10 ms, 1 h] (a rate near 0 is taken as one per 1000 s).
pub fn marker_period_secs(rate_hz: f64) -> f64 {
    (1.0 / rate_hz.max(1e-3)).clamp(0.01, 3600.0)
}

/// A history depth parameter: at least 1.
pub fn history_depth(value: i64) -> usize {
    usize::try_from(value).unwrap_or(1).max(1)
}

fn refused(name: &str, value: impl std::fmt::Display, wanted: String) -> Error {
    Error::ParameterValue {
        name: name.to_owned(),
        value: value.to_string(),
        wanted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_both_numbers_or_both_none() {
        assert_eq!(cell_setting(-1, -1, "start").unwrap(), None);
        assert_eq!(
            cell_setting(2, 3, "start").unwrap(),
            Some(Cell { column: 2, row: 3 })
        );
        assert_eq!(
            cell_setting(3, -1, "start").unwrap_err().to_string(),
            "start (column 3, row -1): both must be >= 0, or both -1 for none"
        );
    }

    #[test]
    fn counts_and_rates_name_the_parameter() {
        assert_eq!(count_setting("n", 5, 2).unwrap(), 5);
        assert_eq!(
            count_setting("path_max_points", 1, 2).unwrap_err().to_string(),
            "parameter `path_max_points` is 1; it must be >= 2"
        );
        assert!(count_setting("n", -3, 1).is_err());
        assert!(positive_setting("rate_hz", 0.0).is_err());
        assert!(positive_setting("rate_hz", f64::NAN).is_err());
        assert!(positive_setting("rate_hz", 5.0).is_ok());
        assert!(non_negative_setting("slam_rate_hz", 0.0).is_ok());
        assert_eq!(
            non_negative_setting("slam_rate_hz", -1.0)
                .unwrap_err()
                .to_string(),
            "parameter `slam_rate_hz` is -1; it must be >= 0"
        );
    }

    #[test]
    fn periods_follow_rates_within_bounds() {
        assert_eq!(period_of_rate(5.0), 0.2);
        assert_eq!(period_of_rate(0.0), 0.0);
        assert_eq!(watch_period(0.0), Duration::from_millis(10));
        assert_eq!(watch_period(0.5), Duration::from_millis(500));
        assert_eq!(marker_period_secs(2.0), 0.5);
        assert_eq!(marker_period_secs(0.0), 1000.0);
        assert_eq!(history_depth(-4), 1);
        assert_eq!(history_depth(30), 30);
    }
}
