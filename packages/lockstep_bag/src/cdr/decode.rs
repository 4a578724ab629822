//! XCDR1 (plain CDR) decoding driven by a [`Schema`].
//!
//! Wire rules (what Fast DDS and Cyclone DDS write for ROS 2): a 4-byte encapsulation header (byte 1:
//! 0x01 little endian, 0x00 big endian); each primitive aligned to its size, counted from the end of the
//! header; strings as a `uint32` length that counts the terminating NUL, then the bytes and the NUL;
//! sequences as a `uint32` count, then the elements; fixed arrays with no count; a message with no
//! fields as one byte (rosidl's `structure_needs_at_least_one_member`).

use super::error::{CdrError, Result};
use super::schema::{ArrayKind, Field, FieldType, MessageType, Primitive, Schema};
use super::value::Value;

const HEADER: usize = 4;

impl Schema {
    /// Decodes one serialized message of the schema's root type. Bytes after the message (padding)
    /// are ignored.
    pub fn decode(&self, data: &[u8]) -> Result<Value> {
        self.read(data).map(|(value, _)| value)
    }

    /// The canonical form of a serialized message, the input of Lockstep's payload digests
    /// (`lockstep_trace::digest`): the same CDR with the encapsulation options and every alignment padding
    /// byte zero, and nothing after the last field (DDS pads payloads between processes to 4 bytes; rmw
    /// leaves padding bytes uninitialised).
    pub fn canonical(&self, data: &[u8]) -> Result<Vec<u8>> {
        let (_, r) = self.read(data)?;
        let mut out = data[..r.pos].to_vec();
        out[2] = 0;
        out[3] = 0;
        for pad in r.pads {
            out[pad].fill(0);
        }
        Ok(out)
    }

    fn read<'a>(&self, data: &'a [u8]) -> Result<(Value, Reader<'a>)> {
        if data.len() < HEADER {
            return Err(CdrError::Data {
                field: String::new(),
                offset: 0,
                reason: format!("{} bytes: too short for the 4-byte CDR header", data.len()),
            });
        }
        let little = match data[1] {
            0x00 => false,
            0x01 => true,
            kind => return Err(CdrError::Encapsulation { kind }),
        };
        let mut r = Reader {
            data,
            pos: HEADER,
            little,
            pads: Vec::new(),
        };
        let value = r.message(self, self.root(), "")?;
        // DDS pads a payload to a multiple of 4 bytes; more left over means the definition is not the
        // one the message was written with.
        let left = data.len() - r.pos;
        if left > 3 {
            return Err(r.fail("(after the last field)", format!("{left} bytes are left over")));
        }
        Ok((value, r))
    }
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    little: bool,
    /// The alignment padding skipped so far.
    pads: Vec<std::ops::Range<usize>>,
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

