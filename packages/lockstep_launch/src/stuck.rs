//! What a process that did not end on a signal is doing: each thread's name, state and kernel wait channel
//! from `/proc`, and with `LOCKSTEP_LAUNCH_BACKTRACE=1` and gdb installed a backtrace of every thread. The
//! launcher logs it before it escalates to SIGTERM or SIGKILL, so a node that hangs on shutdown says where.

use std::fs;
use std::path::Path;
use std::process::Command;

/// One line per thread of `pid`: `thread 123 'name': S (sleeping), waiting in futex_wait_queue`.
pub fn thread_states(pid: u32) -> Vec<String> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut ids: Vec<u64> = tasks
        .filter_map(|t| t.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    ids.sort_unstable();
    ids.into_iter()
        .map(|tid| {
            let dir = format!("/proc/{pid}/task/{tid}");
            let read = |name: &str| {
                fs::read_to_string(Path::new(&dir).join(name))
                    .map(|s| s.trim().to_owned())
                    .unwrap_or_else(|_| "?".into())
            };
            let status = read("status");
            let state = status
                .lines()
                .find_map(|l| l.strip_prefix("State:"))
                .map_or("?", str::trim);
            format!(
                "thread {tid} '{}': {state}, waiting in {}",
                read("comm"),
                read("wchan")
            )
        })
        .collect()
}

/// A backtrace of every thread of `pid` from gdb, when `LOCKSTEP_LAUNCH_BACKTRACE=1` and gdb runs.
pub fn backtrace(pid: u32) -> Option<String> {
    if std::env::var("LOCKSTEP_LAUNCH_BACKTRACE").ok()? != "1" {
        return None;
    }
    let out = Command::new("gdb")
        .args([
            "-nx",
            "-q",
            "-batch",
            "-p",
            &pid.to_string(),
            "-ex",
            "thread apply all bt 40",
        ])
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_has_a_thread_named_like_it() {
        let lines = super::thread_states(std::process::id());
        assert!(!lines.is_empty());
        assert!(
            lines
                .iter()
                .all(|l| l.starts_with("thread ") && l.contains("waiting in")),
            "{lines:?}"
        );
        assert!(super::thread_states(u32::MAX).is_empty());
    }
}
