//! The patent's protobuf schema (seed 000), written by hand with prost (no protoc needed):
//!
//! ```proto
//! message compontconfig { optional string module_name = 1; repeated string reader_channel = 2;
//!                         repeated string writer_channel = 3; }
//! message end2endsource { string module_name = 1; string channel_name = 2; uint32 sequence_num = 3; }
//! message end2endheader { string module_name = 1; string channel_name = 2; uint32 sequence_num = 3;
//!                         repeated end2endsource source_module = 4; double timestamp = 5;
//!                         uint32 process_time = 6;
//!                         optional int64 start_time_ns = 16; }                     // Lockstep extension
//! message header        { string module_name = 1; string channel_name = 2; uint32 sequence_num = 3;
//!                         double timestamp = 4; uint32 process_time = 5; repeated end2endheader e2e_header = 6;
//!                         fixed64 payload_digest = 16; optional int64 start_time_ns = 17; } // extensions
//! message Topology  { repeated compontconfig components = 1; }   // Lockstep containers for a bag
//! message HeaderLog { repeated header headers = 1; }
//! ```
//!
//! Units: `timestamp` is the start of the computation in seconds since the Unix epoch (double, as in the
//! patent); `process_time` is the computation time in **nanoseconds** (uint32, saturating at ~4.29 s).
//! Extensions use tags from 16 so readers of the original schema skip them: `payload_digest` pairs a header
//! with its data; `start_time_ns` keeps the start time exact (a double only holds ~256 ns at today's epoch),
//! and wins over `timestamp` when present.

use prost::Message;

use crate::model::{Component, InputRecord, SourceRef, TraceHeader};
use crate::{Error, Result};

/// One module's wiring (`compontconfig`).
#[derive(Clone, PartialEq, Message)]
pub struct ComponentConfig {
    /// Module that generates the data.
    #[prost(string, tag = "1")]
    pub module_name: String,
    /// Channels the module reads.
    #[prost(string, repeated, tag = "2")]
    pub reader_channel: Vec<String>,
    /// Channels the module writes.
    #[prost(string, repeated, tag = "3")]
    pub writer_channel: Vec<String>,
}

/// Second-level dependency (`end2endsource`).
#[derive(Clone, PartialEq, Message)]
pub struct End2EndSource {
    /// Module that produced the second-level input.
    #[prost(string, tag = "1")]
    pub module_name: String,
    /// Channel it was written to.
    #[prost(string, tag = "2")]
    pub channel_name: String,
    /// Its sequence number.
    #[prost(uint32, tag = "3")]
    pub sequence_num: u32,
}

/// First-level dependency (`end2endheader`).
#[derive(Clone, PartialEq, Message)]
pub struct End2EndHeader {
    /// Module that produced the input.
    #[prost(string, tag = "1")]
    pub module_name: String,
    /// Channel the input was written to.
    #[prost(string, tag = "2")]
    pub channel_name: String,
    /// The input's sequence number.
    #[prost(uint32, tag = "3")]
    pub sequence_num: u32,
    /// The input's own inputs.
    #[prost(message, repeated, tag = "4")]
    pub source_module: Vec<End2EndSource>,
    /// When its producer started computing it, seconds since the Unix epoch.
    #[prost(double, tag = "5")]
    pub timestamp: f64,
    /// How long its producer took, nanoseconds.
    #[prost(uint32, tag = "6")]
    pub process_time: u32,
    /// Lockstep extension: the exact start time in nanoseconds (preferred over `timestamp` when set).
    #[prost(int64, optional, tag = "16")]
    pub start_time_ns: Option<i64>,
}

/// The header of one data message (`header`).
#[derive(Clone, PartialEq, Message)]
pub struct Header {
    /// Module that produced the data.
    #[prost(string, tag = "1")]
    pub module_name: String,
    /// Channel the data was written to.
    #[prost(string, tag = "2")]
    pub channel_name: String,
    /// Per-channel sequence number from 0.
    #[prost(uint32, tag = "3")]
    pub sequence_num: u32,
    /// When the module started computing the data, seconds since the Unix epoch.
    #[prost(double, tag = "4")]
    pub timestamp: f64,
    /// How long the computation took, nanoseconds.
    #[prost(uint32, tag = "5")]
    pub process_time: u32,
    /// The headers of the inputs used.
    #[prost(message, repeated, tag = "6")]
    pub e2e_header: Vec<End2EndHeader>,
    /// Lockstep extension: digest of the serialized payload (see [`crate::digest`]).
    #[prost(fixed64, tag = "16")]
    pub payload_digest: u64,
    /// Lockstep extension: the exact start time in nanoseconds (preferred over `timestamp` when set).
    #[prost(int64, optional, tag = "17")]
    pub start_time_ns: Option<i64>,
}

/// The wiring of a module set, for a bag's metadata or attachment.
#[derive(Clone, PartialEq, Message)]
pub struct Topology {
    /// One entry per module.
    #[prost(message, repeated, tag = "1")]
    pub components: Vec<ComponentConfig>,
}

/// A sequence of headers, for a bag's attachment.
#[derive(Clone, PartialEq, Message)]
pub struct HeaderLog {
    /// The headers, in recording order.
    #[prost(message, repeated, tag = "1")]
    pub headers: Vec<Header>,
}

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

/// Nanoseconds from the extension field when present, else from the patent's double (rounded to the ns).
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
        }
    }
}

impl From<&End2EndSource> for SourceRef {
    fn from(source: &End2EndSource) -> Self {
        Self {
            module_name: source.module_name.clone(),
            channel_name: source.channel_name.clone(),
            sequence_num: source.sequence_num,
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
