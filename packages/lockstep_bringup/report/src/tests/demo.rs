//! The demo's folder: rendered end to end, the HTML's structure, failed stages, bad input named.

use super::{put, tiny_png};
use crate::*;
use std::fs;

/// A demo folder with every plot's source.
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    put(d, "replay/differences.png", tiny_png());
    put(d, "calibration/trajectories.png", tiny_png());
    put(
        d,
        "data/vehicle_path.json",
        r#"{"scene":{"columns":4,"rows":3,"cell_m":1.0,"obstacles":[[0,0],[3,2]]},"start":[0.5,1.5],
            "destinations":[[3.5,1.5]],"truth":[[0.5,1.5],[2.0,1.4],[3.5,1.5]]}"#,
    );
    put(
        d,
        "data/player.json",
        r#"{"period_s":0.002,"joints":["a","b"],"velocity_fraction":{"a":[0,0.5,0.9],"b":[0,0.2,0.4]},
            "acceleration_fraction":{"a":[1.0,0.3,0.0],"b":[0.5,0.5,0.0]},"events":[{"label":"pause","t_s":0.002}]}"#,
    );
    put(
        d,
        "data/task_timeline.json",
        r#"{"task":"move","outcome":"completed","bars":[
            {"path":"task","level":0,"status":"running","start_s":0,"end_s":5},
            {"path":"task/duty[0]","level":1,"status":"delayed","start_s":0,"end_s":1},
            {"path":"task/duty[0]","level":1,"status":"running","start_s":1,"end_s":5}]}"#,
    );
    put(
        d,
        "report.json",
        r#"{"created_utc":"20250101T000000Z","seed":42,"total_wall_s":12.5,
            "stages":{"replay":{"ok":true,"wall_s":2.0,"summary":"100 %"},"drive":{"ok":false,"wall_s":1.0,"summary":"a <b>"}},
            "figures":[{"stage":"replay","name":"lock-step aligned","value":"100.0 %","ok":true},
                       {"stage":"drive","name":"path","value":"3 m","ok":null}],
            "plots":{"vehicle_path":"data/vehicle_path.json","replay_differences":"replay/differences.png",
                     "calibration":"calibration/trajectories.png","player":"data/player.json",
                     "task_timeline":"data/task_timeline.json"},
            "drive":{"anything":"else"}}"#,
    );
    dir
}

#[test]
fn a_folder_renders_every_plot_into_one_self_contained_page() {
    let dir = folder();
    let rendered = render(dir.path()).unwrap();
    assert_eq!(rendered.kind, Kind::Demo);
    assert!(rendered.missing.is_empty());
    assert_eq!(
        rendered.plots,
        vec![
            "plots/vehicle_path.png",
            "replay/differences.png",
            "calibration/trajectories.png",
            "plots/player.png",
            "plots/task_timeline.png"
        ]
    );
    for drawn in ["vehicle_path", "player", "task_timeline"] {
        let png = fs::read(dir.path().join(format!("plots/{drawn}.png"))).unwrap();
        // Drawn as wide as the page's column: sharp at its full width.
        assert_eq!(png_size(&png).map(|s| s.0), Some(PAGE_WIDTH_PX), "{drawn}");
    }
    let page = fs::read_to_string(&rendered.html).unwrap();
    assert_eq!(page.matches("<figure id=\"plot-").count(), 5);
    assert_eq!(page.matches("src=\"data:image/png;base64,").count(), 5);
    // Self-contained: nothing fetched from anywhere.
    assert!(!page.contains("http://") && !page.contains("https://"));
    assert!(!page.contains("src=\"plots/") && !page.contains("src=\"replay/"));
    for spec in PLOTS {
        assert!(page.contains(&format!("<h2>{}</h2>", spec.title)), "{}", spec.key);
    }
    // The key figures as a table, the stages in run order, text escaped.
    assert!(page.contains("<td>lock-step aligned</td><td>100.0 %</td><td class=\"ok\">yes</td>"));
    assert!(page.find("<td>drive</td>").unwrap() < page.find("<td>replay</td>").unwrap());
    assert!(page.contains("a &lt;b&gt;") && !page.contains("a <b>"));
    // Images keep their own size in the markup (the layout does not wait for them) and CSS scales them to
    // the column, which is at most as wide as the drawn plots.
    assert!(page.contains("width=\"400\" height=\"240\""));
    assert!(page.contains("figure img{display:block;width:100%;height:auto"));
    assert!(page.contains(&format!("main{{max-width:{PAGE_WIDTH_PX}px}}")));
}

