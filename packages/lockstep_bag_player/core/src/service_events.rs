//! Recorded service calls played as calls, as rosbag2's player does: with `--publish-service-requests` the
//! requests in a service's introspection events (`<service>/_service_event`) are sent to the live server
//! instead of the events being published; with `--send-actions-as-client` the same for an action's goal,
//! cancel and result services (`<action>/_action/<service>/_service_event`, rosbag2 Kilted's layout). Which
//! events carry the requests to send: the server's (`service_introspection`, event type REQUEST_RECEIVED) or
//! the client's (`client_introspection`, REQUEST_SENT), so a call recorded from both sides is sent once.

use lockstep_bag::carries::{carries, Carries, SERVICE_EVENT_SUFFIX};

/// `service_msgs/msg/ServiceEventInfo.event_type` of a request as its client sent it.
pub const REQUEST_SENT: u8 = 0;
/// ... and as its server received it.
pub const REQUEST_RECEIVED: u8 = 1;

/// Whose events hold the requests to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequestSource {
    /// The servers' events (REQUEST_RECEIVED).
    #[default]
    ServiceIntrospection,
    /// The clients' events (REQUEST_SENT).
    ClientIntrospection,
}

impl RequestSource {
    /// The parameter's value (`service_introspection` or `client_introspection`).
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "service_introspection" => Ok(Self::ServiceIntrospection),
            "client_introspection" => Ok(Self::ClientIntrospection),
            other => Err(format!(
                "parameter 'service_requests_source' = `{other}`: must be one of `service_introspection`, \
                 `client_introspection`"
            )),
        }
    }

    fn event_type(self) -> u8 {
        match self {
            Self::ServiceIntrospection => REQUEST_RECEIVED,
            Self::ClientIntrospection => REQUEST_SENT,
        }
    }
}

/// Which recorded calls are sent rather than published.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SentRequests {
    pub services: bool,
    pub actions: bool,
    pub source: RequestSource,
}

impl SentRequests {
    /// The service that the requests recorded on `topic` (of type `type_name`) are sent to, when they are.
    pub fn target(&self, topic: &str, type_name: &str) -> Option<String> {
        let service = topic.strip_suffix(SERVICE_EVENT_SUFFIX)?;
        let send = match carries(topic, type_name) {
            Carries::Service(_) => self.services,
            Carries::Action(_) => self.actions && type_name.ends_with("_Event"),
            Carries::Topic => false,
        };
        send.then(|| service.to_owned())
    }

    /// Whether the recorded event `event_cdr` (serialized, with its 4-byte encapsulation header) holds a
    /// request to send: its `info.event_type`, the first byte after the header, is the source's.
    pub fn wants(&self, event_cdr: &[u8]) -> bool {
        event_cdr.get(4) == Some(&self.source.event_type())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_and_action_services_are_sent_when_asked() {
        let both = SentRequests {
            services: true,
            actions: true,
            source: RequestSource::ServiceIntrospection,
        };
        let event = "std_srvs/srv/SetBool_Event";
        assert_eq!(
            both.target("/toggle/_service_event", event).as_deref(),
            Some("/toggle")
        );
        assert_eq!(
            both.target(
                "/count/_action/send_goal/_service_event",
                "p/action/Count_SendGoal_Event"
            )
            .as_deref(),
            Some("/count/_action/send_goal")
        );
        assert_eq!(
            both.target("/count/_action/feedback", "p/action/Count_FeedbackMessage"),
            None
        );
        assert_eq!(both.target("/chatter", "std_msgs/msg/String"), None);
        let services = SentRequests {
            actions: false,
            ..both
        };
        assert_eq!(
            services.target(
                "/count/_action/send_goal/_service_event",
                "p/action/Count_SendGoal_Event"
            ),
            None
        );
        let none = SentRequests::default();
        assert_eq!(none.target("/toggle/_service_event", event), None);
    }

    #[test]
    fn the_source_picks_the_servers_or_the_clients_events() {
        let mut sent = SentRequests::default();
        let event = |kind: u8| vec![0, 1, 0, 0, kind, 0, 0, 0];
        assert!(sent.wants(&event(REQUEST_RECEIVED)) && !sent.wants(&event(REQUEST_SENT)));
        assert!(!sent.wants(&event(2)) && !sent.wants(&[0, 1]));
        sent.source = RequestSource::parse("client_introspection").unwrap();
        assert!(sent.wants(&event(REQUEST_SENT)) && !sent.wants(&event(REQUEST_RECEIVED)));
        assert!(RequestSource::parse("both")
            .unwrap_err()
            .contains("service_requests_source"));
    }
}
