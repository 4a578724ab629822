//! The protocol's `getParameters` / `setParameters` apart from the ROS calls: which node each named parameter
//! (`/node.parameter`) belongs to, which nodes have parameters at all, and the answer's entries. Problems come
//! back as text lines for a status message.

use std::collections::BTreeMap;

use crate::param_value::{split_name, to_json, ParamValue};
use crate::protocol::Parameter;

/// The type of the service every node with parameters offers.
const LIST_TYPE: &str = "rcl_interfaces/srv/ListParameters";

/// The problem of a name that is not `/node.parameter`.
pub fn bad_name(name: &str) -> String {
    format!("`{name}` is not a parameter name of the form /node.parameter")
}

/// Parameter names per node (sorted by node, in the order given); a bad name is a problem.
pub fn names_by_node<'a>(
    names: impl Iterator<Item = &'a str>,
    problems: &mut Vec<String>,
) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for name in names {
        match split_name(name) {
            Some((node, param)) => out.entry(node.to_owned()).or_default().push(param.to_owned()),
            None => problems.push(bad_name(name)),
        }
    }
    out
}

/// The parameters to set per node, each with its name on that node (sorted by node, in the order given); a
/// bad name is a problem.
pub fn sets_by_node<'a>(
    parameters: &'a [Parameter],
    problems: &mut Vec<String>,
) -> BTreeMap<String, Vec<(String, &'a Parameter)>> {
    let mut out: BTreeMap<String, Vec<(String, &Parameter)>> = BTreeMap::new();
    for p in parameters {
        match split_name(&p.name) {
            Some((node, name)) => (out.entry(node.to_owned()).or_default()).push((name.to_owned(), p)),
            None => problems.push(bad_name(&p.name)),
        }
    }
    out
}

/// The nodes that offer parameter services, from the graph's services (name, types): those with a
/// `<node>/list_parameters` of the standard type.
pub fn nodes_with_parameters(services: Vec<(String, Vec<String>)>) -> Vec<String> {
    (services.into_iter())
        .filter(|(_, types)| types.iter().any(|t| t == LIST_TYPE))
        .filter_map(|(name, _)| name.strip_suffix("/list_parameters").map(str::to_owned))
        .collect()
}

/// The answer's entry for `param` of `node` (`None` for a parameter that is not set).
pub fn entry(node: &str, param: &str, value: &ParamValue) -> Option<Parameter> {
    let (value, type_name) = to_json(value)?;
    Some(Parameter {
        name: format!("{node}.{param}"),
        value,
        type_name: type_name.map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::param_value::kind;
    use serde_json::json;

    #[test]
    fn names_are_grouped_by_node_and_bad_ones_reported() {
        let mut problems = Vec::new();
        let names = ["/sim.a", "/arm.b", "bad", "/sim.c.d"];
        let grouped = names_by_node(names.into_iter(), &mut problems);
        assert_eq!(grouped["/sim"], ["a", "c.d"]);
        assert_eq!(grouped["/arm"], ["b"]);
        assert_eq!(
            problems,
            ["`bad` is not a parameter name of the form /node.parameter"]
        );
        let sets = [Parameter {
            name: "/sim.time_scale".into(),
            value: json!(2.0),
            type_name: None,
        }];
        let by_node = sets_by_node(&sets, &mut problems);
        assert_eq!(by_node["/sim"][0].0, "time_scale");
    }

    #[test]
    fn nodes_are_those_with_the_list_service() {
        let services = vec![
            ("/sim/list_parameters".to_owned(), vec![LIST_TYPE.to_owned()]),
            ("/x/list_parameters".to_owned(), vec!["other/srv/T".to_owned()]),
            ("/sim/reload".to_owned(), vec!["std_srvs/srv/Trigger".to_owned()]),
        ];
        assert_eq!(nodes_with_parameters(services), ["/sim"]);
    }

    #[test]
    fn entries_are_named_by_node_and_unset_ones_left_out() {
        let value = ParamValue {
            type_: kind::INTEGER,
            integer_value: 3,
            ..ParamValue::default()
        };
        let e = entry("/sim", "seed", &value).unwrap();
        assert_eq!((e.name.as_str(), e.value.clone()), ("/sim.seed", json!(3)));
        assert!(entry("/sim", "x", &ParamValue::default()).is_none());
    }
}
