//! Running one case: a ROS domain of its own, the variant's launch file starting the modules in step mode,
//! `lockstep replay` stepping them through the recording, the modules stopped, the outputs compared with the
//! baseline and asserted. Everything is written into a fresh folder that becomes `cases/<case>` in one
//! rename, so a case is either reported whole or not at all (a killed runner leaves only a `.partial`
//! folder, which a retry does not read).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lockstep_bag::BagReader;
use lockstep_replay::lockstep::{differences_figure_against, ChannelEvaluation, Evaluation, Recording};

use crate::compare::Comparison;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::plan::Case;
use crate::replayed::Findings;
use crate::report::{channel_reports, CaseReport};
use crate::suite::{Baseline, Suite};

/// Payload bytes a recording keeps in memory before reading the rest from the bag when needed.
const IN_MEMORY_BYTES: u64 = 256 << 20;
/// How long the modules get to stop after SIGINT before they are killed.
const STOP_GRACE: Duration = Duration::from_secs(20);
/// A case's processes find only peers on this machine: the same domain id on another host of the network
/// (a robot, a colleague's suite) is never heard.
const LOCAL_DISCOVERY: &str = "LOCALHOST";
/// How often a running process is looked at.
const POLL: Duration = Duration::from_millis(20);

/// The output bag of a case in an earlier run's folder.
pub fn baseline_bag(run: &Path, case: &str) -> PathBuf {
    run.join("cases").join(case).join("replay")
}

/// Runs `case` of `suite` with the `lockstep` executable `lockstep`, into `cases_dir/<case>`; returns its
/// report (one that says why, when the case could not run). `salt` spreads the domain ids of cases started
/// together.
pub fn run_case(
    suite: &Suite,
    case: &Case,
    lockstep: &Path,
    cases_dir: &Path,
    salt: u32,
) -> Result<CaseReport> {
    let started = Instant::now();
    let attempt = cases_dir.join(format!(".{}.{}-{salt}.partial", case.id, std::process::id()));
    std::fs::create_dir_all(&attempt).map_err(|e| Error::io(&attempt, e))?;
    let baseline = match &suite.baseline {
        Baseline::Recording => "recording".into(),
        Baseline::Run(dir) => baseline_bag(dir, &case.id).display().to_string(),
    };
    let mut report = CaseReport::for_case(case, baseline);
    if let Err(e) = run_in(suite, case, lockstep, &attempt, salt, &mut report) {
        report.error = Some(lockstep_bag::error_chain(&e));
        report.passed = false;
    }
    report.timings.total_s = started.elapsed().as_secs_f64();
    report.write(&attempt.join("report.json"))?;
    let done = cases_dir.join(&case.id);
    match std::fs::rename(&attempt, &done) {
        Ok(()) => Ok(report),
        // Another attempt of the same case (a retried Ray task) finished first: its report stands.
        Err(_) if done.join("report.json").is_file() => {
            let _ = std::fs::remove_dir_all(&attempt);
            CaseReport::read(&done.join("report.json"))
        }
        Err(e) => Err(Error::io(&done, e)),
    }
}

fn open_recording(path: &Path) -> Result<Recording> {
    // The reasons mostly name the bag already: said once.
    let prefix = format!("{}: ", path.display());
    let fail = |reason: String| Error::Recording {
        path: path.to_owned(),
        reason: reason
            .strip_prefix(&prefix)
            .map_or_else(|| reason.clone(), str::to_owned),
    };
    let reader = BagReader::open(path).map_err(|e| fail(e.to_string()))?;
    let damage = reader.damage_note();
    Recording::open_indexed(reader, IN_MEMORY_BYTES).map_err(|e| fail(format!("{e}{damage}")))
}

