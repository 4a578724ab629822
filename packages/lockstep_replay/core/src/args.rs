//! The command-line arguments of `lockstep replay` (feature `cli`), apart from what they do (the node crate
//! runs the replay with them): here so that `lockstep replay --help` works in a shell without ROS.

use std::path::PathBuf;

use lockstep_ranges::{int_arg, Int};

use crate::lockstep::MissingUpstream;

/// A step's answer may take up to an hour: longer waits are a typo, and a waiting time must stay within what
/// the clock can add to the current instant.
const STEP_TIMEOUT_MS: Int = Int::closed(1, 3_600_000, "ms");
const DISCOVERY_MS: Int = Int::closed(0, 3_600_000, "ms");
const REPEAT: Int = Int::closed(1, 100, "runs");

/// Arguments of `lockstep replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The recording (a bag written by lockstep_recorder).
    pub bag: PathBuf,
    /// Directory of the new bag holding the simulated outputs and their headers (must not exist).
    #[arg(long, short)]
    pub output: PathBuf,
    /// `all` (every frame), or a module name: its frames and the frames they depend on.
    #[arg(long, default_value = "all")]
    pub frames: String,
    /// A frame whose back-trace reaches outside the recording is an error instead of skipped.
    #[arg(long)]
    pub strict: bool,
    /// Run the example pipeline's modules in this process (no DDS).
    #[arg(long)]
    pub in_process: bool,
    /// A parameter of an in-process module, `<module>.<name>=<value>` (repeatable; live modules take
    /// their own `--ros-args -p`).
    #[arg(long = "param", short = 'p')]
    pub params: Vec<String>,
    /// Longest wait for a live module's answer to one step, milliseconds (1 to 3,600,000).
    #[arg(long, default_value_t = 2000, value_parser = int_arg::<u64>(STEP_TIMEOUT_MS))]
    pub timeout_ms: u64,
    /// Longest wait for an unmodified node (running under `lockstep trace --replay`) to finish one recorded
    /// event it is granted (a message taken, a timer fired), milliseconds (1 to 3,600,000); the error names the
    /// node and the event.
    #[arg(long, default_value_t = 10000, value_parser = int_arg::<u64>(STEP_TIMEOUT_MS))]
    pub event_timeout_ms: u64,
    /// How long to look for the live modules, milliseconds (the wait ends as soon as every module looked
    /// for answers; 0 to 3,600,000).
    #[arg(long, default_value_t = 10000, value_parser = int_arg::<u64>(DISCOVERY_MS))]
    pub discovery_ms: u64,
    /// The modules expected live, comma-separated (default: every module of the recording; those not found
    /// within --discovery-ms are fed from the recording). Modules not listed are fed from the recording
    /// without waiting for them.
    #[arg(long, value_delimiter = ',')]
    pub modules: Vec<String>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// What a frame gets when the output it names of a live upstream module was not simulated (the upstream
    /// frame precedes the recording, or was skipped): `recorded` (the recorded message, as a backup input;
    /// counted per channel in the report), `skip` (skip the frame and what depends on it) or `error`.
    #[arg(long, value_enum, default_value_t = MissingUpstreamArg::Recorded)]
    pub missing_upstream: MissingUpstreamArg,
    /// A live module the recording does not have, `NAME:TRIGGER_CHANNEL` (repeatable): it is stepped once
    /// per message on the trigger channel (recorded, or simulated where a live module writes it), with the
    /// latest message at or before that time on each other channel it reads.
    #[arg(long = "new-module", value_parser = parse_new_module)]
    pub new_modules: Vec<(String, String)>,
    /// Replay unmodified nodes that ran callbacks on several threads when recorded (a multi-threaded
    /// executor) anyway: their callbacks' order on other threads is not reproduced, and the events they
    /// cannot reproduce stop the replay with the reason.
    #[arg(long)]
    pub allow_nondeterministic: bool,
    /// Replay N times through the same live modules and name every module whose outputs differ between runs
    /// (1 to 100; the output bag is the first run's). The modules keep running between runs: state carried
    /// over from one run into the next shows as a difference too.
    #[arg(long, default_value_t = 1, value_parser = int_arg::<usize>(REPEAT))]
    pub repeat: usize,
    /// Recorded module parameters: compare, fail on a difference, or set them (see `parameters`).
    #[command(flatten)]
    pub parameters: ParameterArgs,
}

/// `--missing-upstream`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MissingUpstreamArg {
    /// The recorded message, as a backup input.
    Recorded,
    /// Skip the frame.
    Skip,
    /// Stop with an error.
    Error,
}

impl From<MissingUpstreamArg> for MissingUpstream {
    fn from(arg: MissingUpstreamArg) -> Self {
        match arg {
            MissingUpstreamArg::Recorded => MissingUpstream::Recorded,
            MissingUpstreamArg::Skip => MissingUpstream::Skip,
            MissingUpstreamArg::Error => MissingUpstream::Error,
        }
    }
}

/// `NAME:TRIGGER_CHANNEL` of `--new-module`.
pub fn parse_new_module(s: &str) -> Result<(String, String), String> {
    match s.split_once(':') {
        Some((name, trigger)) if !name.is_empty() && trigger.starts_with('/') => {
            Ok((name.to_owned(), trigger.to_owned()))
        }
        _ => Err(format!(
            "`{s}`: expected NAME:TRIGGER_CHANNEL, e.g. motion_controller_v2:/odom (the channel fully qualified)"
        )),
    }
}

/// The flags of `lockstep replay` about recorded parameters.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ParameterArgs {
    /// A live module's parameter that differs from the recording (or a live module whose parameters the
    /// recording lacks) is an error, before any frame is replayed, instead of a warning. Never compared:
    /// use_sim_time, lockstep_step_mode, start_type_description_service, wait_for_subscribers, qos_overrides.*.
    #[arg(long)]
    pub strict_parameters: bool,
    /// Set the recorded values of the differing parameters on the live modules (through
    /// `<node>/set_parameters`) before the first step; a refused set is an error naming the module, the
    /// parameter and the node's reason.
    #[arg(long)]
    pub apply_recorded_parameters: bool,
    /// Leave a parameter out of the comparison: `<name>` (of every module) or `<module>/<name>`
    /// (repeatable).
    #[arg(long = "ignore-parameter", value_name = "NAME")]
    pub ignore_parameters: Vec<String>,
}

impl ParameterArgs {
    /// The first flag given that needs live modules over DDS (the in-process modules have no parameter
    /// services to read or set), so that `--in-process` refuses it rather than ignoring it.
    pub fn in_process_conflict(&self) -> Option<&'static str> {
        if self.strict_parameters {
            Some("--strict-parameters")
        } else if self.apply_recorded_parameters {
            Some("--apply-recorded-parameters")
        } else if !self.ignore_parameters.is_empty() {
            Some("--ignore-parameter")
        } else {
            None
        }
    }
}
