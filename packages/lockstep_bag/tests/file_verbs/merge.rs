//! `lockstep bag merge`: the order of equal times, topics joined by name, two types refused, extras joined.

use super::*;

/// One input of the merge tests: `/shared` and a topic of its own, two messages at each time (ties inside
/// the bag), times shared with the other inputs (ties across bags).
fn merge_input(dir: &Path, n: u64, shared_type: &str, record: &str) {
    let mut w = BagWriter::create(dir, WriterOptions::default()).unwrap();
    w.add_topic(spec("/shared", shared_type)).unwrap();
    let own = format!("/own{n}");
    w.add_topic(spec(&own, "std_msgs/msg/String")).unwrap();
    for i in 0..20u64 {
        let t = T0 + (i / 2) * MS;
        w.write("/shared", t, format!("shared {n} {i}").as_bytes())
            .unwrap();
        w.write(&own, t, format!("own {n} {i}").as_bytes()).unwrap();
    }
    let entries = BTreeMap::from([("m1".to_string(), record.to_string())]);
    w.write_metadata_record("lockstep_topology", &entries).unwrap();
    w.attach("same.bin", "application/octet-stream", T0, T0, b"same")
        .unwrap();
    w.set_custom_data("k", format!("{n}"));
    w.finish().unwrap();
}

#[test]
fn merge_orders_by_time_then_input_then_position_and_joins_the_extras() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs: Vec<_> = (0..3).map(|n| tmp.path().join(format!("in{n}"))).collect();
    for (n, dir) in inputs.iter().enumerate() {
        merge_input(
            dir,
            n as u64,
            "std_msgs/msg/String",
            if n == 2 { "other" } else { "same" },
        );
    }
    let output = tmp.path().join("out");
    let text = bag(&["merge", s(&output), s(&inputs[2]), s(&inputs[0]), s(&inputs[1])]).unwrap();
    assert!(text.starts_with("merged 120 messages from 3 bags"), "{text}");
    let mut expected: Msgs = [2, 0, 1].iter().flat_map(|&n| read(&inputs[n])).collect();
    expected.sort_by_key(|m| m.1); // stable: input order, then each input's order
    assert_eq!(read(&output), expected);
    assert_eq!(
        topic_names(&output),
        ["/shared", "/own0", "/own1", "/own2"].map(String::from).into()
    );
    let (attachments, records, custom) = extras(&output);
    assert_eq!(attachments.len(), 1, "identical attachments once");
    let values: Vec<&str> = records.iter().map(|r| r.1["m1"].as_str()).collect();
    assert_eq!(
        values,
        ["other", "same"],
        "identical records once, in input order"
    );
    assert_eq!(custom["k"], "2", "the first input's custom_data");
}

#[test]
fn merge_refuses_one_name_with_two_types_before_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    merge_input(&a, 0, "std_msgs/msg/String", "x");
    merge_input(&b, 1, "std_msgs/msg/Int32", "x");
    let output = tmp.path().join("out");
    let err = bag(&["merge", s(&output), s(&a), s(&b)]).unwrap_err();
    for part in [
        "/shared",
        "std_msgs/msg/String",
        "std_msgs/msg/Int32",
        s(&a),
        s(&b),
    ] {
        assert!(err.contains(part), "{part} missing from: {err}");
    }
    assert!(!err.contains('\n') && !output.exists(), "{err}");
}
