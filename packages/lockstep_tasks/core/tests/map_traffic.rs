//! How a station map says its floor is shared (narrow lanes, capacities, mutex groups), in YAML and in a Nav2
//! route graph's metadata, the reservations that follow from it, and the errors that name the key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lockstep_tasks::traffic::{Grant, Resource, Traffic};
use lockstep_tasks::StationMap;

const YAML: &str = "stations:
  W: {x: 0.0, y: 0.0}
  E: {x: 10.0, y: 0.0, capacity: 2}
  X: {x: 5.0, y: 5.0}
lanes:
  - {from: W, to: E, speed_limit_mps: 1.0, narrow: true}
  - {from: W, to: X, speed_limit_mps: 1.0, capacity: 3}
  - {from: X, to: E, speed_limit_mps: 1.0, one_way: true}
mutex_groups:
  crossing: {stations: [X], lanes: [{from: X, to: W}]}
";

fn feature(geometry: &str, properties: &str) -> String {
    format!(r#"{{"type": "Feature", "geometry": {{"type": "{geometry}"}}, "properties": {properties}}}"#)
}

fn geojson() -> String {
    let point = |id: i64, name: &str, x: f64, y: f64, metadata: &str| {
        format!(
            r#"{{"type": "Feature", "geometry": {{"type": "Point", "coordinates": [{x}, {y}]}},
                "properties": {{"id": {id}, "metadata": {{"name": "{name}"{metadata}}}}}}}"#
        )
    };
    let edge = |id: i64, a: i64, b: i64, metadata: &str| {
        feature(
            "MultiLineString",
            &format!(
                r#"{{"id": {id}, "startid": {a}, "endid": {b}, "metadata": {{"abs_speed_limit": 1.0{metadata}}}}}"#
            ),
        )
    };
    let features = [
        point(0, "W", 0.0, 0.0, ""),
        point(1, "E", 10.0, 0.0, r#", "capacity": 2"#),
        point(2, "X", 5.0, 5.0, r#", "mutex_group": "crossing""#),
        edge(3, 0, 1, r#", "narrow": true"#),
        edge(4, 1, 0, r#", "narrow": true"#),
        edge(5, 0, 2, r#", "capacity": 3, "mutex_group": ["crossing"]"#),
        edge(6, 2, 0, r#", "capacity": 3"#),
        edge(7, 2, 1, ""),
    ];
    format!(
        r#"{{"type": "FeatureCollection", "features": [{}]}}"#,
        features.join(",\n")
    )
}

#[test]
fn the_yaml_and_the_route_graph_say_the_same_floor_rules() {
    let yaml = StationMap::parse("map.yaml", YAML).unwrap();
    let graph = StationMap::parse("map.geojson", &geojson()).unwrap_or_else(|e| panic!("{e}"));
    for map in [&yaml, &graph] {
        let layout = map.layout();
        let aisle = &layout.lanes[&("W".to_owned(), "E".to_owned())];
        assert!(aisle.narrow && aisle.capacity == 1);
        assert_eq!(layout.lanes[&("X".to_owned(), "W".to_owned())].capacity, 3);
        assert_eq!(
            layout.lanes[&("X".to_owned(), "W".to_owned())].groups,
            ["crossing"]
        );
        assert_eq!(
            layout.lanes[&("W".to_owned(), "X".to_owned())].groups,
            ["crossing"]
        );
        assert!(layout.lanes[&("X".to_owned(), "E".to_owned())].groups.is_empty());
        assert!(!layout.lanes.contains_key(&("E".to_owned(), "X".to_owned())));
        assert_eq!(layout.station_capacity.get("E"), Some(&2));
        assert_eq!(layout.station_groups["X"], ["crossing"]);
        let narrow: Vec<bool> = map.lanes().iter().map(|l| l.narrow).collect();
        assert_eq!(narrow.iter().filter(|n| **n).count(), 1, "{narrow:?}");
    }
    // The rules hold robots back: two robots head-on in the narrow aisle share one resource.
    let mut traffic = Traffic::new(graph.layout().clone());
    traffic.place("r1", "W");
    traffic.place("r2", "X");
    assert_eq!(traffic.request("r1", "W", "E"), Grant::Go);
    traffic.place("r3", "E");
    let lane = Resource::Lane {
        from: "E".to_owned(),
        to: "W".to_owned(),
    };
    // Driving west to east holds the one resource of both directions, so r3 cannot come the other way.
    assert_eq!(traffic.holders(&lane), ["r1"]);
    assert!(matches!(traffic.request("r3", "E", "W"), Grant::Wait { .. }));
    traffic.arrived("r1", "W", "E");
    assert!(traffic.holders(&lane).is_empty());
    assert_eq!(traffic.request("r3", "E", "W"), Grant::Go);
}

#[test]
fn bad_floor_rules_are_named_by_key() {
    let cases = [
        (
            YAML.replace("capacity: 3", "capacity: 0"),
            "map.yaml:7: lanes[1].capacity: 0: a capacity is a whole number from 1 to 1000",
        ),
        (
            YAML.replace("stations: [X]", "stations: [Q]"),
            "mutex_groups.crossing.stations[0]: `Q` is not a station",
        ),
        (
            YAML.replace("{from: X, to: W}", "{from: X, to: Q}"),
            "mutex_groups.crossing.lanes[0]: no lane between `X` and `Q`",
        ),
        (
            YAML.replace(
                "crossing: {stations: [X], lanes: [{from: X, to: W}]}",
                "crossing: {}",
            ),
            "mutex_groups.crossing: a group needs stations or lanes",
        ),
    ];
    for (text, expected) in cases {
        let e = StationMap::parse("map.yaml", &text).unwrap_err().to_string();
        assert!(e.contains(expected), "{e}\n  wanted: {expected}");
    }
    let graph = geojson().replace(r#""capacity": 2"#, r#""capacity": 5000"#);
    let e = StationMap::parse("g.geojson", &graph).unwrap_err().to_string();
    assert_eq!(
        e,
        "g.geojson: features[1].properties.metadata.capacity: 5000: a capacity is a whole number from 1 to 1000"
    );
    let graph = geojson().replace(r#""narrow": true"#, r#""narrow": "yes""#);
    let e = StationMap::parse("g.geojson", &graph).unwrap_err().to_string();
    assert_eq!(
        e,
        "g.geojson: features[3].properties.metadata.narrow: must be true or false, not \"yes\""
    );
    let graph = geojson().replace(r#""capacity": 2"#, r#""charger": 1"#);
    let e = StationMap::parse("g.geojson", &graph).unwrap_err().to_string();
    assert_eq!(
        e,
        "g.geojson: features[1].properties.metadata.charger: must be true or false, not 1"
    );
    let graph = geojson().replace(r#""capacity": 2"#, r#""charger": true"#);
    assert_eq!(StationMap::parse("g.geojson", &graph).unwrap().chargers(), ["E"]);
}
