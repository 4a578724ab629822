//! Nav2 route graphs (the route server's GeoJSON, `nav2_route`'s `graph_filepath`) read as station maps, so a
//! graph drawn for Nav2 plans here without being drawn again.
//!
//! ```json
//! {"type": "FeatureCollection", "features": [
//!   {"type": "Feature", "geometry": {"type": "Point", "coordinates": [2.5, 5.5]},
//!    "properties": {"id": 0, "frame": "map", "metadata": {"name": "A"}}},
//!   {"type": "Feature", "geometry": {"type": "MultiLineString", "coordinates": [[[2.5, 5.5], [4.5, 5.5]]]},
//!    "properties": {"id": 20, "startid": 0, "endid": 1, "metadata": {"abs_speed_limit": 0.8}}}
//! ]}
//! ```
//!
//! - A node (a `Point` feature) is a station named by its `metadata.name`, else by its `id` (`"7"`); its
//!   `frame` (default `map`) must be the same for every node.
//! - An edge (a `MultiLineString` or `LineString` feature) is driven from `startid` to `endid` only, as in
//!   Nav2; an edge and its reverse at the same speed make one two-way lane. Its length is the straight line
//!   between its nodes (as Nav2's scorers take it); its speed limit is `metadata.abs_speed_limit` (m/s, what
//!   Nav2's time scorer reads), else `metadata.speed_limit` percent of [`DEFAULT_SPEED_MPS`] (what Nav2's speed
//!   limit operation reads), else [`DEFAULT_SPEED_MPS`] (the time scorer's default `max_vel`).
//!
//! - Shared floor (Lockstep's own metadata): `metadata.capacity` on a node or an edge (robots at once, default
//!   1), `metadata.narrow: true` on an edge (both directions count as one), `metadata.mutex_group` (a name or a
//!   list) on nodes and edges, one robot at a time on any member.
//! - Chargers: `metadata.charger: true` on a node (a robot standing there charges its battery).
//!
//! Errors name the feature and the key (`features[12].properties.endid`).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::map_file::{GroupEntry, LaneEntry, LaneRef, MapFile, Position, Stations};

/// The speed of an edge without a speed limit (m/s): Nav2's time scorer's default `max_vel`.
pub const DEFAULT_SPEED_MPS: f64 = 0.5;
/// Nesting deeper than this is refused before parsing (a hostile file).
const MAX_DEPTH: usize = 64;

/// Where each station and lane of the converted map came from, to name the feature in later errors.
pub(crate) struct Origins {
    /// Station name -> feature index.
    pub stations: BTreeMap<String, usize>,
    /// Lane index -> feature index.
    pub lanes: Vec<usize>,
}

type Problem = (String, String);

/// Whether `text` is a GeoJSON document rather than a YAML map: JSON object text naming a FeatureCollection.
pub(crate) fn is_geojson(text: &str) -> bool {
    text.trim_start().starts_with('{') && text.contains("\"FeatureCollection\"")
}

/// A station map's raw form from GeoJSON text: the first problem as (key path, reason), with the line for
/// syntax errors.
pub(crate) fn to_map_file(text: &str) -> Result<(MapFile, Origins), (Option<usize>, String, String)> {
    if let Some(line) = too_deep(text) {
        return Err((
            Some(line),
            ".".into(),
            format!("nested more than {MAX_DEPTH} levels deep"),
        ));
    }
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| (Some(e.line()), ".".to_owned(), format!("not valid JSON: {e}")))?;
    convert(&doc).map_err(|(key, reason)| (None, key, reason))
}

/// The line where nesting first goes deeper than [`MAX_DEPTH`] (brackets outside strings).
fn too_deep(text: &str) -> Option<usize> {
    let (mut depth, mut line, mut in_string, mut escaped) = (0usize, 1usize, false, false);
    for c in text.chars() {
        match (in_string, c) {
            (_, '\n') => line += 1,
            (true, '\\') if !escaped => {
                escaped = true;
                continue;
            }
            (true, '"') if !escaped => in_string = false,
            (false, '"') => in_string = true,
            (false, '{' | '[') => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(line);
                }
            }
            (false, '}' | ']') => depth = depth.saturating_sub(1),
            _ => {}
        }
        escaped = false;
    }
    None
}

