//! Routes between stations. A [`Planner`] (the [`StationMap`], or any other) answers
//! "how do I get from station C to station A": the stations on the way, their points and the speed limit.
//! [`plan_routes`] is the pass after decomposition that lets a template say where to go instead of how:
//!
//! ```yaml
//! - type: pick_and_go
//!   parameters: {route: {from: "{from}", to: O}}   # becomes the points A, J1, J2, O of the station map
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};

use petgraph::algo::dijkstra;
use petgraph::graph::NodeIndex;
use petgraph::visit::{EdgeRef, NodeFiltered, Reversed};
use serde_json::{json, Value};

use crate::map::StationMap;
pub use crate::travel::RouteError;
use crate::travel::{Cost, Edge};
use crate::tree::Tree;

/// The parameter [`plan_routes`] plans.
pub const ROUTE: &str = "route";
/// Set by [`plan_routes`]: the station names of the planned route, in order.
pub const ROUTE_STATIONS: &str = "route_stations";
/// Set by [`plan_routes`]: the planned route's length (m).
pub const ROUTE_LENGTH: &str = "route_length_m";

/// A planned route from one station to another.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedRoute {
    /// Every station on the way: the start first, the destination last.
    pub stations: Vec<String>,
    /// Their positions (m, in the map's frame): one point per station, the start included.
    pub points: Vec<[f64; 2]>,
    /// Along the lanes (m).
    pub length_m: f64,
    /// Driving every lane at its speed limit (s).
    pub time_s: f64,
    /// The lowest speed limit of its lanes (m/s); +inf for a route from a station to itself (no lane).
    pub speed_limit_mps: f64,
}

/// Plans routes between named stations.
pub trait Planner {
    /// The fastest route from station `from` to station `to`.
    fn plan(&self, from: &str, to: &str) -> Result<PlannedRoute, RouteError>;

    /// The travel time (s) of the route from each of `from` to `to`, in the order of `from`: what
    /// [`plan`](Planner::plan) gives as `time_s`. A planner may answer all of them with one search.
    fn travel_times(&self, from: &[&str], to: &str) -> Vec<Result<f64, RouteError>> {
        from.iter().map(|f| self.plan(f, to).map(|r| r.time_s)).collect()
    }
}

/// A `route` parameter that cannot be planned: the subtask's path, the parameter and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RouteSpecError {
    #[error("{path}: {param}: {source}")]
    Plan {
        path: String,
        param: String,
        #[source]
        source: Box<RouteError>,
    },
    #[error("{path}: {param}: {reason}")]
    Malformed {
        path: String,
        param: String,
        reason: String,
    },
}

/// The fastest drive speed a task may ask for (m/s): far above any warehouse robot, far below a number that
/// overflows a travel-time estimate.
pub const MAX_SPEED_MPS: f64 = 1000.0;

/// Plan every `route: {from: <station>, to: <station>}` parameter of a decomposed task.
///
/// Each such value (templated already, so both are station names) becomes the planned route's points, a
/// list of `{x, y}` (m, the map's frame) from the start to the destination, which the navigation actuator
/// follows. The subtask also gets `route_stations` (the station names) and `route_length_m`. Its parameter
/// `speed_param` (e.g. `speed`), when a number, becomes the smaller of itself and the route's speed limit; when
/// absent, it is set to the speed limit (unless the route has no lane). A `route` that is a list already is a
/// route of points and stays as it is. Errors name the subtask's path and the parameter; the tree is then left
/// as it was.
pub fn plan_routes(tree: &mut Tree, planner: &dyn Planner, speed_param: &str) -> Result<(), RouteSpecError> {
    // Plan everything first, so that an error leaves the tree untouched; a route that subtasks inherit from
    // their parent is planned once.
    let mut planned: BTreeMap<(String, String), PlannedRoute> = BTreeMap::new();
    let mut to_apply = Vec::new();
    for (id, node) in tree.nodes.iter().enumerate() {
        let Some(Value::Object(spec)) = node.params.get(ROUTE) else {
            continue;
        };
        let key = endpoints(spec).map_err(|reason| RouteSpecError::Malformed {
            path: node.path.clone(),
            param: ROUTE.into(),
            reason,
        })?;
        // A drive's speed is a finite number > 0 (a negative or huge one would reach the drive as it is).
        if let Some(v) = node.params.get(speed_param).and_then(Value::as_f64) {
            if !(v.is_finite() && v > 0.0 && v <= MAX_SPEED_MPS) {
                return Err(RouteSpecError::Malformed {
                    path: node.path.clone(),
                    param: speed_param.into(),
                    reason: format!("{v} m/s is not a speed: it must be in (0, {MAX_SPEED_MPS}] m/s"),
                });
            }
        }
        if !planned.contains_key(&key) {
            let route = planner
                .plan(&key.0, &key.1)
                .map_err(|source| RouteSpecError::Plan {
                    path: node.path.clone(),
                    param: ROUTE.into(),
                    source: Box::new(source),
                })?;
            planned.insert(key.clone(), route);
        }
        to_apply.push((id, key));
    }
    for (id, key) in to_apply {
        if let (Some(node), Some(route)) = (tree.nodes.get_mut(id), planned.get(&key)) {
            apply(&mut node.params, route, speed_param);
        }
    }
    Ok(())
}