/// Runs the case in `dir`: starts its modules on a domain of their own, replays the recording
/// through them, stops them, then compares and asserts what they output (see [`judge_replay`]).
fn run_in(
    suite: &Suite,
    case: &Case,
    lockstep: &Path,
    dir: &Path,
    salt: u32,
    report: &mut CaseReport,
) -> Result<()> {
    let baseline_run = baseline_run_bag(suite, case)?;
    // Read once, before anything starts: it names the modules to expect and is the default baseline.
    let recording = open_recording(&case.recording)?;
    let live = live_modules(suite, &recording);
    let recording = baseline_run.is_none().then_some(recording);
    let domain = Domain::take(salt)?;
    let mut modules = Launched::start(lockstep, case, dir, domain.id)?;
    let replay_started = Instant::now();
    let place = Place {
        lockstep,
        dir,
        domain: domain.id,
        live: &live,
    };
    let replayed = replay(suite, case, &place, &mut modules, 1);
    report.timings.replay_s = replay_started.elapsed().as_secs_f64();
    let stop_started = Instant::now();
    let stopped = modules.stop();
    report.timings.stop_s = stop_started.elapsed().as_secs_f64();
    let findings = replayed?;
    report.note_findings(&findings);
    if let Some(warning) = stopped {
        report.warnings.push(warning);
    }
    let nondeterministic = repeat_runs(suite, case, &place)?;
    drop(domain);
    let compare_started = Instant::now();
    let new = open_recording(&dir.join("replay"))?;
    let baseline = match (recording, &baseline_run) {
        (Some(recording), _) => recording,
        (None, Some(bag)) => open_recording(bag)?,
        (None, None) => unreachable!("the recording is kept when it is the baseline"),
    };
    judge_replay(suite, &baseline, &new, dir, report)?;
    report.judge_skipped(&findings, suite.replay.fail_on_skipped);
    if !nondeterministic.is_empty() {
        report.passed = false;
        report.failures.extend(nondeterministic);
    }
    report.timings.compare_s = compare_started.elapsed().as_secs_f64();
    Ok(())
}

/// The output bag of this case in the baseline run, when the suite compares with one; an error when
/// that run has none.
fn baseline_run_bag(suite: &Suite, case: &Case) -> Result<Option<PathBuf>> {
    Ok(match &suite.baseline {
        Baseline::Recording => None,
        Baseline::Run(run) => {
            let bag = baseline_bag(run, &case.id);
            if !bag.exists() {
                return Err(Error::Case(format!(
                    "baseline: {} has no output of case {} (was it run there?)",
                    run.display(),
                    case.id
                )));
            }
            Some(bag)
        }
    })
}

/// The modules run live: those the suite names, else every module of the recording's topology.
fn live_modules(suite: &Suite, recording: &Recording) -> Vec<String> {
    match &suite.live {
        Some(names) => names.clone(),
        None => {
            let names: BTreeSet<String> = recording
                .topology
                .components
                .iter()
                .map(|c| c.module_name.clone())
                .collect();
            names.into_iter().collect()
        }
    }
}

/// Compares the replay's output `new` with `baseline`, checks the suite's assertions on it, plots
/// the differences into `dir`, and fills in the verdict of `report`.
fn judge_replay(
    suite: &Suite,
    baseline: &Recording,
    new: &Recording,
    dir: &Path,
    report: &mut CaseReport,
) -> Result<()> {
    let comparison = crate::compare::compare(baseline, new, &suite.expect);
    if comparison.is_empty() {
        return Err(Error::Case(
            "the replay produced no output to compare (no module computed a frame)".into(),
        ));
    }
    let (channels, mut failures) = channel_reports(&comparison);
    for channel in suite.expect.keys() {
        if !comparison.contains_key(channel) {
            report.warnings.push(format!(
                "expect: {channel}: no module outputs it in this recording"
            ));
        }
    }
    let violations = crate::asserts::violations(&suite.rules, new)?;
    if !violations.is_empty() {
        let shown: Vec<&str> = violations.iter().take(3).map(String::as_str).collect();
        failures.push(format!(
            "{} assertion violations: {}",
            violations.len(),
            shown.join(", ")
        ));
    }
    plot_differences(suite, &comparison, dir)?;
    report.passed = failures.is_empty();
    report.channels = channels;
    report.failures = failures;
    report.violations = violations;
    Ok(())
}

/// `differences.png` in `dir`: each compared channel's differences over time.
fn plot_differences(suite: &Suite, comparison: &Comparison, dir: &Path) -> Result<()> {
    let against = match suite.baseline {
        Baseline::Recording => "the recording",
        Baseline::Run(_) => "the baseline run",
    };
    let evaluation = Evaluation {
        channels: comparison
            .iter()
            .map(|(c, r)| {
                let e = ChannelEvaluation {
                    simulated: r.compared,
                    exact: r.identical,
                    over_time: r.over_time.clone(),
                    ..ChannelEvaluation::default()
                };
                (c.clone(), e)
            })
            .collect(),
        modules: Default::default(),
    };
    let plot = dir.join("differences.png");
    differences_figure_against(&evaluation, against)
        .write_png(&plot)
        .map_err(|e| Error::Case(format!("{}: cannot plot: {e}", plot.display())))?;
    Ok(())
}

