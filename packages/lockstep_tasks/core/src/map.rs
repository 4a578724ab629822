//! A station map: named stations (m, in the map frame) and the lanes a vehicle may drive between them, each
//! with a speed limit, read from YAML. Routes are planned on it by travel time: the fastest route wins, not
//! the shortest, so a longer corridor at 1.0 m/s beats a shortcut over grass at 0.5 m/s.
//!
//! ```yaml
//! frame_id: map                 # the frame of the positions (default: map)
//! stations:                     # name -> position (m); junctions are stations too
//!   A: {x: 2.5, y: 5.5}
//!   J1: {x: 4.5, y: 5.5}
//!   O: {x: 6.5, y: 2.5, charger: true}   # a robot standing here charges its battery
//! lanes:                        # straight segments, driven both ways unless one_way
//!   - {from: A, to: J1, speed_limit_mps: 0.8}         # length_m: the straight-line distance by default
//!   - {from: J1, to: O, length_m: 5.2, speed_limit_mps: 1.0, one_way: true}
//! ```
//!
//! Every error names the file, the line where known, and the key at fault (`lanes[3].to`). A Nav2 route graph
//! (GeoJSON) is read too (see [`crate::map_geojson`]).

use std::collections::btree_map::BTreeMap;
use std::io::Read;
use std::path::Path;

use petgraph::graph::{DiGraph, NodeIndex};

use crate::map_file::{LaneEntry, MapFile, Position};
use crate::map_geojson;
use crate::map_traffic;
use crate::traffic::Layout;
use crate::travel::{Edge, RouteError};

/// At most this many stations in one map.
pub const MAX_STATIONS: usize = 10_000;
/// At most this many lanes in one map.
pub const MAX_LANES: usize = 100_000;
/// At most this many bytes in one map file (4 MiB).
pub const MAX_FILE_BYTES: usize = 4 * 1024 * 1024;
/// A lane's given length may be this much shorter than the straight line (rounding in a hand-written map).
const LENGTH_SLACK_M: f64 = 1e-3;
/// Positions beyond this (m) are refused: surely a typo, and distances stay finite.
pub(crate) const MAX_COORDINATE_M: f64 = 1e7;

/// A station map that cannot be used, and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}{}: {key}: {reason}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct MapError {
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// Path of the key at fault, e.g. `lanes[3].to` (`.` for the whole file).
    pub key: String,
    pub reason: String,
}

/// One lane of the map, its length resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    pub from: String,
    pub to: String,
    /// As given, or the straight-line distance between its stations.
    pub length_m: f64,
    pub speed_limit_mps: f64,
    /// Driven only from `from` to `to`.
    pub one_way: bool,
    /// Both directions share the floor (a one-lane aisle): robots driving it either way count together.
    pub narrow: bool,
    /// Robots on the lane at once per direction.
    pub capacity: u32,
}

/// A checked station map, ready to plan on.
#[derive(Debug, Clone)]
pub struct StationMap {
    pub(crate) file: String,
    frame_id: String,
    /// Sorted; a station's index is its node in `graph`.
    pub(crate) names: Vec<String>,
    pub(crate) positions: Vec<[f64; 2]>,
    lanes: Vec<Lane>,
    /// One edge per direction a lane is driven.
    pub(crate) graph: DiGraph<(), Edge>,
    /// How the floor is shared.
    layout: Layout,
    /// The stations where a robot charges (sorted).
    chargers: Vec<String>,
}

