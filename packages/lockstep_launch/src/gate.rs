//! Processes held back by `<?lockstep wait-for?>` ([`crate::plan::Wait`]): each process starts once every
//! wait it has is met, that is once the process it names printed a line matching the wait's pattern. The
//! output of a process that others wait for is watched line by line ([`Watch`], fed by the threads that copy
//! its output). A wait is bounded: when its process ends, or its timeout passes after that process started,
//! without the line, the wait fails with a message naming the process, the pattern and the place of the wait.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use regex::Regex;

use crate::error::{LaunchError, Result};
use crate::plan::{Plan, Wait};

/// What the lines of one process are watched for: a pattern per wait on it, with the flag its first
/// matching line raises.
#[derive(Default)]
pub(crate) struct Watch {
    patterns: Vec<(Regex, Arc<AtomicBool>)>,
}

impl Watch {
    /// Raises the flag of every pattern `line` matches.
    pub(crate) fn line(&self, line: &str) {
        for (pattern, seen) in &self.patterns {
            if !seen.load(Ordering::Relaxed) && pattern.is_match(line) {
                seen.store(true, Ordering::SeqCst);
            }
        }
    }

    /// Whether nothing waits for this process's output.
    pub(crate) fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
}

/// How far a process waited for has come.
pub(crate) struct Progress {
    /// When it started, if it has.
    pub(crate) started: Option<Instant>,
    /// It has ended and all its output has been read: a line it did not print will not come.
    pub(crate) finished: bool,
}

/// Whether a process may start.
#[derive(Debug, PartialEq)]
pub(crate) enum State {
    Met,
    Waiting,
    /// A wait that can no longer be met: why.
    Failed(String),
}

/// One wait of the plan, shared by every process it holds back.
struct Condition {
    wait: Wait,
    /// Index of the process waited for.
    process: usize,
    seen: Arc<AtomicBool>,
    /// The labels of the processes it holds back.
    holds: Vec<String>,
    said_waiting: bool,
    said_met: bool,
}

/// Every wait of a plan and the processes each holds back.
pub(crate) struct Gates {
    conditions: Vec<Condition>,
    /// For each process of the plan, the conditions it waits for.
    needs: Vec<Vec<usize>>,
    /// For each process of the plan, what its output is watched for.
    watches: Vec<Arc<Watch>>,
}

impl Gates {
    /// The waits of `plan`. A wait naming no process of the plan, or with a pattern that is no regular
    /// expression, cannot come from a plan read from a file (reading refuses both): it is an error here.
    pub(crate) fn new(plan: &Plan) -> Result<Self> {
        let mut conditions: Vec<Condition> = Vec::new();
        let mut needs = vec![Vec::new(); plan.processes.len()];
        let mut patterns: Vec<Vec<(Regex, Arc<AtomicBool>)>> = vec![Vec::new(); plan.processes.len()];
        for (index, spec) in plan.processes.iter().enumerate() {
            for wait in &spec.waits {
                let id = match conditions.iter().position(|c| c.wait == *wait) {
                    Some(id) => id,
                    None => {
                        let process = (plan.processes.iter().take(index))
                            .position(|p| p.label == wait.process)
                            .ok_or_else(|| {
                                let message = format!("no process `{}` starts before it", wait.process);
                                LaunchError::invalid(&wait.at, message)
                            })?;
                        let pattern = Regex::new(&wait.output)
                            .map_err(|e| LaunchError::invalid(&wait.at, e.to_string()))?;
                        let seen = Arc::new(AtomicBool::new(false));
                        patterns[process].push((pattern, seen.clone()));
                        conditions.push(Condition {
                            wait: wait.clone(),
                            process,
                            seen,
                            holds: Vec::new(),
                            said_waiting: false,
                            said_met: false,
                        });
                        conditions.len() - 1
                    }
                };
                conditions[id].holds.push(spec.label.clone());
                needs[index].push(id);
            }
        }
        let watches = patterns
            .into_iter()
            .map(|patterns| Arc::new(Watch { patterns }))
            .collect();
        Ok(Self {
            conditions,
            needs,
            watches,
        })
    }

    /// What the output of process `index` is watched for.
    pub(crate) fn watch(&self, index: usize) -> Arc<Watch> {
        self.watches.get(index).cloned().unwrap_or_default()
    }

