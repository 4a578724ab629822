//! Property test (pure): random trees, random status events. The table is enforced, final statuses never
//! change, and no parent is completed while a child is not.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::config;
use lockstep_tasks::{EndReason, Params, Status, Tree};
use proptest::prelude::*;

fn status(k: u8) -> Status {
    match k % 8 {
        0 => Status::Sendable,
        1 => Status::Running,
        2 => Status::Delayed,
        3 | 4 => Status::Completed,
        5 => Status::Ended(EndReason::Failed),
        6 => Status::Ended(EndReason::Cancelled),
        _ => Status::Interrupted("paused".into()),
    }
}

proptest! {
    #[test]
    fn status_invariants_hold(
        fanouts in prop::collection::vec(1usize..4, 1..4),
        events in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..300),
    ) {
        let tree_config = config(&fanouts, &[]);
        let mut tree = Tree::decompose(&tree_config, "t0", &Params::new()).unwrap();
        let expected: usize = (0..=fanouts.len()).map(|l| fanouts[..l].iter().product::<usize>()).sum();
        prop_assert_eq!(tree.nodes.len(), expected);
        for (pick, k) in events {
            let id = pick.index(tree.nodes.len());
            let to = status(k);
            let before = tree.nodes[id].status.clone();
            let children_done = tree.nodes[id].children.iter().all(|&c| tree.nodes[c].status == Status::Completed);
            let outcome = tree.set_status(id, to.clone());
            let allowed = before.allows(&to) && (to != Status::Completed || children_done);
            prop_assert_eq!(outcome.is_ok(), allowed, "{} -> {}: {:?}", before, to, outcome);
            if allowed {
                prop_assert_eq!(&tree.nodes[id].status, &to);
            } else {
                prop_assert_eq!(&tree.nodes[id].status, &before);
            }
            prop_assert!(!(before.is_final() && tree.nodes[id].status != before));
            for n in &tree.nodes {
                if n.status == Status::Completed {
                    prop_assert!(n.children.iter().all(|&c| tree.nodes[c].status == Status::Completed), "{}", n.path);
                }
            }
        }
    }
}