fn convert(doc: &Value) -> Result<(MapFile, Origins), Problem> {
    if doc.get("type").and_then(Value::as_str) != Some("FeatureCollection") {
        return Err(("type".into(), "must be \"FeatureCollection\"".into()));
    }
    let features = doc
        .get("features")
        .and_then(Value::as_array)
        .ok_or_else(|| ("features".to_owned(), "missing, or not a list".to_owned()))?;
    let mut nodes = Nodes::default();
    let mut edges = Vec::new();
    for (k, feature) in features.iter().enumerate() {
        let at = |key: &str| format!("features[{k}].{key}");
        let kind = feature
            .pointer("/geometry/type")
            .and_then(Value::as_str)
            .ok_or_else(|| (at("geometry.type"), "missing, or not a string".to_owned()))?;
        match kind {
            "Point" => nodes.add(k, feature)?,
            "MultiLineString" | "LineString" => edges.push((k, edge(k, feature)?)),
            other => {
                return Err((
                    at("geometry.type"),
                    format!("'{other}' is neither a node (Point) nor an edge (MultiLineString)"),
                ))
            }
        }
    }
    let lanes = lanes(&edges, &nodes)?;
    let frame_id = nodes
        .frame
        .as_ref()
        .map_or_else(|| "map".to_owned(), |(frame, _)| frame.clone());
    let origins = Origins {
        stations: nodes
            .by_name
            .iter()
            .map(|(n, s)| (n.clone(), s.feature))
            .collect(),
        lanes: lanes.iter().map(|(k, ..)| *k).collect(),
    };
    let mutex_groups = mutex_groups(&nodes, &lanes);
    let by_name = nodes
        .by_name
        .into_iter()
        .map(|(name, node)| {
            let [x, y] = node.xy;
            let (capacity, charger) = (node.capacity, node.charger);
            (
                name,
                Position {
                    x,
                    y,
                    capacity,
                    charger,
                },
            )
        })
        .collect();
    let raw = MapFile {
        frame_id,
        stations: Stations {
            by_name,
            twice: nodes.twice,
        },
        lanes: lanes.into_iter().map(|(_, lane, _)| lane).collect(),
        mutex_groups,
    };

    Ok((raw, origins))
}

/// The feature's `metadata.<key>`: true or false (false when absent).
fn flag(k: usize, feature: &Value, key: &str) -> Result<bool, Problem> {
    match feature.pointer(&format!("/properties/metadata/{key}")) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err((
            format!("features[{k}].properties.metadata.{key}"),
            format!("must be true or false, not {v}"),
        )),
    }
}

/// The mutex groups the nodes and edges name, with their members.
fn mutex_groups(nodes: &Nodes, lanes: &[LaneRead]) -> BTreeMap<String, GroupEntry> {
    let mut mutex_groups: BTreeMap<String, GroupEntry> = BTreeMap::new();
    for (name, node) in &nodes.by_name {
        for group in &node.groups {
            mutex_groups
                .entry(group.clone())
                .or_default()
                .stations
                .push(name.clone());
        }
    }
    for (_, lane, groups) in lanes {
        for group in groups {
            let reference = LaneRef {
                from: lane.from.clone(),
                to: lane.to.clone(),
            };
            mutex_groups
                .entry(group.clone())
                .or_default()
                .lanes
                .push(reference);
        }
    }
    mutex_groups
}

/// A node read: its feature, position and floor rules.
struct Node {
    feature: usize,
    xy: [f64; 2],
    capacity: Option<i64>,
    groups: Vec<String>,
    /// `metadata.charger: true`: a robot standing here charges.
    charger: bool,
}

#[derive(Default)]
struct Nodes {
    /// Station name -> the node.
    by_name: BTreeMap<String, Node>,
    /// Node id -> station name.
    names: BTreeMap<i64, String>,
    twice: Option<String>,
    /// The frame and the feature that named it first.
    frame: Option<(String, usize)>,
}

