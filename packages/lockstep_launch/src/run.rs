//! Running a [`Plan`]: every process in its own process group, its output prefixed with its label (coloured
//! on a terminal) and copied into a log file; SIGINT/SIGTERM to the launcher is forwarded to every process
//! (a second one escalates to SIGTERM), and when a process marked `on_exit="shutdown"` ends, the rest are
//! stopped the same way: SIGINT, then SIGTERM after `sigterm_timeout`, then SIGKILL. A process with waits
//! (`<?lockstep wait-for?>`) starts once they are met ([`crate::gate`]); a wait that fails stops everything.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{LaunchError, Result};
use crate::gate::{Gates, Progress, State, Watch};
use crate::limits::MAX_SIGTERM_TIMEOUT_SECS;
use crate::plan::{inline_params_yaml, Output, Plan, ProcessSpec};

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Colour the output prefixes.
    pub color: bool,
    /// After SIGINT, how long before SIGTERM (and after SIGTERM, before SIGKILL).
    pub sigterm_timeout: Duration,
    /// Where each process's log file goes (created).
    pub log_dir: PathBuf,
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    pub label: String,
    /// Exit code, or `None` when a signal ended it.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// Whether it ended after the launcher asked it to stop.
    pub asked_to_stop: bool,
}

impl Ended {
    /// Ended by itself with a failure (not after the launcher stopped it).
    pub fn failed(&self) -> bool {
        !self.asked_to_stop && self.code != Some(0)
    }
}

/// Why the launch ended and how each process did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub reason: String,
    pub ended: Vec<Ended>,
    /// A wait that failed (its process ended, or its timeout passed, without the line): the launch failed
    /// even if every process that ran ended well.
    pub unmet: Option<String>,
}

static SIGNALS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

fn install_signal_handlers() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only touches an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

const COLORS: [&str; 6] = [
    "\x1b[32m", "\x1b[34m", "\x1b[35m", "\x1b[36m", "\x1b[33m", "\x1b[91m",
];

struct Running {
    /// Its place in the plan.
    index: usize,
    started: Instant,
    label: String,
    child: Child,
    readers: Vec<JoinHandle<()>>,
    shutdown_on_exit: bool,
    ended: Option<Ended>,
}

/// `--sigterm-timeout` as a duration: finite seconds in `[0, MAX_SIGTERM_TIMEOUT_SECS]`.
pub fn sigterm_timeout(secs: f64) -> Result<Duration> {
    if !(secs.is_finite() && (0.0..=MAX_SIGTERM_TIMEOUT_SECS).contains(&secs)) {
        return Err(LaunchError::BadOption {
            option: "--sigterm-timeout",
            value: number_text(secs),
            expected: format!("seconds in [0, {MAX_SIGTERM_TIMEOUT_SECS}]"),
        });
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A number as typed, short: `1e300`, not three hundred digits.
fn number_text(value: f64) -> String {
    if value != 0.0 && value.is_finite() && !(1e-3..1e6).contains(&value.abs()) {
        format!("{value:e}")
    } else {
        value.to_string()
    }
}

/// Launcher messages, like `ros2 launch`'s `[INFO] [launch]: ...`.
pub fn say(level: &str, message: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "[{level}] [launch]: {message}");
}

/// Starts every process of `plan` (each once its waits are met) and waits until they have all ended.
pub fn run(plan: &Plan, options: &RunOptions) -> Result<Outcome> {
    let gates = Gates::new(plan)?;
    std::fs::create_dir_all(&options.log_dir).map_err(|source| LaunchError::Io {
        path: options.log_dir.clone(),
        source,
    })?;
    say(
        "INFO",
        &format!("All log files can be found below {}", options.log_dir.display()),
    );
    install_signal_handlers();
    let launch = Launch {
        plan,
        options,
        params_dir: options.log_dir.join("params"),
        gates,
        running: Vec::new(),
        pending: (0..plan.processes.len()).collect(),
        reason: None,
        unmet: None,
    };
    Ok(launch.supervise())
}

/// One launch while it runs.
struct Launch<'a> {
    plan: &'a Plan,
    options: &'a RunOptions,
    params_dir: PathBuf,
    gates: Gates,
    running: Vec<Running>,
    /// The plan's indices of the processes not started yet, in order.
    pending: Vec<usize>,
    /// Why everything is being stopped, once it is.
    reason: Option<String>,
    unmet: Option<String>,
}

