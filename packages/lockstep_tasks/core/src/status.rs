//! Subtask statuses and the transitions allowed between them.
//!
//! | from \ to   | sendable | running | delayed | completed | ended | interrupted |
//! |-------------|----------|---------|---------|-----------|-------|-------------|
//! | sendable    | -        | yes     | yes     | no        | yes   | yes         |
//! | delayed     | yes      | no      | -       | no        | yes   | yes         |
//! | running     | no       | -       | no      | yes       | yes   | yes         |
//! | interrupted | yes      | no      | no      | no        | yes   | -           |
//! | completed   | no       | no      | no      | -         | no    | no          |
//! | ended       | no       | no      | no      | no        | -     | no          |
//!
//! - sendable -> running: dispatched (a leaf's goal sent; a group's first children scheduled).
//! - sendable -> delayed -> sendable: a delay attribute; the wait ends back in sendable, then dispatch.
//! - running -> completed: a leaf's goal succeeded, or a group's children all completed.
//! - -> interrupted: paused, an interrupt attribute, an obstacle, a retry (`retry k/N: <reason>`);
//!   interrupted -> sendable: resumed, or tried again (then delayed for the retry's backoff).
//! - -> ended: failed, cancelled or forced. Completed and ended are final.
//!
//! On top of the table, the tree enforces that a parent is never completed while a child is not.

/// Why a subtask ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    Failed,
    Cancelled,
    Forced,
}

impl EndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Forced => "forced",
        }
    }
}

/// A subtask's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Sendable,
    Running,
    Delayed,
    Completed,
    Ended(EndReason),
    /// With the reason (`paused`, `obstacle`, an interrupt attribute's reason...).
    Interrupted(String),
}

impl Status {
    /// The status's name as published (`ended`, not its reason).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Sendable => "sendable",
            Self::Running => "running",
            Self::Delayed => "delayed",
            Self::Completed => "completed",
            Self::Ended(_) => "ended",
            Self::Interrupted(_) => "interrupted",
        }
    }

    /// The reason of an ended or interrupted status ("" otherwise).
    pub fn reason(&self) -> &str {
        match self {
            Self::Ended(r) => r.as_str(),
            Self::Interrupted(r) => r,
            _ => "",
        }
    }

    /// Completed or ended: nothing follows.
    pub fn is_final(&self) -> bool {
        matches!(self, Self::Completed | Self::Ended(_))
    }

    /// Whether the table above allows going from `self` to `to`.
    pub fn allows(&self, to: &Status) -> bool {
        use Status::{Completed, Delayed, Ended, Interrupted, Running, Sendable};
        match (self, to) {
            (Completed | Ended(_), _) => false,
            (Sendable, Running | Delayed | Ended(_) | Interrupted(_)) => true,
            (Delayed, Sendable | Ended(_) | Interrupted(_)) => true,
            (Running, Completed | Ended(_) | Interrupted(_)) => true,
            (Interrupted(_), Sendable | Ended(_)) => true,
            _ => false,
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.reason() {
            "" => f.write_str(self.name()),
            reason => write!(f, "{} ({reason})", self.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table() {
        let all = [
            Status::Sendable,
            Status::Running,
            Status::Delayed,
            Status::Completed,
            Status::Ended(EndReason::Cancelled),
            Status::Interrupted("paused".into()),
        ];
        // The doc table, rows and columns in the order of `all`.
        let expected: [[bool; 6]; 6] = [
            [false, true, true, false, true, true],
            [false, false, false, true, true, true],
            [true, false, false, false, true, true],
            [false; 6],
            [false; 6],
            [true, false, false, false, true, false],
        ];
        for (i, from) in all.iter().enumerate() {
            for (j, to) in all.iter().enumerate() {
                assert_eq!(from.allows(to), expected[i][j], "{from} -> {to}");
            }
        }
        assert_eq!(Status::Ended(EndReason::Failed).to_string(), "ended (failed)");
    }
}
