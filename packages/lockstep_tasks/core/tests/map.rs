//! The station map: the shipped warehouse map fits the warehouse scene; errors name the key and line; routes
//! are the fastest, with deterministic ties.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use lockstep_tasks::{Planner, RouteError, StationMap};

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../..")
        .join(path)
}

fn shipped() -> StationMap {
    StationMap::read(&repo("config/tasks/warehouse_map.yaml")).unwrap_or_else(|e| panic!("{e}"))
}

/// A scene matrix of road-surface typecodes; row 0 is the top line.
struct Scene {
    rows: usize,
    cell: f64,
    codes: Vec<Vec<u8>>,
}

fn scene() -> Scene {
    let text = std::fs::read_to_string(repo("config/scenes/warehouse.scene")).unwrap();
    let mut lines = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    let (cols, rows): (usize, usize) = (header[0].parse().unwrap(), header[1].parse().unwrap());
    let cell: f64 = header[2].parse().unwrap();
    let codes: Vec<Vec<u8>> = lines
        .map(|l| l.split_whitespace().map(|c| c.parse().unwrap()).collect())
        .collect();
    assert_eq!(codes.len(), rows);
    assert!(codes.iter().all(|r| r.len() == cols));
    Scene { rows, cell, codes }
}

impl Scene {
    /// (column, row) of the cell under (x, y).
    fn cell_at(&self, x: f64, y: f64) -> (usize, usize) {
        let c = (x / self.cell).floor();
        let r = self.rows as f64 - 1.0 - (y / self.cell).floor();
        assert!(c >= 0.0 && r >= 0.0, "({x}, {y}) is off the scene");
        (c as usize, r as usize)
    }

    fn code_at(&self, x: f64, y: f64) -> u8 {
        let (c, r) = self.cell_at(x, y);
        self.codes[r][c]
    }

    /// The distance from (x, y) to the nearest obstacle cell (typecode 0).
    fn clearance(&self, x: f64, y: f64) -> f64 {
        let mut best = f64::INFINITY;
        for (r, row) in self.codes.iter().enumerate() {
            for (c, &code) in row.iter().enumerate() {
                if code != 0 {
                    continue;
                }
                let (x0, y0) = (c as f64 * self.cell, (self.rows - 1 - r) as f64 * self.cell);
                let dx = (x0 - x).max(x - (x0 + self.cell)).max(0.0);
                let dy = (y0 - y).max(y - (y0 + self.cell)).max(0.0);
                best = best.min(dx.hypot(dy));
            }
        }
        best
    }
}

/// Points every 5 cm along a segment, both ends included.
fn samples(a: [f64; 2], b: [f64; 2]) -> Vec<[f64; 2]> {
    let n = ((b[0] - a[0]).hypot(b[1] - a[1]) / 0.05).ceil().max(1.0) as usize;
    (0..=n)
        .map(|i| {
            let t = i as f64 / n as f64;
            [a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])]
        })
        .collect()
}

#[test]
fn the_shipped_map_lies_on_free_cells_with_the_surface_speed_limits() {
    let (map, scene) = (shipped(), scene());
    assert_eq!(map.frame_id(), "map");
    assert_eq!(map.position("A"), Some([2.5, 5.5]), "the vehicle's start");
    assert!(map.lanes().iter().any(|l| l.one_way));
    for lane in map.lanes() {
        let (a, b) = (map.position(&lane.from).unwrap(), map.position(&lane.to).unwrap());
        let name = format!("{} -> {}", lane.from, lane.to);
        let mut slow = false;
        for [x, y] in samples(a, b) {
            let code = scene.code_at(x, y);
            assert_ne!(code, 0, "{name}: ({x:.2}, {y:.2}) is on an obstacle");
            let clear = scene.clearance(x, y);
            assert!(
                clear >= 0.5 - 1e-9,
                "{name}: ({x:.2}, {y:.2}) is {clear:.2} m from an obstacle"
            );
            slow |= matches!(code, 4 | 6 | 7);
        }
        let expected = if slow {
            0.5
        } else if a[1] == 2.5 && b[1] == 2.5 {
            0.8
        } else {
            1.0
        };
        assert_eq!(lane.speed_limit_mps, expected, "{name}");
    }
}

