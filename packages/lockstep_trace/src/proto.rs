//! The original dependency-header protobuf schema with Lockstep's extensions, for storing headers and
//! topology in a bag.
//!
//! The schema is `proto/lockstep/dependency_header.proto` (package `lockstep`), the one source of truth for
//! field numbers, types, units and extensions; `build.rs` generates the structs below from it with prost-build
//! (protox parses the file, so no `protoc` is needed). The messages keep the original schema's names and
//! get Rust names here: `compontconfig` is [`ComponentConfig`], `end2endsource` is [`End2EndSource`],
//! `end2endheader` is [`End2EndHeader`], `header` is [`Header`].
//!
//! Units: `timestamp` is the start of the computation in seconds since the Unix epoch (double, as in the
//! original schema); `process_time` is the computation time in **nanoseconds**. The `start_time_ns`
//! extension keeps the start time exact and wins over `timestamp` when present.

use prost::Message;

use crate::model::{Component, InputRecord, SourceRef, TraceHeader};
use crate::{Error, Result};

/// The code prost-build generated from `proto/lockstep/dependency_header.proto`.
mod generated {
    include!(concat!(env!("OUT_DIR"), "/lockstep.rs"));
}

/// One module's wiring (`compontconfig`).
pub use generated::Compontconfig as ComponentConfig;
/// First-level dependency (`end2endheader`).
pub use generated::End2endheader as End2EndHeader;
/// Second-level dependency (`end2endsource`).
pub use generated::End2endsource as End2EndSource;
/// The header of one data message (`header`), the wiring of a module set (`Topology`), a sequence of headers
/// (`HeaderLog`).
pub use generated::{Header, HeaderLog, Topology};

/// Encode any of these messages to protobuf bytes.
pub fn encode<M: Message>(message: &M) -> Vec<u8> {
    message.encode_to_vec()
}

/// Decode a [`Header`].
pub fn decode_header(bytes: &[u8]) -> Result<Header> {
    decode(bytes, "Header")
}

/// Decode a [`Topology`].
pub fn decode_topology(bytes: &[u8]) -> Result<Topology> {
    decode(bytes, "Topology")
}

/// Decode a [`HeaderLog`].
pub fn decode_header_log(bytes: &[u8]) -> Result<HeaderLog> {
    decode(bytes, "HeaderLog")
}

/// Decode a [`ComponentConfig`].
pub fn decode_component(bytes: &[u8]) -> Result<ComponentConfig> {
    decode(bytes, "ComponentConfig")
}

fn decode<M: Message + Default>(bytes: &[u8], what: &'static str) -> Result<M> {
    M::decode(bytes).map_err(|source| Error::Decode {
        what,
        len: bytes.len(),
        source,
    })
}

fn ns_to_seconds(ns: i64) -> f64 {
    ns as f64 / 1e9
}

/// Nanoseconds from the extension field when present, else from the `timestamp` double (rounded to the ns).
fn start_ns(
    exact: Option<i64>,
    seconds: f64,
    what: &'static str,
    module: &str,
    channel: &str,
) -> Result<i64> {
    if let Some(ns) = exact {
        return Ok(ns);
    }
    let ns = (seconds * 1e9).round();
    // i64 nanoseconds cover ±292 years; anything outside (or NaN/inf) is corrupt, not a time.
    if !ns.is_finite() || ns.abs() >= 9.2e18 {
        return Err(Error::BadTimestamp {
            what,
            module: module.to_owned(),
            channel: channel.to_owned(),
            seconds,
        });
    }
    Ok(ns as i64)
}

impl From<&SourceRef> for End2EndSource {
    fn from(source: &SourceRef) -> Self {
        Self {
            module_name: source.module_name.clone(),
            channel_name: source.channel_name.clone(),
            sequence_num: source.sequence_num,
            payload_digest: source.payload_digest,
            epoch: source.epoch,
        }
    }
}