impl Nodes {
    fn add(&mut self, k: usize, feature: &Value) -> Result<(), Problem> {
        let at = |key: &str| format!("features[{k}].{key}");
        let id = integer(feature, "/properties/id")
            .ok_or_else(|| (at("properties.id"), "a node needs an integer id".to_owned()))?;
        let name = match feature.pointer("/properties/metadata/name") {
            None => id.to_string(),
            Some(Value::String(name)) if !name.trim().is_empty() => name.clone(),
            Some(_) => {
                return Err((
                    at("properties.metadata.name"),
                    "must be a station name (a non-empty string)".into(),
                ))
            }
        };
        let xy = feature
            .pointer("/geometry/coordinates")
            .and_then(Value::as_array)
            .and_then(|c| Some([c.first()?.as_f64()?, c.get(1)?.as_f64()?]))
            .ok_or_else(|| {
                (
                    at("geometry.coordinates"),
                    "a node needs [x, y] in metres".to_owned(),
                )
            })?;
        if let Some(frame) = feature.pointer("/properties/frame") {
            let frame = frame
                .as_str()
                .ok_or_else(|| (at("properties.frame"), "must be a string".to_owned()))?;
            match &self.frame {
                Some((first, j)) if first != frame => {
                    return Err((
                        at("properties.frame"),
                        format!("'{frame}', but features[{j}] is in '{first}': one frame for every node"),
                    ))
                }
                Some(_) => {}
                None => self.frame = Some((frame.to_owned(), k)),
            }
        }
        if let Some(other) = self.names.insert(id, name.clone()) {
            return Err((
                at("properties.id"),
                format!("node id {id} is given twice (station {other} has it already)"),
            ));
        }
        let node = Node {
            feature: k,
            xy,
            capacity: capacity(k, feature)?,
            groups: groups(k, feature)?,
            charger: flag(k, feature, "charger")?,
        };
        if self.by_name.insert(name.clone(), node).is_some() {
            self.twice.get_or_insert(name);
        }
        Ok(())
    }
}

/// What an edge says: its nodes, its speed limit (m/s) and how its floor is shared.
#[derive(Debug, Clone, PartialEq)]
struct EdgeSpec {
    start: i64,
    end: i64,
    speed: f64,
    narrow: bool,
    capacity: Option<i64>,
    groups: Vec<String>,
}

fn edge(k: usize, feature: &Value) -> Result<EdgeSpec, Problem> {
    let at = |key: &str| format!("features[{k}].{key}");
    let end = |key: &str| {
        integer(feature, &format!("/properties/{key}")).ok_or_else(|| {
            (
                at(&format!("properties.{key}")),
                "an edge needs the integer id of a node".to_owned(),
            )
        })
    };
    let (start, stop) = (end("startid")?, end("endid")?);
    let number = |key: &str| -> Result<Option<f64>, Problem> {
        match feature.pointer(&format!("/properties/metadata/{key}")) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() && x > 0.0 => Ok(Some(x)),
                _ => Err((
                    at(&format!("properties.metadata.{key}")),
                    format!("must be a number above 0, not {v}"),
                )),
            },
        }
    };
    let speed = match (number("abs_speed_limit")?, number("speed_limit")?) {
        (Some(mps), _) => mps,
        (None, Some(percent)) => DEFAULT_SPEED_MPS * percent / 100.0,
        (None, None) => DEFAULT_SPEED_MPS,
    };
    Ok(EdgeSpec {
        start,
        end: stop,
        speed,
        narrow: flag(k, feature, "narrow")?,
        capacity: capacity(k, feature)?,
        groups: groups(k, feature)?,
    })
}

/// `metadata.capacity` of a feature, a whole number (checked against its range with the map).
fn capacity(k: usize, feature: &Value) -> Result<Option<i64>, Problem> {
    match feature.pointer("/properties/metadata/capacity") {
        None => Ok(None),
        Some(v) => v.as_i64().map(Some).ok_or_else(|| {
            (
                format!("features[{k}].properties.metadata.capacity"),
                format!("must be a whole number, not {v}"),
            )
        }),
    }
}

