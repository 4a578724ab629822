//! Lock-step replay in-process on a recording written here: an external channel /in, a module `double`
//! (/in -> /mid: the text twice) and a module `count` (/mid -> /out: its length), with dependency headers
//! made by lockstep_trace's Tracer and stored as the recorder stores them (CDR of the repository's
//! DependencyHeader definition, topology in the `lockstep_topology` record).
// Test helpers may unwrap: a panic is the failure report (as clippy.toml allows inside #[test]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lockstep_bag::cdr::Schema;
use lockstep_bag::{BagReader, BagWriter, MessageDefinition, TopicSpec, WriterOptions};
use lockstep_replay::lockstep::{
    header_to_value, replay, write_bag, FrameSelection, LockstepError, Module, Recording, ReplayOptions,
    StepInput,
};
use lockstep_trace::{digest, TraceHeader, Tracer};

const STRING: &str = "std_msgs/msg/String";
const HEADER: &str = "lockstep_interfaces/msg/DependencyHeader";
const N: u64 = 6;

fn header_definition() -> String {
    let msg = |name: &str| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../../msg/msg/{name}.msg")),
        )
        .unwrap()
    };
    let sep = "=".repeat(80);
    format!(
        "{}\n{sep}\nMSG: lockstep_interfaces/InputHeader\n{}\n{sep}\nMSG: lockstep_interfaces/DependencySource\n{}",
        msg("DependencyHeader"),
        msg("InputHeader"),
        msg("DependencySource")
    )
}

fn cdr_string(s: &str) -> Vec<u8> {
    let mut out = vec![0u8, 1, 0, 0];
    out.extend_from_slice(&((s.len() + 1) as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    out.push(0);
    out
}

fn text_of(data: &[u8]) -> String {
    let n = u32::from_le_bytes(data[4..8].try_into().unwrap()) as usize;
    String::from_utf8(data[8..8 + n - 1].to_vec()).unwrap()
}

fn double(text: &str) -> String {
    format!("{text}{text}")
}

fn count(text: &str, extra: usize) -> String {
    (text.len() + extra).to_string()
}

/// Writes the recording; `skip_first_input` leaves out the first /in message (a recording started late),
/// `topology` overrides the stored wiring.
fn record(dir: &Path, skip_first_input: bool, topology: Option<BTreeMap<String, String>>) {
    let mut w = BagWriter::create(dir, WriterOptions::default()).unwrap();
    let string = MessageDefinition {
        encoding: "ros2msg".into(),
        text: "string data\n".into(),
    };
    let header_def = MessageDefinition {
        encoding: "ros2msg".into(),
        text: header_definition(),
    };
    let schema = Schema::parse(HEADER, &header_def.text).unwrap();
    for t in ["/in", "/mid", "/out"] {
        w.add_topic(TopicSpec::new(t, STRING).with_definition(string.clone()))
            .unwrap();
    }
    for t in ["/mid", "/out"] {
        w.add_topic(
            TopicSpec::new(format!("{t}/lockstep_header"), HEADER).with_definition(header_def.clone()),
        )
        .unwrap();
    }
    let put_header = |w: &mut BagWriter, t: u64, h: &TraceHeader| {
        let bytes = schema.encode(&header_to_value(h, &schema)).unwrap();
        w.write(&format!("{}/lockstep_header", h.channel_name), t, &bytes)
            .unwrap();
    };
    let mut m_double = Tracer::with_epoch("double", 100);
    let mut m_count = Tracer::with_epoch("count", 200);
    for k in 0..N {
        let t = 1_000_000_000 + k * 10_000_000;
        let input = cdr_string(&format!("in{k}"));
        if !(skip_first_input && k == 0) {
            w.write("/in", t, &input).unwrap();
        }
        let ext = TraceHeader::external("/in", k as u32, t as i64, digest(&input));
        let mid = cdr_string(&double(&format!("in{k}")));
        let token = m_double.begin_at(t as i64 + 1);
        let h_mid = m_double.finish_with_process_time(
            token,
            std::time::Duration::from_nanos(50),
            "/mid",
            &mid,
            &[&ext],
        );
        w.write("/mid", t + 1, &mid).unwrap();
        put_header(&mut w, t + 1, &h_mid);
        let out = cdr_string(&count(&double(&format!("in{k}")), 0));
        let token = m_count.begin_at(t as i64 + 2);
        let h_out = m_count.finish_with_process_time(
            token,
            std::time::Duration::from_nanos(70),
            "/out",
            &out,
            &[&h_mid],
        );
        w.write("/out", t + 2, &out).unwrap();
        put_header(&mut w, t + 2, &h_out);
    }
    let topology = topology.unwrap_or_else(|| {
        [
            ("count".to_owned(), "reads=/mid;writes=/out".to_owned()),
            ("double".to_owned(), "reads=/in;writes=/mid".to_owned()),
        ]
        .into()
    });
    w.write_metadata_record("lockstep_topology", &topology).unwrap();
    w.finish().unwrap();
}

struct Double;
struct Count {
    extra: usize,
}

impl Module for Double {
    fn name(&self) -> &str {
        "double"
    }
    fn step(&mut self, _: &TraceHeader, inputs: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
        Ok(cdr_string(&double(&text_of(inputs[0].data))))
    }
}

impl Module for Count {
    fn name(&self) -> &str {
        "count"
    }
    fn step(&mut self, _: &TraceHeader, inputs: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
        Ok(cdr_string(&count(&text_of(inputs[0].data), self.extra)))
    }
}

fn modules(extra: usize) -> Vec<Box<dyn Module>> {
    vec![Box::new(Double), Box::new(Count { extra })]
}

fn recorded(skip_first_input: bool) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("recorded");
    record(&dir, skip_first_input, None);
    (tmp, dir)
}

/// File name -> (size, digest of the bytes) of every file in `dir`.
fn files(dir: &Path) -> BTreeMap<String, (usize, u64)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                (bytes.len(), digest(&bytes)),
            )
        })
        .collect()
}

