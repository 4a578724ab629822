//! What driving determines each parameter, and what the drive had of it: the advice `lockstep calibrate`
//! and the node give for every parameter that stayed nominal.
//!
//! The calibrator records, for each window it looks at, what [`determined`](crate::observe::determined)
//! and the delay search found ([`DriveSummary`]); [`needs`] turns that and the observability thresholds of
//! the [`Config`] into one sentence per parameter not estimated, e.g. `track width: needs turns in place of
//! at least 0.5 rad (29 deg) within one 3 s window, ... (no window turned more than 0.10 rad)`.

use std::fmt;

use crate::calibrator::types::Config;
use crate::delay::{DelayEstimate, DelayRefusal};
use crate::model::ModelParams;
use crate::observe::Determined;

/// The calibrated parameters, in the order of [`Accepted::std`](crate::Accepted::std).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Parameter {
    /// Wheel radius.
    WheelRadius,
    /// Track width.
    TrackWidth,
    /// Command-to-motion delay.
    Delay,
    /// Centripetal factor beta.
    CentripetalFactor,
}

impl Parameter {
    /// Every parameter, in the order of the `[radius, track width, delay, beta]` arrays.
    pub const ALL: [Parameter; 4] = [
        Parameter::WheelRadius,
        Parameter::TrackWidth,
        Parameter::Delay,
        Parameter::CentripetalFactor,
    ];

    /// Index in the `[radius, track width, delay, beta]` arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Its value in `params`.
    pub fn value(self, params: &ModelParams) -> f64 {
        match self {
            Parameter::WheelRadius => params.wheel_radius_m,
            Parameter::TrackWidth => params.track_width_m,
            Parameter::Delay => params.delay_secs,
            Parameter::CentripetalFactor => params.centripetal_factor,
        }
    }

    /// The parameter as people say it.
    pub fn name(self) -> &'static str {
        match self {
            Parameter::WheelRadius => "wheel radius",
            Parameter::TrackWidth => "track width",
            Parameter::Delay => "delay",
            Parameter::CentripetalFactor => "centripetal factor (beta)",
        }
    }
}

impl fmt::Display for Parameter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the windows looked at so far (since start or reset) had of the driving each parameter needs, and
/// how many updates failed validation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DriveSummary {
    /// Windows looked at (not waiting for data, no jump).
    pub windows: usize,
    /// Windows that determined each parameter (radius, track width, delay, beta).
    pub determined: [usize; 4],
    /// Most travel along the path in one window (m).
    pub max_distance_m: f64,
    /// Most rotation in one window (rad).
    pub max_rotation_rad: f64,
    /// Most rotation in place in one window (rad).
    pub max_in_place_rotation_rad: f64,
    /// Widest spread of the turning samples' |v * omega| in one window (m/s^2).
    pub max_level_gap: f64,
    /// Windows holding a command step whose effect falls inside them.
    pub windows_with_command_step: usize,
    /// Why the delay search failed on the last window holding a command step it could not time.
    pub last_delay_refusal: Option<DelayRefusal>,
    /// Updates that failed validation on held-out history.
    pub rejected: usize,
}

impl DriveSummary {
    /// Records one window: what it determined and what the delay search found.
    pub fn record(&mut self, d: &Determined, delay: &Result<DelayEstimate, DelayRefusal>) {
        self.windows += 1;
        let free = [d.free.radius, d.free.track_width, delay.is_ok(), d.free.beta];
        for (count, free) in self.determined.iter_mut().zip(free) {
            *count += usize::from(free);
        }
        self.max_distance_m = self.max_distance_m.max(d.distance_m);
        self.max_rotation_rad = self.max_rotation_rad.max(d.rotation_rad);
        self.max_in_place_rotation_rad = self.max_in_place_rotation_rad.max(d.in_place_rotation_rad);
        self.max_level_gap = self.max_level_gap.max(d.level_gap);
        match delay {
            Ok(_) => self.windows_with_command_step += 1,
            Err(e @ (DelayRefusal::Flat | DelayRefusal::AtBound { .. })) => {
                self.windows_with_command_step += 1;
                self.last_delay_refusal = Some(e.clone());
            }
            Err(DelayRefusal::NoCommandChange | DelayRefusal::TooFewSamples { .. }) => {}
        }
    }

    /// Whether no window determined any parameter: the drive cannot calibrate anything.
    pub fn nothing_determined(&self) -> bool {
        self.determined.iter().all(|&n| n == 0)
    }
}

/// A parameter that stayed nominal, and what would determine it.
#[derive(Debug, Clone, PartialEq)]
pub struct Need {
    /// The parameter.
    pub parameter: Parameter,
    /// Windows that determined it: 0 when the driving it needs never happened.
    pub windows_determined: usize,
    /// What would determine it and what the drive had of that (`needs ... (the farthest any 3 s window went
    /// was 0.15 m)`), or, when windows determined it, why no update of it was accepted.
    pub advice: String,
}

