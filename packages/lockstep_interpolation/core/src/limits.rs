//! Per-axis limits, read from a joint-limits YAML in ros2_control's layout:
//!
//! ```yaml
//! joint_limits:            # at the top, or under <node>: ros__parameters:
//!   shoulder:
//!     has_velocity_limits: true
//!     max_velocity: 2.0        # rad/s (m/s for a prismatic joint)
//!     has_acceleration_limits: true
//!     max_acceleration: 5.0
//!     has_jerk_limits: true    # optional
//!     max_jerk: 50.0
//! ```
//!
//! The player needs a velocity and an acceleration limit for every joint it plays; a jerk limit is optional.

use std::collections::BTreeMap;
use std::path::Path;

use serde_norway::Value;

/// One axis's limits (SI units: rad or m, per second, squared, cubed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AxisLimits {
    pub max_velocity: f64,
    pub max_acceleration: f64,
    /// `None`: no jerk limit.
    pub max_jerk: Option<f64>,
}

/// Limits per joint name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JointLimits {
    pub joints: BTreeMap<String, AxisLimits>,
}

/// A limits file that cannot be used, with the path of the key at fault.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LimitsError {
    #[error("{file}: {reason}")]
    File { file: String, reason: String },
    #[error("{file}: {key}: {reason}")]
    Key {
        file: String,
        key: String,
        reason: String,
    },
    #[error("joint `{joint}` has no limits in {file}: the player needs max_velocity and max_acceleration for every joint it plays")]
    Missing { joint: String, file: String },
}

/// The largest joint-limits file read (bytes).
const MAX_LIMITS_BYTES: u64 = 16 << 20;

impl JointLimits {
    /// Read a joint-limits YAML file.
    pub fn read(path: &Path) -> Result<Self, LimitsError> {
        let text = crate::file::read_regular(path, MAX_LIMITS_BYTES).map_err(|reason| LimitsError::File {
            file: path.display().to_string(),
            reason,
        })?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// Parse the YAML text; `file` names it in messages.
    pub fn parse(file: &str, text: &str) -> Result<Self, LimitsError> {
        let root: Value = serde_norway::from_str(text).map_err(|e| LimitsError::File {
            file: file.to_owned(),
            reason: e.to_string(),
        })?;
        let (prefix, table) = find_joint_limits(&root).ok_or_else(|| LimitsError::File {
            file: file.to_owned(),
            reason: "no `joint_limits` map (at the top or under <node>: ros__parameters:)".into(),
        })?;
        let Value::Mapping(table) = table else {
            return Err(LimitsError::Key {
                file: file.to_owned(),
                key: prefix,
                reason: "must be a map of joint names".into(),
            });
        };
        let mut joints = BTreeMap::new();
        for (name, entry) in table {
            let Some(name) = name.as_str() else {
                return Err(LimitsError::Key {
                    file: file.to_owned(),
                    key: prefix.clone(),
                    reason: format!("joint name {name:?} is not a string"),
                });
            };
            let key = format!("{prefix}.{name}");
            joints.insert(name.to_owned(), axis(file, &key, entry)?);
        }
        Ok(Self { joints })
    }

    /// The limits of `joints` in that order; every joint must have them.
    pub fn for_joints(&self, joints: &[String], file: &str) -> Result<Vec<AxisLimits>, LimitsError> {
        joints
            .iter()
            .map(|j| {
                self.joints.get(j).copied().ok_or_else(|| LimitsError::Missing {
                    joint: j.clone(),
                    file: file.to_owned(),
                })
            })
            .collect()
    }
}

fn find_joint_limits(root: &Value) -> Option<(String, &Value)> {
    if let Some(v) = root.get("joint_limits") {
        return Some(("joint_limits".into(), v));
    }
    let Value::Mapping(map) = root else { return None };
    map.iter().find_map(|(node, body)| {
        let v = body.get("ros__parameters")?.get("joint_limits")?;
        Some((
            format!("{}.ros__parameters.joint_limits", node.as_str().unwrap_or("?")),
            v,
        ))
    })
}

fn axis(file: &str, key: &str, entry: &Value) -> Result<AxisLimits, LimitsError> {
    let err = |field: &str, reason: String| LimitsError::Key {
        file: file.to_owned(),
        key: format!("{key}.{field}"),
        reason,
    };
    let flag = |field: &str| -> Result<Option<bool>, LimitsError> {
        match entry.get(field) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| err(field, format!("{v:?} is not true or false"))),
        }
    };
    let number = |field: &str| -> Result<Option<f64>, LimitsError> {
        match entry.get(field) {
            None => Ok(None),
            Some(v) => {
                let x = v
                    .as_f64()
                    .ok_or_else(|| err(field, format!("{v:?} is not a number")))?;
                if x.is_finite() && x > 0.0 {
                    Ok(Some(x))
                } else {
                    Err(err(field, format!("{x} must be a positive finite number")))
                }
            }
        }
    };
    // Like ros2_control: a max_* value counts when its has_*_limits flag is true; the player needs velocity
    // and acceleration limits, so their flags must not be false.
    let required = |flag_name: &str, field: &str| -> Result<f64, LimitsError> {
        if flag(flag_name)? == Some(false) {
            return Err(err(flag_name, "is false, but the player needs this limit".into()));
        }
        number(field)?.ok_or_else(|| err(field, "missing".into()))
    };
    let max_velocity = required("has_velocity_limits", "max_velocity")?;
    let max_acceleration = required("has_acceleration_limits", "max_acceleration")?;
    let max_jerk = match flag("has_jerk_limits")? {
        Some(false) => None,
        Some(true) => Some(number("max_jerk")?.ok_or_else(|| err("max_jerk", "missing".into()))?),
        None => number("max_jerk")?,
    };
    Ok(AxisLimits {
        max_velocity,
        max_acceleration,
        max_jerk,
    })
}

