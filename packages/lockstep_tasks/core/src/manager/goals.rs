//! A goal's decomposition and check before it is accepted, the actuator goal of an action, and the attribute
//! an AddAttribute request asks for.

use serde_json::Value;

use super::environment::check_query;
use super::io::{AttributeRequest, Setup};
use crate::config::{Actuator, Attribute};
use crate::map::StationMap;
use crate::params::Params;
use crate::routes::plan_routes;
use crate::tree::Tree;

/// The goal's parameters (a JSON object), or why they are not.
pub fn goal_parameters(parameters_json: &str) -> Result<Params, String> {
    let text = if parameters_json.trim().is_empty() {
        "{}"
    } else {
        parameters_json
    };
    serde_json::from_str(text).map_err(|e| format!("parameters_json is not a JSON object: {e}"))
}

/// Decompose a task for `robot` and check every action's goal, before anything is accepted or sent. Routes
/// given as `{from, to}` stations are planned on the station map (the speed meets each lane's limit).
pub fn decompose<S: Setup>(
    setup: &S,
    task_type: &str,
    params: &Params,
    robot: &str,
    map: Option<&StationMap>,
) -> Result<Tree, String> {
    let config = setup.config();
    let mut tree = Tree::decompose(config, task_type, params).map_err(|e| e.to_string())?;
    match map {
        Some(map) => plan_routes(&mut tree, map, "speed").map_err(|e| e.to_string())?,
        None => {
            if let Some(node) =
                (tree.nodes.iter()).find(|n| n.params.get("route").is_some_and(Value::is_object))
            {
                return Err(format!(
                    "{}: route: a route between stations needs a station map (parameter 'map_file')",
                    node.path
                ));
            }
        }
    }
    if !(setup.servers().keys()).any(|(r, _)| r == robot) && !config.actuators.is_empty() {
        return Err(format!("no robot `{robot}`"));
    }
    for node in &tree.nodes {
        for attribute in &node.attributes {
            if let Attribute::Condition { query } = attribute {
                check_query(query).map_err(|e| format!("{}: {e}", node.path))?;
            }
        }
        let Some(name) = &node.actuator else { continue };
        let actuator = (config.actuators.get(name))
            .ok_or_else(|| format!("{}: actuator `{name}` is not configured", node.path))?;
        let goal = actuator_goal(&node.path, actuator, &node.params)?;
        setup
            .check_goal(robot, name, &goal)
            .map_err(|e| format!("{}: {} goal: {e}", node.path, actuator.action_type))?;
    }
    Ok(tree)
}

/// The goal (JSON) of an action at `path` for `actuator`: each mapped goal field takes its parameter's value.
pub fn actuator_goal(path: &str, actuator: &Actuator, params: &Params) -> Result<Value, String> {
    let mut goal = serde_json::Map::new();
    for (field, param) in &actuator.goal {
        let value = params.get(param).ok_or_else(|| {
            let have: Vec<&str> = params.keys().map(String::as_str).collect();
            format!(
                "{path}: goal field `{field}` takes parameter `{param}`, which this action does not have (it has: {})",
                have.join(", ")
            )
        })?;
        goal.insert(field.clone(), value.clone());
    }
    Ok(Value::Object(goal))
}

/// The attribute an AddAttribute request asks for, or why it is not one.
pub fn attribute(m: &AttributeRequest) -> Result<Attribute, String> {
    match m.kind.as_str() {
        "delay" if m.delay_s >= 0.0 && m.delay_s.is_finite() => Ok(Attribute::Delay { secs: m.delay_s }),
        "delay" => Err(format!(
            "delay_s must be a finite number >= 0 (got {})",
            m.delay_s
        )),
        "condition" if !m.query.trim().is_empty() => Ok(Attribute::Condition {
            query: m.query.clone(),
        }),
        "condition" => Err("a condition needs a query (a Datalog rule body, e.g. clear(dock_b))".into()),
        "interrupt" => Ok(Attribute::Interrupt {
            reason: if m.reason.is_empty() {
                "operator".into()
            } else {
                m.reason.clone()
            },
        }),
        other => Err(format!(
            "kind `{other}` is not one of delay, condition, interrupt"
        )),
    }
}