impl Launch<'_> {
    /// Starts, in order, every process not started yet whose waits are met. A wait that can no longer be met,
    /// or a process that cannot start, gives the reason to stop everything; nothing more starts then.
    fn start_ready(&mut self) {
        let mut i = 0;
        while i < self.pending.len() && self.reason.is_none() {
            let index = self.pending[i];
            let running = &self.running;
            let progress = |p: usize| progress(running, p);
            match self.gates.state(index, progress, &mut |note| say("INFO", &note)) {
                State::Waiting => i += 1,
                State::Failed(message) => {
                    say("ERROR", &message);
                    self.reason = Some(message.clone());
                    self.unmet = Some(message);
                }
                State::Met => {
                    self.pending.remove(i);
                    let spec = &self.plan.processes[index];
                    let watch = self.gates.watch(index);
                    match start(spec, index, self.options, &self.params_dir, watch) {
                        Ok(process) => self.running.push(process),
                        Err(err) => {
                            say("ERROR", &err.to_string());
                            self.reason = Some(format!("{} could not start", spec.label));
                        }
                    }
                }
            }
        }
    }
}

/// How far process `index` of the plan has come: a process still to start has not.
fn progress(running: &[Running], index: usize) -> Progress {
    match running.iter().find(|r| r.index == index) {
        Some(r) => Progress {
            started: Some(r.started),
            finished: r.ended.is_some() && r.readers.iter().all(JoinHandle::is_finished),
        },
        None => Progress {
            started: None,
            finished: false,
        },
    }
}

fn start(
    spec: &ProcessSpec,
    index: usize,
    options: &RunOptions,
    params_dir: &Path,
    watch: Arc<Watch>,
) -> Result<Running> {
    let mut written = 0;
    let argv = spec
        .argv(&mut |values| {
            std::fs::create_dir_all(params_dir)?;
            written += 1;
            let path = params_dir.join(format!("{}_{written}.yaml", spec.label));
            std::fs::write(&path, inline_params_yaml(values))?;
            Ok(path)
        })
        .map_err(|source| LaunchError::Io {
            path: params_dir.to_path_buf(),
            source,
        })?;
    let mut child = command(spec, &argv)
        .spawn()
        .map_err(|source| LaunchError::Spawn {
            label: spec.label.clone(),
            program: argv[0].clone(),
            source,
        })?;
    say(
        "INFO",
        &format!(
            "{}: process started with pid [{}]: {}",
            spec.label,
            child.id(),
            spec.display_argv().join(" ")
        ),
    );
    let log_path = options.log_dir.join(format!("{}.log", spec.label));
    let log = Arc::new(Mutex::new(File::create(&log_path).map_err(|source| {
        LaunchError::Io {
            path: log_path.clone(),
            source,
        }
    })?));
    let prefix = if options.color {
        format!("{}[{}]\x1b[0m ", COLORS[index % COLORS.len()], spec.label)
    } else {
        format!("[{}] ", spec.label)
    };
    let copy = |to_stderr: bool| Copy {
        prefix: prefix.clone(),
        // stderr, where ROS nodes log, always reaches the screen; stdout unless output="log"
        screen: to_stderr || spec.output != Output::Log,
        to_stderr,
        log: Arc::clone(&log),
        watch: Arc::clone(&watch),
    };
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        readers.push(relay(stdout, copy(false)));
    }
    if let Some(stderr) = child.stderr.take() {
        readers.push(relay(stderr, copy(true)));
    }
    Ok(Running {
        index,
        started: Instant::now(),
        label: spec.label.clone(),
        child,
        readers,
        shutdown_on_exit: spec.shutdown_on_exit,
        ended: None,
    })
}

