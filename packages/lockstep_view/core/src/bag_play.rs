//! How a bag is played beside the view (`lockstep view --bag`): the arguments of the `lockstep bag play`
//! child, with `/clock` and paused unless asked to play at once.

use std::path::PathBuf;

/// How the bag is played.
#[derive(Debug, Clone)]
pub struct BagOptions {
    pub bag: PathBuf,
    /// Start playing at once (otherwise paused until `/lockstep_bag_player/resume`).
    pub play: bool,
    pub rate: f64,
    pub looping: bool,
}

impl BagOptions {
    /// The arguments of `lockstep bag play` for this bag; an error for a rate that is not a positive number.
    pub fn play_args(&self) -> Result<Vec<std::ffi::OsString>, String> {
        if !(self.rate.is_finite() && self.rate > 0.0) {
            return Err(format!("--rate must be > 0, not {}", self.rate));
        }
        let mut args: Vec<std::ffi::OsString> = ["bag", "play", "--quiet", "--clock", "100", "--rate"]
            .iter()
            .map(Into::into)
            .collect();
        args.push(self.rate.to_string().into());
        args.push(self.bag.clone().into_os_string());
        if !self.play {
            args.push("--start-paused".into());
        }
        if self.looping {
            args.push("--loop".into());
        }
        Ok(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_player_starts_paused_unless_asked_and_loops_when_asked() {
        let mut options = BagOptions {
            bag: "run.mcap".into(),
            play: false,
            rate: 2.0,
            looping: true,
        };
        let args = options.play_args().unwrap();
        let text: Vec<&str> = args.iter().filter_map(|a| a.to_str()).collect();
        assert_eq!(
            text,
            [
                "bag",
                "play",
                "--quiet",
                "--clock",
                "100",
                "--rate",
                "2",
                "run.mcap",
                "--start-paused",
                "--loop"
            ]
        );
        options.rate = f64::NAN;
        assert_eq!(options.play_args().unwrap_err(), "--rate must be > 0, not NaN");
    }
}