impl fmt::Display for Need {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.parameter, self.advice)
    }
}

/// The driving that determines `p` with the thresholds of `config`, as a user would say it
/// (`needs straight runs of at least 0.3 m within one 3 s window, i.e. 0.1 m/s or faster`).
pub fn driving_needed(p: Parameter, config: &Config) -> String {
    let o = &config.observability;
    let window = config.window_secs;
    let rotation = format!(
        "{} rad ({:.0} deg)",
        o.min_rotation_rad,
        o.min_rotation_rad.to_degrees()
    );
    match p {
        Parameter::WheelRadius => format!(
            "needs straight runs of at least {} m within one {window} s window, i.e. {:.2} m/s or faster",
            o.min_distance_m,
            o.min_distance_m / window
        ),
        Parameter::TrackWidth => format!(
            "needs turns in place of at least {rotation} within one {window} s window, or turns at two different |v*omega| levels as the centripetal factor needs"
        ),
        Parameter::Delay => format!(
            "needs command steps: changes of the commanded speed or turn rate (start, stop, speed up, slow down), each followed by at least {} s of driving within one {window} s window",
            config.max_delay_secs
        ),
        Parameter::CentripetalFactor => format!(
            "needs turns of at least {rotation} within one {window} s window, at two or more different |v*omega| levels over the drive (speed times turn rate at least {} m/s^2 apart), e.g. a slow arc and a fast one, or an arc and a turn in place",
            o.min_level_gap
        ),
    }
}

/// `1 window`, `2 windows`.
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// What the drive had of the driving `p` needs, from figures the windows gave (None before any window).
fn driving_seen(p: Parameter, config: &Config, s: &DriveSummary) -> Option<String> {
    if s.windows == 0 {
        return None;
    }
    let o = &config.observability;
    let turned_too_little = s.max_rotation_rad < o.min_rotation_rad;
    let no_turn = format!("no window turned more than {:.2} rad", s.max_rotation_rad);
    Some(match p {
        Parameter::WheelRadius => format!(
            "the farthest any {} s window went was {:.2} m",
            config.window_secs, s.max_distance_m
        ),
        Parameter::TrackWidth if turned_too_little => no_turn,
        Parameter::TrackWidth => format!(
            "windows turned up to {:.2} rad, but at most {:.2} rad of it in place, and the |v*omega| levels of one window were at most {:.3} m/s^2 apart",
            s.max_rotation_rad, s.max_in_place_rotation_rad, s.max_level_gap
        ),
        Parameter::CentripetalFactor if turned_too_little => no_turn,
        Parameter::CentripetalFactor => format!(
            "the |v*omega| levels of one window's turns were at most {:.3} m/s^2 apart",
            s.max_level_gap
        ),
        Parameter::Delay => match &s.last_delay_refusal {
            Some(why) if s.windows_with_command_step > 0 => {
                let why = match why {
                    DelayRefusal::AtBound { max_delay_secs } => format!(
                        "the best delay was the search bound {max_delay_secs} s (the delay may be longer)"
                    ),
                    _ => "every delay explained the wheel speeds alike".to_string(),
                };
                format!(
                    "{} held command steps, but the wheel speeds did not tell the delay: {why}",
                    count(s.windows_with_command_step, "window")
                )
            }
            _ => "no window held a command step".to_string(),
        },
    })
}

