//! `--ray ADDRESS`: every case becomes a Ray task on the cluster (the Python driver embedded below runs
//! them with Ray's own scheduling and retries); each task runs `lockstep test <suite> --run-case <case>` on
//! its worker, which writes `cases/<case>/` into the shared output folder.

use std::io::{BufRead as _, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

/// The driver's source, run as `python3 - --address A --plan P` (the workers need Ray and lockstep, not
/// this file).
const DRIVER: &str = include_str!("ray_driver.py");

/// Runs `cases` through the Ray cluster at `address`; `on_done(case)` is called as each one finishes.
/// Returns the lines of tasks Ray gave up (case, reason).
pub fn run(
    address: &str,
    lockstep: &Path,
    suite: &Path,
    output: &Path,
    cases: &[String],
    extra_args: &[String],
    on_done: &mut dyn FnMut(&str),
) -> anyhow::Result<Vec<(String, String)>> {
    let plan = output.join("ray_plan.json");
    let text = serde_json::json!({
        "lockstep": lockstep, "suite": suite, "output": output, "cases": cases, "extra_args": extra_args,
    });
    std::fs::write(&plan, serde_json::to_string_pretty(&text)? + "\n")
        .with_context(|| format!("cannot write {}", plan.display()))?;
    let python = std::env::var("LOCKSTEP_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut child = Command::new(&python)
        .arg("-")
        .arg("--address")
        .arg(address)
        .arg("--plan")
        .arg(&plan)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| {
            format!("--ray: cannot start {python} (set LOCKSTEP_PYTHON to a Python with Ray)")
        })?;
    child
        .stdin
        .take()
        .context("--ray: no stdin")?
        .write_all(DRIVER.as_bytes())
        .context("--ray: cannot hand the driver to Python")?;
    let stderr = child.stderr.take().context("--ray: no stderr")?;
    let errors = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            lines.push(line);
        }
        lines
    });
    let mut given_up = Vec::new();
    let stdout = child.stdout.take().context("--ray: no stdout")?;
    for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
        let mut words = line.splitn(3, ' ');
        match (words.next(), words.next(), words.next()) {
            (Some("done"), Some(case), _) => on_done(case),
            (Some("failed"), Some(case), reason) => {
                given_up.push((case.to_owned(), reason.unwrap_or("").to_owned()));
                on_done(case);
            }
            _ => {}
        }
    }
    let status = child.wait().context("--ray: the driver")?;
    let errors = errors.join().unwrap_or_default();
    if status.code() == Some(130) {
        bail!("--ray {address}: interrupted (the outstanding cases were cancelled)");
    }
    if !status.success() && given_up.is_empty() {
        // The driver's own error line; Ray's core may print warnings of its own around it.
        let last = errors
            .iter()
            .rev()
            .find(|l| l.starts_with("error: "))
            .or_else(|| errors.iter().rev().find(|l| !l.trim().is_empty()))
            .map_or("(no message)", String::as_str);
        let last = last.strip_prefix("error: ").unwrap_or(last);
        bail!("--ray {address}: {last}");
    }
    Ok(given_up)
}
