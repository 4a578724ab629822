//! Scene files: parsing, geometry and errors that name the file, the text position and the cell.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use lockstep_rules::RuleSet;
use lockstep_sim::{Cell, Error, Scene, SimConfig, Simulator, SurfaceTable};

fn err(text: &str) -> String {
    Scene::parse(text, "t.scene").unwrap_err().to_string()
}

#[test]
fn parses_header_cells_and_geometry() {
    let s = Scene::parse("# comment\n3 2 0.5\n1 2 3\n\n4 5 0\n", "t.scene").unwrap();
    assert_eq!((s.columns(), s.rows(), s.cell_size_m()), (3, 2, 0.5));
    assert_eq!(s.code(Cell { column: 2, row: 0 }), Some(3));
    assert_eq!(s.code(Cell { column: 2, row: 1 }), Some(0));
    assert_eq!(s.code(Cell { column: 3, row: 1 }), None);
    assert_eq!(s.distinct_codes(), vec![0, 1, 2, 3, 4, 5]);
    // Row 0 is drawn at the top: its centre has the largest y.
    assert_eq!(s.cell_center(Cell { column: 0, row: 0 }), (0.25, 0.75));
    assert_eq!(s.cell_center(Cell { column: 2, row: 1 }), (1.25, 0.25));
    assert_eq!(s.cell_at(1.3, 0.6), Some(Cell { column: 2, row: 0 }));
    assert_eq!(s.cell_at(-0.1, 0.6), None);
    assert_eq!(s.text_position(Cell { column: 1, row: 1 }), Some((5, 3)));
    // Cell size defaults to 1 m.
    assert_eq!(Scene::parse("1 1\n7\n", "t").unwrap().cell_size_m(), 1.0);
}

#[test]
fn ragged_row_names_file_line_and_row() {
    let e = err("3 2\n1 1 1\n1 1\n");
    assert_eq!(
        e,
        "t.scene:3:1: error: row 1 has 2 cell(s) but the header says 3 columns"
    );
}

#[test]
fn non_integer_names_row_column_and_text_position() {
    let e = err("3 2\n1 1 1\n1 x 1\n");
    assert_eq!(
        e,
        "t.scene:3:3: error: row 1, column 1: `x` is not an integer typecode"
    );
    let e = err("2 1\n1 2.5\n");
    assert!(e.contains("row 0, column 1: `2.5`"), "{e}");
}

#[test]
fn row_count_and_header_errors() {
    assert!(err("2 3\n1 1\n1 1\n").contains("the matrix has 2 row(s) but the header says 3"));
    let e = err("2 1\n1 1\n1 1\n1 1\n");
    assert!(e.starts_with("t.scene:3:1:") && e.contains("has 3 row(s)"), "{e}");
    assert!(err("").contains("empty file"));
    assert!(err("2\n1 1\n").contains("expected `columns rows [cell_size_m]`"));
    assert_eq!(
        err("2 -1\n"),
        "t.scene:1:3: error: scene header: rows must be a positive integer, found `-1`"
    );
    assert!(err("2 1 0\n1 1\n").contains("cell_size_m must be a positive number"));
}

#[test]
fn several_errors_are_reported_together() {
    let e = err("2 3\n1 a\n1\n1 1\n");
    assert!(e.contains("t.scene:2:3:") && e.contains("t.scene:3:1:"), "{e}");
}

#[test]
fn missing_file_names_the_path() {
    let e = Scene::load("/nonexistent/x.scene").unwrap_err();
    assert!(matches!(e, Error::Io { .. }));
    assert!(e
        .to_string()
        .starts_with("/nonexistent/x.scene: error: cannot read scene file"));
}

#[test]
fn unknown_typecode_is_an_error_at_load_naming_row_and_column() {
    let rules = RuleSet::load_all(&common::rule_files()).unwrap();
    let scene = Scene::parse("4 2\n1 2 3 4\n0 9 1 8\n", "bad.scene").unwrap();
    let e = SurfaceTable::decode(&rules, &scene).unwrap_err();
    let text = e.to_string();
    // Both unknown codes, each at its first cell, in file order.
    assert!(
        text.contains(
            "bad.scene:3:3: error: row 1, column 1: unknown typecode 9: no `surface` rule decodes it"
        ),
        "{text}"
    );
    assert!(
        text.contains("bad.scene:3:7: error: row 1, column 3: unknown typecode 8"),
        "{text}"
    );
    // And the simulator refuses to start on it.
    let e = Simulator::new(scene, rules, SimConfig::default()).unwrap_err();
    assert!(e.to_string().contains("row 1, column 1"));
}

#[test]
fn the_sample_scene_loads() {
    let sim = common::sample_sim();
    assert_eq!((sim.scene().columns(), sim.scene().rows()), (20, 15));
    let names: Vec<&str> = sim.surfaces().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["obstacle", "asphalt", "concrete", "gravel", "grass", "mud", "ice", "sand"]
    );
}
