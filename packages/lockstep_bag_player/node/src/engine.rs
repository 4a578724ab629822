//! The play loop's outside (the core's [`Engine`] decides what and when): one generic publisher per
//! topic (or, for recorded calls sent to live servers, one client per service), `/clock` for
//! `--clock-topics`, subscriber counts, acknowledgements and the node's log.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use lockstep_bag::BagMessage;
pub use lockstep_bag_player::{Engine, Plan};
use lockstep_bag_player::{SentRequests, Sink};
use lockstep_ros::generic::{GenericClient, GenericPublisher};
use r2r::rosgraph_msgs::msg::Clock;

/// A topic's publisher; `failing` keeps a publish error to one log line.
pub struct Outlet {
    pub publisher: GenericPublisher,
    pub name: String,
    pub failing: bool,
}

/// A recorded service's (or action service's) events, whose requests are sent to the live server.
pub struct Caller {
    pub client: GenericClient,
    pub service: String,
    /// Whether the server was seen (it is waited for before the first request), and a failure was logged.
    pub ready: bool,
    pub failing: bool,
}

/// How long a recorded call waits for its service's server to appear before its first request is sent.
const SERVER_WAIT: Duration = Duration::from_secs(10);

impl Caller {
    /// Send the request of the recorded `event` (when the source's), once the server is there.
    fn call(&mut self, event: &[u8], requests: &SentRequests, logger: &str) {
        if !requests.wants(event) {
            return;
        }
        if !self.ready {
            let deadline = Instant::now() + SERVER_WAIT;
            while !self.client.server_ready() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            self.ready = self.client.server_ready();
            if !self.ready {
                r2r::log_warn!(
                    logger,
                    "{}: no server after {SERVER_WAIT:?}; sending anyway",
                    self.service
                );
                self.ready = true;
            }
        }
        match self.client.send_event_request(event) {
            Ok(_) => self.failing = false,
            Err(e) if !self.failing => {
                self.failing = true;
                r2r::log_error!(logger, "calling {}: {e} (logged once)", self.service);
            }
            Err(_) => {}
        }
    }
}

/// The publishers by bag topic name, the callers of recorded services by bag topic name, `/clock` when
/// messages drive it, and the node's logger.
pub struct Outlets {
    pub outlets: BTreeMap<String, Outlet>,
    pub callers: BTreeMap<String, Caller>,
    pub requests: SentRequests,
    pub clock: Option<r2r::Publisher<Clock>>,
    pub logger: String,
}

impl Sink for Outlets {
    fn publish(&mut self, m: &BagMessage) {
        if let Some(caller) = self.callers.get_mut(&*m.topic) {
            caller.call(&m.data, &self.requests, &self.logger);
            return;
        }
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

    fn publish_clock(&mut self, bag_ns: u64) {
        if let Some(clock) = &self.clock {
            let stamp = Clock {
                clock: lockstep_ros::time::ns_to_time(bag_ns as i64),
            };
            if let Err(e) = clock.publish(&stamp) {
                r2r::log_error!(&self.logger, "publishing /clock: {e}");
            }
        }
    }

    fn wait_for_all_acked(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        for caller in self.callers.values_mut() {
            let left = deadline.saturating_duration_since(Instant::now());
            let unanswered = caller.client.wait_for_responses(left);
            if unanswered > 0 {
                r2r::log_warn!(
                    &self.logger,
                    "{}: {unanswered} of the requests sent not answered within {timeout:?}",
                    caller.service
                );
            }
        }
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
