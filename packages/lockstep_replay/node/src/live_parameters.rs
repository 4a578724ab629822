//! Reading and setting the live modules' parameters through their nodes' standard services
//! (`<node>/list_parameters`, `get_parameters`, `set_parameters`), from a short-lived node of this process.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use futures::FutureExt as _;
use lockstep_replay::parameters::Difference;
use lockstep_ros::parameter_text;
use lockstep_ros::qos;
use lockstep_trace_ros::topology_topic;
use r2r::rcl_interfaces::msg::Parameter;
use r2r::rcl_interfaces::srv::{GetParameters, ListParameters, SetParameters};

/// Longest wait for a module's node to show in the graph and for its services.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for one answer before the request is sent again, and how many times it is sent.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);
const ASKS: u32 = 4;

/// A short-lived node of this process talking to the live modules' parameter services.
pub(crate) struct Live {
    node: r2r::Node,
}

impl Live {
    pub(crate) fn new() -> anyhow::Result<Self> {
        let node = lockstep_ros::create_node("lockstep_replay_parameters", "")?;
        Ok(Self { node })
    }

    /// Spin the node until `future` is ready, at most [`CALL_TIMEOUT`].
    fn wait<T>(&mut self, future: impl Future<Output = T>) -> Option<T> {
        self.wait_at_most(future, CALL_TIMEOUT)
    }

    /// Spin the node until `future` is ready, at most `timeout`.
    fn wait_at_most<T>(&mut self, future: impl Future<Output = T>, timeout: Duration) -> Option<T> {
        let mut future = std::pin::pin!(future);
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(v) = future.as_mut().now_or_never() {
                return Some(v);
            }
            if Instant::now() > deadline {
                return None;
            }
            self.node.spin_once(Duration::from_millis(5));
        }
    }

    /// The node announcing `module`'s topology (waiting for the graph to show it), else `hint` (the node the
    /// recorder read), else `/<module>`.
    pub(crate) fn node_of(&mut self, module: &str, hint: Option<String>) -> String {
        let deadline = Instant::now() + CALL_TIMEOUT;
        loop {
            let found = self
                .node
                .get_publishers_info_by_topic(&topology_topic(module), false)
                .ok()
                .and_then(|p| p.into_iter().next())
                // A node not discovered yet is named `_NODE_NAME_UNKNOWN_`: look again.
                .filter(|p| !p.node_name.contains("_UNKNOWN_") && !p.node_namespace.contains("_UNKNOWN_"));
            if let Some(p) = found {
                return format!("{}/{}", p.node_namespace.trim_end_matches('/'), p.node_name);
            }
            if Instant::now() > deadline {
                return hint.unwrap_or_else(|| format!("/{module}"));
            }
            self.node.spin_once(Duration::from_millis(20));
        }
    }

    /// Call `service` (`<node>/<name>`) with `request`, waiting for it to be available.
    fn call<S: r2r::WrappedServiceTypeSupport + 'static>(
        &mut self,
        service: &str,
        request: &S::Request,
    ) -> anyhow::Result<S::Response> {
        let client = self
            .node
            .create_client::<S>(service, qos::reliable(10))
            .with_context(|| format!("creating a client of {service}"))?;
        let available = r2r::Node::is_available(&client)?;
        self.wait(available)
            .with_context(|| format!("{service} did not appear within {CALL_TIMEOUT:?}"))??;
        // A request sent just as the service appeared may go unanswered (the answer leaves before its way
        // back is matched): send it again after each ANSWER_TIMEOUT.
        for _ in 0..ASKS {
            let answer = client.request(request)?;
            if let Some(answered) = self.wait_at_most(answer, ANSWER_TIMEOUT) {
                return Ok(answered?);
            }
        }
        bail!("{service} did not answer {ASKS} requests, {ANSWER_TIMEOUT:?} each")
    }

    /// Every parameter of `node`: name -> typed text.
    pub(crate) fn read(&mut self, node: &str) -> anyhow::Result<BTreeMap<String, String>> {
        let list = ListParameters::Request {
            prefixes: Vec::new(),
            depth: 0, // every level
        };
        let names = self
            .call::<ListParameters::Service>(&format!("{node}/list_parameters"), &list)?
            .result
            .names;
        let get = GetParameters::Request { names: names.clone() };
        let values = self
            .call::<GetParameters::Service>(&format!("{node}/get_parameters"), &get)?
            .values;
        if values.len() != names.len() {
            bail!(
                "{node}/get_parameters answered {} values for {} names",
                values.len(),
                names.len()
            );
        }
        Ok(names
            .into_iter()
            .zip(values.iter().map(parameter_text::format))
            .collect())
    }

    /// Set the recorded values of `diffs` on `node` in one request, then read them back.
    pub(crate) fn set(&mut self, module: &str, node: &str, diffs: &[Difference]) -> anyhow::Result<()> {
        let mut request = SetParameters::Request::default();
        for d in diffs {
            let value = parameter_text::parse(&d.recorded)
                .with_context(|| format!("the recorded {} of {module}", d.parameter))?;
            request.parameters.push(Parameter {
                name: d.parameter.clone(),
                value,
            });
        }
        let service = format!("{node}/set_parameters");
        let answer = self.call::<SetParameters::Service>(&service, &request)?;
        if answer.results.len() != diffs.len() {
            bail!(
                "{service} answered {} results for {} parameters",
                answer.results.len(),
                diffs.len()
            );
        }
        for (d, result) in diffs.iter().zip(&answer.results) {
            if !result.successful {
                bail!(
                    "--apply-recorded-parameters: live module {module} refused {} = {}: {}",
                    d.parameter,
                    d.recorded,
                    if result.reason.is_empty() {
                        "no reason given"
                    } else {
                        &result.reason
                    }
                );
            }
        }
        let now = self.read(node)?;
        for d in diffs {
            if now.get(&d.parameter) != Some(&d.recorded) {
                bail!(
                    "--apply-recorded-parameters: live module {module} accepted {} = {} but holds {}",
                    d.parameter,
                    d.recorded,
                    now.get(&d.parameter).map_or("nothing", String::as_str)
                );
            }
        }
        Ok(())
    }
}
