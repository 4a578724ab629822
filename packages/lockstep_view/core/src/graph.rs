//! The ROS graph as the view offers it, apart from ROS: which advertised names vanished from the graph,
//! which services a client may call, the clients whose drop counts grew, and message time stamps.

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::stats::ClientStats;

/// The advertised names (with their type) that the graph (name -> type) no longer shows with that type: gone,
/// or another type now. In name order when `advertised` is.
pub fn vanished<'a>(
    advertised: impl Iterator<Item = (&'a String, &'a str)>,
    graph: &BTreeMap<&str, &str>,
) -> Vec<String> {
    advertised
        .filter(|(name, type_name)| graph.get(name.as_str()) != Some(type_name))
        .map(|(name, _)| name.clone())
        .collect()
}

/// Each name of the graph (name, types) with its first type; names without a type are left out.
pub fn first_types(graph: &[(String, Vec<String>)]) -> BTreeMap<&str, &str> {
    (graph.iter())
        .filter_map(|(name, types)| Some((name.as_str(), types.first()?.as_str())))
        .collect()
}

/// The services a client may see, with their first type: an action's internal services (`/_action/`) are
/// left out.
pub fn callable_services(graph: &[(String, Vec<String>)]) -> BTreeMap<&str, &str> {
    let mut services = first_types(graph);
    services.retain(|name, _| !name.contains("/_action/"));
    services
}

/// The drop counts already reported, per client.
#[derive(Debug, Default, Clone)]
pub struct DropWatch {
    logged: Vec<u64>,
}

impl DropWatch {
    /// A line for each client whose drop count grew since the last look.
    pub fn news(&mut self, stats: &[ClientStats]) -> Vec<String> {
        self.logged.resize(stats.len(), 0);
        let mut lines = Vec::new();
        for (c, logged) in stats.iter().zip(&mut self.logged) {
            if c.dropped > *logged {
                lines.push(format!(
                    "client {}: {} message(s) dropped so far (it reads slower than the topics publish)",
                    c.address, c.dropped
                ));
                *logged = c.dropped;
            }
        }
        lines
    }
}

/// Nanoseconds of a `builtin_interfaces/Time` (a negative second counts as 0).
pub fn time_ns(sec: i32, nanosec: u32) -> u64 {
    u64::try_from(sec).unwrap_or(0) * 1_000_000_000 + u64::from(nanosec)
}

/// The system time in nanoseconds since the epoch: the stamp of a message relayed without `/clock`.
pub fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(entries: &[(&str, &str)]) -> Vec<(String, Vec<String>)> {
        (entries.iter())
            .map(|(n, t)| ((*n).to_owned(), vec![(*t).to_owned()]))
            .collect()
    }

    #[test]
    fn names_vanish_when_gone_or_of_another_type() {
        let now = graph(&[("/a", "std_msgs/msg/String"), ("/b", "std_msgs/msg/Bool")]);
        let now = first_types(&now);
        let advertised: BTreeMap<String, String> = [
            ("/a", "std_msgs/msg/String"),
            ("/b", "std_msgs/msg/String"),
            ("/c", "std_msgs/msg/String"),
        ]
        .iter()
        .map(|(n, t)| ((*n).to_owned(), (*t).to_owned()))
        .collect();
        let gone = vanished(advertised.iter().map(|(n, t)| (n, t.as_str())), &now);
        assert_eq!(gone, ["/b", "/c"]);
    }

    #[test]
    fn action_internals_are_not_callable() {
        let g = graph(&[
            ("/move/_action/send_goal", "x/action/Y_SendGoal"),
            ("/reload", "std_srvs/srv/Trigger"),
        ]);
        assert_eq!(callable_services(&g).into_keys().collect::<Vec<_>>(), ["/reload"]);
    }

    #[test]
    fn drops_are_reported_when_they_grow() {
        let mut watch = DropWatch::default();
        let mut stats = vec![ClientStats {
            address: "127.0.0.1:9".parse().unwrap(),
            subscriptions: 1,
            sent: 10,
            dropped: 0,
            queued: 0,
        }];
        assert!(watch.news(&stats).is_empty());
        stats[0].dropped = 3;
        assert_eq!(watch.news(&stats).len(), 1);
        assert!(watch.news(&stats).is_empty());
        assert_eq!(time_ns(2, 5), 2_000_000_005);
        assert_eq!(time_ns(-1, 5), 5);
        assert!(wall_ns() > 0);
    }
}
