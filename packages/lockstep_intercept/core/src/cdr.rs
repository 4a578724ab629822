//! The CDR (little-endian, XCDR1 as rmw_fastrtps writes it) of what the interceptor publishes and reads:
//! `DependencyHeader`, `ModuleTopology` and `NodeEvents` of lockstep_interfaces. The interceptor publishes
//! serialized messages so it needs no generated C code; padding is written as zeros, so what it publishes is
//! already canonical.

use lockstep_trace::{Component, InputRecord, SourceRef, TraceHeader};
use thiserror::Error;

use crate::events::{Batch, Event, EventKind};
use crate::pacer::{Done, Grant};

/// A message that cannot be read.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum CdrError {
    #[error("{what}: the message ends at byte {at}, {needed} more needed")]
    Truncated {
        what: &'static str,
        at: usize,
        needed: usize,
    },
    #[error("{what}: {count} elements at byte {at} do not fit in the {left} bytes left")]
    TooMany {
        what: &'static str,
        at: usize,
        count: usize,
        left: usize,
    },
    #[error("{what}: the string at byte {at} is not UTF-8 or lacks its terminating zero")]
    BadString { what: &'static str, at: usize },
    #[error("event kind {code} at byte {at} is not one of NodeEvent's")]
    BadKind { at: usize, code: u8 },
    #[error("not little-endian CDR (encapsulation {0:#06x})")]
    Encapsulation(u16),
}

pub type Result<T, E = CdrError> = std::result::Result<T, E>;

/// Little-endian plain CDR.
const ENCAPSULATION: [u8; 4] = [0x00, 0x01, 0x00, 0x00];

/// Writes CDR: alignment counts from after the 4-byte encapsulation header.
#[derive(Debug)]
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn new() -> Self {
        let mut buf = Vec::with_capacity(256);
        buf.extend_from_slice(&ENCAPSULATION);
        Self { buf }
    }
    fn align(&mut self, n: usize) {
        while (self.buf.len() - 4) % n != 0 {
            self.buf.push(0);
        }
    }
    fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.align(8);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    fn len(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
    fn string(&mut self, s: &str) {
        self.len(s.len() + 1);
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
    }
    fn strings(&mut self, items: impl ExactSizeIterator<Item = impl AsRef<str>>) {
        self.len(items.len());
        for s in items {
            self.string(s.as_ref());
        }
    }
    /// builtin_interfaces/Time from nanoseconds (seconds saturate at the i32 range).
    fn time(&mut self, ns: i64) {
        let sec = ns.div_euclid(1_000_000_000);
        let nanosec = u32::try_from(ns.rem_euclid(1_000_000_000)).unwrap_or(0);
        let sec = i32::try_from(sec).unwrap_or(if sec < 0 { i32::MIN } else { i32::MAX });
        self.i32(sec);
        self.u32(nanosec);
    }
}

/// `lockstep_interfaces/msg/DependencyHeader`.
pub fn encode_header(header: &TraceHeader) -> Vec<u8> {
    let mut w = Writer::new();
    w.string(&header.module_name);
    w.string(&header.channel_name);
    w.u32(header.sequence_num);
    w.u64(header.epoch);
    w.time(header.start_time_ns);
    w.u32(header.process_time_ns);
    w.u64(header.payload_digest);
    w.len(header.inputs.len());
    for input in &header.inputs {
        w.string(&input.module_name);
        w.string(&input.channel_name);
        w.u32(input.sequence_num);
        w.u64(input.epoch);
        w.u64(input.payload_digest);
        w.time(input.start_time_ns);
        w.u32(input.process_time_ns);
        w.len(input.sources.len());
        for source in &input.sources {
            w.string(&source.module_name);
            w.string(&source.channel_name);
            w.u32(source.sequence_num);
            w.u64(source.epoch);
            w.u64(source.payload_digest);
        }
    }
    w.buf
}

