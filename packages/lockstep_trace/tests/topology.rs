//! TopologyBuilder: the example pipeline (m1, m2, m3) from headers and from the ROS graph; cycle detection.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use lockstep_trace::{digest, Component, Error, TopologyBuilder, TraceHeader, Tracer};

fn fig3a_headers() -> Vec<TraceHeader> {
    let (mut m1, mut m2, mut m3) = (Tracer::new("m1"), Tracer::new("m2"), Tracer::new("m3"));
    let c1 = TraceHeader::external("c1", 0, 0, digest(b"c1"));
    let c2 = TraceHeader::external("c2", 0, 0, digest(b"c2"));
    let c4 = TraceHeader::external("c4", 0, 0, digest(b"c4"));
    let t = m1.begin_at(0);
    let c3 = m1.finish_with_process_time(t, Duration::ZERO, "c3", b"3", &[&c1, &c2]);
    let t = m3.begin_at(0);
    let c6 = m3.finish_with_process_time(t, Duration::ZERO, "c6", b"6", &[]);
    let t = m2.begin_at(0);
    let c5 = m2.finish_with_process_time(t, Duration::ZERO, "c5", b"5", &[&c3, &c6, &c4]);
    vec![c3, c6, c5]
}

fn fig3a() -> Vec<Component> {
    vec![
        Component::new("m1", ["c1", "c2"], ["c3"]),
        Component::new("m2", ["c3", "c4", "c6"], ["c5"]),
        Component::new("m3", Vec::<String>::new(), ["c6"]),
    ]
}

#[test]
fn figure_3a_from_headers_in_any_order() {
    let headers = fig3a_headers();
    for order in [[0, 1, 2], [2, 1, 0], [1, 2, 0]] {
        let mut builder = TopologyBuilder::new();
        for i in order {
            builder.add_header(&headers[i]).unwrap();
        }
        let topology = builder.build().unwrap();
        assert_eq!(topology.components, fig3a(), "order {order:?}");
        assert_eq!(topology.module_order(), vec!["m1", "m3", "m2"]);
        assert_eq!(topology.external_channels(), vec!["c1", "c2", "c4"]);
    }
}

#[test]
fn the_last_header_alone_tells_both_levels() {
    // c5's header names m1 (writer of c3) and, at the second level, that m1 read c1 and c2.
    let mut builder = TopologyBuilder::new();
    builder.add_header(&fig3a_headers()[2]).unwrap();
    let topology = builder.build().unwrap();
    assert_eq!(
        topology.component("m1").unwrap(),
        &Component::new("m1", ["c1", "c2"], ["c3"])
    );
    assert_eq!(
        topology.component("m2").unwrap(),
        &Component::new("m2", ["c3", "c4", "c6"], ["c5"])
    );
}

#[test]
fn figure_3a_from_ros_graph_facts_and_declared_components_merge() {
    let mut builder = TopologyBuilder::new();
    builder.add_writer("m2", "c5");
    builder.add_reader("m2", "c4");
    builder
        .add_component(&Component::new("m3", Vec::<String>::new(), ["c6"]))
        .unwrap();
    builder
        .add_component(&Component::new("m1", ["c2", "c1"], ["c3"]))
        .unwrap();
    builder.add_reader("m2", "c6");
    builder.add_reader("m2", "c3");
    builder.add_reader("m2", "c3"); // facts repeat; the result does not
    assert_eq!(builder.build().unwrap().components, fig3a());
}

#[test]
fn module_without_channels_still_appears() {
    let mut builder = TopologyBuilder::new();
    builder
        .add_component(&Component::new(
            "idle",
            Vec::<String>::new(),
            Vec::<String>::new(),
        ))
        .unwrap();
    assert_eq!(builder.build().unwrap().components.len(), 1);
}

#[test]
fn bad_facts_are_refused_with_what_is_wrong() {
    let mut builder = TopologyBuilder::new();
    let err = builder
        .add_component(&Component::new("", ["a"], ["b"]))
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Empty {
                field: "module_name",
                ..
            }
        ),
        "{err}"
    );
    let err = builder
        .add_header(&TraceHeader {
            module_name: "m".into(),
            ..TraceHeader::default()
        })
        .unwrap_err();
    assert!(err.to_string().contains("channel_name"), "{err}");
}

#[test]
fn cycle_is_rejected_naming_modules_and_channels() {
    let mut builder = TopologyBuilder::new();
    for component in fig3a() {
        builder.add_component(&component).unwrap();
    }
    // m1 now also reads m2's output: m1 -> m2 -> m1.
    builder.add_reader("m1", "c5");
    let err = builder.build().unwrap_err();
    match &err {
        Error::Cycle { modules, channels } => {
            assert_eq!(modules, &vec!["m1".to_owned(), "m2".to_owned()]);
            assert_eq!(channels, &vec!["c3".to_owned(), "c5".to_owned()]);
        }
        other => panic!("expected a cycle, got {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "module topology has a cycle: m1 -(c3)-> m2 -(c5)-> m1"
    );
}

#[test]
fn longer_cycle_and_self_loop() {
    let mut builder = TopologyBuilder::new();
    builder.add_component(&Component::new("a", ["z"], ["x"])).unwrap();
    builder.add_component(&Component::new("b", ["x"], ["y"])).unwrap();
    builder.add_component(&Component::new("c", ["y"], ["z"])).unwrap();
    let err = builder.build().unwrap_err();
    assert_eq!(
        err.to_string(),
        "module topology has a cycle: a -(x)-> b -(y)-> c -(z)-> a"
    );

    let mut builder = TopologyBuilder::new();
    builder
        .add_component(&Component::new("loop", ["q"], ["q"]))
        .unwrap();
    let err = builder.build().unwrap_err();
    assert_eq!(err.to_string(), "module topology has a cycle: loop -(q)-> loop");
}

#[test]
fn external_headers_add_no_module() {
    let mut builder = TopologyBuilder::new();
    builder.add_header(&TraceHeader::external("c4", 0, 0, 0)).unwrap();
    assert!(builder.build().unwrap().components.is_empty());
}