/// The command that starts `spec` with the command line `argv`: its own process group, its environment
/// changes, stdout and stderr piped to the launcher, and SIGTERM when the launcher dies.
fn command(spec: &ProcessSpec, argv: &[String]) -> Command {
    let mut command = Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("PYTHONUNBUFFERED", "1")
        .process_group(0);
    for (name, value) in &spec.env {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    // SAFETY: prctl is async-signal-safe; it asks the kernel to SIGTERM the child when the launcher dies.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    command
}

/// Where the lines of one pipe of a process go.
struct Copy {
    prefix: String,
    /// Shown on the launcher's stdout (or, `to_stderr`, its stderr), after the prefix.
    screen: bool,
    to_stderr: bool,
    log: Arc<Mutex<File>>,
    /// What later processes wait to see in the output.
    watch: Arc<Watch>,
}

/// Copies a pipe line by line to the log file and, if `screen`, to stdout (or stderr) with the prefix;
/// each line is shown to the watch, if anything waits for this output.
fn relay(pipe: impl Read + Send + 'static, copy: Copy) -> JoinHandle<()> {
    let Copy {
        prefix,
        screen,
        to_stderr,
        log,
        watch,
    } = copy;
    std::thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if let Ok(mut file) = log.lock() {
                let _ = file.write_all(&line);
            }
            if !screen && watch.is_empty() {
                continue;
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            if screen && to_stderr {
                let _ = writeln!(std::io::stderr().lock(), "{prefix}{text}");
            } else if screen {
                let _ = writeln!(std::io::stdout().lock(), "{prefix}{text}");
            }
            watch.line(text);
        }
    })
}

fn signal_group(process: &Running, signal: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(process.child.id()) {
        // SAFETY: kill has no memory effects; a negative pid signals the child's process group.
        unsafe {
            libc::kill(-pid, signal);
        }
    }
}

fn describe(status: ExitStatus) -> (Option<i32>, Option<i32>) {
    (status.code(), status.signal())
}

/// How far stopping has gone, and when the last step was taken.
struct Stopping {
    /// 0 running, 1 SIGINT sent, 2 SIGTERM sent, 3 SIGKILL sent.
    stage: u8,
    /// When `stage` was last raised (the next step comes `sigterm_timeout` later).
    stage_at: Instant,
    /// Signals received so far by this launcher.
    signals_seen: usize,
}

impl Stopping {
    /// Moves to the next stage now.
    fn advance_to(&mut self, stage: u8) {
        self.stage = stage;
        self.stage_at = Instant::now();
    }
}

/// Sends `sig` to the process group of every process still running.
fn signal_running(running: &[Running], sig: libc::c_int) {
    for process in running.iter().filter(|p| p.ended.is_none()) {
        signal_group(process, sig);
    }
}

