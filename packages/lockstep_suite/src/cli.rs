//! `lockstep test <suite.yaml>`: runs every case of a suite (side by side with `--jobs`, or as Ray tasks
//! with `--ray`), writes the reports, prints one line per case and a summary. Exit status: 0 when every
//! case passed, 1 when any failed or could not run, 2 when the suite file or the arguments are wrong.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};

use crate::plan::{cases, filter, Case};
use crate::report::{html, junit, CaseReport, Summary};
use crate::run::run_case;
use crate::suite::{Baseline, Suite};

/// Arguments of `lockstep test`.
#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// The suite file (YAML; see config/suites/ for a documented example).
    pub suite: PathBuf,
    /// Cases run at once on this machine (each on its own ROS domain, with its own module processes).
    #[arg(long, short = 'j', default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub jobs: u32,
    /// Output folder (must not exist or be empty) [default: lockstep_test_<suite>_<UTC date-time>].
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Only the cases whose name (`<recording>__<variant>`) matches this glob.
    #[arg(long)]
    pub filter: Option<String>,
    /// Run each case as a task on the Ray cluster at this address (`auto`, `host:port`, `ray://host:10001`);
    /// the recordings, the suite and the output folder must be at the same paths on every worker.
    #[arg(long)]
    pub ray: Option<String>,
    /// Compare with the output folder of an earlier run instead of what the suite file says.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Also write the JUnit XML here (for `colcon test-result` and CI systems that look in one place).
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Fail a case whose replay skipped recorded frames (frames it could not replay, e.g. because their
    /// inputs precede the recording, so never compared), naming each channel and how many; without it they
    /// are warnings of the case (report.json, summary.json, the JUnit XML). The suite file's
    /// `fail_on_skipped: true` does the same.
    #[arg(long)]
    pub fail_on_skipped: bool,
    /// Print the cases and exit without running them.
    #[arg(long)]
    pub list: bool,
    /// No progress bar and no line per passing case: only failing cases and the summary.
    #[arg(long, short)]
    pub quiet: bool,
    /// Run this one case into <output>/cases/ (what each Ray task runs).
    #[arg(long, hide = true)]
    pub run_case: Option<String>,
}