/// `lockstep_interfaces/msg/ModuleTopology` with one component, `inferred` set.
pub fn encode_topology(component: &Component) -> Vec<u8> {
    let mut w = Writer::new();
    w.len(1);
    w.string(&component.module_name);
    w.strings(component.reader_channels.iter());
    w.strings(component.writer_channels.iter());
    w.u8(1);
    w.buf
}

/// `lockstep_interfaces/msg/NodeEvents`.
pub fn encode_events(batch: &Batch) -> Vec<u8> {
    let mut w = Writer::new();
    w.string(&batch.node_name);
    w.u64(batch.epoch);
    w.u64(batch.first_index);
    w.len(batch.events.len());
    for e in &batch.events {
        w.u8(e.kind.code());
        w.time(e.ros_time_ns);
        w.u32(e.thread);
        w.string(&e.name);
        w.u8(u8::from(e.infrastructure));
        w.len(e.gid.len());
        w.buf.extend_from_slice(&e.gid);
        w.u64(e.sequence_number as u64);
        w.u64(e.payload_digest);
    }
    w.strings(batch.warnings.iter());
    w.buf
}

/// `lockstep_interfaces/msg/EventDone`.
pub fn encode_done(done: &Done) -> Vec<u8> {
    let mut w = Writer::new();
    w.u64(done.id);
    w.u8(u8::from(done.success));
    w.string(&done.message);
    w.len(done.outputs.len());
    for o in &done.outputs {
        w.u8(o.kind.code());
        w.string(&o.name);
        w.len(o.data.len());
        w.buf.extend_from_slice(&o.data);
    }
    w.u32(done.process_time_ns);
    w.buf
}

/// Read a `lockstep_interfaces/msg/EventGrant`.
pub fn decode_grant(bytes: &[u8]) -> Result<Grant> {
    let mut r = Reader::new(bytes, "EventGrant")?;
    let id = r.u64()?;
    let kind = r.kind()?;
    let ros_time_ns = r.time()?;
    let name = r.string()?;
    let sequence_number = r.u64()? as i64;
    let n = r.count(1)?;
    let data = r.take(n)?.to_vec();
    let reads = r.count(8)?;
    let clock_reads_ns = (0..reads).map(|_| r.time()).collect::<Result<_>>()?;
    Ok(Grant {
        id,
        kind,
        ros_time_ns,
        name,
        sequence_number,
        data,
        clock_reads_ns,
    })
}

/// Read a `lockstep_interfaces/msg/NodeEvents` (events of a kind this version does not know fail the batch).
pub fn decode_events(bytes: &[u8]) -> Result<Batch> {
    let mut r = Reader::new(bytes, "NodeEvents")?;
    let node_name = r.string()?;
    let epoch = r.u64()?;
    let first_index = r.u64()?;
    // An event is at least kind, stamp, thread, name, flag, gid length, sequence number and digest.
    let count = r.count(40)?;
    let mut events = Vec::with_capacity(count);
    for _ in 0..count {
        let kind = r.kind()?;
        let ros_time_ns = r.time()?;
        let thread = r.u32()?;
        let name = r.string()?;
        let infrastructure = r.take(1)?[0] != 0;
        let n = r.count(1)?;
        let gid = r.take(n)?.to_vec();
        let sequence_number = r.u64()? as i64;
        let payload_digest = r.u64()?;
        events.push(Event {
            kind,
            ros_time_ns,
            thread,
            name,
            infrastructure,
            gid,
            sequence_number,
            payload_digest,
        });
    }
    let n = r.count(5)?;
    let warnings = (0..n).map(|_| r.string()).collect::<Result<_>>()?;
    Ok(Batch {
        node_name,
        epoch,
        first_index,
        events,
        warnings,
    })
}