impl StationMap {
    /// Read and check a station map file.
    pub fn read(path: &Path) -> Result<Self, MapError> {
        let file = path.display().to_string();
        let whole = |reason: String| MapError {
            file: file.clone(),
            line: None,
            key: ".".into(),
            reason,
        };
        // Only a regular file (a FIFO would block the open, a device never end), read up to one byte over the
        // limit so that the size error below names it.
        lockstep_ranges::file::check_regular(path, u64::MAX).map_err(|e| whole(e.to_string()))?;
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_FILE_BYTES as u64 + 1).read_to_string(&mut text))
            .map_err(|e| whole(e.to_string()))?;
        Self::parse(&file, &text)
    }

    /// Parse and check YAML text; `file` names it in errors and in route errors.
    pub fn parse(file: &str, text: &str) -> Result<Self, MapError> {
        if text.len() > MAX_FILE_BYTES {
            return Err(MapError {
                file: file.to_owned(),
                line: None,
                key: ".".into(),
                reason: too_large(),
            });
        }
        if map_geojson::is_geojson(text) {
            return Self::parse_geojson(file, text);
        }
        let raw: MapFile = crate::yaml::deserialize(text).map_err(|(line, key, reason)| MapError {
            file: file.to_owned(),
            line,
            key,
            reason,
        })?;
        Self::build(file, raw).map_err(|(key, reason)| MapError {
            file: file.to_owned(),
            line: if reason.ends_with("named twice") {
                second_line_of(text, &key)
            } else {
                line_of(text, &key)
            },
            key,
            reason,
        })
    }

    /// A Nav2 route graph (GeoJSON): errors name the feature and its key.
    fn parse_geojson(file: &str, text: &str) -> Result<Self, MapError> {
        let error = |line, key, reason| MapError {
            file: file.to_owned(),
            line,
            key,
            reason,
        };
        let (raw, origins) =
            map_geojson::to_map_file(text).map_err(|(line, key, reason)| error(line, key, reason))?;
        Self::build(file, raw).map_err(|(key, reason)| {
            let key = map_geojson::feature_key(&key, &origins);
            error(None, key, map_geojson::feature_text(&reason, &origins))
        })
    }

    /// The checks deserializing cannot make, and the lane graph: (key path, reason) of the first problem.
    fn build(file: &str, raw: MapFile) -> Result<Self, (String, String)> {
        check_counts(&raw)?;
        let (names, positions) = station_positions(&raw.stations.by_name)?;
        let layout = map_traffic::layout(&raw)?;
        let chargers = (raw.stations.by_name.iter())
            .filter(|(_, p)| p.charger)
            .map(|(name, _)| name.clone())
            .collect();
        let mut graph = DiGraph::with_capacity(names.len(), raw.lanes.len() * 2);
        for _ in &names {
            graph.add_node(());
        }
        // Each direction (from, to) -> the lane that drives it.
        let mut directions: BTreeMap<(usize, usize), usize> = BTreeMap::new();
        let mut lanes = Vec::with_capacity(raw.lanes.len());
        for (i, entry) in raw.lanes.into_iter().enumerate() {
            let (from, to, lane) = check_lane(i, entry, &names, &positions)?;
            let mut ways = vec![(from, to)];
            if !lane.one_way {
                ways.push((to, from));
            }
            for &way in &ways {
                if let Some(other) = directions.insert(way, i) {
                    return Err((
                        format!("lanes[{i}]"),
                        format!(
                            "a second lane from {} to {} (lanes[{other}] is one already)",
                            names[way.0], names[way.1]
                        ),
                    ));
                }
            }
            let edge = Edge::new(lane.length_m, lane.speed_limit_mps);
            for (a, b) in ways {
                graph.add_edge(NodeIndex::new(a), NodeIndex::new(b), edge);
            }
            lanes.push(lane);
        }
        Ok(StationMap {
            file: file.to_owned(),
            frame_id: raw.frame_id,
            names,
            positions,
            lanes,
            graph,
            layout,
            chargers,
        })
    }

    /// How the floor is shared: lane and station capacities, narrow lanes, mutex groups.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The file name errors give.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The frame of the positions.
    pub fn frame_id(&self) -> &str {
        &self.frame_id
    }

    /// The stations and their positions, sorted by name.
    pub fn stations(&self) -> impl Iterator<Item = (&str, [f64; 2])> + '_ {
        self.names
            .iter()
            .map(String::as_str)
            .zip(self.positions.iter().copied())
    }

    /// The position of station `name`.
    pub fn position(&self, name: &str) -> Option<[f64; 2]> {
        self.index(name).ok().map(|i| self.positions[i])
    }

    /// The stations where a robot charges its battery (`charger: true`), sorted.
    pub fn chargers(&self) -> &[String] {
        &self.chargers
    }

    /// The lanes, in the file's order.
    pub fn lanes(&self) -> &[Lane] {
        &self.lanes
    }

    /// The station nearest to (x, y) (m, the map's frame) and its distance; ties go to the first name.
    /// `None` for a position that is not finite.
    pub fn nearest_station(&self, x: f64, y: f64) -> Option<(&str, f64)> {
        if !(x.is_finite() && y.is_finite()) {
            return None;
        }
        self.positions
            .iter()
            .enumerate()
            .map(|(i, p)| ((p[0] - x).hypot(p[1] - y), i))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .map(|(d, i)| (self.names[i].as_str(), d))
    }

    /// The index of station `name` (its node in the lane graph).
    pub(crate) fn index(&self, name: &str) -> Result<usize, RouteError> {
        self.names
            .binary_search_by(|n| n.as_str().cmp(name))
            .map_err(|_| RouteError::UnknownStation {
                name: name.to_owned(),
                map: self.file.clone(),
                known: some_names(&self.names),
            })
    }
}

