//! What the manager takes in at most: how long a name a user gives may be, how large a goal's parameters,
//! how many tasks may wait; and how request text is repeated in a log line or an answer ([`Echo`]).
//!
//! A goal past these limits is refused at once with the reason, before any work is spent on it: a flood of
//! goals cannot grow the queue (and the state file written after each change) without bound, and a 10 MB
//! field is neither parsed nor repeated.

use std::borrow::Cow;

use super::io::GoalRequest;

/// Names a user gives (task type, robot, task id) longer than this are refused: no such name is one.
pub const MAX_NAME_CHARS: usize = 256;
/// A goal's `parameters_json` larger than this is refused unparsed.
pub const MAX_PARAMETERS_BYTES: usize = 1024 * 1024;
/// Unfinished tasks (running, queued, paused, interrupted) at most: a goal beyond them is refused as busy.
pub const MAX_UNFINISHED_TASKS: usize = 1000;

/// How request text is repeated in a log line or an answer: the node gives the manager
/// `lockstep_ros::text::echo` (the first 200 characters and the length of the whole).
pub type Echo = fn(&str) -> Cow<'_, str>;

/// The manager's [`Echo`] until the node gives it its own: text of at most 200 bytes as it is, longer text
/// by its length only.
pub fn length_only(text: &str) -> Cow<'_, str> {
    if text.len() <= 200 {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(format!("({} bytes of text)", text.len()))
    }
}

/// Whether `text` has more than [`MAX_NAME_CHARS`] characters.
pub fn too_long(text: &str) -> bool {
    text.len() > MAX_NAME_CHARS && text.chars().nth(MAX_NAME_CHARS).is_some()
}

/// Why `field` = `text` is no name a user gives: longer than [`MAX_NAME_CHARS`] (its text is not repeated).
fn name_too_long(field: &str, text: &str) -> String {
    format!(
        "{field} is longer than {MAX_NAME_CHARS} characters ({} bytes): refused unread",
        text.len()
    )
}

/// A goal's task type, robot and parameters within the limits, or why not (without their text).
pub fn check_goal(goal: &GoalRequest) -> Result<(), String> {
    for (field, text) in [("task_type", &goal.task_type), ("robot", &goal.robot)] {
        if too_long(text) {
            return Err(name_too_long(field, text));
        }
    }
    if goal.parameters_json.len() > MAX_PARAMETERS_BYTES {
        return Err(format!(
            "parameters_json is {} bytes: at most {MAX_PARAMETERS_BYTES} are taken",
            goal.parameters_json.len()
        ));
    }
    Ok(())
}

/// A task id a request names within the limit, or why not.
pub fn check_task_id(id: &str) -> Result<(), String> {
    if too_long(id) {
        return Err(name_too_long("task_id", id));
    }
    Ok(())
}

/// Why a goal is refused while `unfinished` tasks wait, if that is `max` or more.
pub fn busy(unfinished: usize, max: usize) -> Result<(), String> {
    if unfinished >= max {
        return Err(format!(
            "busy: {unfinished} tasks are unfinished (at most {max}); send the goal again once some have ended"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_goals_are_refused_without_their_text() {
        let huge = "x".repeat(10 * 1024 * 1024);
        for goal in [
            GoalRequest {
                task_type: huge.clone(),
                ..GoalRequest::default()
            },
            GoalRequest {
                robot: huge.clone(),
                ..GoalRequest::default()
            },
            GoalRequest {
                parameters_json: format!("{{\"a\": \"{huge}\"}}"),
                ..GoalRequest::default()
            },
        ] {
            let reason = check_goal(&goal).err().unwrap_or_default();
            assert!(!reason.is_empty() && reason.len() < 200, "{reason}");
        }
        let ok = GoalRequest {
            task_type: "é".repeat(MAX_NAME_CHARS),
            ..GoalRequest::default()
        };
        assert_eq!(check_goal(&ok), Ok(()));
        assert!(check_task_id(&"é".repeat(MAX_NAME_CHARS + 1)).is_err());
    }

    #[test]
    fn the_default_echo_never_repeats_long_text() {
        assert_eq!(length_only("short"), "short");
        assert_eq!(length_only(&"y".repeat(201)), "(201 bytes of text)");
        assert!(busy(9, 10).is_ok());
        assert!(busy(10, 10).is_err_and(|e| e.starts_with("busy: ")));
    }
}
