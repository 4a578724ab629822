//! The dependency-header protobuf schema: round trips, field numbers, wire bytes, typed decode errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lockstep_trace::proto::{self, ComponentConfig, End2EndHeader, End2EndSource, Header, HeaderLog};
use lockstep_trace::testing::{two_level_header as sample, OUTPUT_START_NS};
use lockstep_trace::{Component, Error, TopologyBuilder, TraceHeader};
use prost::Message;

#[test]
fn header_round_trips_exactly_through_protobuf() {
    let header = sample();
    let bytes = proto::encode(&Header::from(&header));
    let decoded = proto::decode_header(&bytes).unwrap();
    assert_eq!(decoded.e2e_header[0].source_module[0].sequence_num, 4);
    assert_eq!(decoded.process_time, 77);
    assert_eq!(decoded.start_time_ns, Some(OUTPUT_START_NS));
    assert!((decoded.timestamp - 1_700_000_001.2).abs() < 1e-6);
    assert_eq!(TraceHeader::try_from(&decoded).unwrap(), header);
}

#[test]
fn header_log_and_topology_round_trip() {
    let headers = vec![sample(), sample()];
    let log = HeaderLog::from_headers(&headers);
    let back = proto::decode_header_log(&proto::encode(&log)).unwrap();
    assert_eq!(back.to_headers().unwrap(), headers);

    let mut builder = TopologyBuilder::new();
    builder
        .add_component(&Component::new("m1", ["/c1", "/c2"], ["/c3"]))
        .unwrap();
    let topology = builder.build().unwrap();
    let decoded = proto::decode_topology(&proto::encode(&proto::Topology::from(&topology))).unwrap();
    assert_eq!(decoded.components[0].reader_channel, vec!["/c1", "/c2"]);
    assert_eq!(Component::from(&decoded.components[0]), topology.components[0]);
}

#[test]
fn field_numbers_follow_the_patent() {
    // end2endsource {module_name=1; channel_name=2; sequence_num=3}
    let bytes = End2EndSource {
        module_name: "a".into(),
        channel_name: "b".into(),
        sequence_num: 5,
        ..End2EndSource::default()
    }
    .encode_to_vec();
    assert_eq!(bytes, vec![0x0a, 1, b'a', 0x12, 1, b'b', 0x18, 5]);
    // header: timestamp=4 (double, wire type 1), process_time=5 (varint), e2e_header=6 (length-delimited).
    let header = Header {
        timestamp: 1.0,
        process_time: 2,
        e2e_header: vec![End2EndHeader::default()],
        ..Header::default()
    };
    let bytes = header.encode_to_vec();
    assert_eq!(bytes[0], (4 << 3) | 1);
    assert_eq!(&bytes[1..9], &1.0f64.to_le_bytes());
    assert_eq!(&bytes[9..], &[5 << 3, 2, (6 << 3) | 2, 0]);
    // end2endheader: timestamp=5 (double), process_time=6.
    let bytes = End2EndHeader {
        timestamp: 0.5,
        process_time: 1,
        ..End2EndHeader::default()
    }
    .encode_to_vec();
    assert_eq!(bytes[0], (5 << 3) | 1);
    assert_eq!(bytes[9..], [6 << 3, 1]);
}

/// A header setting every field (negative, zero-but-present and absent extensions, a varint above 127, a
/// `u32::MAX`), as the hand-written prost structs encoded it before the schema moved into
/// `proto/lockstep/dependency_header.proto`.
fn full_header() -> Header {
    Header {
        module_name: "m2".into(),
        channel_name: "/c5".into(),
        sequence_num: 7,
        timestamp: 1.5,
        process_time: 77,
        e2e_header: vec![
            End2EndHeader {
                module_name: "m1".into(),
                channel_name: "/c3".into(),
                sequence_num: 3,
                source_module: vec![End2EndSource {
                    module_name: "".into(),
                    channel_name: "/c1".into(),
                    sequence_num: 4,
                    ..End2EndSource::default()
                }],
                timestamp: 0.25,
                process_time: 9,
                start_time_ns: Some(250_000_000),
                ..End2EndHeader::default()
            },
            End2EndHeader {
                module_name: "m3".into(),
                channel_name: "/c6".into(),
                start_time_ns: Some(0),
                ..End2EndHeader::default()
            },
            End2EndHeader {
                channel_name: "/c4".into(),
                sequence_num: 300,
                timestamp: -2.0,
                process_time: u32::MAX,
                start_time_ns: None,
                ..End2EndHeader::default()
            },
        ],
        payload_digest: 0x0123_4567_89ab_cdef,
        start_time_ns: Some(-1),
        ..Header::default()
    }
}

fn full_topology() -> proto::Topology {
    proto::Topology {
        components: vec![
            ComponentConfig {
                module_name: "m1".into(),
                reader_channel: vec!["/c1".into(), "/c2".into()],
                writer_channel: vec!["/c3".into()],
            },
            ComponentConfig {
                module_name: "m3".into(),
                reader_channel: vec![],
                writer_channel: vec!["/c6".into()],
            },
        ],
    }
}

