//! `lockstep trace [--replay] -- <command> [args]`: runs any ROS 2 program with the interceptor preloaded.
//! It runs in `lockstep` itself (no ROS library): it finds the interceptor's library, sets `LD_PRELOAD` and
//! `LOCKSTEP_INTERCEPT`, and executes the program in its own place, so the program's signals, standard
//! streams and exit status are the program's.

use std::convert::Infallible;
use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::Command;

use anyhow::anyhow;

use crate::env::{self, Mode};
use crate::introspection::{Introspection, CLIENT_VAR, SERVICE_VAR};

/// One line for `lockstep --help`.
pub const ABOUT: &str = "Record any ROS 2 node's data flow without changing it: its dependency headers, its \
wiring and its event log (or, with --replay, pace it through its recorded events)";

/// `lockstep trace --help`.
pub const LONG_ABOUT: &str = "Record any ROS 2 node's data flow without changing it.

Runs the command (a node's executable, `ros2 run ...`, `python3 my_node.py`) with Lockstep's rcl \
interceptor loaded into it (LD_PRELOAD). The node needs no Lockstep code and no rebuild, C++ or Python: the \
interceptor sees what each callback took and what it published, and publishes beside the node's own topics
  - a dependency header for each message the node publishes, naming the inputs it was computed from \
(inferred from what the callback that published it took),
  - the node's wiring on /lockstep/topology/<node>,
  - its event log (messages taken, timer calls, publishes, service calls) on /lockstep/events/<node>,
which a recording (`lockstep bag record`) keeps with the data.

With --replay the node does not run freely: its subscriptions, timers, services and clients run only what \
`lockstep replay` grants on <node>/lockstep/grant, one recorded event at a time (a message taken, a timer \
fired, a request or response taken, at its recorded ROS time), and the interceptor answers on \
<node>/lockstep/done with what the callback published: a lock-step replay of an unmodified node. Spin the \
node with a single-threaded executor.

The command replaces this process: signals (Ctrl-C) and the exit status are the node's own. Only the node \
is traced: once the program initialises rcl, the interceptor removes itself from LD_PRELOAD and \
LOCKSTEP_INTERCEPT in that process, so the programs the node starts run without it.

The interceptor is liblockstep_intercept_preload.so, found through $LOCKSTEP_INTERCEPT_LIB, else beside \
the `lockstep` binary, else in ../lib from it; `cargo build -p lockstep_intercept_preload` builds it.";

/// The usage line: the command goes after `--`, so that its own options stay its own.
pub const USAGE: &str = "lockstep trace [--replay] [--service-introspection STATE] -- <COMMAND> [ARGS]...";

/// Examples at the end of `lockstep trace --help`.
pub const EXAMPLES: &str = "Examples:
  lockstep trace -- ros2 run demo_nodes_cpp talker
  lockstep trace -- python3 my_node.py
  lockstep trace --service-introspection contents -- ros2 run demo_nodes_cpp add_two_ints_server
  lockstep trace --replay -- ros2 run my_package my_node --ros-args -r __node:=m1
In a launch file: <node pkg=\"demo_nodes_cpp\" exec=\"talker\" launch-prefix=\"lockstep trace --\"/>, \
or `lockstep launch FILE --trace` for every node.";

/// Arguments of `lockstep trace`.
#[derive(clap::Args, Debug, Clone)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES, override_usage = USAGE)]
pub struct TraceArgs {
    /// Replay mode: pace the node through its recorded events instead of recording it.
    #[arg(long)]
    pub replay: bool,
    /// Make the node's services publish their calls on <service>/_service_event (what `lockstep bag record
    /// --services` records), as the node's own configure_introspection would: metadata (who called, when)
    /// or contents (with the request and response).
    #[arg(long, value_enum, value_name = "STATE")]
    pub service_introspection: Option<Introspection>,
    /// The same for the node's service clients.
    #[arg(long, value_enum, value_name = "STATE")]
    pub client_introspection: Option<Introspection>,
    /// The program to run and its arguments (after `--`), as you would type them without `lockstep trace`.
    #[arg(
        value_name = "COMMAND",
        required = true,
        num_args = 1..,
        trailing_var_arg = true
    )]
    pub command: Vec<OsString>,
}

impl TraceArgs {
    /// What the interceptor does in the program.
    pub fn mode(&self) -> Mode {
        if self.replay {
            Mode::Replay
        } else {
            Mode::Record
        }
    }
}

/// Runs `lockstep trace`: returns only when the command could not be started (otherwise this process is
/// the command now).
pub fn run(args: TraceArgs) -> anyhow::Result<Infallible> {
    let library = env::library_for_this_program()?;
    let current = std::env::var_os(env::PRELOAD_VAR);
    let mut command = traced_command(&library, args.mode(), &args.command, current.as_ref())?;
    for (var, state) in [
        (SERVICE_VAR, args.service_introspection),
        (CLIENT_VAR, args.client_introspection),
    ] {
        if let Some(state) = state {
            command.env(var, state.as_str());
        }
    }
    let err = command.exec();
    Err(exec_error(command.get_program(), &err))
}