impl Reader<'_> {
    fn fail(&self, field: &str, reason: impl Into<String>) -> CdrError {
        CdrError::Data {
            field: field.to_string(),
            offset: self.pos,
            reason: reason.into(),
        }
    }

    fn align(&mut self, n: usize) {
        let rel = self.pos - HEADER;
        let pad = (n - rel % n) % n;
        if pad > 0 {
            let end = (self.pos + pad).min(self.data.len());
            self.pads.push(self.pos..end);
        }
        self.pos += pad;
    }

    fn take<const N: usize>(&mut self, field: &str) -> Result<[u8; N]> {
        self.align(N);
        let bytes = self.data.get(self.pos..self.pos + N).ok_or_else(|| {
            self.fail(
                field,
                format!(
                    "the message ends ({} bytes) inside a {N}-byte value",
                    self.data.len()
                ),
            )
        })?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        if !self.little {
            out.reverse();
        }
        self.pos += N;
        Ok(out)
    }

    fn u32(&mut self, field: &str) -> Result<u32> {
        self.take::<4>(field).map(u32::from_le_bytes)
    }

    /// A length or count that must fit in what is left, at `min_size` bytes per element.
    fn count(&mut self, field: &str, min_size: usize) -> Result<usize> {
        let n = self.u32(field)? as usize;
        let left = self.data.len().saturating_sub(self.pos);
        if n.saturating_mul(min_size) > left {
            return Err(self.fail(field, format!("length {n} but only {left} bytes are left")));
        }
        Ok(n)
    }

    fn message(&mut self, schema: &Schema, t: &MessageType, path: &str) -> Result<Value> {
        if t.fields.is_empty() {
            self.take::<1>(path)?;
            return Ok(Value::Message(Vec::new()));
        }
        let mut fields = Vec::with_capacity(t.fields.len());
        for f in &t.fields {
            let p = join(path, &f.name);
            let v = self.field(schema, f, &p)?;
            fields.push((f.name.clone(), v));
        }
        Ok(Value::Message(fields))
    }

    fn field(&mut self, schema: &Schema, f: &Field, path: &str) -> Result<Value> {
        let n = match f.array {
            ArrayKind::Single => return self.element(schema, &f.ty, path),
            ArrayKind::Fixed(n) => n,
            ArrayKind::Sequence { max } => {
                let n = self.count(path, 0)?;
                if let Some(max) = max.filter(|&m| n > m) {
                    return Err(self.fail(path, format!("{n} elements in a sequence bounded to {max}")));
                }
                n
            }
        };
        // Elements must fit in what is left (a message element takes at least one byte).
        let min = match &f.ty {
            FieldType::Primitive(p) => p.size().unwrap_or(4),
            FieldType::Message(_) => 1,
        };
        let left = self.data.len().saturating_sub(self.pos);
        if n.saturating_mul(min) > left {
            return Err(self.fail(path, format!("{n} elements but only {left} bytes are left")));
        }
        let mut items = Vec::with_capacity(n);
        if let FieldType::Primitive(p) = &f.ty {
            // Primitive elements (an image's bytes, a point cloud's floats): the element's path is only
            // spelled out when it is needed for an error, not once per element.
            for i in 0..n {
                let start = self.pos;
                let pads = self.pads.len();
                match self.primitive(*p, path) {
                    Ok(v) => items.push(v),
                    Err(_) => {
                        self.pos = start;
                        self.pads.truncate(pads);
                        return self.primitive(*p, &format!("{path}[{i}]"));
                    }
                }
            }
            return Ok(Value::Array(items));
        }
        for i in 0..n {
            items.push(self.element(schema, &f.ty, &format!("{path}[{i}]"))?);
        }
        Ok(Value::Array(items))
    }

    fn element(&mut self, schema: &Schema, ty: &FieldType, path: &str) -> Result<Value> {
        match ty {
            FieldType::Primitive(p) => self.primitive(*p, path),
            FieldType::Message(name) => {
                let t = schema
                    .get(name)
                    .ok_or_else(|| self.fail(path, format!("type {name} is not defined")))?;
                self.message(schema, t, path)
            }
        }
    }

    fn primitive(&mut self, p: Primitive, path: &str) -> Result<Value> {
        Ok(match p {
            Primitive::Bool => match self.take::<1>(path)?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => {
                    self.pos -= 1;
                    return Err(self.fail(path, format!("bool byte {b} (must be 0 or 1)")));
                }
            },
            Primitive::Byte | Primitive::Char | Primitive::UInt8 => {
                Value::UInt(u64::from(self.take::<1>(path)?[0]))
            }
            Primitive::Int8 => Value::Int(i64::from(i8::from_le_bytes(self.take::<1>(path)?))),
            Primitive::Int16 => Value::Int(i64::from(i16::from_le_bytes(self.take::<2>(path)?))),
            Primitive::UInt16 => Value::UInt(u64::from(u16::from_le_bytes(self.take::<2>(path)?))),
            Primitive::Int32 => Value::Int(i64::from(i32::from_le_bytes(self.take::<4>(path)?))),
            Primitive::UInt32 => Value::UInt(u64::from(u32::from_le_bytes(self.take::<4>(path)?))),
            Primitive::Int64 => Value::Int(i64::from_le_bytes(self.take::<8>(path)?)),
            Primitive::UInt64 => Value::UInt(u64::from_le_bytes(self.take::<8>(path)?)),
            Primitive::Float32 => Value::Float(f64::from(f32::from_le_bytes(self.take::<4>(path)?))),
            Primitive::Float64 => Value::Float(f64::from_le_bytes(self.take::<8>(path)?)),
            Primitive::String => {
                let n = self.count(path, 1)?;
                let bytes = &self.data[self.pos..self.pos + n];
                // The length counts a terminating NUL; an empty string may be written with length 0.
                let text = bytes.strip_suffix(&[0]).unwrap_or(bytes);
                let s = String::from_utf8_lossy(text).into_owned();
                self.pos += n;
                Value::String(s)
            }
            Primitive::WString => {
                let n = self.count(path, 2)?;
                let mut units = Vec::with_capacity(n);
                for _ in 0..n {
                    units.push(u16::from_le_bytes(self.take::<2>(path)?));
                }
                if units.last() == Some(&0) {
                    units.pop();
                }
                Value::String(String::from_utf16_lossy(&units))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn le(parts: &[&[u8]]) -> Vec<u8> {
        let mut v = vec![0, 1, 0, 0];
        for p in parts {
            v.extend_from_slice(p);
        }
        v
    }

    #[test]
    fn aligns_from_the_header_and_reads_both_endians() {
        let s = Schema::parse("p/msg/A", "uint8 a\nfloat64 b\nstring c\nint16[] d\n").unwrap();
        // a, 7 bytes padding, b, c ("hi\0"), pad to 4, d = [1, -2]
        let data = le(&[
            &[7],
            &[0; 7],
            &2.5f64.to_le_bytes(),
            &3u32.to_le_bytes(),
            b"hi\0",
            &[0],
            &2u32.to_le_bytes(),
            &1i16.to_le_bytes(),
            &(-2i16).to_le_bytes(),
        ]);
        let v = s.decode(&data).unwrap();
        assert_eq!(v.to_yaml(), "a: 7\nb: 2.5\nc: hi\nd:\n- 1\n- -2\n");
        let mut be = vec![0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0];
        be.extend_from_slice(&2.5f64.to_be_bytes());
        be.extend_from_slice(&3u32.to_be_bytes());
        be.extend_from_slice(b"hi\0\0");
        be.extend_from_slice(&0u32.to_be_bytes());
        assert_eq!(s.decode(&be).unwrap().to_yaml(), "a: 7\nb: 2.5\nc: hi\nd: []\n");
    }

    #[test]
    fn canonical_form_zeroes_padding_and_options_and_drops_the_tail() {
        let s = Schema::parse("p/msg/A", "uint8 a\nfloat64 b\n").unwrap();
        let mut data = vec![0, 1, 0, 3, 7, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF, 0x11];
        data.extend_from_slice(&2.5f64.to_le_bytes());
        data.extend_from_slice(&[0xEE; 3]);
        let c = s.canonical(&data).unwrap();
        let mut want = vec![0, 1, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0];
        want.extend_from_slice(&2.5f64.to_le_bytes());
        assert_eq!(c, want);
        assert_eq!(s.canonical(&c).unwrap(), c);
    }

    #[test]
    fn truncated_or_impossible_data_names_field_and_offset() {
        let s = Schema::parse("p/msg/A", "uint32 a\nB b\n===\nMSG: p/B\nfloat64[] xs\n").unwrap();
        let data = le(&[&1u32.to_le_bytes(), &1_000_000u32.to_le_bytes()]);
        let e = s.decode(&data).unwrap_err().to_string();
        assert!(e.contains("b.xs") && e.contains("at byte 12"), "{e}");
        let data = le(&[&1u32.to_le_bytes(), &2u32.to_le_bytes(), &1.0f64.to_le_bytes()]);
        let e = s.decode(&data).unwrap_err().to_string();
        assert!(e.contains("b.xs"), "{e}");
        let data = le(&[&1u32.to_le_bytes(), &0u32.to_le_bytes(), &[0; 4]]);
        let e = s.decode(&data).unwrap_err().to_string();
        assert!(e.contains("4 bytes are left over"), "{e}");
        assert!(matches!(
            s.decode(&[0, 2, 0, 0]),
            Err(CdrError::Encapsulation { kind: 2 })
        ));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 500, ..Default::default() })]
        /// Any bytes: a value or an error, never a panic or a huge allocation.
        #[test]
        fn arbitrary_bytes_never_panic(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200), le_flag in 0u8..3) {
            let s = Schema::parse(
                "p/msg/A",
                "bool b\nstring s\nwstring w\nfloat64[2] f\nB[] bs\nuint8[<=3] u\n===\nMSG: p/B\nint16 i\nstring[] t\nC c\n===\nMSG: p/C\n",
            ).unwrap();
            let mut data = vec![0, le_flag, 0, 0];
            data.extend_from_slice(&body);
            let _ = s.decode(&data);
        }
    }
}
