//! Failures and what takes them: timeouts, retries and fallbacks (see the module's
//! [recovery](super#recovery) section).

use std::collections::BTreeSet;

use super::{Outcome, Output, Scheduler};
use crate::config::Retry;
use crate::status::{EndReason, Status};
use crate::tree::Id;

impl Scheduler {
    /// Subtasks that have run their `timeout_s` in this attempt fail, parents before their subtasks.
    pub(super) fn check_timeouts(&mut self, now: f64, out: &mut Vec<Output>) {
        let due: Vec<Id> = self
            .clock
            .keys()
            .copied()
            .filter(|&id| self.timed_out(id, now))
            .collect();
        for id in due {
            // One handled before may have retried or ended this one.
            if self.outcome.is_some() || !self.timed_out(id, now) {
                continue;
            }
            let node = &self.tree.nodes[id];
            let after_s = node.timeout_s.unwrap_or_default();
            out.push(Output::TimedOut {
                path: node.path.clone(),
                level: node.level,
                after_s,
            });
            self.cancel_under(id, out);
            self.fail(id, format!("timed out after {after_s} s"), out);
        }
    }

    /// Whether running `id` has used its `timeout_s` at `now`.
    fn timed_out(&self, id: Id, now: f64) -> bool {
        let node = &self.tree.nodes[id];
        let Some((limit, clock)) = node.timeout_s.zip(self.clock.get(&id)) else {
            return false;
        };
        (clock.since)
            .is_some_and(|since| node.status == Status::Running && clock.spent + now - since >= limit)
    }

    /// `origin` failed for `reason` (a leaf whose goal failed, or a subtask that timed out; its goals are no
    /// longer out): the nearest subtask from it up with a retry left tries again, or with a fallback is
    /// replaced by it; with neither, the task fails.
    pub(super) fn fail(&mut self, origin: Id, reason: String, out: &mut Vec<Output>) {
        let mut reason = reason;
        let mut at = origin;
        loop {
            let node = &self.tree.nodes[at];
            if let Some(retry) = node.retry {
                let used = self.attempts.get(&at).copied().unwrap_or_default();
                if used < retry.attempts {
                    return self.retry(at, origin, retry, used + 1, &reason, out);
                }
                let tries = retry.attempts.saturating_add(1);
                reason = if at == origin {
                    format!("{reason} (after {tries} attempts)")
                } else {
                    format!("{reason} ({} after {tries} attempts)", node.path)
                };
            }
            let standby = node.fallback.is_some_and(|f| self.tree.nodes[f].standby);
            if standby && node.parent.is_some() {
                return self.take_over(at, origin, &reason, out);
            }
            if let Some(first) = self.replaced.get(&at) {
                reason = format!("{first}; fallback {} failed: {reason}", node.path);
            }
            match node.parent {
                Some(parent) => at = parent,
                None => break,
            }
        }
        self.fail_task(origin, reason, out);
    }

    /// `from` and the subtasks above it up to `to` (`from` or one above it), lowest first.
    fn branch(&self, from: Id, to: Id) -> Vec<Id> {
        let mut branch = vec![from];
        let mut at = from;
        while let Some(parent) = self.tree.nodes[at].parent.filter(|_| at != to) {
            branch.push(parent);
            at = parent;
        }
        branch
    }

    /// The reason as reported at `at`: with the path of `origin` when the failure came from under it.
    fn described(&self, origin: Id, at: Id, reason: &str) -> String {
        if origin == at {
            reason.to_owned()
        } else {
            format!("{}: {reason}", self.tree.nodes[origin].path)
        }
    }

    /// Try `id` again (its `attempt`-th retry) after `origin` under it failed.
    fn retry(&mut self, id: Id, origin: Id, retry: Retry, attempt: u32, reason: &str, out: &mut Vec<Output>) {
        self.attempts.insert(id, attempt);
        let why = self.described(origin, id, reason);
        out.push(Output::Retry {
            path: self.tree.nodes[id].path.clone(),
            level: self.tree.nodes[id].level,
            attempt,
            attempts: retry.attempts,
            after_s: retry.backoff_s,
            reason: why.clone(),
        });
        self.cancel_under(id, out);
        // The failed branch from `origin` up to `id`, then what else runs under `id`, lowest first.
        let mut order = self.branch(origin, id);
        let mut seen: BTreeSet<Id> = order.iter().copied().collect();
        for n in self.tree.subtree(id).into_iter().rev() {
            if seen.insert(n) {
                order.push(n);
            }
        }
        order.retain(|&n| self.tree.nodes[n].status == Status::Running);
        let status = Status::Interrupted(format!("retry {attempt}/{}: {why}", retry.attempts));
        for &n in &order {
            self.set(n, status.clone(), out);
        }
        // Sendable again from the top; a new attempt, a new clock.
        order.sort_unstable();
        for &n in &order {
            self.set(n, Status::Sendable, out);
            self.clock.remove(&n);
        }
        if retry.backoff_s > 0.0 && self.tree.nodes[id].status == Status::Sendable {
            self.set(id, Status::Delayed, out);
            self.until.remove(&id);
            self.backoff.insert(id, retry.backoff_s);
        }
    }

    /// `id` failed for good (after `origin` under it failed): it ends failed, and its fallback takes its slot.
    fn take_over(&mut self, id: Id, origin: Id, reason: &str, out: &mut Vec<Output>) {
        let why = self.described(origin, id, reason);
        let Some(fallback) = self.tree.nodes[id].fallback else {
            return;
        };
        out.push(Output::Fallback {
            path: self.tree.nodes[id].path.clone(),
            level: self.tree.nodes[id].level,
            fallback_path: self.tree.nodes[fallback].path.clone(),
            reason: why.clone(),
        });
        self.cancel_under(id, out);
        for at in self.branch(origin, id) {
            if !self.tree.nodes[at].status.is_final() {
                self.set(at, Status::Ended(EndReason::Failed), out);
            }
        }
        for n in self.tree.subtree(id).into_iter().rev() {
            if !self.tree.nodes[n].status.is_final() {
                self.set(n, Status::Ended(EndReason::Forced), out);
            }
            self.until.remove(&n);
            self.backoff.remove(&n);
            self.clock.remove(&n);
        }
        self.tree.activate_fallback(id);
        self.replaced.insert(fallback, why);
    }

    /// Nothing took the failure of `origin`: it and everything above it end failed, the other goals are
    /// cancelled, the rest ends forced.
    fn fail_task(&mut self, origin: Id, reason: String, out: &mut Vec<Output>) {
        let mut up = Some(origin);
        while let Some(id) = up {
            if !self.tree.nodes[id].status.is_final() {
                self.set(id, Status::Ended(EndReason::Failed), out);
            }
            up = self.tree.nodes[id].parent;
        }
        self.cancel_live(out);
        self.end_rest(EndReason::Forced, out);
        let path = self.tree.nodes[origin].path.clone();
        self.finish(Outcome::Failed { path, reason }, out);
    }

    /// Cancel the goals out under `id` (paused ones too).
    pub(super) fn cancel_under(&mut self, id: Id, out: &mut Vec<Output>) {
        let tree = &self.tree;
        let under: BTreeSet<Id> = self
            .live
            .iter()
            .copied()
            .filter(|&l| tree.is_under(l, id))
            .collect();
        self.cancel_where(|l| under.contains(&l), true, out);
    }
}