/// Runs `lockstep test`; prints its own errors.
pub fn run(args: TestArgs) -> ExitCode {
    match run_inner(args) {
        Ok(code) => code,
        Err(Failure::Usage(e)) => {
            eprintln!("error: {}", lockstep_bag::error_chain(e.as_ref()));
            ExitCode::from(2)
        }
        Err(Failure::Run(e)) => {
            eprintln!("error: {}", lockstep_bag::error_chain(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}

enum Failure {
    /// The suite or the arguments are wrong (exit 2).
    Usage(anyhow::Error),
    /// Running failed (exit 1).
    Run(anyhow::Error),
}

fn usage(e: impl Into<anyhow::Error>) -> Failure {
    Failure::Usage(e.into())
}

fn failed(e: impl Into<anyhow::Error>) -> Failure {
    Failure::Run(e.into())
}

fn run_inner(args: TestArgs) -> Result<ExitCode, Failure> {
    let suite_path = std::path::absolute(&args.suite)
        .with_context(|| format!("{}", args.suite.display()))
        .map_err(usage)?;
    let mut suite = Suite::load(&suite_path).map_err(usage)?;
    suite.replay.fail_on_skipped |= args.fail_on_skipped;
    if let Some(dir) = &args.baseline {
        suite.baseline = Baseline::Run(baseline_dir(dir, "--baseline")?);
    } else if let Baseline::Run(dir) = &suite.baseline {
        // The suite file's `baseline:` is checked as the option is, before any case runs (or is listed).
        baseline_dir(dir, &format!("{}: baseline", suite_path.display()))?;
    }
    let mut all = cases(&suite);
    if let Some(pattern) = &args.filter {
        all = filter(all, pattern).map_err(usage)?;
    }
    if args.list {
        for case in &all {
            println!("{}  {}", case.id, case.recording.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let lockstep = std::env::current_exe()
        .context("cannot tell where the lockstep binary is")
        .map_err(failed)?;
    if let Some(id) = &args.run_case {
        let ctx = Cases {
            suite: &suite,
            suite_path: &suite_path,
            all: &all,
            lockstep: &lockstep,
        };
        return run_one_case(&ctx, id, args.output.as_deref());
    }
    let (output, cases_dir) = prepare_output(args.output.as_ref(), &suite)?;
    let started = Instant::now();
    let progress = Progress::new(all.len(), args.quiet);
    let (reports, parallel) = match &args.ray {
        Some(address) => {
            let ctx = Cases {
                suite: &suite,
                suite_path: &suite_path,
                all: &all,
                lockstep: &lockstep,
            };
            let reports = run_on_ray(&ctx, address, &output, &cases_dir, &progress)?;
            (reports, format!("Ray cluster at {address}"))
        }
        None => (
            run_local(&suite, &all, &lockstep, &cases_dir, args.jobs, &progress),
            format!("{} at once", args.jobs),
        ),
    };
    progress.done();
    let summary = Summary::of(&suite_path, &reports, started.elapsed().as_secs_f64(), parallel);
    write_outputs(&suite, &summary, &reports, &output, args.junit.as_deref()).map_err(failed)?;
    println!(
        "{} of {} cases passed ({} failed, {} could not run) in {:.1} s: {}",
        summary.passed,
        reports.len(),
        summary.failed - summary.errors,
        summary.errors,
        summary.duration_s,
        output.join("summary.html").display()
    );
    if summary.with_warnings > 0 {
        println!(
            "{} of {} cases have warnings (frames not replayed, parameters that differ from the recording, ...): \
             see summary.json",
            summary.with_warnings,
            reports.len()
        );
    }
    Ok(if summary.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The suite's selected cases, with what running any of them needs.
struct Cases<'a> {
    suite: &'a Suite,
    /// The suite file, absolute.
    suite_path: &'a Path,
    all: &'a [Case],
    /// This binary, which runs each case.
    lockstep: &'a Path,
}

/// A baseline (`what`: the option or the suite file's key): the output folder of an earlier run, absolute.
fn baseline_dir(dir: &Path, what: &str) -> Result<PathBuf, Failure> {
    let dir = std::path::absolute(dir)
        .with_context(|| format!("{what} {}", dir.display()))
        .map_err(usage)?;
    if !dir.join("summary.json").is_file() && !dir.join("cases").is_dir() {
        return Err(usage(anyhow::anyhow!(
            "{what} {}: not the output folder of a `lockstep test` run (no summary.json nor cases/ in it)",
            dir.display()
        )));
    }
    Ok(dir)
}

/// `--run-case`: runs the case `id` into `<output>/cases/` (what each Ray task does).
fn run_one_case(ctx: &Cases<'_>, id: &str, output: Option<&Path>) -> Result<ExitCode, Failure> {
    let output = output.context("--run-case needs --output").map_err(usage)?;
    let case = ctx
        .all
        .iter()
        .find(|c| c.id == id)
        .with_context(|| format!("--run-case {id}: not a case of {}", ctx.suite_path.display()))
        .map_err(usage)?;
    let cases_dir = output.join("cases");
    std::fs::create_dir_all(&cases_dir)
        .with_context(|| format!("cannot create {}", cases_dir.display()))
        .map_err(failed)?;
    let salt = ctx.all.iter().position(|c| c.id == *id).unwrap_or(0) as u32;
    run_case(ctx.suite, case, ctx.lockstep, &cases_dir, salt).map_err(failed)?;
    Ok(ExitCode::SUCCESS)
}

/// The output folder (given, or named after the suite and the time), which must not hold anything
/// yet, made absolute; and its `cases/` folder, created.
fn prepare_output(given: Option<&PathBuf>, suite: &Suite) -> Result<(PathBuf, PathBuf), Failure> {
    let output = match given {
        Some(dir) => dir.clone(),
        None => PathBuf::from(format!("lockstep_test_{}_{}", suite.name, utc_stamp())),
    };
    if std::fs::read_dir(&output).is_ok_and(|mut d| d.next().is_some()) {
        return Err(usage(anyhow::anyhow!(
            "--output {}: exists and is not empty",
            output.display()
        )));
    }
    let output = std::path::absolute(&output).context("--output").map_err(usage)?;
    let cases_dir = output.join("cases");
    std::fs::create_dir_all(&cases_dir)
        .with_context(|| format!("cannot create {}", cases_dir.display()))
        .map_err(failed)?;
    Ok((output, cases_dir))
}

/// Runs every case as a task on the Ray cluster at `address`, then collects the reports they left.
fn run_on_ray(
    ctx: &Cases<'_>,
    address: &str,
    output: &Path,
    cases_dir: &Path,
    progress: &Progress,
) -> Result<Vec<CaseReport>, Failure> {
    let mut extra = Vec::new();
    if let Baseline::Run(dir) = &ctx.suite.baseline {
        extra.push("--baseline".to_owned());
        extra.push(dir.display().to_string());
    }
    if ctx.suite.replay.fail_on_skipped {
        extra.push("--fail-on-skipped".to_owned());
    }
    let ids: Vec<String> = ctx.all.iter().map(|c| c.id.clone()).collect();
    let given_up = crate::ray::run(
        address,
        ctx.lockstep,
        ctx.suite_path,
        output,
        &ids,
        &extra,
        &mut |case| {
            progress.started(case);
        },
    )
    .map_err(failed)?;
    let reports: Vec<CaseReport> = ctx
        .all
        .iter()
        .map(|c| collected(c, cases_dir, &given_up))
        .collect();
    for r in &reports {
        progress.finished(r);
    }
    Ok(reports)
}

/// The report a Ray task left, or one saying why there is none.
fn collected(case: &Case, cases_dir: &Path, given_up: &[(String, String)]) -> CaseReport {
    let path = cases_dir.join(&case.id).join("report.json");
    CaseReport::read(&path).unwrap_or_else(|e| {
        let why = given_up.iter().find(|(c, _)| c == &case.id).map_or_else(
            || lockstep_bag::error_chain(&e),
            |(_, reason)| format!("Ray gave the task up: {reason}"),
        );
        CaseReport {
            error: Some(format!("no report: {why}")),
            ..CaseReport::for_case(case, String::new())
        }
    })
}

fn run_local(
    suite: &Suite,
    all: &[Case],
    lockstep: &Path,
    cases_dir: &Path,
    jobs: u32,
    progress: &Progress,
) -> Vec<CaseReport> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<CaseReport>>> = Mutex::new(vec![None; all.len()]);
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(all.len() as u32).max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(case) = all.get(i) else { break };
                progress.started(&case.id);
                let report = run_case(suite, case, lockstep, cases_dir, i as u32).unwrap_or_else(|e| {
                    collected(
                        case,
                        cases_dir,
                        &[(case.id.clone(), lockstep_bag::error_chain(&e))],
                    )
                });
                progress.finished(&report);
                if let Ok(mut r) = results.lock() {
                    r[i] = Some(report);
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results
        .into_iter()
        .zip(all)
        .map(|(r, c)| r.unwrap_or_else(|| collected(c, cases_dir, &[])))
        .collect()
}

fn write_outputs(
    suite: &Suite,
    summary: &Summary,
    reports: &[CaseReport],
    output: &Path,
    junit_copy: Option<&Path>,
) -> anyhow::Result<()> {
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    write(
        &output.join("summary.json"),
        &(serde_json::to_string_pretty(summary)? + "\n"),
    )?;
    let xml = junit(&suite.name, reports)?;
    write(&output.join("junit.xml"), &xml)?;
    if let Some(path) = junit_copy {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        write(path, &xml)?;
    }
    write(&output.join("summary.html"), &html(summary))?;
    Ok(())
}

/// A progress bar over the cases on a terminal; one line per finished case either way.
struct Progress {
    bar: Option<ProgressBar>,
    quiet: bool,
    total: usize,
    done: AtomicUsize,
}

impl Progress {
    fn new(total: usize, quiet: bool) -> Progress {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} cases  {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar
        });
        Progress {
            bar,
            quiet,
            total,
            done: AtomicUsize::new(0),
        }
    }

    fn started(&self, case: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("running {case}"));
        }
    }

    fn finished(&self, report: &CaseReport) {
        let n = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        let line = match report.reason() {
            None if self.quiet => return,
            None => {
                let warned = match report.warnings.as_slice() {
                    [] => String::new(),
                    [one] => format!(", warning: {one}"),
                    [first, ..] => format!(", {} warnings, first: {first}", report.warnings.len()),
                };
                format!(
                    "[{n}/{}] {} passed ({:.1} s){warned}",
                    self.total, report.case, report.timings.total_s
                )
            }
            Some(why) => format!("[{n}/{}] {} FAILED: {why}", self.total, report.case),
        };
        // A case that could not run is an error of the tool (a bad recording, a launch that would not
        // start): said on stderr; a verdict, passed or failed, on stdout.
        let to_stderr = report.error.is_some();
        match &self.bar {
            Some(bar) => {
                if to_stderr {
                    bar.suspend(|| eprintln!("{line}"));
                } else {
                    bar.println(line);
                }
                bar.inc(1);
            }
            None if to_stderr => eprintln!("{line}"),
            None => println!("{line}"),
        }
    }

    fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// `YYYY_MM_DD-HH_MM_SS` in UTC, as rosbag2 names its bags.
fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}_{month:02}_{day:02}-{:02}_{:02}_{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}