/// Reads CDR with every length checked against what is left.
struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], what: &'static str) -> Result<Self> {
        let mut r = Self { buf, at: 0, what };
        let head = r.take(4)?;
        if head[1] != 0x01 {
            return Err(CdrError::Encapsulation(u16::from_be_bytes([head[0], head[1]])));
        }
        Ok(r)
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return Err(CdrError::Truncated {
                what: self.what,
                at: self.at,
                needed: n,
            });
        };
        let bytes = &self.buf[self.at..end];
        self.at = end;
        Ok(bytes)
    }
    fn align(&mut self, n: usize) -> Result<()> {
        let pad = (n - (self.at.saturating_sub(4)) % n) % n;
        self.take(pad).map(|_| ())
    }
    fn u32(&mut self) -> Result<u32> {
        self.align(4)?;
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i32(&mut self) -> Result<i32> {
        self.u32().map(|v| v as i32)
    }
    fn u64(&mut self) -> Result<u64> {
        self.align(8)?;
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    /// A sequence length, each element at least `min_bytes` long.
    fn count(&mut self, min_bytes: usize) -> Result<usize> {
        let n = self.u32()? as usize;
        let left = self.buf.len() - self.at;
        if n.saturating_mul(min_bytes) > left {
            return Err(CdrError::TooMany {
                what: self.what,
                at: self.at,
                count: n,
                left,
            });
        }
        Ok(n)
    }
    fn string(&mut self) -> Result<String> {
        let at = self.at;
        let n = self.count(1)?;
        let bytes = self.take(n)?;
        match bytes.split_last() {
            Some((0, text)) => std::str::from_utf8(text)
                .map(str::to_owned)
                .map_err(|_| CdrError::BadString { what: self.what, at }),
            _ => Err(CdrError::BadString { what: self.what, at }),
        }
    }
    /// A `NodeEvent` kind.
    fn kind(&mut self) -> Result<EventKind> {
        let at = self.at;
        let code = self.take(1)?[0];
        EventKind::ALL
            .into_iter()
            .find(|k| k.code() == code)
            .ok_or(CdrError::BadKind { at, code })
    }
    fn time(&mut self) -> Result<i64> {
        let sec = i64::from(self.i32()?);
        let nanosec = i64::from(self.u32()?);
        Ok(sec * 1_000_000_000 + nanosec)
    }
}

/// Read a `lockstep_interfaces/msg/DependencyHeader`.
pub fn decode_header(bytes: &[u8]) -> Result<TraceHeader> {
    let mut r = Reader::new(bytes, "DependencyHeader")?;
    let module_name = r.string()?;
    let channel_name = r.string()?;
    let sequence_num = r.u32()?;
    let epoch = r.u64()?;
    let start_time_ns = r.time()?;
    let process_time_ns = r.u32()?;
    let payload_digest = r.u64()?;
    let count = r.count(40)?;
    let mut inputs = Vec::with_capacity(count);
    for _ in 0..count {
        inputs.push(decode_input(&mut r)?);
    }
    Ok(TraceHeader {
        module_name,
        channel_name,
        sequence_num,
        epoch,
        start_time_ns,
        process_time_ns,
        payload_digest,
        inputs,
    })
}

fn decode_input(r: &mut Reader<'_>) -> Result<InputRecord> {
    let module_name = r.string()?;
    let channel_name = r.string()?;
    let sequence_num = r.u32()?;
    let epoch = r.u64()?;
    let payload_digest = r.u64()?;
    let start_time_ns = r.time()?;
    let process_time_ns = r.u32()?;
    let count = r.count(32)?;
    let mut sources = Vec::with_capacity(count);
    for _ in 0..count {
        sources.push(SourceRef {
            module_name: r.string()?,
            channel_name: r.string()?,
            sequence_num: r.u32()?,
            epoch: r.u64()?,
            payload_digest: r.u64()?,
        });
    }
    Ok(InputRecord {
        module_name,
        channel_name,
        sequence_num,
        epoch,
        payload_digest,
        start_time_ns,
        process_time_ns,
        sources,
    })
}
