//! Subscribe and unsubscribe: a client's subscriptions to advertised channels, and the [`Event`]s telling
//! the node when a channel gets its first subscriber or loses its last.

use crate::protocol::{self, ClientMessage, Level};
use crate::server::{Event, Server};
use crate::state::ClientIo;

impl Server {
    /// Acts on a subscribe or unsubscribe of client `id`.
    pub(crate) fn subscriptions(&self, id: u64, io: &ClientIo, message: ClientMessage) {
        let mut problems = Vec::new();
        let mut events = Vec::new();
        {
            let mut st = self.shared.state();
            match message {
                ClientMessage::Subscribe(subs) => {
                    for s in subs {
                        let Some(topic) = st.channels.get(&s.channel_id).map(|c| c.topic.clone()) else {
                            problems.push(format!("subscribe: unknown channel id {}", s.channel_id));
                            continue;
                        };
                        let first = st.subscribers(s.channel_id) == 0;
                        let Some(client) = st.clients.get_mut(&id) else {
                            return;
                        };
                        if client.subscriptions.contains_key(&s.id) {
                            problems.push(format!("subscribe: subscription id {} is already in use", s.id));
                            continue;
                        }
                        if client.by_channel.contains_key(&s.channel_id) {
                            problems.push(format!(
                                "subscribe: channel {} ({topic}) is already subscribed",
                                s.channel_id
                            ));
                            continue;
                        }
                        client.subscriptions.insert(s.id, s.channel_id);
                        client.by_channel.insert(s.channel_id, s.id);
                        st.replay_latched(id, s.id, s.channel_id);
                        if first {
                            events.push(Event::Subscribed {
                                channel_id: s.channel_id,
                                topic,
                            });
                        }
                    }
                }
                ClientMessage::Unsubscribe(ids) => {
                    for sub in ids {
                        let Some(client) = st.clients.get_mut(&id) else {
                            return;
                        };
                        let Some(channel_id) = client.subscriptions.remove(&sub) else {
                            problems.push(format!("unsubscribe: unknown subscription id {sub}"));
                            continue;
                        };
                        client.by_channel.remove(&channel_id);
                        if st.subscribers(channel_id) == 0 {
                            if let Some(c) = st.channels.get(&channel_id) {
                                events.push(Event::Unsubscribed {
                                    channel_id,
                                    topic: c.topic.clone(),
                                });
                            }
                        }
                    }
                }
                ClientMessage::GetParameters { .. } | ClientMessage::SetParameters { .. } => {}
            }
        }
        for e in events {
            let _ = self.shared.events.send(e);
        }
        if !problems.is_empty() {
            let shown = problems.len().min(20);
            let more = problems.len() - shown;
            let mut text = problems[..shown].join("; ");
            if more > 0 {
                text += &format!("; and {more} more");
            }
            io.control(protocol::status(Level::Error, text));
        }
    }
}