/// Every parameter not estimated (`std` 0, the order of [`Parameter::ALL`]), with what would determine it
/// under `config` and what the drive summarized in `drive` had of that. Both `lockstep calibrate` and the
/// node say this for the parameters that stayed nominal.
pub fn needs(config: &Config, drive: &DriveSummary, std: &[f64; 4]) -> Vec<Need> {
    Parameter::ALL
        .into_iter()
        .filter(|p| std[p.index()] <= 0.0)
        .map(|p| {
            let n = drive.determined[p.index()];
            let advice = if n > 0 {
                let why = if drive.rejected > 0 {
                    format!(
                        "{} failed validation on held-out data",
                        count(drive.rejected, "update")
                    )
                } else {
                    "the value in use explained the drive".to_string()
                };
                format!(
                    "{} determined it, but no update with it was accepted ({why})",
                    count(n, "window")
                )
            } else {
                match driving_seen(p, config, drive) {
                    Some(seen) => format!("{} ({seen})", driving_needed(p, config)),
                    None => driving_needed(p, config),
                }
            };
            Need {
                parameter: p,
                windows_determined: n,
                advice,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::Free;

    fn window(free: Free, distance_m: f64, rotation_rad: f64) -> Determined {
        Determined {
            free,
            fit: free,
            refused: Vec::new(),
            distance_m,
            rotation_rad,
            in_place_rotation_rad: 0.0,
            level_gap: 0.0,
            turn_levels: Vec::new(),
        }
    }

    fn text(needs: &[Need]) -> String {
        needs.iter().map(|n| format!("{n}\n")).collect()
    }

    #[test]
    fn before_any_window_every_parameter_needs_its_driving_with_the_configured_thresholds() {
        let mut config = Config::default();
        config.observability.min_distance_m = 0.6;
        config.observability.min_rotation_rad = 1.0;
        config.observability.min_level_gap = 0.08;
        config.max_delay_secs = 0.4;
        let needs = needs(&config, &DriveSummary::default(), &[0.0; 4]);
        let all = text(&needs);
        assert_eq!(needs.len(), 4, "{all}");
        assert!(needs.iter().all(|n| n.windows_determined == 0));
        let [radius, track, delay, beta] = [0, 1, 2, 3].map(|i| needs[i].to_string());
        assert_eq!(
            radius,
            "wheel radius: needs straight runs of at least 0.6 m within one 3 s window, i.e. 0.20 m/s or faster"
        );
        assert!(
            track.starts_with(
                "track width: needs turns in place of at least 1 rad (57 deg) within one 3 s window"
            ),
            "{track}"
        );
        assert!(
            delay.starts_with("delay: needs command steps: changes of the commanded speed")
                && delay.contains("at least 0.4 s of driving"),
            "{delay}"
        );
        assert!(
            beta.starts_with("centripetal factor (beta): needs turns of at least 1 rad")
                && beta.contains("at least 0.08 m/s^2 apart"),
            "{beta}"
        );
        // No figures before a window was looked at.
        assert!(
            !all.contains("window went") && !all.contains("no window"),
            "{all}"
        );
    }

    #[test]
    fn a_straight_drive_leaves_track_and_beta_with_what_the_drive_had() {
        let config = Config::default();
        let mut drive = DriveSummary::default();
        let straight = Free {
            radius: true,
            ..Free::default()
        };
        drive.record(&window(straight, 1.2, 0.04), &Err(DelayRefusal::NoCommandChange));
        drive.record(&window(straight, 0.9, 0.10), &Err(DelayRefusal::Flat));
        assert!(!drive.nothing_determined());
        assert_eq!(drive.determined, [2, 0, 0, 0]);
        // The radius was accepted; the others stayed nominal.
        let needs = needs(&config, &drive, &[1e-5, 0.0, 0.0, 0.0]);
        let all = text(&needs);
        let names: Vec<_> = needs.iter().map(|n| n.parameter).collect();
        assert_eq!(
            names,
            [
                Parameter::TrackWidth,
                Parameter::Delay,
                Parameter::CentripetalFactor
            ],
            "{all}"
        );
        assert!(
            needs[0].advice.contains("turns in place")
                && needs[0].advice.ends_with("(no window turned more than 0.10 rad)"),
            "{all}"
        );
        assert!(
            needs[1].advice.contains(
                "(1 window held command steps, but the wheel speeds did not tell the delay: every delay explained the wheel speeds alike)"
            ),
            "{all}"
        );
        assert!(
            needs[2].advice.ends_with("(no window turned more than 0.10 rad)"),
            "{all}"
        );
    }

    #[test]
    fn standing_still_names_the_farthest_window_and_no_command_step() {
        let config = Config::default();
        let mut drive = DriveSummary::default();
        drive.record(
            &window(Free::default(), 0.12, 0.01),
            &Err(DelayRefusal::NoCommandChange),
        );
        assert!(drive.nothing_determined());
        let needs = needs(&config, &drive, &[0.0; 4]);
        assert!(
            needs[0]
                .advice
                .ends_with("(the farthest any 3 s window went was 0.12 m)"),
            "{}",
            needs[0]
        );
        assert!(
            needs[2].advice.ends_with("(no window held a command step)"),
            "{}",
            needs[2]
        );
    }

    #[test]
    fn a_parameter_determined_but_not_accepted_says_why_instead_of_asking_for_driving() {
        let config = Config::default();
        let mut drive = DriveSummary::default();
        let all_free = Free {
            radius: true,
            track_width: true,
            beta: true,
        };
        drive.record(&window(all_free, 2.0, 1.5), &Err(DelayRefusal::NoCommandChange));
        let needs_now = needs(&config, &drive, &[0.0; 4]);
        assert_eq!(
            needs_now[0].to_string(),
            "wheel radius: 1 window determined it, but no update with it was accepted (the value in use explained the drive)"
        );
        assert!(needs_now[2].advice.starts_with("needs command steps"));
        drive.rejected = 3;
        let needs_now = needs(&config, &drive, &[0.0; 4]);
        assert!(
            needs_now[1]
                .advice
                .ends_with("(3 updates failed validation on held-out data)"),
            "{}",
            needs_now[1]
        );
    }
}
