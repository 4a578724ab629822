//! The protocol's `getParameters` / `setParameters` through each node's standard parameter services
//! (`<node>/list_parameters`, `get_parameters`, `set_parameters`), as `ros2 param` does. Nodes are found in
//! the graph by their `list_parameters` service (nodes without parameter services are left out). One client
//! per node and service is kept. Every answer is sorted by name; problems (a node that does not answer, a
//! refused set with the node's reason, a value that does not fit) come back as text for a status message.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockstep_ros::graph::GraphProbe;
use lockstep_ros::{lock, SharedNode};
use lockstep_view::param_requests::{entry, names_by_node, nodes_with_parameters, sets_by_node};
use lockstep_view::param_value::from_json;
use lockstep_view::{ParamValue, Parameter};
use r2r::rcl_interfaces::msg::{Parameter as RosParameter, ParameterValue};
use r2r::rcl_interfaces::srv::{GetParameters, ListParameters, SetParameters};

struct NodeClients {
    list: r2r::Client<ListParameters::Service>,
    get: r2r::Client<GetParameters::Service>,
    set: r2r::Client<SetParameters::Service>,
}

/// Parameter access to every node of the graph.
pub struct Parameters {
    node: SharedNode,
    probe: GraphProbe,
    clients: Mutex<BTreeMap<String, Arc<NodeClients>>>,
    /// Per call, including waiting for a new client's server.
    timeout: Duration,
}

/// Values found, and what went wrong (one line each).
pub type Answer = (Vec<Parameter>, Vec<String>);

impl Parameters {
    pub fn new(node: SharedNode, probe: GraphProbe, timeout: Duration) -> Self {
        Self {
            node,
            probe,
            clients: Mutex::default(),
            timeout,
        }
    }

