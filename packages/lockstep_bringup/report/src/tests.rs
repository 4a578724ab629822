//! Unit tests: a small demo folder rendered end to end, the HTML's structure, bad input named.

use super::*;
use std::fs;

fn tiny_png() -> Vec<u8> {
    let mut panel = lockstep_plot::Panel::new("p", "x", "y");
    panel
        .series
        .push(lockstep_plot::Series::line("a", vec![(0.0, 0.0), (1.0, 1.0)]));
    let mut figure = lockstep_plot::Figure::new("tool plot").with_panel(panel);
    figure.width_px = 400;
    figure.panel_height_px = 200;
    figure.to_png().unwrap()
}

/// A demo folder with every plot's source.
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir_all(d.join("data")).unwrap();
    fs::create_dir_all(d.join("replay")).unwrap();
    fs::create_dir_all(d.join("calibration")).unwrap();
    fs::write(d.join("replay/differences.png"), tiny_png()).unwrap();
    fs::write(d.join("calibration/trajectories.png"), tiny_png()).unwrap();
    fs::write(
        d.join("data/vehicle_path.json"),
        r#"{"scene":{"columns":4,"rows":3,"cell_m":1.0,"obstacles":[[0,0],[3,2]]},"start":[0.5,1.5],
            "destinations":[[3.5,1.5]],"truth":[[0.5,1.5],[2.0,1.4],[3.5,1.5]]}"#,
    )
    .unwrap();
    fs::write(
        d.join("data/player.json"),
        r#"{"period_s":0.002,"joints":["a","b"],"velocity_fraction":{"a":[0,0.5,0.9],"b":[0,0.2,0.4]},
            "acceleration_fraction":{"a":[1.0,0.3,0.0],"b":[0.5,0.5,0.0]},"events":[{"label":"pause","t_s":0.002}]}"#,
    )
    .unwrap();
    fs::write(
        d.join("data/task_timeline.json"),
        r#"{"task":"move","outcome":"completed","bars":[
            {"path":"task","level":0,"status":"running","start_s":0,"end_s":5},
            {"path":"task/duty[0]","level":1,"status":"delayed","start_s":0,"end_s":1},
            {"path":"task/duty[0]","level":1,"status":"running","start_s":1,"end_s":5}]}"#,
    )
    .unwrap();
    fs::write(
        d.join("report.json"),
        r#"{"created_utc":"20250101T000000Z","seed":42,"total_wall_s":12.5,
            "stages":{"replay":{"ok":true,"wall_s":2.0,"summary":"100 %"},"drive":{"ok":false,"wall_s":1.0,"summary":"a <b>"}},
            "figures":[{"stage":"replay","name":"lock-step aligned","value":"100.0 %","ok":true},
                       {"stage":"drive","name":"path","value":"3 m","ok":null}],
            "plots":{"vehicle_path":"data/vehicle_path.json","replay_differences":"replay/differences.png",
                     "calibration":"calibration/trajectories.png","player":"data/player.json",
                     "task_timeline":"data/task_timeline.json"},
            "drive":{"anything":"else"}}"#,
    )
    .unwrap();
    dir
}

#[test]
fn a_folder_renders_every_plot_into_one_self_contained_page() {
    let dir = folder();
    let rendered = render(dir.path()).unwrap();
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
        assert!(png_size(&png).is_some(), "{drawn}");
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
    // Fixed image sizes: the tool PNGs are 400 x 240, shown as they are.
    assert!(page.contains("width=\"400\" height=\"240\""));
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
    assert_eq!(rendered.missing, vec!["player"]);
    let page = fs::read_to_string(&rendered.html).unwrap();
    assert_eq!(page.matches("<figure id=\"plot-").count(), 4);
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

    let e = render(&d.join("nowhere")).unwrap_err().to_string();
    assert!(e.contains("cannot read") && e.contains("report.json"), "{e}");
}

#[test]
fn wide_images_are_shown_at_most_max_width_with_their_aspect() {
    assert_eq!(html::shown_size((800, 600)), (800, 600));
    assert_eq!(html::shown_size((2200, 1000)), (1100, 500));
    assert_eq!(png_size(b"short"), None);
    assert_eq!(
        html::escape("<a href='x'>&\""),
        "&lt;a href=&#39;x&#39;&gt;&amp;&quot;"
    );
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
