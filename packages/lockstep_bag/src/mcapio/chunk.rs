//! Chunk contents: decompression to the declared size (never more), the CRC check, and the records
//! inside, each length checked against what is left of the chunk.

use super::layout::{parse_record, record_name};
use mcap::records::{ChunkHeader, Record};
use std::borrow::Cow;
use std::io::Read;

/// Opcode and length in front of every record.
pub(crate) const RECORD_HEADER_LEN: usize = 9;

/// The records of a chunk, decompressed: `compression` is `""`, `zstd` or `lz4`. The output grows
/// with what the decoder actually produces and stops at the declared `uncompressed_size`, so a
/// declared size larger than the data allocates nothing for it. A non-zero CRC is checked.
pub(crate) fn decompress<'a>(header: &ChunkHeader, data: &'a [u8]) -> Result<Cow<'a, [u8]>, String> {
    let declared = header.uncompressed_size;
    let out: Cow<'a, [u8]> = match header.compression.as_str() {
        "" => {
            if declared != data.len() as u64 {
                return Err(format!(
                    "uncompressed chunk declares {declared} bytes of records but holds {}",
                    data.len()
                ));
            }
            Cow::Borrowed(data)
        }
        "zstd" => Cow::Owned(read_limited(
            zstd::stream::read::Decoder::new(data).map_err(|e| format!("zstd: {e}"))?,
            declared,
            "zstd",
        )?),
        "lz4" => Cow::Owned(read_limited(
            lz4::Decoder::new(data).map_err(|e| format!("lz4: {e}"))?,
            declared,
            "lz4",
        )?),
        other => {
            return Err(format!(
                "unsupported chunk compression `{other}` (supported: zstd, lz4)"
            ))
        }
    };
    if header.uncompressed_crc != 0 {
        let computed = crc32(&out);
        if computed != header.uncompressed_crc {
            return Err(format!(
                "chunk CRC mismatch: stored {:#010x}, computed {computed:#010x} (damaged chunk)",
                header.uncompressed_crc
            ));
        }
    }
    Ok(out)
}

/// Reads at most `declared` + 1 bytes from a decoder and fails unless exactly `declared` came out.
fn read_limited(decoder: impl Read, declared: u64, format: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    decoder
        .take(declared.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| format!("{format} chunk does not decompress: {e}"))?;
    let got = out.len() as u64;
    if got > declared {
        return Err(format!(
            "{format} chunk decompresses to more than the {declared} bytes it declares"
        ));
    }
    if got < declared {
        return Err(format!(
            "{format} chunk declares {declared} uncompressed bytes but decompresses to {got}"
        ));
    }
    Ok(out)
}

/// The records laid end to end in `bytes` (a chunk's records, a summary section), in order. The
/// first framing or parse error stops it: `Err((offset in bytes, reason))`.
pub(crate) fn records(bytes: &[u8]) -> Result<Vec<Record<'_>>, (usize, String)> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let left = bytes.len() - at;
        if left < RECORD_HEADER_LEN {
            return Err((at, format!("{left} stray bytes (a record needs at least 9)")));
        }
        let opcode = bytes[at];
        let mut len = [0u8; 8];
        len.copy_from_slice(&bytes[at + 1..at + RECORD_HEADER_LEN]);
        let len = u64::from_le_bytes(len);
        let room = left - RECORD_HEADER_LEN;
        let body_len = match usize::try_from(len) {
            Ok(n) if n <= room => n,
            _ => {
                let name = record_name(opcode);
                return Err((
                    at,
                    format!("{name} record claims {len} bytes but only {room} remain"),
                ));
            }
        };
        let body = &bytes[at + RECORD_HEADER_LEN..at + RECORD_HEADER_LEN + body_len];
        out.push(parse_record(opcode, body).map_err(|e| (at, e))?);
        at += RECORD_HEADER_LEN + body_len;
    }
    Ok(out)
}

/// CRC-32 (IEEE, as MCAP uses), bytewise with a table built at compile time.
pub(crate) fn crc32(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };
    let mut crc = !0u32;
    for &b in data {
        crc = TABLE[((crc ^ u32::from(b)) & 0xFF) as usize] ^ (crc >> 8);
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(compression: &str, size: u64) -> ChunkHeader {
        ChunkHeader {
            message_start_time: 0,
            message_end_time: 0,
            uncompressed_size: size,
            uncompressed_crc: 0,
            compression: compression.into(),
            compressed_size: 0,
        }
    }

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn a_record_longer_than_its_chunk_is_an_error() {
        let mut bytes = vec![0x05u8];
        bytes.extend_from_slice(&u64::MAX.to_le_bytes());
        bytes.extend_from_slice(&[0; 30]);
        let (at, err) = records(&bytes).unwrap_err();
        assert_eq!(at, 0);
        assert!(
            err.contains("claims 18446744073709551615 bytes but only 30 remain"),
            "{err}"
        );
    }

    #[test]
    fn a_declared_size_larger_than_the_data_is_an_error_without_allocating_it() {
        let packed = zstd::encode_all(&b"hello"[..], 0).unwrap();
        let err = decompress(&header("zstd", u64::MAX), &packed).unwrap_err();
        assert!(err.contains("decompresses to 5"), "{err}");
        assert_eq!(&*decompress(&header("zstd", 5), &packed).unwrap(), b"hello");
        assert!(decompress(&header("zstd", 4), &packed)
            .unwrap_err()
            .contains("more"));
        assert!(decompress(&header("", 6), b"hello").is_err());
        assert!(decompress(&header("brotli", 5), b"hello").is_err());
    }

    #[test]
    fn lz4_chunks_decompress_to_their_declared_size() {
        use std::io::Write;
        let mut encoder = lz4::EncoderBuilder::new().build(Vec::new()).unwrap();
        encoder.write_all(b"hello lz4").unwrap();
        let (packed, done) = encoder.finish();
        done.unwrap();
        assert_eq!(&*decompress(&header("lz4", 9), &packed).unwrap(), b"hello lz4");
        assert!(decompress(&header("lz4", 1 << 40), &packed).is_err());
        assert!(decompress(&header("lz4", 9), &packed[..packed.len() / 2]).is_err());
    }
}
