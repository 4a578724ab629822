//! Checks a record's fields against its own length before the `mcap` crate parses it.
//!
//! The `mcap` crate reserves the full length of a string field before reading it (a string claiming
//! 4 GiB inside a 100-byte record allocates 4 GiB) and slices attachment bodies without checking that
//! their CRC fits. Walking the layout of each record type first, with every length checked against
//! the bytes that remain in the record, turns all of that into an error naming the field.

use mcap::records::{op, Record};

/// Byte length of the magic that opens and closes an MCAP file.
pub(crate) const MAGIC_LEN: u64 = 8;

/// The kinds of field an MCAP record is made of.
#[derive(Clone, Copy)]
enum Field {
    U8,
    U16,
    U32,
    U64,
    /// u32 byte length, then UTF-8 bytes.
    Str,
    /// u32 byte length, then (string, string) pairs filling exactly that many bytes.
    StrMap,
    /// u32 byte length, then fixed-size entries (parsed one by one: no allocation up front).
    Array,
    /// u32 byte length, then bytes.
    Bytes32,
    /// u64 byte length, then bytes.
    Bytes64,
    /// Whatever is left (message data).
    Rest,
}

use Field::*;

/// A record type's name and its fields in order.
type Layout = (&'static str, &'static [(&'static str, Field)]);

// One layout per record type of the MCAP specification (version 0), in opcode order.
const HEADER: Layout = ("Header", &[("profile", Str), ("library", Str)]);
const FOOTER: Layout = (
    "Footer",
    &[
        ("summary_start", U64),
        ("summary_offset_start", U64),
        ("summary_crc", U32),
    ],
);
const SCHEMA: Layout = (
    "Schema",
    &[("id", U16), ("name", Str), ("encoding", Str), ("data", Bytes32)],
);
const CHANNEL: Layout = (
    "Channel",
    &[
        ("id", U16),
        ("schema_id", U16),
        ("topic", Str),
        ("message_encoding", Str),
        ("metadata", StrMap),
    ],
);
const MESSAGE: Layout = (
    "Message",
    &[
        ("channel_id", U16),
        ("sequence", U32),
        ("log_time", U64),
        ("publish_time", U64),
        ("data", Rest),
    ],
);
const CHUNK: Layout = (
    "Chunk",
    &[
        ("message_start_time", U64),
        ("message_end_time", U64),
        ("uncompressed_size", U64),
        ("uncompressed_crc", U32),
        ("compression", Str),
        ("records", Bytes64),
    ],
);
const MESSAGE_INDEX: Layout = ("MessageIndex", &[("channel_id", U16), ("records", Array)]);
const CHUNK_INDEX: Layout = (
    "ChunkIndex",
    &[
        ("message_start_time", U64),
        ("message_end_time", U64),
        ("chunk_start_offset", U64),
        ("chunk_length", U64),
        ("message_index_offsets", Array),
        ("message_index_length", U64),
        ("compression", Str),
        ("compressed_size", U64),
        ("uncompressed_size", U64),
    ],
);
const ATTACHMENT: Layout = (
    "Attachment",
    &[
        ("log_time", U64),
        ("create_time", U64),
        ("name", Str),
        ("media_type", Str),
        ("data", Bytes64),
        ("crc", U32),
    ],
);
const ATTACHMENT_INDEX: Layout = (
    "AttachmentIndex",
    &[
        ("offset", U64),
        ("length", U64),
        ("log_time", U64),
        ("create_time", U64),
        ("data_size", U64),
        ("name", Str),
        ("media_type", Str),
    ],
);
const STATISTICS: Layout = (
    "Statistics",
    &[
        ("message_count", U64),
        ("schema_count", U16),
        ("channel_count", U32),
        ("attachment_count", U32),
        ("metadata_count", U32),
        ("chunk_count", U32),
        ("message_start_time", U64),
        ("message_end_time", U64),
        ("channel_message_counts", Array),
    ],
);
const METADATA: Layout = ("Metadata", &[("name", Str), ("metadata", StrMap)]);
const METADATA_INDEX: Layout = (
    "MetadataIndex",
    &[("offset", U64), ("length", U64), ("name", Str)],
);
const SUMMARY_OFFSET: Layout = (
    "SummaryOffset",
    &[("group_opcode", U8), ("group_start", U64), ("group_length", U64)],
);
const DATA_END: Layout = ("DataEnd", &[("data_section_crc", U32)]);

/// Name and field layout of the record types the library parses (MCAP specification, version 0).
fn layout(opcode: u8) -> Option<Layout> {
    Some(match opcode {
        op::HEADER => HEADER,
        op::FOOTER => FOOTER,
        op::SCHEMA => SCHEMA,
        op::CHANNEL => CHANNEL,
        op::MESSAGE => MESSAGE,
        op::CHUNK => CHUNK,
        op::MESSAGE_INDEX => MESSAGE_INDEX,
        op::CHUNK_INDEX => CHUNK_INDEX,
        op::ATTACHMENT => ATTACHMENT,
        op::ATTACHMENT_INDEX => ATTACHMENT_INDEX,
        op::STATISTICS => STATISTICS,
        op::METADATA => METADATA,
        op::METADATA_INDEX => METADATA_INDEX,
        op::SUMMARY_OFFSET => SUMMARY_OFFSET,
        op::DATA_END => DATA_END,
        _ => return None,
    })
}

/// The name of a record type for messages (`opcode 0x42` for one this library does not know).
pub(crate) fn record_name(opcode: u8) -> String {
    layout(opcode).map_or_else(|| format!("opcode {opcode:#04x}"), |(name, _)| name.to_string())
}

/// A cursor over a record body that fails, naming the field, instead of reading past its end.
struct Walk<'a> {
    body: &'a [u8],
    at: usize,
}

impl Walk<'_> {
    fn take(&mut self, n: u64, field: &str, what: &str) -> Result<(), String> {
        let left = self.body.len() - self.at;
        match usize::try_from(n) {
            Ok(n) if n <= left => {
                self.at += n;
                Ok(())
            }
            _ => Err(format!(
                "field `{field}` needs {n} bytes of {what} at byte {} of the record but only {left} remain",
                self.at
            )),
        }
    }

    fn uint(&mut self, size: usize, field: &str) -> Result<u64, String> {
        let start = self.at;
        self.take(size as u64, field, "integer")?;
        let mut le = [0u8; 8];
        le[..size].copy_from_slice(&self.body[start..start + size]);
        Ok(u64::from_le_bytes(le))
    }

    fn string(&mut self, field: &str) -> Result<(), String> {
        let len = self.uint(4, field)?;
        self.take(len, field, "string")
    }
}

/// Checks that every length inside the body of a record with `opcode` fits in the body.
pub(crate) fn check_layout(opcode: u8, body: &[u8]) -> Result<(), String> {
    let Some((name, fields)) = layout(opcode) else {
        return Ok(());
    };
    let mut w = Walk { body, at: 0 };
    for &(field, kind) in fields {
        walk_field(&mut w, field, kind).map_err(|e| format!("{name} record: {e}"))?;
    }
    Ok(())
}

fn walk_field(w: &mut Walk<'_>, field: &str, kind: Field) -> Result<(), String> {
    match kind {
        U8 => w.uint(1, field).map(drop),
        U16 => w.uint(2, field).map(drop),
        U32 => w.uint(4, field).map(drop),
        U64 => w.uint(8, field).map(drop),
        Str => w.string(field),
        Array | Bytes32 => {
            let len = w.uint(4, field)?;
            w.take(len, field, "data")
        }
        Bytes64 => {
            let len = w.uint(8, field)?;
            w.take(len, field, "data")
        }
        StrMap => {
            let len = w.uint(4, field)?;
            let start = w.at;
            w.take(len, field, "map entries")?;
            // The map's own bytes must hold whole key/value strings, exactly.
            let mut inner = Walk {
                body: &w.body[start..w.at],
                at: 0,
            };
            while inner.at < inner.body.len() {
                inner.string(field)?;
                inner.string(field)?;
            }
            Ok(())
        }
        Rest => Ok(()),
    }
}

/// Parses a record body whose length was already checked against the file: its fields are checked
/// first ([`check_layout`]), then the `mcap` crate parses it. Should the crate still panic on some
/// input, the panic becomes an error here rather than ending the program.
pub(crate) fn parse_record(opcode: u8, body: &[u8]) -> Result<Record<'_>, String> {
    check_layout(opcode, body)?;
    match std::panic::catch_unwind(|| mcap::parse_record(opcode, body)) {
        Ok(Ok(record)) => Ok(record),
        Ok(Err(e)) => Err(format!("{} record: {e}", record_name(opcode))),
        Err(_) => Err(format!(
            "{} record: the MCAP parser failed on it",
            record_name(opcode)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(s: &str) -> Vec<u8> {
        let mut out = (s.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(s.as_bytes());
        out
    }

    #[test]
    fn a_string_longer_than_its_record_is_refused_before_parsing() {
        let mut body = string("ros2");
        body.extend_from_slice(&u32::MAX.to_le_bytes());
        body.extend_from_slice(b"lib");
        let err = parse_record(op::HEADER, &body).unwrap_err();
        assert!(
            err.contains("Header record: field `library` needs 4294967295 bytes"),
            "{err}"
        );
        let mut ok = string("ros2");
        ok.extend(string("lockstep"));
        assert!(parse_record(op::HEADER, &ok).is_ok());
    }

    #[test]
    fn an_attachment_without_room_for_its_crc_is_refused() {
        let mut body = vec![0u8; 16];
        body.extend(string("a"));
        body.extend(string("text/plain"));
        body.extend_from_slice(&2u64.to_le_bytes());
        body.extend_from_slice(b"hi");
        let err = parse_record(op::ATTACHMENT, &body).unwrap_err();
        assert!(err.contains("field `crc`"), "{err}");
        body.extend_from_slice(&0u32.to_le_bytes());
        assert!(matches!(
            parse_record(op::ATTACHMENT, &body),
            Ok(Record::Attachment { .. })
        ));
    }

    #[test]
    fn map_entries_must_fill_the_map_exactly() {
        let mut body = 1u16.to_le_bytes().to_vec();
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend(string("/t"));
        body.extend(string("cdr"));
        let mut map = string("k");
        map.extend_from_slice(&1000u32.to_le_bytes());
        body.extend_from_slice(&(map.len() as u32).to_le_bytes());
        body.extend(map);
        let err = parse_record(op::CHANNEL, &body).unwrap_err();
        assert!(err.contains("field `metadata`"), "{err}");
    }
}