/// The first axis with a jerk limit, if any.
pub fn jerk_limited(limits: &[AxisLimits]) -> Option<usize> {
    limits.iter().position(|l| l.max_jerk.is_some())
}

/// Which limits bound the time of a change of speed (t_min) and s_max: the acceleration limits, and the jerk
/// limits when an axis has one. Velocity limits bound s_max too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// No axis has a jerk limit.
    Acceleration,
    /// At least one axis has a jerk limit.
    AccelerationJerk,
}

impl Bound {
    pub fn of(limits: &[AxisLimits]) -> Self {
        if jerk_limited(limits).is_some() {
            Self::AccelerationJerk
        } else {
            Self::Acceleration
        }
    }
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Acceleration => "acceleration limit",
            Self::AccelerationJerk => "acceleration and jerk limits",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_ros2_control_layout() {
        let text = "arm:\n  ros__parameters:\n    joint_limits:\n      a:\n        has_velocity_limits: true\n        max_velocity: 2.0\n        has_acceleration_limits: true\n        max_acceleration: 5\n        has_jerk_limits: false\n        max_jerk: 0.0\n      b: {max_velocity: 1.0, max_acceleration: 2.0, has_jerk_limits: true, max_jerk: 30.0}\n";
        let l = JointLimits::parse("l.yaml", text).unwrap();
        assert_eq!(
            l.joints["a"],
            AxisLimits {
                max_velocity: 2.0,
                max_acceleration: 5.0,
                max_jerk: None
            }
        );
        assert_eq!(l.joints["b"].max_jerk, Some(30.0));
        let e = l.for_joints(&["a".into(), "c".into()], "l.yaml").unwrap_err();
        assert!(
            e.to_string().starts_with("joint `c` has no limits in l.yaml"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_the_key() {
        let cases = [
            (
                "joint_limits:\n  a: {max_velocity: -1, max_acceleration: 1}\n",
                "l.yaml: joint_limits.a.max_velocity: -1 must be",
            ),
            (
                "joint_limits:\n  a: {max_velocity: 1}\n",
                "l.yaml: joint_limits.a.max_acceleration: missing",
            ),
            (
                "joint_limits:\n  a: {max_velocity: 1, max_acceleration: x}\n",
                "l.yaml: joint_limits.a.max_acceleration: String",
            ),
            (
                "joint_limits:\n  a: {has_velocity_limits: false, max_velocity: 1, max_acceleration: 1}\n",
                "l.yaml: joint_limits.a.has_velocity_limits: is false",
            ),
            ("limits: {}\n", "l.yaml: no `joint_limits` map"),
        ];
        for (text, expected) in cases {
            let e = JointLimits::parse("l.yaml", text).unwrap_err().to_string();
            assert!(e.starts_with(expected), "{e:?} does not start with {expected:?}");
        }
    }
}