#[test]
fn every_station_reaches_every_other() {
    let map = shipped();
    let names: Vec<String> = map.stations().map(|(n, _)| n.to_owned()).collect();
    assert_eq!(names.len(), 15);
    for from in &names {
        for to in &names {
            let route = map.plan(from, to).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(route.stations.first(), Some(from));
            assert_eq!(route.stations.last(), Some(to));
            assert_eq!(route.points.len(), route.stations.len());
            for pair in route.stations.windows(2) {
                let lane = map.lanes().iter().find(|l| {
                    (l.from == pair[0] && l.to == pair[1])
                        || (!l.one_way && l.from == pair[1] && l.to == pair[0])
                });
                assert!(
                    lane.is_some(),
                    "{from} -> {to}: no lane {} -> {}",
                    pair[0],
                    pair[1]
                );
            }
            // The one search for every start gives the same times as each plan.
            let times = map.travel_times(&[from.as_str()], to);
            assert_eq!(times, vec![Ok(route.time_s)]);
        }
    }
}

#[test]
fn the_warehouse_task_route_shape_is_kept() {
    let map = shipped();
    let a_o = map.plan("A", "O").unwrap();
    assert_eq!(a_o.stations, ["A", "J1", "J2", "O"]);
    assert_eq!(a_o.points, [[2.5, 5.5], [4.5, 5.5], [4.5, 2.5], [6.5, 2.5]]);
    assert_eq!(a_o.length_m, 7.0);
    assert_eq!(a_o.time_s, 2.0 + 3.0 + 2.0 / 0.8);
    assert_eq!(a_o.speed_limit_mps, 0.8);
    let o_b = map.plan("O", "B").unwrap();
    assert_eq!(o_b.stations, ["O", "J3", "B"]);
    // The warehouse task's route from A to B (before the station map, written out as points).
    let a_b = map.plan("A", "B").unwrap();
    assert_eq!(a_b.stations, ["A", "J1", "J2", "O", "J3", "B"]);
    assert_eq!(
        a_b.points,
        [
            [2.5, 5.5],
            [4.5, 5.5],
            [4.5, 2.5],
            [6.5, 2.5],
            [9.5, 2.5],
            [12.5, 2.5]
        ]
    );
    // The ice loop is as long but slower; back from O goes the other way round.
    assert_eq!(map.plan("O", "A").unwrap().stations, ["O", "J2", "J1", "A"]);
}

const SMALL: &str = "\
frame_id: map
stations:
  A: {x: 0, y: 0}
  B: {x: 3, y: 4}
  C: {x: 6, y: 0}
lanes:
  - {from: A, to: B, speed_limit_mps: 1.0}
  - {from: B, to: C, speed_limit_mps: 1.0}
  - from: A
    to: C
    speed_limit_mps: 1.0
    one_way: true
";

fn small_error(from: &str, to: &str) -> String {
    assert!(SMALL.contains(from), "{from}");
    StationMap::parse("small.yaml", &SMALL.replacen(from, to, 1))
        .unwrap_err()
        .to_string()
}

