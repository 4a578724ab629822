//! The station map file as written (YAML, or converted from a Nav2 route graph), before its checks.

use std::collections::btree_map::{BTreeMap, Entry};

use serde::Deserialize;

fn default_frame() -> String {
    "map".into()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MapFile {
    #[serde(default = "default_frame")]
    pub frame_id: String,
    pub stations: Stations,
    #[serde(default)]
    pub lanes: Vec<LaneEntry>,
    /// Group name -> the stations and lanes one robot at a time may use.
    #[serde(default)]
    pub mutex_groups: BTreeMap<String, GroupEntry>,
}

/// A mutex group's members: stations, and lanes by their stations (either direction).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct GroupEntry {
    #[serde(default)]
    pub stations: Vec<String>,
    #[serde(default)]
    pub lanes: Vec<LaneRef>,
}

/// A lane named by its stations.
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub(crate) struct LaneRef {
    pub from: String,
    pub to: String,
}

/// The stations by name, and the first name given twice (the YAML parser lets a repeated key replace the
/// first one; here it is refused).
pub(crate) struct Stations {
    pub by_name: BTreeMap<String, Position>,
    pub twice: Option<String>,
}

impl<'de> Deserialize<'de> for Stations {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Stations;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of station name -> {x, y}")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, mut map: M) -> Result<Stations, M::Error> {
                let (mut by_name, mut twice) = (BTreeMap::new(), None);
                while let Some((name, position)) = map.next_entry::<String, Position>()? {
                    match by_name.entry(name) {
                        Entry::Occupied(e) => {
                            twice.get_or_insert_with(|| e.key().clone());
                        }
                        Entry::Vacant(e) => {
                            e.insert(position);
                        }
                    }
                }
                Ok(Stations { by_name, twice })
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Position {
    pub x: f64,
    pub y: f64,
    /// Robots the station holds at once (default 1).
    #[serde(default)]
    pub capacity: Option<i64>,
    /// A robot standing here charges its battery.
    #[serde(default)]
    pub charger: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LaneEntry {
    pub from: String,
    pub to: String,
    #[serde(default)]
    pub length_m: Option<f64>,
    pub speed_limit_mps: f64,
    #[serde(default)]
    pub one_way: bool,
    /// Both directions share the floor: robots driving it either way count together.
    #[serde(default)]
    pub narrow: bool,
    /// Robots on the lane at once per direction (default 1).
    #[serde(default)]
    pub capacity: Option<i64>,
}