    /// Whether process `index` may start now, given how far each process has come (`progress`). Tells
    /// `tell` (once per wait) that processes are held back and, later, that their wait is met.
    pub(crate) fn state(
        &mut self,
        index: usize,
        progress: impl Fn(usize) -> Progress,
        tell: &mut dyn FnMut(String),
    ) -> State {
        let mut state = State::Met;
        for &id in self.needs.get(index).map(Vec::as_slice).unwrap_or_default() {
            let Some(c) = self.conditions.get_mut(id) else {
                continue;
            };
            let p = progress(c.process);
            if c.seen.load(Ordering::SeqCst) {
                if !c.said_met {
                    c.said_met = true;
                    let after = p
                        .started
                        .map(|s| format!(" after {:.1} s", s.elapsed().as_secs_f64()));
                    tell(format!(
                        "{} printed a line matching `{}`{}: starting {}",
                        c.wait.process,
                        c.wait.output,
                        after.unwrap_or_default(),
                        c.holds.join(", ")
                    ));
                }
                continue;
            }
            let failed = if p.finished {
                Some("ended before it printed")
            } else if p.started.is_some_and(|s| s.elapsed() > c.wait.timeout) {
                Some("did not print, within its timeout,")
            } else {
                None
            };
            if let Some(how) = failed {
                return State::Failed(format!(
                    "{} {how} a line matching `{}` (waited for at {}, at most {:?}); not started: {}",
                    c.wait.process,
                    c.wait.output,
                    c.wait.at,
                    c.wait.timeout,
                    c.holds.join(", ")
                ));
            }
            if !c.said_waiting {
                c.said_waiting = true;
                tell(format!(
                    "waiting for {} before starting {}",
                    c.wait,
                    c.holds.join(", ")
                ));
            }
            state = State::Waiting;
        }
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Location;
    use crate::plan::{Output, ProcessSpec};
    use std::time::Duration;

    fn process(label: &str, waits: Vec<Wait>) -> ProcessSpec {
        ProcessSpec {
            label: label.into(),
            prefix: Vec::new(),
            program: "true".into(),
            args: Vec::new(),
            node: None,
            env: Vec::new(),
            cwd: None,
            output: Output::Screen,
            shutdown_on_exit: false,
            waits,
            at: location(),
        }
    }

    fn location() -> Location {
        Location {
            file: "f.launch.xml".into(),
            line: 3,
            column: 5,
        }
    }

    fn wait(timeout: Duration) -> Wait {
        Wait {
            process: "recorder".into(),
            output: "ready: [0-9]+ topics".into(),
            timeout,
            at: location(),
        }
    }

    fn plan_gates(timeout: Duration) -> Gates {
        let waits = vec![wait(timeout)];
        let plan = Plan {
            processes: vec![
                process("recorder", Vec::new()),
                process("sensor", Vec::new()),
                process("m1", waits.clone()),
                process("m2", waits),
            ],
            ..Plan::default()
        };
        Gates::new(&plan).unwrap()
    }

    fn started(finished: bool) -> impl Fn(usize) -> Progress {
        move |_| Progress {
            started: Some(Instant::now()),
            finished,
        }
    }

    #[test]
    fn a_process_starts_once_the_line_it_waits_for_is_printed() {
        let mut gates = plan_gates(Duration::from_secs(60));
        let mut told = Vec::new();
        let mut tell = |note: String| told.push(note);
        assert_eq!(gates.state(0, started(false), &mut tell), State::Met);
        assert_eq!(gates.state(1, started(false), &mut tell), State::Met);
        assert_eq!(gates.state(2, started(false), &mut tell), State::Waiting);
        assert!(gates.watch(1).is_empty() && !gates.watch(0).is_empty());
        gates.watch(0).line("[INFO] [recorder]: recording /odom");
        assert_eq!(gates.state(3, started(false), &mut tell), State::Waiting);
        gates.watch(0).line("[INFO] [recorder]: ready: 12 topics");
        assert_eq!(gates.state(2, started(false), &mut tell), State::Met);
        // Met stays met, even when the process ends afterwards.
        assert_eq!(gates.state(3, started(true), &mut tell), State::Met);
        // Said once per wait, naming every process it holds back.
        assert_eq!(told.len(), 2, "{told:?}");
        assert_eq!(
            told[0],
            "waiting for recorder to print a line matching `ready: [0-9]+ topics` (at most 60s; \
             f.launch.xml:3:5) before starting m1, m2"
        );
        assert!(
            told[1].starts_with(
                "recorder printed a line matching `ready: [0-9]+ topics` after 0.0 s: starting m1, m2"
            ),
            "{}",
            told[1]
        );
    }

    #[test]
    fn a_wait_fails_when_its_process_ends_or_its_timeout_passes() {
        let mut gates = plan_gates(Duration::from_secs(60));
        let State::Failed(message) = gates.state(2, started(true), &mut drop) else {
            panic!("an ended process prints no more lines");
        };
        assert_eq!(
            message,
            "recorder ended before it printed a line matching `ready: [0-9]+ topics` (waited for at \
             f.launch.xml:3:5, at most 60s); not started: m1, m2"
        );
        let mut gates = plan_gates(Duration::from_millis(1));
        let long_ago = |_| Progress {
            started: Instant::now().checked_sub(Duration::from_secs(1)),
            finished: false,
        };
        assert!(
            matches!(gates.state(2, long_ago, &mut drop), State::Failed(m) if m.contains("within its timeout"))
        );
        // Not started yet: its own waits bound the time.
        let not_started = |_| Progress {
            started: None,
            finished: false,
        };
        assert_eq!(gates.state(2, not_started, &mut drop), State::Waiting);
    }

    #[test]
    fn a_wait_on_a_process_that_does_not_start_before_it_is_refused() {
        let plan = Plan {
            processes: vec![
                process("m1", vec![wait(Duration::from_secs(1))]),
                process("recorder", Vec::new()),
            ],
            ..Plan::default()
        };
        let error = Gates::new(&plan).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(error, "f.launch.xml:3:5: no process `recorder` starts before it");
    }
}