/// A child that dies with this process (SIGTERM when the runner dies, however it dies).
fn spawn(mut command: Command, log: &Path, own_group: bool) -> Result<Child> {
    let file = File::create(log).map_err(|e| Error::io(log, e))?;
    let err = file.try_clone().map_err(|e| Error::io(log, e))?;
    command.stdin(Stdio::null()).stdout(file).stderr(err);
    if own_group {
        command.process_group(0);
    }
    // SAFETY: prctl, sigemptyset, sigprocmask and signal are async-signal-safe. The child gets SIGTERM when
    // this process dies, and starts with every signal deliverable and SIGINT/SIGTERM at their defaults: a
    // Ray worker runs the case runner with signals blocked, and blocked or ignored signals survive exec, so
    // the launcher and the nodes would never see the SIGINT that stops them.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        });
    }
    let program = command.get_program().to_string_lossy().into_owned();
    command
        .spawn()
        .map_err(|e| Error::Case(format!("cannot start {program}: {e}")))
}

/// The last non-empty line of a log file (what a one-line error quotes).
fn last_line(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no output)")
        .trim()
        .chars()
        .take(400)
        .collect()
}

/// The modules under test, started by the variant's launch file.
struct Launched {
    child: Option<Child>,
    /// Its log as the case's folder will hold it (the folder is renamed when the case is done).
    log: String,
}

impl Launched {
    fn start(lockstep: &Path, case: &Case, dir: &Path, domain: u32) -> Result<Launched> {
        let log = dir.join("launch.log");
        let mut command = Command::new(lockstep);
        command
            .arg("launch")
            .arg(&case.variant.launch)
            .args(case.variant.arguments.iter().map(|(k, v)| format!("{k}:={v}")))
            .args(case.variant.unmodified.then_some("--trace-replay"))
            .arg("--color=never")
            .arg("--log-dir")
            .arg(dir.join("logs"))
            .env("ROS_DOMAIN_ID", domain.to_string())
            .env("ROS_AUTOMATIC_DISCOVERY_RANGE", LOCAL_DISCOVERY);
        let child = spawn(command, &log, true)?;
        Ok(Launched {
            child: Some(child),
            log: format!("cases/{}/launch.log", case.id),
        })
    }

    /// `Some(exit status)` when the launch has ended.
    fn ended(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    /// SIGINT (the launcher stops its nodes), then SIGKILL after a grace period; a warning when it had to.
    fn stop(&mut self) -> Option<String> {
        let mut child = self.child.take()?;
        if child.try_wait().ok().flatten().is_some() {
            return None;
        }
        let pid = libc::pid_t::try_from(child.id()).unwrap_or(0);
        // SAFETY: kill has no memory effects.
        unsafe { libc::kill(pid, libc::SIGINT) };
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if child.try_wait().ok().flatten().is_some() {
                return None;
            }
            std::thread::sleep(POLL);
        }
        // SAFETY: as above; the negative pid is the launcher's process group.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        let _ = child.wait();
        Some(format!(
            "the modules did not stop within {} s of SIGINT and were killed (see {})",
            STOP_GRACE.as_secs(),
            self.log
        ))
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The folder name of run `run`'s replay: `replay`, then `replay_run2`, ...
fn run_name(run: u64) -> String {
    if run == 1 {
        "replay".to_owned()
    } else {
        format!("replay_run{run}")
    }
}

/// The `lockstep replay` command of run `run` of `case`.
fn replay_command(
    suite: &Suite,
    case: &Case,
    lockstep: &Path,
    dir: &Path,
    domain: u32,
    live: &[String],
    run: u64,
) -> Command {
    let mut command = Command::new(lockstep);
    command
        .arg("replay")
        .arg(&case.recording)
        .arg("--output")
        .arg(dir.join(run_name(run)))
        .arg("--quiet")
        .arg("--frames")
        .arg(&suite.replay.frames)
        .arg("--timeout-ms")
        .arg(suite.replay.timeout_ms.to_string())
        .arg("--discovery-ms")
        .arg(suite.replay.discovery_ms.to_string())
        .env("ROS_DOMAIN_ID", domain.to_string())
        .env("ROS_AUTOMATIC_DISCOVERY_RANGE", LOCAL_DISCOVERY);
    if !live.is_empty() {
        command.arg("--modules").arg(live.join(","));
    }
    command
}

/// Run `command` (a replay) until it ends, or fail when the launch file ends first.
fn wait_for_replay(
    command: Command,
    log: &Path,
    dir: &Path,
    modules: &mut Launched,
) -> Result<std::process::ExitStatus> {
    let mut child = spawn(command, log, false)?;
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| Error::Case(format!("lockstep replay: {e}")))?
        {
            return Ok(status);
        }
        if let Some(status) = modules.ended() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Case(format!(
                "the launch file ended ({status}) before the replay did: {} (see {})",
                last_line(&dir.join("launch.log")),
                modules.log
            )));
        }
        std::thread::sleep(POLL);
    }
}