    /// The named parameters (none named: every parameter of every node). Unknown ones are left out.
    pub async fn get(&self, names: &[String]) -> Answer {
        let mut problems = Vec::new();
        let wanted: BTreeMap<String, Vec<String>> = if names.is_empty() {
            let mut all = BTreeMap::new();
            for node in self.nodes(&mut problems) {
                match self.list(&node).await {
                    Ok(params) => {
                        all.insert(node, params);
                    }
                    Err(e) => problems.push(e),
                }
            }
            all
        } else {
            names_by_node(names.iter().map(String::as_str), &mut problems)
        };
        let mut out = Vec::new();
        for (node, params) in wanted {
            self.read_into(&node, &params, &mut out, &mut problems).await;
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        (out, problems)
    }

    /// Sets the parameters, per node in one request; answers with their values afterwards.
    pub async fn set(&self, parameters: &[Parameter]) -> Answer {
        let mut problems = Vec::new();
        let mut out = Vec::new();
        for (node, params) in sets_by_node(parameters, &mut problems) {
            let names: Vec<String> = params.iter().map(|(name, _)| name.clone()).collect();
            if let Err(e) = self.set_on(&node, &names, &params, &mut problems).await {
                problems.push(e);
            }
            self.read_into(&node, &names, &mut out, &mut problems).await;
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        (out, problems)
    }

    /// Appends the values of `names` on `node` to `out` (unknown ones left out).
    async fn read_into(
        &self,
        node: &str,
        names: &[String],
        out: &mut Vec<Parameter>,
        problems: &mut Vec<String>,
    ) {
        match self.values(node, names).await {
            Ok(values) => {
                out.extend((names.iter().zip(&values)).filter_map(|(p, v)| entry(node, p, &core(v))))
            }
            Err(e) => problems.push(e),
        }
    }

    async fn set_on(
        &self,
        node: &str,
        names: &[String],
        params: &[(String, &Parameter)],
        problems: &mut Vec<String>,
    ) -> Result<(), String> {
        let current = self.values(node, names).await?;
        let mut request = SetParameters::Request::default();
        let mut sent = Vec::new();
        for ((name, (_, p)), now) in names.iter().zip(params).zip(&current) {
            match from_json(&p.value, p.type_name.as_deref(), now.type_) {
                Ok(value) => {
                    request.parameters.push(RosParameter {
                        name: name.clone(),
                        value: ros(value),
                    });
                    sent.push(&p.name);
                }
                Err(e) => problems.push(format!("`{}`: {e}", p.name)),
            }
        }
        if sent.is_empty() {
            return Ok(());
        }
        let clients = self.clients(node)?;
        let response = self.call(node, "set_parameters", &clients.set, &request).await?;
        for (name, result) in sent.iter().zip(&response.results) {
            if !result.successful {
                problems.push(format!("`{name}` refused by {node}: {}", result.reason));
            }
        }
        Ok(())
    }

    /// Nodes that offer parameter services, sorted.
    fn nodes(&self, problems: &mut Vec<String>) -> Vec<String> {
        match self.probe.services() {
            Ok(services) => nodes_with_parameters(services),
            Err(e) => {
                problems.push(format!("cannot read the graph's services: {e}"));
                Vec::new()
            }
        }
    }

    async fn list(&self, node: &str) -> Result<Vec<String>, String> {
        let clients = self.clients(node)?;
        let request = ListParameters::Request::default();
        let mut names = self
            .call(node, "list_parameters", &clients.list, &request)
            .await?
            .result
            .names;
        names.sort();
        Ok(names)
    }

    /// The values of `names` on `node`, in order (NOT_SET for unknown ones).
    async fn values(&self, node: &str, names: &[String]) -> Result<Vec<ParameterValue>, String> {
        let clients = self.clients(node)?;
        let request = GetParameters::Request {
            names: names.to_vec(),
        };
        let mut values = self
            .call(node, "get_parameters", &clients.get, &request)
            .await?
            .values;
        values.resize(names.len(), ParameterValue::default());
        Ok(values)
    }

    fn clients(&self, node: &str) -> Result<Arc<NodeClients>, String> {
        let mut cache = self
            .clients
            .lock()
            .map_err(|_| "parameter clients poisoned".to_owned())?;
        if let Some(c) = cache.get(node) {
            return Ok(c.clone());
        }
        let made = (|| -> r2r::Result<NodeClients> {
            let mut n = lock(&self.node).map_err(|_| r2r::Error::RCL_RET_ERROR)?;
            let qos = r2r::QosProfile::services_default;
            Ok(NodeClients {
                list: n.create_client(&format!("{node}/list_parameters"), qos())?,
                get: n.create_client(&format!("{node}/get_parameters"), qos())?,
                set: n.create_client(&format!("{node}/set_parameters"), qos())?,
            })
        })()
        .map_err(|e| format!("cannot make parameter clients for {node}: {e}"))?;
        let made = Arc::new(made);
        cache.insert(node.to_owned(), made.clone());
        Ok(made)
    }

    async fn call<T>(
        &self,
        node: &str,
        service: &str,
        client: &r2r::Client<T>,
        request: &T::Request,
    ) -> Result<T::Response, String>
    where
        T: r2r::WrappedServiceTypeSupport + 'static,
    {
        let failed = |why: String| format!("{node}/{service}: {why}");
        let answer = async {
            r2r::Node::is_available(client)
                .map_err(|e| e.to_string())?
                .await
                .map_err(|e| e.to_string())?;
            client
                .request(request)
                .map_err(|e| e.to_string())?
                .await
                .map_err(|e| e.to_string())
        };
        tokio::time::timeout(self.timeout, answer)
            .await
            .map_err(|_| failed(format!("no answer within {:.1} s", self.timeout.as_secs_f64())))?
            .map_err(failed)
    }
}

/// A value of the message as the view's core holds it.
fn core(v: &ParameterValue) -> ParamValue {
    ParamValue {
        type_: v.type_,
        bool_value: v.bool_value,
        integer_value: v.integer_value,
        double_value: v.double_value,
        string_value: v.string_value.clone(),
        byte_array_value: v.byte_array_value.clone(),
        bool_array_value: v.bool_array_value.clone(),
        integer_array_value: v.integer_array_value.clone(),
        double_array_value: v.double_array_value.clone(),
        string_array_value: v.string_array_value.clone(),
    }
}

/// A value of the view's core as the message holds it.
fn ros(v: ParamValue) -> ParameterValue {
    ParameterValue {
        type_: v.type_,
        bool_value: v.bool_value,
        integer_value: v.integer_value,
        double_value: v.double_value,
        string_value: v.string_value,
        byte_array_value: v.byte_array_value,
        bool_array_value: v.bool_array_value,
        integer_array_value: v.integer_array_value,
        double_array_value: v.double_array_value,
        string_array_value: v.string_array_value,
    }
}