#[test]
fn the_same_folder_renders_the_same_bytes() {
    let dir = folder();
    render(dir.path()).unwrap();
    let first = fs::read(dir.path().join("report.html")).unwrap();
    render(dir.path()).unwrap();
    assert_eq!(first, fs::read(dir.path().join("report.html")).unwrap());
}

#[test]
fn a_stage_that_did_not_run_leaves_its_plot_out() {
    let dir = folder();
    let path = dir.path().join("report.json");
    let text = fs::read_to_string(&path)
        .unwrap()
        .replace(r#""player":"data/player.json","#, "");
    fs::write(&path, text).unwrap();
    let rendered = render(dir.path()).unwrap();
    assert_eq!(
        rendered
            .missing
            .iter()
            .map(|m| m.key.as_str())
            .collect::<Vec<_>>(),
        vec!["player"]
    );
    assert!(rendered.missing[0].why.contains("did not run"));
    let page = fs::read_to_string(&rendered.html).unwrap();
    assert_eq!(page.matches("<figure id=\"plot-").count(), 4);
}

#[test]
fn a_demo_stopped_before_its_report_stage_still_renders() {
    // demo.py starts report.json with `"figures": {}` and fills in the list in its last stage.
    let dir = tempfile::tempdir().unwrap();
    put(
        dir.path(),
        "report.json",
        r#"{"seed":42,"created_utc":"x","stages":{"drive":{"ok":true,"wall_s":1.0,"summary":"s"}},"figures":{},"plots":{}}"#,
    );
    let rendered = render(dir.path()).unwrap();
    assert_eq!(rendered.kind, Kind::Demo);
    assert_eq!(rendered.missing.len(), PLOTS.len());
}

/// The stages cell of `stage` in the page (from its `<td>stage</td>` to the end of its row).
fn stage_row<'a>(page: &'a str, stage: &str) -> &'a str {
    let start = page.find(&format!("<tr><td>{stage}</td>")).unwrap();
    let end = start + page[start..].find("</tr>").unwrap();
    &page[start..end]
}

/// An error far longer than a summary line, with a path in the middle and several lines.
const LONG_ERROR: &str = "RuntimeError: lockstep calibrate failed: error: cannot open bag: \
     /tmp/very/long/path/to/the/demo/output/folder/20250101T000000Z/run/run_0.mcap: the file ends inside \
     a record (truncated at byte 123456)\nTraceback (most recent call last):\n  File \"scripts/demo.py\", \
     line 362, in stage_calibrate";

