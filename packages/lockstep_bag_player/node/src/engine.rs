//! The play loop's outside (the core's [`Engine`] decides what and when): one generic publisher per
//! topic, subscriber counts, acknowledgements and the node's log.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use lockstep_bag::BagMessage;
use lockstep_bag_player::Sink;
pub use lockstep_bag_player::{Engine, Plan};
use lockstep_ros::generic::GenericPublisher;

/// A topic's publisher; `failing` keeps a publish error to one log line.
pub struct Outlet {
    pub publisher: GenericPublisher,
    pub name: String,
    pub failing: bool,
}

/// The publishers by bag topic name, and the node's logger.
pub struct Outlets {
    pub outlets: BTreeMap<String, Outlet>,
    pub logger: String,
}

impl Sink for Outlets {
    fn publish(&mut self, m: &BagMessage) {
        if let Some(outlet) = self.outlets.get_mut(&*m.topic) {
            match outlet.publisher.publish(&m.data) {
                Ok(()) => outlet.failing = false,
                Err(e) if !outlet.failing => {
                    outlet.failing = true;
                    r2r::log_error!(&self.logger, "publishing on {}: {e} (logged once)", outlet.name);
                }
                Err(_) => {}
            }
        }
    }

    fn wait_for_all_acked(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        for outlet in self.outlets.values() {
            let left = deadline.saturating_duration_since(Instant::now());
            if !outlet.publisher.wait_for_all_acked(left) {
                r2r::log_warn!(
                    &self.logger,
                    "{}: not every subscriber acknowledged every message within {timeout:?}",
                    outlet.name
                );
            }
        }
    }

    fn short_of_subscribers(&self, wanted: usize) -> Option<String> {
        self.outlets
            .values()
            .find(|o| o.publisher.subscription_count() < wanted)
            .map(|o| o.name.clone())
    }

    fn info(&self, line: &str) {
        r2r::log_info!(&self.logger, "{line}");
    }

    fn error(&self, line: &str) {
        r2r::log_error!(&self.logger, "{line}");
    }
}
