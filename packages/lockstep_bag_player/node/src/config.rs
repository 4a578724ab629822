//! What a play is asked to do: the same options as node parameters ([`PlayerParams`]) and as
//! `lockstep bag play` flags (see `cli`), with `ros2 bag play`'s names.

pub use lockstep_bag_player::PlayConfig;
use lockstep_bag_player::{PlayOptions, MAX_CLOCK_HZ};
use lockstep_ros::{Int, ParamRule, ParamRules, Real};

/// Parameters of `lockstep_bag_player` (the flags of `ros2 bag play`, with `_` for `-`).
#[derive(r2r::RosParams, Debug, Clone)]
pub struct PlayerParams {
    /// Bag to play: a bag directory or a single MCAP or sqlite3 file; several, separated by commas, play as one stream merged by time stamp (equal stamps in the order given).
    pub bag: String,
    /// Playback rate: 2.0 plays twice as fast as recorded. Must be > 0.
    pub rate: f64,
    /// Start paused (`~/resume`, `~/play_next` or `~/burst` go on).
    pub start_paused: bool,
    /// Seconds after the bag's first message to start from.
    pub start_offset: f64,
    /// Seconds of bag time to play (<= 0: to the end).
    pub playback_duration: f64,
    /// Stop after this bag time, in seconds since the epoch (0: no limit).
    pub playback_until_timestamp: f64,
    /// Topics to play, separated by commas or spaces (with `regex` empty and this empty: every topic).
    pub topics: String,
    /// Also play topics matching this regular expression.
    pub regex: String,
    /// Do not play topics matching this regular expression (topics listed in `topics` still play).
    pub exclude_regex: String,
    /// Remapping rules `from:=to` (absolute topic names), separated by commas or spaces.
    pub remap: String,
    /// Publish /clock (rosgraph_msgs/Clock) with the bag time at this frequency in Hz (0: no /clock).
    pub clock: f64,
    /// Seconds to wait before the first message.
    pub delay: f64,
    /// Messages read ahead of playback.
    pub read_ahead_queue_size: i64,
    /// A rosbag2 QoS override file (YAML: topic -> policies); empty: none.
    pub qos_profile_overrides_path: String,
    /// At the end of a play, wait at most this many ms until every reliable subscriber acknowledged every
    /// message (rosbag2's --wait-for-all-acked; 0: do not wait).
    pub wait_for_all_acked: i64,
    /// Before the first message of a play, wait until every played topic has this many matched subscriptions
    /// (0: do not wait), so nothing is published before the subscribers are there.
    pub wait_for_subscribers: i64,
    /// Stop the node when playback ends (otherwise it stays up and `~/play` starts another play).
    pub exit_at_end: bool,
    /// Which time stamp orders and times the messages: `received` (log time) or `sent` (publish time where the bag stores one, else log time), as rosbag2's --message-order.
    pub message_order: String,
    /// Topics (bag names, separated by commas or spaces) whose messages publish /clock with their time stamp just before they are played (rosbag2's --clock-topics; not with `clock`).
    pub clock_topics: String,
    /// Publish /clock with each message's time stamp just before it is played (rosbag2's --clock-topics-all).
    pub clock_topics_all: bool,
    /// Send the requests recorded in services' introspection events (`<service>/_service_event`) to the live servers instead of publishing the events (rosbag2's --publish-service-requests).
    pub publish_service_requests: bool,
    /// Whose recorded events hold the requests to send: `service_introspection` (the servers') or `client_introspection` (the clients').
    pub service_requests_source: String,
    /// Send the recorded goal, cancel and result requests of actions (their services' introspection events, rosbag2 Kilted's layout) to the live action servers instead of publishing the events (rosbag2's --send-actions-as-client).
    pub send_actions_as_client: bool,
}

/// What each parameter may hold (`lockstep_ros::ParamRules`), checked at start (the `lockstep bag play` flags
/// too, which become the defaults) and on every run-time set. `bag` is checked by [`PlayConfig::from_params`],
/// whose message says how to give one.
const RULES: &[ParamRule] = &[
    ParamRule::real("rate", Real::closed(0.001, 1000.0, "")),
    ParamRule::real("start_offset", Real::closed(0.0, 1e9, "s")),
    ParamRule::real("playback_duration", Real::closed(-1e9, 1e9, "s")),
    ParamRule::real("playback_until_timestamp", Real::closed(0.0, 1e10, "s")),
    ParamRule::real("clock", CLOCK_HZ),
    ParamRule::real("delay", Real::closed(0.0, 1e9, "s")),
    ParamRule::int("read_ahead_queue_size", Int::closed(1, 10_000_000, "messages")),
    ParamRule::int("wait_for_all_acked", Int::closed(0, 3_600_000, "ms")),
    ParamRule::int("wait_for_subscribers", Int::closed(0, 10_000, "subscriptions")),
    ParamRule::one_of("message_order", &["received", "sent"]),
    ParamRule::one_of(
        "service_requests_source",
        &["service_introspection", "client_introspection"],
    ),
];

