//! Nav2 route graphs (GeoJSON) as station maps: the shipped warehouse drawn as a Nav2 graph plans the same
//! routes as its YAML map; Nav2's conventions (directed edges, speed metadata, ids) are read as Nav2 reads
//! them; errors name the file, the feature and the key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use lockstep_tasks::{Planner, StationMap};

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../..")
        .join(path)
}

fn read(path: &str) -> StationMap {
    StationMap::read(&repo(path)).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_warehouse_as_a_nav2_route_graph_plans_the_routes_of_its_yaml_map() {
    let (yaml, graph) = (
        read("config/tasks/warehouse_map.yaml"),
        read("config/tasks/warehouse_map.geojson"),
    );
    assert_eq!(graph.frame_id(), yaml.frame_id());
    assert_eq!(graph.chargers(), ["C", "D"]);
    assert_eq!(graph.chargers(), yaml.chargers());
    let names: Vec<&str> = yaml.stations().map(|(n, _)| n).collect();
    assert_eq!(
        graph.stations().collect::<Vec<_>>(),
        yaml.stations().collect::<Vec<_>>()
    );
    // Two-way lanes come back as one lane from the graph's pair of edges, one-way ones stay one-way.
    assert_eq!(graph.lanes().len(), yaml.lanes().len());
    assert_eq!(
        graph.lanes().iter().filter(|l| l.one_way).count(),
        yaml.lanes().iter().filter(|l| l.one_way).count()
    );
    let mut pairs = 0;
    for from in &names {
        for to in &names {
            let (a, b) = (yaml.plan(from, to).unwrap(), graph.plan(from, to).unwrap());
            assert_eq!(a.stations, b.stations, "{from} -> {to}");
            assert!(
                (a.time_s - b.time_s).abs() < 1e-9,
                "{from} -> {to}: {} vs {}",
                a.time_s,
                b.time_s
            );
            pairs += 1;
        }
    }
    assert_eq!(pairs, names.len() * names.len());
}

fn node(id: i64, x: f64, extra: &str) -> String {
    format!(
        r#"{{"type": "Feature", "geometry": {{"type": "Point", "coordinates": [{x}, 0.0]}},
            "properties": {{"id": {id}{extra}}}}}"#
    )
}

fn edge(id: i64, start: i64, end: i64, metadata: &str) -> String {
    format!(
        r#"{{"type": "Feature", "geometry": {{"type": "MultiLineString"}},
            "properties": {{"id": {id}, "startid": {start}, "endid": {end}, "metadata": {{{metadata}}}}}}}"#
    )
}

fn graph(features: &[String]) -> String {
    format!(
        "{{\"type\": \"FeatureCollection\", \"features\": [\n{}\n]}}",
        features.join(",\n")
    )
}

fn parse(features: &[String]) -> Result<StationMap, String> {
    StationMap::parse("g.geojson", &graph(features)).map_err(|e| e.to_string())
}

#[test]
fn edges_are_driven_one_way_at_nav2s_speeds_and_nodes_are_named_by_id() {
    let map = parse(&[
        node(0, 0.0, ""),
        node(1, 4.0, r#", "frame": "warehouse""#),
        node(2, 8.0, r#", "metadata": {"name": "dock"}"#),
        edge(10, 0, 1, r#""abs_speed_limit": 2.0"#),
        edge(11, 1, 2, r#""speed_limit": 50"#),
        edge(12, 2, 1, ""),
        edge(13, 1, 0, r#""abs_speed_limit": 1.0"#),
    ])
    .unwrap();
    assert_eq!(map.frame_id(), "warehouse");
    let there = map.plan("0", "dock").unwrap();
    // 4 m at 2 m/s, then 4 m at 50 % of the default 0.5 m/s.
    assert_eq!(there.stations, ["0", "1", "dock"]);
    assert!((there.time_s - (2.0 + 16.0)).abs() < 1e-9, "{}", there.time_s);
    // Back: 4 m at the default 0.5 m/s, then 4 m at 1 m/s (the reverse edge's own speed).
    let back = map.plan("dock", "0").unwrap();
    assert!((back.time_s - (8.0 + 4.0)).abs() < 1e-9, "{}", back.time_s);
    // Edges 11 and 12 differ in speed: two one-way lanes; 10 and 13 too.
    assert_eq!(map.lanes().len(), 4);
    assert!(map.lanes().iter().all(|l| l.one_way));
    let same_speed = parse(&[
        node(0, 0.0, ""),
        node(1, 3.0, ""),
        edge(5, 0, 1, ""),
        edge(6, 1, 0, ""),
    ])
    .unwrap();
    assert_eq!(same_speed.lanes().len(), 1);
    assert!(!same_speed.lanes()[0].one_way);
}

#[test]
fn a_bad_graph_is_named_by_file_feature_and_key() {
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![node(0, 0.0, ""), node(1, 1.0, ""), edge(2, 0, 9, "")],
            "g.geojson: features[2].properties.endid: no node has id 9",
        ),
        (
            vec![node(0, 0.0, ""), node(0, 1.0, "")],
            "g.geojson: features[1].properties.id: node id 0 is given twice (station 0 has it already)",
        ),
        (
            vec![node(0, 0.0, r#", "frame": "map""#), node(1, 1.0, r#", "frame": "odom""#)],
            "g.geojson: features[1].properties.frame: 'odom', but features[0] is in 'map': one frame for every node",
        ),
        (
            vec![node(0, 0.0, ""), node(1, 1.0, ""), edge(2, 0, 1, r#""abs_speed_limit": -1"#)],
            "g.geojson: features[2].properties.metadata.abs_speed_limit: must be a number above 0, not -1",
        ),
        (
            vec![r#"{"type": "Feature", "geometry": {"type": "Polygon"}, "properties": {}}"#.to_owned()],
            "g.geojson: features[0].geometry.type: 'Polygon' is neither a node (Point) nor an edge (MultiLineString)",
        ),
        (
            vec![r#"{"type": "Feature", "geometry": {"type": "Point", "coordinates": [1]}, "properties": {"id": 3}}"#
                .to_owned()],
            "g.geojson: features[0].geometry.coordinates: a node needs [x, y] in metres",
        ),
    ];
    for (features, expected) in cases {
        assert_eq!(parse(&features).unwrap_err(), expected);
    }
    // What the map's own checks find is named by the feature it came from: a second edge the same way.
    let twice = parse(&[
        node(0, 0.0, ""),
        node(1, 1.0, ""),
        edge(2, 0, 1, ""),
        edge(3, 0, 1, ""),
    ])
    .unwrap_err();
    assert_eq!(
        twice,
        "g.geojson: features[3]: a second lane from 0 to 1 (features[2] is one already)"
    );
    let far = parse(&[node(0, 1e9, ""), node(1, 1.0, ""), edge(2, 0, 1, "")]).unwrap_err();
    assert!(
        far.starts_with("g.geojson: features[0].geometry.coordinates: "),
        "{far}"
    );
}

#[test]
fn broken_and_hostile_json_is_refused_with_its_line() {
    let broken = "{\"type\": \"FeatureCollection\",\n \"features\": [\n  {\"type\": }\n]}";
    let e = StationMap::parse("g.geojson", broken).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (Some(3), "."), "{e}");
    assert!(e.reason.starts_with("not valid JSON: "), "{e}");
    let deep = format!(
        "{{\"type\": \"FeatureCollection\",\n\"features\": {}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let e = StationMap::parse("g.geojson", &deep).unwrap_err();
    assert_eq!(
        (e.line, e.reason.as_str()),
        (Some(2), "nested more than 64 levels deep")
    );
}
