//! `lockstep launch <file> [name:=value ...]`, or `lockstep launch <package> <file>` as `ros2 launch` takes it.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{bail, Context};
use lockstep_intercept::env::{library_for_this_program, Mode};

use crate::{
    parse_arguments, plan_file, run, say, sigterm_timeout, LaunchOptions, Outcome, PackageIndex, Plan,
    RunOptions,
};

/// When to colour the output prefixes.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

/// Arguments of `lockstep launch`.
#[derive(clap::Args, Debug)]
pub struct LaunchArgs {
    /// The launch file (ROS 2 XML format), or a package whose share/<package>/launch holds the file named next.
    pub file: String,
    /// The file name when the first argument is a package, then launch arguments as name:=value.
    pub arguments: Vec<String>,
    /// Print the launch arguments (name, default, description) and exit.
    #[arg(short = 's', long)]
    pub show_args: bool,
    /// Print every process's command line and exit without starting anything.
    #[arg(short = 'p', long = "print")]
    pub print: bool,
    /// Colour the output prefixes.
    #[arg(long, value_enum, default_value = "auto")]
    pub color: Color,
    /// Seconds between SIGINT and SIGTERM (and between SIGTERM and SIGKILL) when stopping, 0 to 3600.
    #[arg(long, default_value_t = 5.0)]
    pub sigterm_timeout: f64,
    /// Where the processes' log files go [default: $ROS_LOG_DIR or ~/.ros/log, in a folder per launch].
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
    /// Record every node's data flow with the rcl interceptor (as `lockstep trace` does): dependency
    /// headers, wiring on /lockstep/topology/<node>, event log on /lockstep/events/<node>; for every <node>
    /// and <executable> (programs that never start rcl, and Lockstep's own recorder, player, replay and view,
    /// are left alone by the interceptor).
    #[arg(long, conflicts_with = "trace_replay")]
    pub trace: bool,
    /// Like --trace, in replay mode: the interceptor paces every node through its recorded events.
    #[arg(long)]
    pub trace_replay: bool,
}

impl LaunchArgs {
    /// The interceptor's mode for every node, if `--trace` or `--trace-replay` asks for it.
    pub fn trace_mode(&self) -> Option<Mode> {
        if self.trace_replay {
            Some(Mode::Replay)
        } else if self.trace {
            Some(Mode::Record)
        } else {
            None
        }
    }
}

/// Runs `lockstep launch`.
pub fn run_launch(args: LaunchArgs) -> anyhow::Result<()> {
    let sigterm_timeout = sigterm_timeout(args.sigterm_timeout)?;
    let index = PackageIndex::from_environment();
    let mut rest = args.arguments.clone();
    let file = launch_file(&args.file, &mut rest, &index)?;
    let options = LaunchOptions {
        arguments: parse_arguments(&rest)?,
        index,
    };
    let mut plan = plan_file(&file, &options)?;
    if args.show_args {
        print_arguments(&plan);
        return Ok(());
    }
    for name in &plan.undeclared_overrides {
        say(
            "WARNING",
            &format!(
                "argument {name}:=... is declared by no <arg> of {} or its includes",
                file.display()
            ),
        );
    }
    prepare(&mut plan, args.trace_mode())?;
    if args.print {
        print_processes(&plan);
        return Ok(());
    }
    if plan.processes.is_empty() {
        bail!("{}: starts no process", file.display());
    }
    let color = match args.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stdout().is_terminal(),
    };
    let log_dir = args.log_dir.unwrap_or_else(default_log_dir);
    let outcome = run(
        &plan,
        &RunOptions {
            color,
            sigterm_timeout,
            log_dir,
        },
    )?;
    report(&outcome)
}

/// Makes the plan run as this `lockstep` would: a launch prefix's `lockstep` is this binary, and with
/// `--trace` (`mode`) every node gets the interceptor; an error (before anything starts) when its library
/// is not found.
fn prepare(plan: &mut Plan, mode: Option<Mode>) -> anyhow::Result<()> {
    if let Ok(exe) = std::env::current_exe() {
        plan.use_lockstep_binary(&exe);
    }
    if let Some(mode) = mode {
        let flag = match mode {
            Mode::Record => "--trace",
            Mode::Replay => "--trace-replay",
        };
        let library = library_for_this_program().context(flag)?;
        if library.to_str().is_none() {
            bail!(
                "{flag}: the interceptor's library path {} is not UTF-8",
                library.display()
            );
        }
        plan.intercept(&library, mode);
    }
    Ok(())
}

/// The launch file: `first` itself, or, when it is not a file and the next argument is no
/// `name:=value`, the file of that name in `share/<first>/launch` of the installed package `first`
/// (that name is then taken out of `rest`).
fn launch_file(first: &str, rest: &mut Vec<String>, index: &PackageIndex) -> anyhow::Result<PathBuf> {
    Ok(
        if !rest.is_empty() && !rest[0].contains(":=") && !std::path::Path::new(first).is_file() {
            let name = rest.remove(0);
            let prefix = index.package_prefix(first).with_context(|| {
                format!("package {first} is not installed in any prefix of AMENT_PREFIX_PATH")
            })?;
            prefix.join("share").join(first).join("launch").join(name)
        } else {
            PathBuf::from(first)
        },
    )
}

/// `--show-args`: each launch argument with its description and default.
fn print_arguments(plan: &Plan) {
    println!("Arguments (pass arguments as '<name>:=<value>'):");
    for arg in &plan.arguments {
        let default = arg
            .default
            .as_deref()
            .map(|d| format!("(default: '{d}')"))
            .unwrap_or_else(|| "(required)".into());
        println!(
            "\n    '{}':\n        {}\n        {default}",
            arg.name,
            arg.description.as_deref().unwrap_or("no description given")
        );
    }
}

/// `--print`: each process's label, what it waits for, its environment changes and command line.
fn print_processes(plan: &Plan) {
    for process in &plan.processes {
        println!("# {} ({})", process.label, process.at);
        for wait in &process.waits {
            println!("#   waits for {wait}");
        }
        for (name, value) in &process.env {
            match value {
                Some(value) => println!("#   env {name}={value}"),
                None => println!("#   env -u {name}"),
            }
        }
        println!("{}", process.display_argv().join(" "));
    }
}

/// Says why the launch ended; fails naming every process that failed.
fn report(outcome: &Outcome) -> anyhow::Result<()> {
    let failed: Vec<String> = outcome
        .ended
        .iter()
        .filter(|e| e.failed())
        .map(|e| match e.code {
            Some(code) => format!("{} (exit code {code})", e.label),
            None => format!("{} (signal {})", e.label, e.signal.unwrap_or_default()),
        })
        .collect();
    say("INFO", &format!("done: {}", outcome.reason));
    if let Some(unmet) = &outcome.unmet {
        bail!("a wait failed: {unmet}");
    }
    if !failed.is_empty() {
        bail!(
            "{} failed: {}",
            if failed.len() == 1 {
                "a process"
            } else {
                "processes"
            },
            failed.join(", ")
        );
    }
    Ok(())
}

fn default_log_dir() -> PathBuf {
    let base = std::env::var_os("ROS_LOG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("ROS_HOME").map(|home| PathBuf::from(home).join("log")))
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".ros/log")))
        .unwrap_or_else(std::env::temp_dir);
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    base.join(format!("lockstep_launch_{secs}_{}", std::process::id()))
}
