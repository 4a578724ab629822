//! The manager's state file (`state_file`): every unfinished task with what it needs to run again after a
//! restart (type, goal parameters, priority, robot) and the actions it has completed, plus where each robot
//! is. It is rewritten whole after each change, into a temporary file renamed over the old one, so a kill at
//! any moment leaves either the old state or the new one, never half of one.
//!
//! A state file that cannot be read is never overwritten: the manager refuses to start, naming the file and
//! the problem, so nothing in it is lost.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Larger state files are refused unread (a task list this long is not a manager's state).
pub const MAX_BYTES: u64 = 64 * 1024 * 1024;
/// The format written; a newer one is refused.
pub const VERSION: u32 = 1;

/// One unfinished task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRecord {
    pub id: String,
    pub seq: u64,
    pub task_type: String,
    /// The goal's parameters, with what the manager added (`robot`, `at`).
    pub parameters: serde_json::Map<String, serde_json::Value>,
    pub priority: i32,
    pub robot: String,
    /// queued | running | paused | preempted | interrupted
    pub state: String,
    /// Paths of the completed actions.
    pub completed: Vec<String>,
    /// Actions whose goal was out when this was written (they may have finished after it).
    #[serde(default)]
    pub in_flight: Vec<InFlight>,
}

/// An action whose goal was out: a restarted manager asks its actuator how that goal ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InFlight {
    pub path: String,
    pub actuator: String,
    /// The goal's UUID (32 hex digits); "" when the actuator had not accepted it yet.
    pub goal_id: String,
}

/// 32 hex digits.
pub fn hex(id: &[u8; 16]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// The goal id of 32 hex digits, if it is one.
pub fn unhex(text: &str) -> Option<[u8; 16]> {
    if text.len() != 32 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// The whole state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub version: u32,
    /// The next task number, so ids are never reused across restarts.
    pub next_seq: u64,
    /// Robot -> the station it is at.
    #[serde(default)]
    pub stations: BTreeMap<String, String>,
    pub tasks: Vec<TaskRecord>,
    /// Robot -> the lanes, stations and mutex groups it holds on the shared floor.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub held: BTreeMap<String, BTreeSet<crate::traffic::Resource>>,
}

/// Read the state file; `Ok(None)` when it does not exist yet.
pub fn read(path: &Path) -> Result<Option<State>, String> {
    let what = |e: &dyn std::fmt::Display| format!("state_file {}: {e}", path.display());
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(what(&e)),
    };
    if !meta.is_file() {
        // A FIFO would block the read for ever, /dev/zero would never end, a folder cannot be replaced.
        return Err(what(
            &"not a regular file (a folder, FIFO or device): give a file path",
        ));
    }
    if meta.len() > MAX_BYTES {
        return Err(what(&format!(
            "{} bytes, more than the {MAX_BYTES} a state file may have; left as it is",
            meta.len()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| what(&e))?;
    let state: State = serde_json::from_str(&text).map_err(|e| {
        what(&format!(
            "line {} column {}: {e}; left as it is (move it away to start without it)",
            e.line(),
            e.column()
        ))
    })?;
    if state.version > VERSION {
        return Err(what(&format!(
            "format version {} is newer than this manager's ({VERSION}); left as it is",
            state.version
        )));
    }
    Ok(Some(state))
}

/// Write the state: a temporary file beside it, flushed to disk, renamed over it.
pub fn write(path: &Path, state: &State) -> Result<(), String> {
    let what = |e: &dyn std::fmt::Display| format!("state_file {}: {e}", path.display());
    let text = serde_json::to_vec_pretty(state).map_err(|e| what(&e))?;
    let mut tmp = PathBuf::from(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "state".into());
    tmp.set_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let mut file = std::fs::File::create(&tmp).map_err(|e| what(&e))?;
    file.write_all(&text).map_err(|e| what(&e))?;
    file.sync_all().map_err(|e| what(&e))?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(|e| what(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "lockstep-journal-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_state_written_reads_back_and_a_missing_file_is_no_state() {
        let d = dir();
        let path = d.join("state.json");
        assert_eq!(read(&path), Ok(None));
        let state = State {
            version: VERSION,
            next_seq: 7,
            stations: BTreeMap::from([("robot1".into(), "C".into())]),
            held: BTreeMap::from([(
                "robot1".into(),
                BTreeSet::from([crate::traffic::Resource::Station("C".into())]),
            )]),
            tasks: vec![TaskRecord {
                id: "task-7".into(),
                seq: 7,
                task_type: "shuttle".into(),
                parameters: serde_json::Map::new(),
                priority: 0,
                robot: "robot1".into(),
                state: "running".into(),
                completed: vec!["task/duty[0]/message[0]/action[0]".into()],
                in_flight: vec![],
            }],
        };
        write(&path, &state).unwrap();
        assert_eq!(read(&path), Ok(Some(state)));
        let leftovers: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left beside it");
    }

    #[test]
    fn a_state_file_that_is_no_regular_file_is_refused_unread() {
        for path in [Path::new("/dev/zero"), Path::new("/tmp")] {
            let e = read(path).unwrap_err();
            assert!(e.contains("not a regular file"), "{e}");
        }
    }

    #[test]
    fn goal_ids_read_back() {
        let id = [
            0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0, 1, 2, 3, 4, 5, 6, 0xff,
        ];
        assert_eq!(hex(&id), "123456789abcdef000010203040506ff");
        assert_eq!(unhex(&hex(&id)), Some(id));
        assert_eq!(unhex("12"), None);
        assert_eq!(unhex("zz3456789abcdef000010203040506ff"), None);
    }

    #[test]
    fn a_damaged_file_is_refused_with_its_line_and_left_untouched() {
        let d = dir();
        let path = d.join("state.json");
        std::fs::write(&path, "{\"version\": 1,\n \"next_seq\": x}").unwrap();
        let e = read(&path).unwrap_err();
        assert!(
            e.contains("state.json: line 2") && e.contains("left as it is"),
            "{e}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"version\": 1,\n \"next_seq\": x}"
        );
        std::fs::write(&path, "{\"version\": 99, \"next_seq\": 0, \"tasks\": []}").unwrap();
        assert!(read(&path).unwrap_err().contains("newer"));
    }
}