/// Encoded by the hand-written structs (lockstep_trace before the .proto file); bags hold these bytes.
const FULL_HEADER_HEX: &str = "0a026d3212032f6335180721000000000000f83f284d32250a026d3112032f63331803220712032f63\
                               31180429000000000000d03f3009800180e59a77320c0a026d3312032f6336800100321712032f63\
                               3418ac022900000000000000c030ffffffff0f8101efcdab89674523018801ffffffffffffffffff01";
const FULL_TOPOLOGY_HEX: &str = "0a130a026d3112032f633112032f63321a032f63330a090a026d331a032f6336";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn wire_bytes_are_those_of_the_hand_written_schema() {
    // Encoding with the generated code gives the old bytes, and the old bytes decode to the same messages.
    assert_eq!(hex(&proto::encode(&full_header())), FULL_HEADER_HEX);
    assert_eq!(
        proto::decode_header(&unhex(FULL_HEADER_HEX)).unwrap(),
        full_header()
    );
    assert_eq!(hex(&proto::encode(&full_topology())), FULL_TOPOLOGY_HEX);
    assert_eq!(
        proto::decode_topology(&unhex(FULL_TOPOLOGY_HEX)).unwrap(),
        full_topology()
    );
    // A log is the headers as length-delimited field 1, an empty header included.
    let log = HeaderLog {
        headers: vec![full_header(), Header::default()],
    };
    let expected_log = format!("0a7a{FULL_HEADER_HEX}0a00");
    assert_eq!(hex(&proto::encode(&log)), expected_log);
    assert_eq!(proto::decode_header_log(&unhex(&expected_log)).unwrap(), log);
    let component = &full_topology().components[0];
    assert_eq!(
        proto::decode_component(&proto::encode(component)).unwrap(),
        *component
    );
}

#[test]
fn epochs_and_input_digests_are_extensions_old_readers_skip() {
    // Bags written before the extensions decode with epoch and digests 0 (the test above); new headers set
    // them as fixed64 fields 16-18, which the original schema does not define, so its readers skip them.
    let mut header = full_header();
    header.epoch = 0x1111;
    header.e2e_header[0].epoch = 0x2222;
    header.e2e_header[0].payload_digest = 0x3333;
    header.e2e_header[0].source_module[0].payload_digest = 0x4444;
    header.e2e_header[0].source_module[0].epoch = 0x5555;
    let bytes = proto::encode(&header);
    assert_eq!(proto::decode_header(&bytes).unwrap(), header);
    assert!(bytes.len() > unhex(FULL_HEADER_HEX).len());
    let model = lockstep_trace::TraceHeader::try_from(&header).unwrap();
    assert_eq!(model.epoch, 0x1111);
    assert_eq!(
        (model.inputs[0].epoch, model.inputs[0].payload_digest),
        (0x2222, 0x3333)
    );
    assert_eq!(
        (
            model.inputs[0].sources[0].epoch,
            model.inputs[0].sources[0].payload_digest
        ),
        (0x5555, 0x4444)
    );
    assert_eq!(Header::from(&model), header_without_patent_double(header));
}

/// `header` as the model writes it back: the model keeps the exact ns start times, so the doubles are
/// recomputed from them.
fn header_without_patent_double(mut header: Header) -> Header {
    header.timestamp = -1e-9;
    for input in &mut header.e2e_header {
        let ns = input
            .start_time_ns
            .unwrap_or((input.timestamp * 1e9).round() as i64);
        input.start_time_ns = Some(ns);
        input.timestamp = ns as f64 / 1e9;
    }
    header
}

#[test]
fn header_from_the_original_schema_uses_the_double_timestamp() {
    // A writer that knows only the original schema's fields sends no start_time_ns extension.
    let plain = Header {
        module_name: "m".into(),
        channel_name: "/c".into(),
        timestamp: 12.5,
        process_time: 3,
        ..Header::default()
    };
    let model = TraceHeader::try_from(&plain).unwrap();
    assert_eq!(model.start_time_ns, 12_500_000_000);
    assert_eq!(model.payload_digest, 0);
}

#[test]
fn nan_timestamp_is_a_typed_error_naming_the_header() {
    let bad = Header {
        module_name: "m9".into(),
        channel_name: "/x".into(),
        timestamp: f64::NAN,
        ..Header::default()
    };
    match TraceHeader::try_from(&bad) {
        Err(Error::BadTimestamp { module, channel, .. }) => {
            assert_eq!((module.as_str(), channel.as_str()), ("m9", "/x"))
        }
        other => panic!("expected BadTimestamp, got {other:?}"),
    }
}

#[test]
fn garbage_bytes_are_a_typed_decode_error() {
    let err = proto::decode_header(&[0x0a, 0xff, 0x01]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Decode {
                what: "Header",
                len: 3,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("Header"));
    assert!(proto::decode_topology(&[0xff]).is_err());
}