impl From<&End2EndSource> for SourceRef {
    fn from(source: &End2EndSource) -> Self {
        Self {
            module_name: source.module_name.clone(),
            channel_name: source.channel_name.clone(),
            sequence_num: source.sequence_num,
            epoch: source.epoch,
            payload_digest: source.payload_digest,
        }
    }
}

impl From<&InputRecord> for End2EndHeader {
    fn from(input: &InputRecord) -> Self {
        Self {
            module_name: input.module_name.clone(),
            channel_name: input.channel_name.clone(),
            sequence_num: input.sequence_num,
            source_module: input.sources.iter().map(End2EndSource::from).collect(),
            timestamp: ns_to_seconds(input.start_time_ns),
            process_time: input.process_time_ns,
            start_time_ns: Some(input.start_time_ns),
            payload_digest: input.payload_digest,
            epoch: input.epoch,
        }
    }
}

impl TryFrom<&End2EndHeader> for InputRecord {
    type Error = Error;

    fn try_from(input: &End2EndHeader) -> Result<Self> {
        Ok(Self {
            module_name: input.module_name.clone(),
            channel_name: input.channel_name.clone(),
            sequence_num: input.sequence_num,
            epoch: input.epoch,
            payload_digest: input.payload_digest,
            start_time_ns: start_ns(
                input.start_time_ns,
                input.timestamp,
                "input timestamp",
                &input.module_name,
                &input.channel_name,
            )?,
            process_time_ns: input.process_time,
            sources: input.source_module.iter().map(SourceRef::from).collect(),
        })
    }
}

impl From<&TraceHeader> for Header {
    fn from(header: &TraceHeader) -> Self {
        Self {
            module_name: header.module_name.clone(),
            channel_name: header.channel_name.clone(),
            sequence_num: header.sequence_num,
            timestamp: ns_to_seconds(header.start_time_ns),
            process_time: header.process_time_ns,
            e2e_header: header.inputs.iter().map(End2EndHeader::from).collect(),
            payload_digest: header.payload_digest,
            start_time_ns: Some(header.start_time_ns),
            epoch: header.epoch,
        }
    }
}

impl TryFrom<&Header> for TraceHeader {
    type Error = Error;

    fn try_from(header: &Header) -> Result<Self> {
        Ok(Self {
            module_name: header.module_name.clone(),
            channel_name: header.channel_name.clone(),
            sequence_num: header.sequence_num,
            epoch: header.epoch,
            start_time_ns: start_ns(
                header.start_time_ns,
                header.timestamp,
                "header timestamp",
                &header.module_name,
                &header.channel_name,
            )?,
            process_time_ns: header.process_time,
            payload_digest: header.payload_digest,
            inputs: header
                .e2e_header
                .iter()
                .map(InputRecord::try_from)
                .collect::<Result<_>>()?,
        })
    }
}

impl From<&Component> for ComponentConfig {
    fn from(component: &Component) -> Self {
        Self {
            module_name: component.module_name.clone(),
            reader_channel: component.reader_channels.iter().cloned().collect(),
            writer_channel: component.writer_channels.iter().cloned().collect(),
        }
    }
}

impl From<&ComponentConfig> for Component {
    fn from(config: &ComponentConfig) -> Self {
        Component::new(
            &config.module_name,
            config.reader_channel.iter().cloned(),
            config.writer_channel.iter().cloned(),
        )
    }
}

impl From<&crate::Topology> for Topology {
    fn from(topology: &crate::Topology) -> Self {
        Self {
            components: topology.components.iter().map(ComponentConfig::from).collect(),
        }
    }
}

impl HeaderLog {
    /// A log of model headers, in the given order.
    pub fn from_headers<'a>(headers: impl IntoIterator<Item = &'a TraceHeader>) -> Self {
        Self {
            headers: headers.into_iter().map(Header::from).collect(),
        }
    }

    /// The model headers; fails on the first header with a corrupt timestamp.
    pub fn to_headers(&self) -> Result<Vec<TraceHeader>> {
        self.headers.iter().map(TraceHeader::try_from).collect()
    }
}