/// A problem found in a map: the key path at fault and why.
type Problem = (String, String);

/// The frame is named, no station is named twice, and the counts are within the limits.
fn check_counts(raw: &MapFile) -> Result<(), Problem> {
    if raw.frame_id.trim().is_empty() {
        return Err(("frame_id".into(), "is empty".into()));
    }
    if let Some(name) = &raw.stations.twice {
        return Err((format!("stations.{name}"), "this station is named twice".into()));
    }
    let stations = &raw.stations.by_name;
    if stations.is_empty() {
        return Err(("stations".into(), "no station: a map needs at least one".into()));
    }
    if stations.len() > MAX_STATIONS {
        let n = stations.len();
        return Err((
            "stations".into(),
            format!("{n} stations: more than {MAX_STATIONS}"),
        ));
    }
    if raw.lanes.len() > MAX_LANES {
        let n = raw.lanes.len();
        return Err(("lanes".into(), format!("{n} lanes: more than {MAX_LANES}")));
    }
    Ok(())
}

/// The station names (sorted, as the map holds them) and their positions, each name non-empty and each
/// coordinate finite and within range.
fn station_positions(stations: &BTreeMap<String, Position>) -> Result<(Vec<String>, Vec<[f64; 2]>), Problem> {
    let mut names = Vec::with_capacity(stations.len());
    let mut positions = Vec::with_capacity(stations.len());
    for (name, p) in stations {
        if name.trim().is_empty() {
            return Err(("stations".into(), format!("a station name is empty (`{name}`)")));
        }
        for (axis, v) in [("x", p.x), ("y", p.y)] {
            if !(v.is_finite() && v.abs() <= MAX_COORDINATE_M) {
                return Err((
                    format!("stations.{name}.{axis}"),
                    format!("{v}: must be a finite number within +-{MAX_COORDINATE_M} m"),
                ));
            }
        }
        names.push(name.clone());
        positions.push([p.x, p.y]);
    }
    Ok((names, positions))
}