/// The station names of `{from: A, to: B}`, or what is wrong with it.
fn endpoints(spec: &serde_json::Map<String, Value>) -> Result<(String, String), String> {
    const SHAPE: &str = "a route is {from: <station>, to: <station>} or a list of points";
    if let Some(extra) = spec.keys().find(|k| *k != "from" && *k != "to") {
        return Err(format!("unexpected key `{extra}`: {SHAPE}"));
    }
    let name = |end: &str| match spec.get(end) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(other) => Err(format!("`{end}` is {other}, not a station name: {SHAPE}")),
        None => Err(format!("`{end}` is missing: {SHAPE}")),
    };
    Ok((name("from")?, name("to")?))
}

fn apply(params: &mut BTreeMap<String, Value>, route: &PlannedRoute, speed_param: &str) {
    let points = route
        .points
        .iter()
        .map(|[x, y]| json!({"x": x, "y": y}))
        .collect();
    params.insert(ROUTE.into(), Value::Array(points));
    params.insert(ROUTE_STATIONS.into(), json!(route.stations));
    params.insert(ROUTE_LENGTH.into(), json!(route.length_m));
    let limit = route.speed_limit_mps;
    if !limit.is_finite() {
        return;
    }
    match params.get(speed_param) {
        Some(Value::Number(n)) if n.as_f64().is_some_and(|v| limit < v) => {
            params.insert(speed_param.into(), json!(limit));
        }
        None => {
            params.insert(speed_param.into(), json!(limit));
        }
        // A smaller number stands; a value that is not a number is not a speed this pass knows.
        Some(_) => {}
    }
}

/// Planning on a station map: the fastest route by time. One Dijkstra search from the destination over the
/// reversed lanes gives every station's (time, lanes) to it, in whole nanoseconds, so equally fast routes tie
/// exactly; the route then follows, from the start, the lanes that keep to it.
impl StationMap {
    /// The cost of the fastest route from every station that can reach `to`: one search over the reversed
    /// lanes.
    fn costs_to(&self, to: usize) -> HashMap<NodeIndex, Cost> {
        // Collected into std's map: petgraph returns hashbrown's when another crate enables that feature.
        let costs = dijkstra(Reversed(&self.graph), NodeIndex::new(to), None, |e| {
            e.weight().cost()
        });
        costs.into_iter().collect()
    }

    /// The fastest route from `from` to `to` through none of the stations `avoid` (a way around stations
    /// other robots hold); `to` and `from` themselves may not be avoided.
    pub fn plan_around(
        &self,
        from: &str,
        to: &str,
        avoid: &BTreeSet<String>,
    ) -> Result<PlannedRoute, RouteError> {
        let (f, t) = (self.index(from)?, self.index(to)?);
        let avoided: BTreeSet<usize> = (avoid.iter())
            .filter_map(|s| self.index(s).ok())
            .filter(|&n| n != f && n != t)
            .collect();
        let open = NodeFiltered::from_fn(&self.graph, |n: NodeIndex| !avoided.contains(&n.index()));
        let costs: HashMap<NodeIndex, Cost> =
            dijkstra(Reversed(&open), NodeIndex::new(t), None, |e| e.weight().cost())
                .into_iter()
                .collect();
        self.route(f, t, &costs)
    }

    /// The route the `costs` lead along from `from` to `to`.
    fn route(
        &self,
        f: usize,
        t: usize,
        costs: &HashMap<NodeIndex, Cost>,
    ) -> Result<PlannedRoute, RouteError> {
        let (nodes, edges) = self
            .walk(f, t, costs)
            .ok_or_else(|| self.unreachable(f, t, costs))?;
        Ok(PlannedRoute {
            stations: nodes.iter().map(|&n| self.names[n].clone()).collect(),
            points: nodes.iter().map(|&n| self.positions[n]).collect(),
            length_m: edges.iter().fold(0.0, |l, e| l + e.length_m),
            time_s: time_of(&edges),
            speed_limit_mps: edges.iter().fold(f64::INFINITY, |s, e| s.min(e.speed_limit_mps)),
        })
    }