#[test]
fn each_mistake_is_named_with_its_key_and_line() {
    let cases = [
        (
            "to: C, speed",
            "to: X, speed",
            "small.yaml:8: lanes[1].to: `X` is not a station (stations: A, B, C)",
        ),
        (
            "    to: C",
            "    to: Y",
            "small.yaml:10: lanes[2].to: `Y` is not a station (stations: A, B, C)",
        ),
        (
            "from: B, to: C",
            "from: A, to: B",
            "small.yaml:8: lanes[1]: a second lane from A to B (lanes[0] is one already)",
        ),
        (
            "from: B, to: C",
            "from: C, to: A",
            "small.yaml:9: lanes[2]: a second lane from A to C (lanes[1] is one already)",
        ),
        (
            "to: B, speed_limit_mps: 1.0",
            "to: B, speed_limit_mps: 0",
            "small.yaml:7: lanes[0].speed_limit_mps: 0: must be a finite number > 0",
        ),
        (
            "to: B, speed_limit_mps: 1.0",
            "to: B, speed_limit_mps: .nan",
            "small.yaml:7: lanes[0].speed_limit_mps: NaN: must be a finite number > 0",
        ),
        (
            "    speed_limit_mps: 1.0\n",
            "    speed_limit_mps: .inf\n",
            "small.yaml:11: lanes[2].speed_limit_mps: inf: must be a finite number > 0",
        ),
        (
            "to: B, speed",
            "to: B, length_m: 4.998, speed",
            "small.yaml:7: lanes[0].length_m: 4.998 m is shorter than the straight line from A to B (5.000 m)",
        ),
        (
            "to: B, speed",
            "to: B, length_m: -1, speed",
            "small.yaml:7: lanes[0].length_m: -1: must be a finite number > 0",
        ),
        (
            "to: B, speed",
            "to: A, speed",
            "small.yaml:7: lanes[0].to: a lane from `A` to itself",
        ),
        (
            "  B: {x: 3, y: 4}",
            "  \"\": {x: 3, y: 4}",
            "small.yaml:2: stations: a station name is empty (``)",
        ),
        (
            "  C: {x: 6, y: 0}",
            "  C: {x: 6, y: .inf}",
            "small.yaml:5: stations.C.y: inf: must be a finite number within +-10000000 m",
        ),
        ("frame_id: map", "frame_id: ''", "small.yaml:1: frame_id: is empty"),
    ];
    for (from, to, expected) in cases {
        assert_eq!(small_error(from, to), expected, "{from} -> {to}");
    }
    // The parser's own errors: the key path and its line.
    let e = StationMap::parse("small.yaml", &SMALL.replacen("one_way: true", "oneway: true", 1)).unwrap_err();
    assert_eq!((e.key.as_str(), e.line), ("lanes[2].oneway", Some(12)), "{e}");
    assert!(e.reason.contains("unknown field `oneway`"), "{e}");
    let e = StationMap::parse("small.yaml", &SMALL.replacen("speed_limit_mps: 1.0}", "}", 1)).unwrap_err();
    assert_eq!((e.key.as_str(), e.line), ("lanes[0]", Some(7)), "{e}");
    assert!(e.reason.contains("missing field `speed_limit_mps`"), "{e}");
    let e = StationMap::parse("small.yaml", &SMALL.replacen("x: 3", "x: three", 1)).unwrap_err();
    assert_eq!((e.key.as_str(), e.line), ("stations.B.x", Some(4)), "{e}");
    let e = StationMap::parse("small.yaml", "stations: {}\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "small.yaml:1: stations: no station: a map needs at least one"
    );
}

#[test]
fn sizes_are_limited() {
    let stations: String = (0..10_001)
        .map(|i| format!("  s{i}: {{x: 0, y: {i}}}\n"))
        .collect();
    let e = StationMap::parse("big.yaml", &format!("stations:\n{stations}")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "big.yaml:1: stations: 10001 stations: more than 10000"
    );
    let lanes: String = (0..100_001)
        .map(|_| "- {from: a, to: b, speed_limit_mps: 1}\n")
        .collect();
    let text = format!("stations: {{a: {{x: 0, y: 0}}, b: {{x: 1, y: 0}}}}\nlanes:\n{lanes}");
    assert!(text.len() < 4 << 20);
    let e = StationMap::parse("big.yaml", &text).unwrap_err();
    assert_eq!(e.to_string(), "big.yaml:2: lanes: 100001 lanes: more than 100000");
    let e = StationMap::parse("big.yaml", &format!("{SMALL}#{}\n", "x".repeat(4 << 20))).unwrap_err();
    assert_eq!((e.key.as_str(), e.line), (".", None));
    assert_eq!(
        e.to_string(),
        "big.yaml: .: more than 4194304 bytes: a station map is at most 4 MiB"
    );
    // A file that never ends (or a FIFO, which would block) is refused before it is opened.
    let zero = std::path::Path::new("/dev/zero");
    if zero.exists() {
        let e = StationMap::read(zero).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/dev/zero: .: is not a regular file (a FIFO, device or socket)"
        );
    }
    let e = StationMap::read(std::path::Path::new("/nonexistent/map.yaml")).unwrap_err();
    assert_eq!((e.key.as_str(), e.line), (".", None));
    assert!(e.to_string().starts_with("/nonexistent/map.yaml: .: "), "{e}");
    // Repeated station names are refused by the parser.
    let e = StationMap::parse("small.yaml", &SMALL.replacen("  C: {x: 6", "  A: {x: 6", 1)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "small.yaml:5: stations.A: this station is named twice"
    );
}

