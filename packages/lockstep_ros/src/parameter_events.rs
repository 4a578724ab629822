//! Parameter changes announced on `/parameter_events`, as rclcpp and rclpy nodes do: r2r serves the parameter
//! services but announces nothing, so a recorder (or `ros2 param` tooling watching the topic) would never see
//! a change made to an r2r node. [`crate::declare_parameters`] wires this in for every Lockstep node.

use futures::{SinkExt as _, StreamExt as _};
use r2r::rcl_interfaces::msg::{Parameter, ParameterEvent};

use crate::error::{Result, RosContext as _};
use crate::shared_node::{lock, SharedNode};

/// The topic parameter changes are announced on.
pub const TOPIC: &str = "/parameter_events";

/// Changes waiting for a node's own reader of them (beyond, the oldest are kept and new ones dropped, as
/// r2r's own channel does).
const FORWARD_DEPTH: usize = 16;

/// Publishes each change of `changes` on [`TOPIC`] (field `changed_parameters`, stamped with the system clock,
/// `node` the node's fully qualified name) and hands it on: the returned stream yields the same changes.
pub(crate) fn announce(
    node: &SharedNode,
    changes: impl futures::Stream<Item = (String, r2r::ParameterValue)> + Send + 'static,
) -> Result<futures::stream::BoxStream<'static, (String, r2r::ParameterValue)>> {
    let mut n = lock(node)?;
    let name = n.fully_qualified_name().ros_context("reading the node's name")?;
    let publisher = n
        .create_publisher::<ParameterEvent>(TOPIC, r2r::QosProfile::parameter_events())
        .ros_context(format!("creating the publisher of {TOPIC}"))?;
    drop(n);
    let (mut forward, forwarded) = futures::channel::mpsc::channel(FORWARD_DEPTH);
    tokio::spawn(async move {
        let mut changes = std::pin::pin!(changes);
        while let Some((parameter, value)) = changes.next().await {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
            let event = ParameterEvent {
                stamp: crate::time::ns_to_time(now),
                node: name.clone(),
                changed_parameters: vec![Parameter {
                    name: parameter.clone(),
                    value: crate::parameter_text::to_msg(&value),
                }],
                ..ParameterEvent::default()
            };
            // A publish failure (shutting down) must not stop the node's own reader of the changes.
            let _ = publisher.publish(&event);
            // Full (a slow reader) or closed (nobody reads them): announcing goes on either way.
            let _ = forward.try_send((parameter, value));
        }
        let _ = forward.close().await;
    });
    Ok(forwarded.boxed())
}