    /// The route from `from` along the fastest lanes to the station the `costs` lead to: at each station the
    /// lane to the next one on a fastest route, the first name among equals. Since every lane on the way
    /// has the same (time, lanes) left, this is the first station sequence, name by name, of the fastest
    /// routes with the fewest lanes. `None` when `from` cannot reach it.
    fn walk(
        &self,
        from: usize,
        to: usize,
        costs: &HashMap<NodeIndex, Cost>,
    ) -> Option<(Vec<usize>, Vec<Edge>)> {
        costs.get(&NodeIndex::new(from))?;
        let (mut nodes, mut edges) = (vec![from], Vec::new());
        let mut at = from;
        while at != to {
            if edges.len() > self.names.len() {
                return None;
            }
            let (_, next, edge) = self
                .graph
                .edges(NodeIndex::new(at))
                .filter_map(|e| {
                    let left = *costs.get(&e.target())?;
                    Some((e.weight().cost() + left, e.target().index(), *e.weight()))
                })
                .min_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)))?;
            nodes.push(next);
            edges.push(edge);
            at = next;
        }
        Some((nodes, edges))
    }

    fn unreachable(&self, from: usize, to: usize, costs: &HashMap<NodeIndex, Cost>) -> RouteError {
        let (f, t) = (&self.names[from], &self.names[to]);
        let directed = petgraph::Direction::Incoming;
        let reason = if self
            .graph
            .neighbors_directed(NodeIndex::new(to), directed)
            .next()
            .is_none()
        {
            format!("no lane leads into {t}")
        } else if self.graph.neighbors(NodeIndex::new(from)).next().is_none() {
            format!("no lane leads out of {f}")
        } else {
            let mut leading: Vec<&String> = costs.keys().map(|n| &self.names[n.index()]).collect();
            leading.sort();
            let few: Vec<&str> = leading.iter().take(8).map(|s| s.as_str()).collect();
            format!(
                "{} of the {} stations lead to {t} ({}{}), {f} is not one of them (check the one-way lanes)",
                leading.len(),
                self.names.len(),
                few.join(", "),
                if leading.len() > few.len() { ", ..." } else { "" }
            )
        };
        RouteError::Unreachable {
            from: f.clone(),
            to: t.clone(),
            map: self.file.clone(),
            reason,
        }
    }
}

/// Total time of a route's lanes, in their order (the same sum wherever it is computed).
fn time_of(edges: &[Edge]) -> f64 {
    edges.iter().fold(0.0, |t, e| t + e.time_s)
}

impl Planner for StationMap {
    fn plan(&self, from: &str, to: &str) -> Result<PlannedRoute, RouteError> {
        let (f, t) = (self.index(from)?, self.index(to)?);
        let costs = self.costs_to(t);
        self.route(f, t, &costs)
    }

    /// One search from `to` over the reversed lanes answers every start.
    fn travel_times(&self, from: &[&str], to: &str) -> Vec<Result<f64, RouteError>> {
        let t = match self.index(to) {
            Ok(t) => t,
            Err(e) => return vec![Err(e); from.len()],
        };
        let costs = self.costs_to(t);
        from.iter()
            .map(|name| {
                let f = self.index(name)?;
                let (_, edges) = self
                    .walk(f, t, &costs)
                    .ok_or_else(|| self.unreachable(f, t, &costs))?;
                Ok(time_of(&edges))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, Params};

    const CONFIG: &str = r#"
levels: [task, message, action]
parameters: {speed: min}
actuators:
  nav: {server: /navigate, type: lockstep_interfaces/action/Navigate, goal: {route: route, speed_mps: speed}}
templates:
  deliver:
    level: task
    required: [from, to]
    children:
      - {type: go, parameters: {route: {from: "{from}", to: O}}}
      - {type: go, parameters: {route: {from: O, to: "{to}"}}}
      - {type: go, parameters: {route: [{x: 1, y: 2}]}}
  go: {level: message, children: [{type: drive}]}
  drive: {level: action, actuator: nav}
"#;

    const MAP: &str = "\
stations: {A: {x: 0, y: 0}, O: {x: 3, y: 0}, B: {x: 3, y: 4}}
lanes:
  - {from: A, to: O, speed_limit_mps: 0.5}
  - {from: O, to: B, speed_limit_mps: 2.0}
";

    fn tree(goal: serde_json::Value) -> Tree {
        let config = Config::parse("t.yaml", CONFIG).unwrap();
        let goal: Params = serde_json::from_value(goal).unwrap();
        Tree::decompose(&config, "deliver", &goal).unwrap()
    }

    fn map() -> StationMap {
        StationMap::parse("m.yaml", MAP).unwrap()
    }

    fn params<'a>(tree: &'a Tree, path: &str) -> &'a Params {
        &tree.nodes[tree.find(path).unwrap()].params
    }