/// Why `program` could not be started, in one line that names it.
pub fn exec_error(program: &OsStr, err: &std::io::Error) -> anyhow::Error {
    let program = program.to_string_lossy();
    match err.kind() {
        std::io::ErrorKind::NotFound if program.contains('/') => anyhow!("{program}: no such file"),
        std::io::ErrorKind::NotFound => anyhow!("command not found: {program} (it is not on PATH)"),
        std::io::ErrorKind::PermissionDenied => anyhow!("{program}: not executable ({err})"),
        _ => anyhow!("cannot run {program}: {err}"),
    }
}

/// The command line `command` (program and arguments) with the interceptor in `mode` from `library`,
/// whose `LD_PRELOAD` would otherwise be `current`.
pub fn traced_command(
    library: &Path,
    mode: Mode,
    command: &[OsString],
    current: Option<&OsString>,
) -> anyhow::Result<Command> {
    let Some((program, args)) = command.split_first() else {
        return Err(anyhow!(
            "no command to run: lockstep trace -- <command> [args...]"
        ));
    };
    if program.is_empty() {
        return Err(anyhow!("the command is an empty word"));
    }
    let mut traced = Command::new(program);
    traced.args(args);
    for (name, value) in env::variables(library, mode, current) {
        traced.env(name, value);
    }
    Ok(traced)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        trace: TraceArgs,
    }

    fn parse(line: &str) -> Result<TraceArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("trace").chain(line.split_whitespace())).map(|c| c.trace)
    }

    fn command_env(command: &Command) -> Vec<(&OsStr, Option<&OsStr>)> {
        command.get_envs().collect()
    }

    fn words(args: &TraceArgs) -> Vec<&str> {
        args.command.iter().map(|a| a.to_str().unwrap()).collect()
    }

    #[test]
    fn the_command_is_everything_after_the_dashes() {
        let args = parse("-- ros2 run demo_nodes_cpp talker --ros-args -r __node:=t").unwrap();
        assert_eq!(args.mode(), Mode::Record);
        assert_eq!(
            words(&args),
            [
                "ros2",
                "run",
                "demo_nodes_cpp",
                "talker",
                "--ros-args",
                "-r",
                "__node:=t"
            ]
        );
        let args = parse("--replay -- python3 my_node.py --replay").unwrap();
        assert_eq!(args.mode(), Mode::Replay);
        assert_eq!(words(&args), ["python3", "my_node.py", "--replay"]);
        // Without `--`, the command's own flags are still the command's.
        let args = parse("python3 my_node.py --help").unwrap();
        assert_eq!(args.mode(), Mode::Record);
        assert_eq!(words(&args), ["python3", "my_node.py", "--help"]);
    }

    #[test]
    fn a_command_is_required() {
        assert!(parse("").is_err());
        assert!(parse("--replay --").is_err());
    }

    #[test]
    fn the_command_gets_the_interceptor_first_and_the_mode() {
        let lib = Path::new("/opt/lockstep/lib/liblockstep_intercept_preload.so");
        let command: Vec<OsString> = ["ros2", "run", "demo_nodes_cpp", "talker"]
            .iter()
            .map(OsString::from)
            .collect();
        let current = OsString::from("/usr/lib/libasan.so");
        let traced = traced_command(lib, Mode::Record, &command, Some(&current)).unwrap();
        assert_eq!(traced.get_program(), "ros2");
        let args: Vec<&OsStr> = traced.get_args().collect();
        assert_eq!(args, ["run", "demo_nodes_cpp", "talker"]);
        let mut env = command_env(&traced);
        env.sort();
        assert_eq!(
            env,
            [
                (
                    OsStr::new("LD_PRELOAD"),
                    Some(OsStr::new(
                        "/opt/lockstep/lib/liblockstep_intercept_preload.so:/usr/lib/libasan.so"
                    ))
                ),
                (OsStr::new("LOCKSTEP_INTERCEPT"), Some(OsStr::new("record"))),
            ]
        );
        let replay = traced_command(lib, Mode::Replay, &command, None).unwrap();
        assert!(
            command_env(&replay).contains(&(OsStr::new("LOCKSTEP_INTERCEPT"), Some(OsStr::new("replay"))))
        );
        assert!(traced_command(lib, Mode::Record, &[], None).is_err());
        assert!(traced_command(lib, Mode::Record, &[OsString::new()], None).is_err());
    }

    #[test]
    fn a_command_that_cannot_start_is_named() {
        let not_found = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert_eq!(
            exec_error(OsStr::new("talkr"), &not_found).to_string(),
            "command not found: talkr (it is not on PATH)"
        );
        assert_eq!(
            exec_error(OsStr::new("./my_node.py"), &not_found).to_string(),
            "./my_node.py: no such file"
        );
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert!(exec_error(OsStr::new("./x"), &denied)
            .to_string()
            .starts_with("./x: not executable"));
    }
}