/// Where a case replays: the `lockstep` binary, the case's folder, its ROS domain, the modules expected live.
struct Place<'a> {
    lockstep: &'a Path,
    dir: &'a Path,
    domain: u32,
    live: &'a [String],
}

/// Replays run `run` of `case` through the launched `modules`: an error when the replay fails or a module
/// expected live did not answer; otherwise what its report says was skipped or differs from the recording.
fn replay(
    suite: &Suite,
    case: &Case,
    place: &Place<'_>,
    modules: &mut Launched,
    run: u64,
) -> Result<Findings> {
    let Place {
        lockstep,
        dir,
        domain,
        live,
    } = *place;
    let name = run_name(run);
    let log = dir.join(format!("{name}.log"));
    let command = replay_command(suite, case, lockstep, dir, domain, live, run);
    let status = wait_for_replay(command, &log, dir, modules)?;
    if !status.success() {
        return Err(Error::Case(format!(
            "lockstep replay failed: {} (see cases/{}/{name}.log)",
            last_line(&log),
            case.id
        )));
    }
    let replay_report = dir.join(&name).join("report.json");
    let text = std::fs::read_to_string(&replay_report).map_err(|e| Error::io(&replay_report, e))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Error::Case(format!("{}: {e}", replay_report.display())))?;
    let stepped: BTreeSet<&str> = value["modules"]
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let absent: Vec<&str> = live
        .iter()
        .map(String::as_str)
        .filter(|m| !stepped.contains(m))
        .collect();
    if !absent.is_empty() {
        return Err(Error::Case(format!(
            "module(s) {} did not answer their step service: the launch file must start them with lockstep_step_mode:=true, or unmodified nodes with `modules.unmodified: true` (see {})",
            absent.join(", "),
            modules.log
        )));
    }
    Ok(Findings::of(&value))
}

/// Replays the case again, runs 2 to `repeat`, each with module processes started afresh (so no state
/// carries over from one run into the next), and names every module whose outputs differ from the first
/// run's, with its first differing output.
fn repeat_runs(suite: &Suite, case: &Case, place: &Place<'_>) -> Result<Vec<String>> {
    let Place {
        lockstep,
        dir,
        domain,
        ..
    } = *place;
    let first = outputs(&dir.join("replay"))?;
    let mut found: BTreeMap<String, String> = BTreeMap::new();
    for run in 2..=suite.replay.repeat {
        let mut modules = Launched::start(lockstep, case, dir, domain)?;
        let replayed = replay(suite, case, place, &mut modules, run);
        modules.stop();
        replayed?;
        for (id, (module, digest)) in outputs(&dir.join(format!("replay_run{run}")))? {
            let (channel, _, seq) = &id;
            let differs = match first.get(&id) {
                Some((_, d)) if *d == digest => continue,
                Some(_) => "a different payload",
                None => "only this run has it",
            };
            found
                .entry(module)
                .or_insert_with(|| format!("{channel} #{seq} differs in run {run} ({differs})"));
        }
    }
    Ok(found
        .into_iter()
        .map(|(module, what)| format!("nondeterministic: `{module}` {what}"))
        .collect())
}

/// A replay's outputs in its output bag: (channel, epoch, sequence) -> (module, payload digest).
/// A replay's outputs: (channel, epoch, sequence) -> (module, payload digest).
type Outputs = BTreeMap<(String, u64, u32), (String, u64)>;

fn outputs(bag: &Path) -> Result<Outputs> {
    let recording = open_recording(bag)?;
    Ok(recording
        .frames
        .iter()
        .map(|f| (f.id(), (f.header.module_name.clone(), f.header.payload_digest)))
        .collect())
}