    #[test]
    fn a_speed_that_is_no_speed_is_refused_naming_the_subtask() {
        for speed in [-1e308, 0.0, 1e308] {
            let mut tree = tree(json!({"from": "A", "to": "B", "speed": speed}));
            let e = plan_routes(&mut tree, &map(), "speed").unwrap_err().to_string();
            assert!(
                e.contains("speed") && e.contains("is not a speed"),
                "{speed}: {e}"
            );
        }
    }

    #[test]
    fn routes_become_points_and_limit_the_speed() {
        let mut tree = tree(json!({"from": "A", "to": "B", "speed": 1.0}));
        plan_routes(&mut tree, &map(), "speed").unwrap();
        for path in ["task/message[0]", "task/message[0]/action[0]"] {
            let p = params(&tree, path);
            assert_eq!(
                p["route"],
                json!([{"x": 0.0, "y": 0.0}, {"x": 3.0, "y": 0.0}]),
                "{path}"
            );
            assert_eq!(p["route_stations"], json!(["A", "O"]));
            assert_eq!(p["route_length_m"], json!(3.0));
            assert_eq!(p["speed"], json!(0.5), "min(1.0, the lane's 0.5)");
        }
        let p = params(&tree, "task/message[1]/action[0]");
        assert_eq!(p["route"], json!([{"x": 3.0, "y": 0.0}, {"x": 3.0, "y": 4.0}]));
        assert_eq!(p["speed"], json!(1.0), "the task's 1.0 is below the lane's 2.0");
        // A list of points is a route already.
        let p = params(&tree, "task/message[2]/action[0]");
        assert_eq!(p["route"], json!([{"x": 1, "y": 2}]));
        assert!(!p.contains_key("route_stations"));
        assert!(!params(&tree, "task").contains_key("route"));
    }

    #[test]
    fn a_missing_speed_is_the_route_limit_unless_it_has_no_lane() {
        let mut tree = tree(json!({"from": "B", "to": "O"}));
        plan_routes(&mut tree, &map(), "speed").unwrap();
        let p = params(&tree, "task/message[0]");
        assert_eq!(p["route_stations"], json!(["B", "O"]));
        assert_eq!(p["speed"], json!(2.0));
        let p = params(&tree, "task/message[1]");
        assert_eq!(p["route"], json!([{"x": 3.0, "y": 0.0}]));
        assert_eq!(p["route_length_m"], json!(0.0));
        assert!(!p.contains_key("speed"), "{p:?}");
    }

    #[test]
    fn errors_name_the_subtask_and_leave_the_tree_as_it_was() {
        let mut tree = tree(json!({"from": "A", "to": "X", "speed": 1.0}));
        let before = tree.clone();
        let e = plan_routes(&mut tree, &map(), "speed").unwrap_err();
        assert_eq!(
            e.to_string(),
            "task/message[1]: route: `X` is not a station of m.yaml (it has: A, B, O)"
        );
        assert_eq!(tree, before);
        let one_way = MAP.replace("2.0}", "2.0, one_way: true}");
        let planner = StationMap::parse("m.yaml", &one_way).unwrap();
        let mut tree = self::tree(json!({"from": "B", "to": "A"}));
        let e = plan_routes(&mut tree, &planner, "speed").unwrap_err();
        assert_eq!(
            e.to_string(),
            "task/message[0]: route: no route from B to O on m.yaml: no lane leads out of B"
        );
        let shapes = [
            (json!({"from": "A"}), "`to` is missing"),
            (json!({"from": "A", "to": 3}), "`to` is 3, not a station name"),
            (
                json!({"from": "A", "to": "O", "via": "B"}),
                "unexpected key `via`",
            ),
        ];
        for (route, reason) in shapes {
            let mut tree = self::tree(json!({"from": "A", "to": "B"}));
            tree.nodes[1].params.insert("route".into(), route);
            let e = plan_routes(&mut tree, &map(), "speed").unwrap_err().to_string();
            let expected = format!(
                "task/message[0]: route: {reason}: a route is {{from: <station>, to: <station>}} or a list of points"
            );
            assert_eq!(e, expected);
        }
    }
}
