//! Soufflé's `.decl`, `.input` and `.output`: optional, checked when present; fact and output files.

// Test helpers panic on failure: a panic is the test failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{error, rules};
use lockstep_rules::directives::ColumnType;
use lockstep_rules::Error;

#[test]
fn declarations_are_checked_against_uses_and_written_facts() {
    let r = rules(".decl edge(a: number, b: number)\n.input edge\n.output path\npath(X, Y) :- edge(X, Y).\n");
    let d = r.directives();
    assert_eq!(
        d.decl("edge").unwrap().columns[1],
        ("b".to_owned(), ColumnType::Number)
    );
    assert_eq!(
        (d.inputs.clone(), d.outputs.clone()),
        (vec!["edge".to_owned()], vec!["path".to_owned()])
    );
    // `.input edge`: not "never defined".
    assert!(r.warnings(&[]).is_empty(), "{:?}", r.warnings(&[]));

    let text = ".decl edge(a: number, b: number)\nedge(1, 2, 3).\nedge(1, x).\np(X) :- edge(X).\n";
    let err = error(text);
    let all: Vec<String> = err.diagnostics().iter().map(|e| e.to_string()).collect();
    assert_eq!(all.len(), 3, "{all:?}");
    assert!(
        matches!(err.diagnostics()[0], Error::ArityMismatch { .. }),
        "{all:?}"
    );
    assert!(all[0].starts_with("test.dl:2:1:"), "{all:?}");
    assert!(
        all[1].starts_with("test.dl:3:9:") && all[1].contains("`x` does not fit column `b` of `edge`"),
        "{all:?}"
    );
    assert!(all[2].starts_with("test.dl:4:9:"), "{all:?}");
}

#[test]
fn bad_directives_are_named() {
    for (text, place, words) in [
        (".decl e(a: integer)\n", "1:12", "unknown type `integer`"),
        (
            ".decl e(a: number)\n.decl e(b: symbol)\n",
            "2:2",
            "declared twice",
        ),
        (".input e(IO=file)\n", "1:9", "not supported"),
        (".print e\n", "1:2", "a directive"),
    ] {
        let err = error(text);
        let d = err.diagnostics();
        assert_eq!(d.len(), 1, "{text}: {err}");
        assert!(
            d[0].to_string().starts_with(&format!("test.dl:{place}:")),
            "{text}: {err}"
        );
        assert!(d[0].to_string().contains(words), "{text}: {err}");
    }
}

#[cfg(feature = "cli")]
#[test]
fn facts_and_outputs_go_through_souffle_style_files() {
    let dir = tempfile::tempdir().unwrap();
    let r = rules(
        ".decl edge(a: number, b: symbol)\n.input edge\n.input w\n.output path\n\
         path(X, Y) :- edge(X, Y), w(W), W > 1.5.\n",
    );
    std::fs::write(dir.path().join("edge.facts"), "1\tb\n2\tc\n").unwrap();
    std::fs::write(dir.path().join("w.facts"), "2.5\n").unwrap();
    let facts = lockstep_rules::tsv::read_inputs(&r, dir.path()).unwrap();
    let mut engine = lockstep_rules::Engine::new(r.clone());
    engine.assert_facts(&facts).unwrap();
    engine.evaluate().unwrap();
    let out = dir.path().join("out");
    let written = lockstep_rules::tsv::write_outputs(&engine, &out).unwrap();
    assert_eq!(written.len(), 1);
    assert_eq!(
        std::fs::read_to_string(out.join("path.csv")).unwrap(),
        "1\tb\n2\tc\n"
    );
    // A field that does not fit its declared type is named with file and line.
    std::fs::write(dir.path().join("edge.facts"), "1\tb\nx\tc\n").unwrap();
    let e = lockstep_rules::tsv::read_inputs(&r, dir.path())
        .unwrap_err()
        .to_string();
    assert!(e.contains("edge.facts:2: column 1 `x` is not a Number"), "{e}");
}