#[test]
fn every_frame_replays_exactly_in_dag_order_and_the_output_bag_is_byte_identical() {
    let (tmp, dir) = recorded(false);
    let recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    assert_eq!(recording.frames.len() as u64, 2 * N);
    let mut runs = Vec::new();
    for run in 0..3 {
        let outcome = replay(&recording, &mut modules(0), &ReplayOptions::default()).unwrap();
        assert!(outcome.skipped.is_empty(), "{:?}", outcome.skipped);
        assert_eq!(
            outcome.exact_by_channel(),
            BTreeMap::from([("/mid".to_owned(), (N, N)), ("/out".to_owned(), (N, N))])
        );
        // Every count frame consumed the simulated /mid, never the recorded one.
        let order: Vec<&str> = outcome
            .outputs
            .iter()
            .map(|o| o.header.channel_name.as_str())
            .collect();
        assert_eq!(&order[..4], ["/mid", "/out", "/mid", "/out"]);
        // Same bag name each run (file names derive from it), in a directory of its own.
        let out = tmp.path().join(format!("run{run}")).join("simulated");
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        write_bag(&recording, &outcome, &out).unwrap();
        runs.push(files(&out));
    }
    assert!(runs[0].keys().any(|k| k.ends_with(".mcap")));
    assert_eq!(runs[0], runs[1]);
    assert_eq!(runs[1], runs[2]);
    // The simulated bag is itself a recording: it loads, and replays exactly again.
    let again = Recording::load(&BagReader::open(tmp.path().join("run0/simulated")).unwrap()).unwrap();
    assert_eq!(again.frames.len() as u64, 2 * N);
    let only_count = replay(
        &again,
        &mut [Box::new(Count { extra: 0 }) as Box<dyn Module>],
        &ReplayOptions::default(),
    )
    .unwrap();
    assert_eq!(only_count.exact_by_channel()["/out"], (N, N));
    assert_eq!(only_count.not_live, vec!["double".to_owned()]);
}

#[test]
fn a_changed_module_is_found_at_its_first_differing_frame() {
    let (_tmp, dir) = recorded(false);
    let recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    let outcome = replay(&recording, &mut modules(1), &ReplayOptions::default()).unwrap();
    let exact = outcome.exact_by_channel();
    assert_eq!(exact["/mid"], (N, N));
    assert_eq!(exact["/out"], (N, 0));
    let first = outcome.first_differences();
    assert_eq!(first.keys().collect::<Vec<_>>(), ["/out"]);
    assert_eq!(
        (
            first["/out"].header.module_name.as_str(),
            first["/out"].header.sequence_num
        ),
        ("count", 0)
    );
}

#[test]
fn one_module_s_frames_bring_the_frames_they_depend_on() {
    let (_tmp, dir) = recorded(false);
    let recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    let options = ReplayOptions {
        frames: FrameSelection::Module("double".into()),
        strict: false,
    };
    let outcome = replay(&recording, &mut modules(0), &options).unwrap();
    assert_eq!(outcome.selected as u64, N);
    let options = ReplayOptions {
        frames: FrameSelection::Module("count".into()),
        strict: false,
    };
    assert_eq!(
        replay(&recording, &mut modules(0), &options).unwrap().selected as u64,
        2 * N
    );
}