/// Lane `i`: its stations' indices and the lane with its length resolved, or the first problem (an unknown
/// station, a lane to itself, a bad speed limit or length).
fn check_lane(
    i: usize,
    lane: LaneEntry,
    names: &[String],
    positions: &[[f64; 2]],
) -> Result<(usize, usize, Lane), Problem> {
    let key = format!("lanes[{i}]");
    let station = |end: &str, name: &str| {
        names.binary_search_by(|n| n.as_str().cmp(name)).map_err(|_| {
            (
                format!("{key}.{end}"),
                format!("`{name}` is not a station (stations: {})", some_names(names)),
            )
        })
    };
    let (from, to) = (station("from", &lane.from)?, station("to", &lane.to)?);
    if from == to {
        return Err((
            format!("{key}.to"),
            format!("a lane from `{}` to itself", lane.to),
        ));
    }
    let speed = lane.speed_limit_mps;
    if !(speed.is_finite() && speed > 0.0) {
        return Err((
            format!("{key}.speed_limit_mps"),
            format!("{speed}: must be a finite number > 0"),
        ));
    }
    let [(x0, y0), (x1, y1)] = [from, to].map(|s| (positions[s][0], positions[s][1]));
    let straight = (x1 - x0).hypot(y1 - y0);
    let length = lane.length_m.unwrap_or(straight);
    if !(length.is_finite() && length > 0.0) {
        return Err((
            format!("{key}.length_m"),
            format!("{length}: must be a finite number > 0"),
        ));
    }
    if length < straight - LENGTH_SLACK_M {
        return Err((
            format!("{key}.length_m"),
            format!(
                "{length} m is shorter than the straight line from {} to {} ({straight:.3} m)",
                lane.from, lane.to
            ),
        ));
    }
    if !(length / speed).is_finite() {
        return Err((
            format!("{key}.speed_limit_mps"),
            format!("{speed}: too small for a lane of {length} m"),
        ));
    }
    let lane = Lane {
        from: lane.from,
        to: lane.to,
        length_m: length,
        speed_limit_mps: speed,
        one_way: lane.one_way,
        narrow: lane.narrow,
        // Checked by the layout, before the lanes.
        capacity: lane.capacity.map_or(1, |c| u32::try_from(c).unwrap_or(1)),
    };
    Ok((from, to, lane))
}

/// Up to 8 names, then how many there are.
pub(crate) fn some_names(names: &[String]) -> String {
    let few: Vec<&str> = names.iter().take(8).map(String::as_str).collect();
    if names.len() > few.len() {
        format!("{}, ... ({} in all)", few.join(", "), names.len())
    } else {
        few.join(", ")
    }
}

fn too_large() -> String {
    format!("more than {MAX_FILE_BYTES} bytes: a station map is at most 4 MiB")
}

/// The line where `stations.<name>` is given the second time.
fn second_line_of(text: &str, key: &str) -> Option<usize> {
    let first = line_of(text, key)?;
    let name = key.strip_prefix("stations.")?;
    let found = text
        .lines()
        .enumerate()
        .skip(first)
        .find(|(_, l)| l.trim_start().starts_with(&format!("{name}:")));
    Some(found.map_or(first, |(i, _)| i + 1))
}

/// The line of the key at the end of `path` (`lanes[3].to`: the line of `lanes:`, then its fourth `- ` item,
/// then `to:` in it if that has a line of its own); the deepest found, `None` if none.
fn line_of(text: &str, path: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |i: usize| lines[i].len() - lines[i].trim_start().len();
    let item = |i: usize| lines[i].trim_start().starts_with("- ");
    let blank = |i: usize| lines[i].trim().is_empty() || lines[i].trim_start().starts_with('#');
    // The lines that belong to line `at`: deeper ones, and a key's list items at its own depth.
    let end_of = |at: usize| {
        (at + 1..lines.len())
            .find(|&i| {
                !blank(i) && indent(i) <= indent(at) && (item(at) || indent(i) < indent(at) || !item(i))
            })
            .unwrap_or(lines.len())
    };
    let (mut scope, mut found) = (0..lines.len(), None);
    for part in path.split('.') {
        let mut pieces = part.split('[');
        let name = pieces.next().unwrap_or(part);
        if !name.is_empty() {
            // A key inside a flow map (`{from: A, to: X}`) has no line of its own: keep the last found.
            let key = format!("{name}:");
            let Some(at) = scope.clone().find(|&i| {
                let t = lines[i]
                    .trim_start()
                    .trim_start_matches("- ")
                    .trim_start_matches('{');
                t.starts_with(&key) || t.starts_with(&format!("\"{name}\":"))
            }) else {
                break;
            };
            found = Some(at + 1);
            scope = at + 1..end_of(at);
        }
        for index in pieces {
            let k: usize = index.trim_end_matches(']').parse().ok()?;
            let items: Vec<usize> = scope.clone().filter(|&i| item(i)).collect();
            let depth = items.first().map(|&i| indent(i));
            let at = items.into_iter().filter(|&i| Some(indent(i)) == depth).nth(k)?;
            found = Some(at + 1);
            scope = at..end_of(at);
        }
    }
    found
}
