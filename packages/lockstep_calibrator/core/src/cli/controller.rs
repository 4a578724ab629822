//! `diff_drive_controller.yaml`: the calibration as ros2_controllers' `diff_drive_controller` takes it, as
//! multipliers of the wheel separation and of each side's wheel radius. They scale the controller's own
//! `wheel_separation` and `wheel_radius`, which must therefore be the nominal values the recorded odometry
//! was computed with (`--nominal-track-m`, `--nominal-radius-m`).

use anyhow::{bail, Result};

use super::report::Report;

/// The file's name in the output directory.
pub(crate) const FILE: &str = "diff_drive_controller.yaml";

/// What is wrong with a `--controller-name`: it must be a node name, optionally with its namespace
/// (`/robot/diff_drive_controller`).
fn problem(name: &str) -> Option<String> {
    let part_ok = |p: &str| {
        !p.is_empty()
            && !p.starts_with(|c: char| c.is_ascii_digit())
            && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let ok = name.strip_prefix('/').unwrap_or(name).split('/').all(part_ok);
    (!ok).then(|| {
        format!(
            "`{name}` is not a ROS 2 node name: letters, digits and `_`, not starting with a digit, with `/` before namespaces (e.g. /robot/diff_drive_controller)"
        )
    })
}

/// Checks a `--controller-name` (for a library caller; the parser checked it already); the error is one
/// line.
pub(crate) fn check_name(name: &str) -> Result<()> {
    match problem(name) {
        Some(p) => bail!("--controller-name {p}"),
        None => Ok(()),
    }
}

/// A clap value parser for `--controller-name`.
pub(crate) fn name_arg(text: &str) -> std::result::Result<String, String> {
    problem(text).map_or_else(|| Ok(text.to_string()), Err)
}

/// A multiplier with the decimals a ROS 2 double needs (never an integer-looking `1`).
fn multiplier(value: f64) -> String {
    format!("{value:.10}")
}

/// One parameter's line, the comments aligned.
fn entry(key: &str, value: f64, comment: &str) -> String {
    let key_value = format!("{key}: {}", multiplier(value));
    format!("    {key_value:<44} # {comment}\n")
}

/// `diff_drive_controller.yaml` with `name` as the node's key.
pub(crate) fn yaml(r: &Report, name: &str) -> String {
    let p = &r.params;
    let n = &r.nominal;
    // Kept: never estimated, and so exactly the nominal value.
    let kept = |std: f64, multiplier: f64| std <= 0.0 && multiplier == 1.0;
    let mut out = String::new();
    out.push_str("# diff_drive_controller (ros2_controllers) multipliers calibrated by `lockstep calibrate` (lockstep_calibrator).\n");
    out.push_str(&format!("# bag: {}\n", r.bag.display()));
    out.push_str("# A ROS 2 parameter file: load it for the controller after the controller's own parameter file (a later\n");
    out.push_str(
        "# parameter file overrides an earlier one), or copy the three multipliers into that file.\n",
    );
    out.push_str(&format!(
        "# The multipliers scale the nominal values the recorded odometry was computed with: wheel_radius {} m\n",
        n.wheel_radius_m
    ));
    out.push_str(&format!(
        "# (--nominal-radius-m) and wheel_separation {} m (--nominal-track-m). wheel_radius and wheel_separation in\n",
        n.track_width_m
    ));
    out.push_str("# the controller's own parameter file must be exactly these nominal values, or the multipliers scale the wrong numbers.\n");
    out.push_str("# The controller then uses wheel_separation * wheel_separation_multiplier and wheel_radius * <side>_wheel_radius_multiplier.\n");
    if r.nothing_estimated() {
        out.push_str("# Nothing could be estimated: these are the nominal values (see calibration.yaml).\n");
    }
    out.push_str(&format!("{name}:\n  ros__parameters:\n"));
    let separation = p.track_width_m / n.track_width_m;
    let comment = if kept(r.std[1], separation) {
        "track width not estimated: kept 1.0 (see calibration.yaml)".to_string()
    } else {
        format!(
            "calibrated track width {:.6} m / nominal {} m",
            p.track_width_m, n.track_width_m
        )
    };
    out.push_str(&entry("wheel_separation_multiplier", separation, &comment));
    let equal = if p.wheel_radius_asymmetry == 0.0 {
        " (left and right taken as equal: their difference is not estimated)"
    } else {
        ""
    };
    for (side, radius) in [("left", p.left_radius_m()), ("right", p.right_radius_m())] {
        let m = radius / n.wheel_radius_m;
        let comment = if kept(r.std[0], m) {
            "wheel radius not estimated: kept 1.0 (see calibration.yaml)".to_string()
        } else {
            format!(
                "calibrated {side} wheel radius {radius:.6} m / nominal {} m{equal}",
                n.wheel_radius_m
            )
        };
        out.push_str(&entry(&format!("{side}_wheel_radius_multiplier"), m, &comment));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_with_and_without_a_namespace() {
        for ok in ["diff_drive_controller", "/robot/diff_drive_controller", "base_2"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "/", "a b", "2base", "robot//base", "base/", "*", "a:b"] {
            let e = check_name(bad).unwrap_err().to_string();
            assert!(
                e.contains("is not a ROS 2 node name") && !e.contains('\n'),
                "{bad}: {e}"
            );
        }
        assert_eq!(multiplier(1.0), "1.0000000000");
    }
}
