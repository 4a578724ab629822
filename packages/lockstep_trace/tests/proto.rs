//! The patent's protobuf schema: round trips, field numbers, typed decode errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use lockstep_trace::proto::{self, End2EndHeader, End2EndSource, Header, HeaderLog};
use lockstep_trace::{digest, Component, Error, TopologyBuilder, TraceHeader, Tracer};
use prost::Message;

fn sample() -> TraceHeader {
    let mut m1 = Tracer::new("m1");
    let mut m2 = Tracer::new("m2");
    let c1 = TraceHeader::external("/c1", 3, 1_700_000_000_000_000_001, digest(b"1"));
    let t = m1.begin_at(1_700_000_000_100_000_007);
    let c3 = m1.finish_with_process_time(t, Duration::from_nanos(42), "/c3", b"3", &[&c1]);
    let t = m2.begin_at(1_700_000_000_200_000_009);
    m2.finish_with_process_time(t, Duration::from_nanos(77), "/c5", b"5", &[&c3])
}

#[test]
fn header_round_trips_exactly_through_protobuf() {
    let header = sample();
    let bytes = proto::encode(&Header::from(&header));
    let decoded = proto::decode_header(&bytes).unwrap();
    assert_eq!(decoded.e2e_header[0].source_module[0].sequence_num, 3);
    assert_eq!(decoded.process_time, 77);
    assert!((decoded.timestamp - 1_700_000_000.2).abs() < 1e-6);
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

#[test]
fn header_from_the_original_schema_uses_the_double_timestamp() {
    // A writer that knows only the patent's fields sends no start_time_ns extension.
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
