//! What a tick sends, apart from the message types: the command in the controller's joint order, and when a
//! trajectory output sends a new window of future commands.

/// A goal's joints in the order the controller lists them (or the file's order when it lists none); a joint
/// the file lacks gets NaN.
#[derive(Debug, Clone, PartialEq)]
pub struct JointOrder {
    /// The joint names, in output order.
    pub names: Vec<String>,
    /// For each output joint, its index among the goal's joints.
    index: Vec<Option<usize>>,
}

impl JointOrder {
    /// The order of `controller_joints` (empty: `goal_joints`' own) over the goal's joints.
    pub fn new(goal_joints: &[String], controller_joints: &[String]) -> Self {
        let names = if controller_joints.is_empty() {
            goal_joints
        } else {
            controller_joints
        };
        let index = (names.iter())
            .map(|j| goal_joints.iter().position(|k| k == j))
            .collect();
        JointOrder {
            names: names.to_vec(),
            index,
        }
    }

    /// `positions` (in the goal's joint order) in output order.
    pub fn arrange(&self, positions: &[f64]) -> Vec<f64> {
        (self.index.iter())
            .map(|i| i.and_then(|i| positions.get(i).copied()).unwrap_or(f64::NAN))
            .collect()
    }
}

/// The trajectory window last sent for the goal being played.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Window {
    /// The goal's tick count when it was sent.
    pub sent_at: u64,
    /// Its points in the file's joint order: point k is the command of tick `sent_at + k`.
    pub points: Vec<Vec<f64>>,
}

impl Window {
    /// Whether tick `ticks` (counted from 1) must send a new window: the first tick, after a replanned
    /// request, every `resend_ticks`, or when what the window last sent says for this tick -- none (past its
    /// end) or another command -- differs from `command` (the motion ahead changed without a request, e.g.
    /// the joints reached the first point).
    pub fn due(&self, ticks: u64, replanned: bool, resend_ticks: u64, command: &[f64]) -> bool {
        let ahead = ticks.checked_sub(self.sent_at).filter(|_| self.sent_at > 0);
        let predicted = ahead.and_then(|k| self.points.get(k as usize));
        let resend = ahead.is_some_and(|k| k >= resend_ticks);
        ticks == 1 || replanned || resend || predicted.map(Vec::as_slice) != Some(command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn commands_follow_the_controllers_order() {
        let goal = names(&["a", "b"]);
        let own = JointOrder::new(&goal, &[]);
        assert_eq!(own.names, goal);
        assert_eq!(own.arrange(&[1.0, 2.0]), [1.0, 2.0]);
        let controller = JointOrder::new(&goal, &names(&["b", "x", "a"]));
        let arranged = controller.arrange(&[1.0, 2.0]);
        assert_eq!((arranged[0], arranged[2]), (2.0, 1.0));
        assert!(arranged[1].is_nan());
    }

    #[test]
    fn a_window_is_sent_first_on_change_and_every_so_many_ticks() {
        let mut w = Window::default();
        assert!(w.due(1, false, 10, &[0.0]));
        w = Window {
            sent_at: 1,
            points: vec![vec![0.0], vec![0.1], vec![0.2]],
        };
        assert!(!w.due(2, false, 10, &[0.1]));
        assert!(w.due(2, true, 10, &[0.1]));
        assert!(w.due(2, false, 10, &[0.15]));
        assert!(w.due(3, false, 2, &[0.2]));
        assert!(w.due(4, false, 10, &[0.3]), "past the window's end");
    }
}