/// `/clock` frequencies; 0 (no `/clock`) or at least the core's `MIN_CLOCK_HZ` (checked there).
const CLOCK_HZ: Real = Real::closed(0.0, MAX_CLOCK_HZ, "Hz");

impl ParamRules for PlayerParams {
    fn param_rules() -> &'static [ParamRule] {
        RULES
    }
}

impl Default for PlayerParams {
    fn default() -> Self {
        Self {
            bag: String::new(),
            rate: 1.0,
            start_paused: false,
            start_offset: 0.0,
            playback_duration: -1.0,
            playback_until_timestamp: 0.0,
            topics: String::new(),
            regex: String::new(),
            exclude_regex: String::new(),
            remap: String::new(),
            clock: 0.0,
            delay: 0.0,
            read_ahead_queue_size: 1000,
            qos_profile_overrides_path: String::new(),
            wait_for_all_acked: 1000,
            wait_for_subscribers: 0,
            exit_at_end: false,
            message_order: "received".to_owned(),
            clock_topics: String::new(),
            clock_topics_all: false,
            publish_service_requests: false,
            service_requests_source: "service_introspection".to_owned(),
            send_actions_as_client: false,
        }
    }
}

impl PlayerParams {
    /// The same values for the core's checks.
    pub fn options(&self) -> PlayOptions {
        PlayOptions {
            bag: self.bag.clone(),
            rate: self.rate,
            start_paused: self.start_paused,
            start_offset: self.start_offset,
            playback_duration: self.playback_duration,
            playback_until_timestamp: self.playback_until_timestamp,
            topics: self.topics.clone(),
            regex: self.regex.clone(),
            exclude_regex: self.exclude_regex.clone(),
            remap: self.remap.clone(),
            clock: self.clock,
            delay: self.delay,
            read_ahead_queue_size: self.read_ahead_queue_size,
            qos_profile_overrides_path: self.qos_profile_overrides_path.clone(),
            wait_for_all_acked: self.wait_for_all_acked,
            wait_for_subscribers: self.wait_for_subscribers,
            exit_at_end: self.exit_at_end,
            message_order: self.message_order.clone(),
            clock_topics: self.clock_topics.clone(),
            clock_topics_all: self.clock_topics_all,
            publish_service_requests: self.publish_service_requests,
            service_requests_source: self.service_requests_source.clone(),
            send_actions_as_client: self.send_actions_as_client,
        }
    }
}

/// [`PlayConfig::from_params`], kept under its old name now that [`PlayConfig`] lives in the core.
pub trait FromParams: Sized {
    /// Check the parameters; errors name the parameter. `looped` is the parameter `loop` (a Rust keyword,
    /// so read from the node's parameters apart from [`PlayerParams`]).
    fn from_params(p: &PlayerParams, looped: bool) -> anyhow::Result<Self>;
}

impl FromParams for PlayConfig {
    fn from_params(p: &PlayerParams, looped: bool) -> anyhow::Result<Self> {
        let options = p.options();
        options.check_bag().map_err(anyhow::Error::msg)?;
        lockstep_ros::param_rules::check_all(&mut p.clone()).map_err(anyhow::Error::msg)?;
        options.config(looped).map_err(anyhow::Error::msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(change: impl FnOnce(&mut PlayerParams)) -> Result<PlayConfig, String> {
        let mut p = PlayerParams {
            bag: "some.mcap".into(),
            ..PlayerParams::default()
        };
        change(&mut p);
        PlayConfig::from_params(&p, false).map_err(|e| e.to_string())
    }

    #[test]
    fn bad_numbers_are_refused_with_the_parameter_and_its_range() {
        assert!(config(|_| {}).is_ok());
        assert!(config(|p| p.clock = 100.0).is_ok());
        assert_eq!(
            config(|p| p.rate = f64::NAN).err().as_deref(),
            Some("parameter 'rate' = NaN: must be finite and in [0.001, 1000]")
        );
        assert_eq!(
            config(|p| p.delay = 1e300).err().as_deref(),
            Some("parameter 'delay' = 1e300: must be finite and in [0, 1000000000] s")
        );
        assert_eq!(
            config(|p| p.read_ahead_queue_size = 0).err().as_deref(),
            Some("parameter 'read_ahead_queue_size' = 0: must be an integer in [1, 10000000] messages")
        );
        // A clock so slow its period does not fit a timer would panic there.
        for hz in [1e-300, 5e-324] {
            let e = config(|p| p.clock = hz).err().unwrap_or_default();
            assert!(
                e.starts_with("parameter 'clock' = ")
                    && e.contains("must be 0 (no /clock) or in [0.001, 10000] Hz"),
                "{e}"
            );
        }
        assert!(config(|p| p.bag.clear())
            .err()
            .is_some_and(|e| e.contains("no bag given")));
    }
}