#[test]
fn a_failed_stage_shows_its_whole_error_and_links_its_log() {
    let dir = folder();
    let d = dir.path();
    put(d, "logs/stage-calibrate.txt", "the stage's output\n");
    let json = fs::read_to_string(d.join("report.json")).unwrap().replace(
        r#""drive":{"ok":false,"wall_s":1.0,"summary":"a <b>"}"#,
        &format!(
            r#""drive":{{"ok":false,"wall_s":1.0,"summary":"a <b>"}},
               "calibrate":{{"ok":false,"wall_s":1.0,"summary":"RuntimeError: lockstep calibrate failed: error: cannot open bag: /tmp/very/lo",
                             "error":{},"log":"logs/stage-calibrate.txt"}}"#,
            serde_json::to_string(LONG_ERROR).unwrap()
        ),
    );
    put(d, "report.json", json);
    let page = fs::read_to_string(render(d).unwrap().html).unwrap();
    let row = stage_row(&page, "calibrate");
    // The whole error, every line of it, not the summary's cut start.
    assert!(
        row.contains(&format!("<pre class=\"error\">{}</pre>", escape(LONG_ERROR))),
        "{row}"
    );
    // A relative link to the stage's log in the folder, which is there.
    assert!(
        row.contains("log: <a href=\"logs/stage-calibrate.txt\">logs/stage-calibrate.txt</a>"),
        "{row}"
    );
    assert!(d.join("logs/stage-calibrate.txt").is_file());
    // Without the named one, the stage's own logs/<stage>.log (only it, though others share its name).
    put(d, "logs/calibrate.log", "x");
    put(d, "logs/calibrate-1.log", "x");
    let json = fs::read_to_string(d.join("report.json"))
        .unwrap()
        .replace(r#","log":"logs/stage-calibrate.txt""#, "");
    put(d, "report.json", json);
    let page = fs::read_to_string(render(d).unwrap().html).unwrap();
    let row = stage_row(&page, "calibrate");
    assert!(
        row.contains("log: <a href=\"logs/calibrate.log\">logs/calibrate.log</a>")
            && row.matches("<a ").count() == 1,
        "{row}"
    );
    // A stage that went well shows its summary only.
    assert!(!stage_row(&page, "replay").contains("<pre"));
}

#[test]
fn a_failed_stage_without_a_named_log_links_the_logs_the_folder_has() {
    let dir = folder();
    let d = dir.path();
    // No log named in report.json, no logs/: only the summary it has.
    let page = fs::read_to_string(render(d).unwrap().html).unwrap();
    let row = stage_row(&page, "drive");
    assert!(
        row.contains("<pre class=\"error\">a &lt;b&gt;</pre>") && !row.contains("<a "),
        "{row}"
    );
    // Files under logs/ named after the stage.
    put(d, "logs/drive-0.log", "x");
    put(d, "logs/drive-3.log", "x");
    put(d, "logs/replay_system-1.log", "x");
    let page = fs::read_to_string(render(d).unwrap().html).unwrap();
    let row = stage_row(&page, "drive");
    assert!(
        row.contains("log: <a href=\"logs/drive-0.log\">logs/drive-0.log</a>, <a href=\"logs/drive-3.log\">"),
        "{row}"
    );
    // Nothing named after it: the logs/ folder, where the demo writes every process's output.
    fs::remove_file(d.join("logs/drive-0.log")).unwrap();
    fs::remove_file(d.join("logs/drive-3.log")).unwrap();
    let page = fs::read_to_string(render(d).unwrap().html).unwrap();
    assert!(stage_row(&page, "drive").contains("<a href=\"logs/\">logs/</a>"));
    // A log named outside the folder is not linked; a name with a space is encoded.
    let row = StageRow {
        ok: false,
        wall_s: 0.0,
        summary: String::new(),
        error: None,
        log: Some("../elsewhere.log".into()),
    };
    assert_eq!(demo::stage_logs(d, "drive", &row), vec!["logs/"]);
    let row = StageRow {
        log: Some(d.join("logs/the drive.log").display().to_string()),
        ..row
    };
    assert_eq!(demo::stage_logs(d, "drive", &row), vec!["logs/the drive.log"]);
    assert_eq!(href("logs/the drive#1.log"), "logs/the%20drive%231.log");
}

#[test]
fn bad_input_names_the_file_and_the_problem() {
    let dir = folder();
    let d = dir.path();
    fs::write(d.join("data/player.json"), r#"{"period_s":0.002}"#).unwrap();
    let e = render(d).unwrap_err().to_string();
    assert!(
        e.contains("player.json") && e.contains("missing field `joints`"),
        "{e}"
    );

    let dir = folder();
    let d = dir.path();
    fs::write(d.join("replay/differences.png"), b"not a png").unwrap();
    let e = render(d).unwrap_err().to_string();
    assert!(e.contains("differences.png: not a PNG"), "{e}");

    let dir = folder();
    let d = dir.path();
    fs::remove_file(d.join("calibration/trajectories.png")).unwrap();
    let e = render(d).unwrap_err().to_string();
    assert!(e.contains("cannot read") && e.contains("trajectories.png"), "{e}");

    let dir = folder();
    let d = dir.path();
    let text = fs::read_to_string(d.join("report.json"))
        .unwrap()
        .replace(r#""plots":{"#, r#""plots":{"pie":"x.png","#);
    fs::write(d.join("report.json"), text).unwrap();
    let e = render(d).unwrap_err().to_string();
    assert!(e.contains("plot `pie`: unknown plot"), "{e}");
}

#[test]
fn png_sizes_and_escaping() {
    assert_eq!(png_size(b"short"), None);
    assert_eq!(png_size(&tiny_png()), Some((400, 240)));
    assert_eq!(escape("<a href='x'>&\""), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;");
}

#[test]
fn the_timeline_puts_the_task_on_the_top_row() {
    let data: TaskTimeline = serde_json::from_str(
        r#"{"task":"move","outcome":"completed","bars":[
            {"path":"task/duty[0]","level":1,"status":"running","start_s":0,"end_s":5},
            {"path":"task","level":0,"status":"running","start_s":0,"end_s":5}]}"#,
    )
    .unwrap();
    let figure = timeline_figure(&data);
    let panel = &figure.panels[0];
    // Row 1 (drawn higher) is the task.
    assert_eq!(panel.category_at(1.0), Some("task"));
    assert_eq!(panel.category_at(0.0), Some("task/duty[0]"));
}

#[test]
fn the_timeline_rows_are_the_subtasks_names() {
    // Names from the bars or from `names`; a subtask with neither keeps the end of its path.
    let data: TaskTimeline = serde_json::from_str(
        r#"{"task":"move_material","outcome":"completed",
            "names":{"task":"move_material","task/duty[0]/message[0]/action[1]":"drive"},
            "bars":[
            {"path":"task","level":0,"status":"running","start_s":0,"end_s":9},
            {"path":"task/duty[0]/message[0]/action[0]","name":"load","level":3,"status":"running","start_s":0,"end_s":2},
            {"path":"task/duty[0]/message[0]/action[1]","level":3,"status":"running","start_s":2,"end_s":8},
            {"path":"task/duty[0]/message[1]","level":2,"status":"running","start_s":8,"end_s":9}]}"#,
    )
    .unwrap();
    let panel = &timeline_figure(&data).panels[0];
    assert_eq!(
        panel.y_categories,
        vec!["duty[0]/message[1]", "drive", "load", "move_material"]
    );
}

#[test]
fn the_vehicle_path_figure_follows_the_map_shape() {
    // A 20 m x 10 m map: about half as high as wide, 1 m = 1 m.
    let data: VehiclePath = serde_json::from_str(
        r#"{"scene":{"columns":20,"rows":10,"cell_m":1.0,"obstacles":[[0,0],[19,9]]},"start":[0.5,0.5],
            "truth":[[0.5,0.5],[19.5,9.5]]}"#,
    )
    .unwrap();
    let figure = path_figure(&data);
    let panel = &figure.panels[0];
    assert!(panel.equal_aspect);
    assert_eq!(figure.width_px, PAGE_WIDTH_PX);
    let plot_h = f64::from(figure.panel_height_px - 80);
    // (10 m plus the 5 % margins above and below) over 20 m, of the 1100 px plotting width.
    assert!((plot_h - 1100.0 * 11.0 / 20.0).abs() < 2.0, "{plot_h}");
}