#[test]
fn a_recording_cut_in_the_middle_skips_or_refuses_frames() {
    let (_tmp, dir) = recorded(true);
    let recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    let outcome = replay(&recording, &mut modules(0), &ReplayOptions::default()).unwrap();
    let skipped: Vec<(&str, u32)> = outcome
        .skipped
        .iter()
        .map(|s| (s.module.as_str(), s.sequence_num))
        .collect();
    assert_eq!(skipped, vec![("double", 0), ("count", 0)]);
    assert!(
        outcome.skipped[0].reason.contains("/in"),
        "{}",
        outcome.skipped[0].reason
    );
    assert_eq!(outcome.outputs.len() as u64, 2 * (N - 1));
    let strict = ReplayOptions {
        strict: true,
        ..ReplayOptions::default()
    };
    let err = replay(&recording, &mut modules(0), &strict).unwrap_err();
    assert!(
        matches!(err, LockstepError::Unreplayable { ref module, sequence_num: 0, .. } if module == "double"),
        "{err}"
    );
}

#[test]
fn bad_recordings_are_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let cyclic = tmp.path().join("cyclic");
    let wiring: BTreeMap<String, String> = [
        ("count".to_owned(), "reads=/mid;writes=/out".to_owned()),
        ("double".to_owned(), "reads=/in,/out;writes=/mid".to_owned()),
    ]
    .into();
    record(&cyclic, false, Some(wiring));
    let err = Recording::load(&BagReader::open(&cyclic).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cycle") && err.contains("count") && err.contains("double"),
        "{err}"
    );

    let (_tmp, dir) = recorded(false);
    let recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    struct Stranger;
    impl Module for Stranger {
        fn name(&self) -> &str {
            "stranger"
        }
        fn step(&mut self, _: &TraceHeader, _: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
            Err("never".into())
        }
    }
    let err = replay(
        &recording,
        &mut [Box::new(Stranger) as Box<dyn Module>],
        &ReplayOptions::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("`stranger` is not in the recorded topology"),
        "{err}"
    );
    struct Failing;
    impl Module for Failing {
        fn name(&self) -> &str {
            "double"
        }
        fn step(&mut self, _: &TraceHeader, _: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
            Err("out of cheese".into())
        }
    }
    let err = replay(
        &recording,
        &mut [Box::new(Failing) as Box<dyn Module>],
        &ReplayOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("`double` failed on frame /mid #0: out of cheese"),
        "{err}"
    );
}

#[test]
fn downstream_modules_consume_the_simulated_output_never_the_recorded_one() {
    struct Triple;
    impl Module for Triple {
        fn name(&self) -> &str {
            "double"
        }
        fn step(&mut self, _: &TraceHeader, inputs: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
            assert!(!inputs[0].simulated, "/in is external: recorded");
            let text = text_of(inputs[0].data);
            Ok(cdr_string(&format!("{text}{text}{text}")))
        }
    }
    struct CheckedCount;
    impl Module for CheckedCount {
        fn name(&self) -> &str {
            "count"
        }
        fn step(&mut self, _: &TraceHeader, inputs: &[StepInput<'_>]) -> Result<Vec<u8>, String> {
            assert!(inputs[0].simulated, "/mid has a live producer: simulated");
            Ok(cdr_string(&count(&text_of(inputs[0].data), 0)))
        }
    }
    let (_tmp, dir) = recorded(false);
    let recording = Recording::load(&BagReader::open(&dir).unwrap()).unwrap();
    let mut live: Vec<Box<dyn Module>> = vec![Box::new(Triple), Box::new(CheckedCount)];
    let outcome = replay(&recording, &mut live, &ReplayOptions::default()).unwrap();
    // Both channels differ: count saw the tripled text, so its lengths changed too.
    assert_eq!(outcome.exact_by_channel()["/mid"], (N, 0));
    assert_eq!(outcome.exact_by_channel()["/out"], (N, 0));
    // The simulated /out headers name the simulated /mid by its new digest.
    let mids: Vec<u64> = outcome
        .outputs
        .iter()
        .filter(|o| o.header.channel_name == "/mid")
        .map(|o| o.header.payload_digest)
        .collect();
    let named: Vec<u64> = outcome
        .outputs
        .iter()
        .filter(|o| o.header.channel_name == "/out")
        .map(|o| o.header.inputs[0].payload_digest)
        .collect();
    assert_eq!(mids, named);
}