impl Launch<'_> {
    /// Starts the processes as their waits allow and waits for every process to end, stopping them all
    /// (SIGINT, then SIGTERM, then SIGKILL, each `sigterm_timeout` after the last) once there is a `reason`:
    /// a signal to the launcher, a process with `on_exit="shutdown"` that ended, or a wait that failed.
    fn supervise(mut self) -> Outcome {
        let mut stop = Stopping {
            stage: 0,
            stage_at: Instant::now(),
            signals_seen: 0,
        };
        loop {
            on_signals(&self.running, &mut stop, &mut self.reason);
            self.start_ready();
            if stop.stage == 0 && self.reason.is_some() {
                signal_running(&self.running, libc::SIGINT);
                stop.advance_to(1);
            }
            for process in self.running.iter_mut() {
                if process.ended.is_none() {
                    reap(process, stop.stage > 0, &mut self.reason);
                }
            }
            let to_start = self.reason.is_none() && !self.pending.is_empty();
            if !to_start && self.running.iter().all(|p| p.ended.is_some()) {
                break;
            }
            if stop.stage > 0 && stop.stage_at.elapsed() >= self.options.sigterm_timeout && stop.stage < 3 {
                escalate(&self.running, self.options, &mut stop);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut ended = Vec::new();
        for mut process in self.running {
            for reader in process.readers.drain(..) {
                let _ = reader.join();
            }
            if let Some(e) = process.ended {
                ended.push(e);
            }
        }
        Outcome {
            reason: self.reason.unwrap_or_else(|| "every process ended".into()),
            ended,
            unmet: self.unmet,
        }
    }
}

/// A first signal to the launcher starts stopping (SIGINT); a second one while SIGINT is out sends
/// SIGTERM at once.
fn on_signals(running: &[Running], stop: &mut Stopping, reason: &mut Option<String>) {
    let signals = SIGNALS.load(Ordering::SeqCst);
    if signals > stop.signals_seen {
        stop.signals_seen = signals;
        if stop.stage == 0 {
            say("WARNING", "signal received: stopping every process (SIGINT)");
            reason.get_or_insert_with(|| "stopped by a signal".into());
        } else if stop.stage == 1 {
            say("WARNING", "second signal: sending SIGTERM");
            signal_running(running, libc::SIGTERM);
            stop.advance_to(2);
        }
    }
}

/// Records how `process` ended, if it has, and says so; one with `on_exit="shutdown"` gives the
/// `reason` to stop the others (unless there is one already).
fn reap(process: &mut Running, asked_to_stop: bool, reason: &mut Option<String>) {
    let Ok(Some(status)) = process.child.try_wait() else {
        return;
    };
    let (code, signal) = describe(status);
    let ended = Ended {
        label: process.label.clone(),
        code,
        signal,
        asked_to_stop,
    };
    let how = match (code, signal) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "unknown status".into(),
    };
    if ended.failed() {
        say(
            "ERROR",
            &format!(
                "{}: process has died [pid {}, {how}]",
                process.label,
                process.child.id()
            ),
        );
    } else {
        say(
            "INFO",
            &format!(
                "{}: process has finished cleanly [pid {}, {how}]",
                process.label,
                process.child.id()
            ),
        );
    }
    if process.shutdown_on_exit && reason.is_none() {
        *reason = Some(format!(
            "{} ended ({how}) and has on_exit=\"shutdown\"",
            process.label
        ));
        say(
            "INFO",
            &format!(
                "{}: shutting everything down",
                reason.as_deref().unwrap_or_default()
            ),
        );
    }
    process.ended = Some(ended);
}

/// The processes outlived the last stop signal by `sigterm_timeout`: names them, shows where each is
/// stuck (thread states, backtrace when one can be taken) and sends the next, harder signal.
fn escalate(running: &[Running], options: &RunOptions, stop: &mut Stopping) {
    let (sig, name) = if stop.stage == 1 {
        (libc::SIGTERM, "SIGTERM")
    } else {
        (libc::SIGKILL, "SIGKILL")
    };
    let left: Vec<&str> = running
        .iter()
        .filter(|p| p.ended.is_none())
        .map(|p| p.label.as_str())
        .collect();
    say(
        "WARNING",
        &format!(
            "still running after {:?}: {}; sending {name}",
            options.sigterm_timeout,
            left.join(", ")
        ),
    );
    for process in running.iter().filter(|p| p.ended.is_none()) {
        let pid = process.child.id();
        let threads = crate::stuck::thread_states(pid);
        say(
            "WARNING",
            &format!(
                "{} (pid {pid}) before {name}:\n  {}",
                process.label,
                threads.join("\n  ")
            ),
        );
        if let Some(bt) = crate::stuck::backtrace(pid) {
            say(
                "WARNING",
                &format!("{} (pid {pid}) backtrace:\n{bt}", process.label),
            );
        }
    }
    signal_running(running, sig);
    stop.advance_to(stop.stage + 1);
}