#[test]
fn one_way_lanes_are_driven_one_way() {
    let map = StationMap::parse("small.yaml", SMALL).unwrap();
    assert_eq!(map.plan("A", "C").unwrap().stations, ["A", "C"]);
    let back = map.plan("C", "A").unwrap();
    assert_eq!(back.stations, ["C", "B", "A"]);
    assert_eq!(back.length_m, 10.0);
}

#[test]
fn the_fastest_route_wins_over_the_shortest() {
    // A - Z straight over grass (4 m at 0.5 m/s: 8 s), or round by M (2 x 2.83 m at 1 m/s: 5.66 s).
    let text = "\
stations: {A: {x: 0, y: 0}, M: {x: 2, y: 2}, Z: {x: 4, y: 0}}
lanes:
  - {from: A, to: Z, speed_limit_mps: 0.5}
  - {from: A, to: M, speed_limit_mps: 1.0}
  - {from: M, to: Z, speed_limit_mps: 1.0}
";
    let map = StationMap::parse("t.yaml", text).unwrap();
    let route = map.plan("A", "Z").unwrap();
    assert_eq!(route.stations, ["A", "M", "Z"]);
    assert!((route.time_s - 2.0 * 8f64.sqrt()).abs() < 1e-12);
    assert_eq!(route.speed_limit_mps, 1.0);
    // At 0.8 m/s the straight lane takes 5 s, and wins.
    let map = StationMap::parse("t.yaml", &text.replacen("0.5", "0.8", 1)).unwrap();
    let route = map.plan("A", "Z").unwrap();
    assert_eq!(
        (route.stations.len(), route.time_s, route.speed_limit_mps),
        (2, 5.0, 0.8)
    );
}

#[test]
fn ties_go_to_fewer_lanes_then_the_first_names() {
    // Z is 2 s from A straight, by M, by P or by Q (P and Q 1 m off the line: lanes of 1.5 m at 1.5 m/s).
    let text = "\
stations: {A: {x: 0, y: 0}, M: {x: 1, y: 0}, Q: {x: 1, y: -1}, P: {x: 1, y: 1}, Z: {x: 2, y: 0}}
lanes:
  - {from: A, to: Q, length_m: 1.5, speed_limit_mps: 1.5}
  - {from: Q, to: Z, length_m: 1.5, speed_limit_mps: 1.5}
  - {from: A, to: P, length_m: 1.5, speed_limit_mps: 1.5}
  - {from: P, to: Z, length_m: 1.5, speed_limit_mps: 1.5}
  - {from: A, to: M, speed_limit_mps: 1.0}
  - {from: M, to: Z, speed_limit_mps: 1.0}
  - {from: A, to: Z, speed_limit_mps: 1.0}
";
    let route = |text: &str| StationMap::parse("t.yaml", text).unwrap().plan("A", "Z").unwrap();
    assert_eq!(route(text).stations, ["A", "Z"], "fewer lanes");
    let two = text.replacen("  - {from: A, to: Z, speed_limit_mps: 1.0}\n", "", 1);
    assert_eq!(route(&two).stations, ["A", "M", "Z"], "M before P and Q");
    let no_m = two.replacen("  - {from: A, to: M, speed_limit_mps: 1.0}\n", "", 1);
    assert_eq!(
        route(&no_m).stations,
        ["A", "P", "Z"],
        "P before Q, whatever the lanes' order"
    );
    assert_eq!(route(&no_m).time_s, 2.0);
}