/// `metadata.mutex_group` of a feature: one group name or a list of them.
fn groups(k: usize, feature: &Value) -> Result<Vec<String>, Problem> {
    let bad = |v: &Value| {
        (
            format!("features[{k}].properties.metadata.mutex_group"),
            format!("must be a group name or a list of them, not {v}"),
        )
    };
    match feature.pointer("/properties/metadata/mutex_group") {
        None => Ok(Vec::new()),
        Some(Value::String(name)) => Ok(vec![name.clone()]),
        Some(Value::Array(names)) => names
            .iter()
            .map(|n| n.as_str().map(str::to_owned).ok_or_else(|| bad(n)))
            .collect(),
        Some(v) => Err(bad(v)),
    }
}

/// A lane read from one edge (or an edge and its reverse), with the mutex groups its edges name.
type LaneRead = (usize, LaneEntry, Vec<String>);

/// The lanes: every edge one way, but an edge and its reverse that share speed and floor rules are one
/// two-way lane.
fn lanes(edges: &[(usize, EdgeSpec)], nodes: &Nodes) -> Result<Vec<LaneRead>, Problem> {
    let name = |k: usize, key: &str, id: i64| {
        nodes.names.get(&id).cloned().ok_or_else(|| {
            (
                format!("features[{k}].properties.{key}"),
                format!("no node has id {id}"),
            )
        })
    };
    let rules = |e: &EdgeSpec| (e.speed.to_bits(), e.narrow, e.capacity);
    let mut first: BTreeMap<(i64, i64), &EdgeSpec> = BTreeMap::new();
    for (_, e) in edges {
        first.entry((e.start, e.end)).or_insert(e);
    }
    let mut lanes = Vec::with_capacity(edges.len());
    for (k, e) in edges {
        let (from, to) = (name(*k, "startid", e.start)?, name(*k, "endid", e.end)?);
        let reverse = first
            .get(&(e.end, e.start))
            .filter(|r| e.start != e.end && rules(r) == rules(e));
        if reverse.is_some() && (e.end, e.start) < (e.start, e.end) {
            continue; // the reverse edge's lane drives this way too
        }
        let mut groups = e.groups.clone();
        groups.extend(reverse.into_iter().flat_map(|r| r.groups.iter().cloned()));
        lanes.push((
            *k,
            LaneEntry {
                from,
                to,
                length_m: None,
                speed_limit_mps: e.speed,
                one_way: reverse.is_none(),
                narrow: e.narrow,
                capacity: e.capacity,
            },
            groups,
        ));
    }
    Ok(lanes)
}

fn integer(feature: &Value, pointer: &str) -> Option<i64> {
    feature.pointer(pointer).and_then(Value::as_i64)
}

/// A key of the converted map (`lanes[3].to`, `stations.A.x`) as the feature it came from.
pub(crate) fn feature_key(key: &str, origins: &Origins) -> String {
    let Some(rest) = key.strip_prefix("lanes[") else {
        return key
            .strip_prefix("stations.")
            .and_then(|s| {
                let name = s.rsplit_once('.').map_or(s, |(n, _)| n);
                origins.stations.get(name)
            })
            .map_or_else(
                || key.to_owned(),
                |k| match key.ends_with(".capacity") {
                    true => format!("features[{k}].properties.metadata.capacity"),
                    false => format!("features[{k}].geometry.coordinates"),
                },
            );
    };
    let Some((index, field)) = rest.split_once(']') else {
        return key.to_owned();
    };
    let Some(&k) = index.parse::<usize>().ok().and_then(|i| origins.lanes.get(i)) else {
        return key.to_owned();
    };
    let field = match field {
        ".from" => ".properties.startid",
        ".to" => ".properties.endid",
        ".speed_limit_mps" => ".properties.metadata.abs_speed_limit",
        ".capacity" => ".properties.metadata.capacity",
        _ => "",
    };
    format!("features[{k}]{field}")
}

/// `text` (a reason) with each `lanes[i]` it names as the feature it came from.
pub(crate) fn feature_text(text: &str, origins: &Origins) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("lanes[") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let end = after.find(']').map_or(after.len(), |e| e + 1);
        out.push_str(&feature_key(&after[..end], origins));
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}