#[test]
fn unknown_and_unreachable_stations_are_named() {
    let text = "\
stations: {A: {x: 0, y: 0}, B: {x: 1, y: 0}, C: {x: 2, y: 0}, X: {x: 9, y: 9}, Y: {x: 9, y: 8}}
lanes:
  - {from: A, to: B, speed_limit_mps: 1.0}
  - {from: B, to: C, speed_limit_mps: 1.0}
  - {from: X, to: Y, speed_limit_mps: 1.0, one_way: true}
";
    let map = StationMap::parse("m.yaml", text).unwrap();
    let e = |from, to| map.plan(from, to).unwrap_err().to_string();
    assert_eq!(
        e("C", "W"),
        "`W` is not a station of m.yaml (it has: A, B, C, X, Y)"
    );
    assert_eq!(
        e("C", "X"),
        "no route from C to X on m.yaml: no lane leads into X"
    );
    assert_eq!(
        e("Y", "A"),
        "no route from Y to A on m.yaml: no lane leads out of Y"
    );
    assert_eq!(
        e("C", "Y"),
        "no route from C to Y on m.yaml: 2 of the 5 stations lead to Y (X, Y), C is not one of them \
         (check the one-way lanes)"
    );
    assert!(matches!(map.plan("X", "A"), Err(RouteError::Unreachable { .. })));
    let many: String = (0..20).map(|i| format!("s{i:02}: {{x: {i}, y: 0}}, ")).collect();
    let map = StationMap::parse("m.yaml", &format!("stations: {{{many}}}")).unwrap();
    assert_eq!(
        map.plan("s00", "t").unwrap_err().to_string(),
        "`t` is not a station of m.yaml (it has: s00, s01, s02, s03, s04, s05, s06, s07, ... (20 in all))"
    );
}

#[test]
fn a_route_to_where_it_starts_has_one_point_and_no_limit() {
    let map = shipped();
    let route = map.plan("C", "C").unwrap();
    assert_eq!(route.stations, ["C"]);
    assert_eq!(route.points, [[2.5, 12.5]]);
    assert_eq!((route.length_m, route.time_s), (0.0, 0.0));
    assert_eq!(route.speed_limit_mps, f64::INFINITY);
}

#[test]
fn the_nearest_station() {
    let map = shipped();
    assert_eq!(map.nearest_station(2.4, 5.7).map(|(n, _)| n), Some("A"));
    let (name, d) = map.nearest_station(17.5, 8.5).unwrap();
    assert_eq!((name, d), ("E", 3.0));
    // Halfway between J1 (4.5, 5.5) and J5 (4.5, 8.5): the first name.
    assert_eq!(map.nearest_station(4.5, 7.0).map(|(n, _)| n), Some("J1"));
    assert_eq!(map.nearest_station(f64::NAN, 0.0), None);
    assert!(map.nearest_station(1e308, -1e308).is_some());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Any edit of a valid map parses or fails with an error, never a panic; a map that parses plans between
    /// any two of its stations, and every route is a chain of its lanes.
    #[test]
    fn edited_maps_never_panic(
        edits in proptest::collection::vec((0usize..400, "[-A-Z:{}, .\n\\[\\]0-9]{0,4}", 0usize..4), 1..6)
    ) {
        let mut text = SMALL.to_owned();
        for (at, insert, remove) in edits {
            let mut at = at.min(text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let end = (at + remove).min(text.len());
            if text.is_char_boundary(end) {
                text.replace_range(at..end, &insert);
            }
        }
        if let Ok(map) = StationMap::parse("edited.yaml", &text) {
            let names: Vec<String> = map.stations().map(|(n, _)| n.to_owned()).collect();
            for from in &names {
                for to in &names {
                    if let Ok(route) = map.plan(from, to) {
                        proptest::prop_assert_eq!(route.points.len(), route.stations.len());
                        proptest::prop_assert!(route.time_s >= 0.0 && route.length_m >= 0.0);
                    }
                }
            }
        }
    }
}
