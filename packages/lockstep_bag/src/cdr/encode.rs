//! XCDR1 encoding of a [`Value`] by a [`Schema`]: the canonical form (little endian, zero padding, options
//! zero), byte for byte what [`Schema::canonical`] makes of the same message.

use super::error::{CdrError, Result};
use super::schema::{ArrayKind, Field, FieldType, MessageType, Primitive, Schema};
use super::value::Value;

const HEADER: [u8; 4] = [0, 1, 0, 0];

impl Schema {
    /// Serializes `value`, a message of the schema's root type with every field present in definition order
    /// (as [`Schema::decode`] returns them).
    pub fn encode(&self, value: &Value) -> Result<Vec<u8>> {
        let mut w = Writer { out: HEADER.to_vec() };
        w.message(self, self.root(), value, "")?;
        Ok(w.out)
    }
}

struct Writer {
    out: Vec<u8>,
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn mismatch(path: &str, want: &str, got: &Value) -> CdrError {
    CdrError::Data {
        field: path.to_string(),
        offset: 0,
        reason: format!("expected {want}, got {got:?}"),
    }
}

impl Writer {
    fn align(&mut self, n: usize) {
        while (self.out.len() - HEADER.len()) % n != 0 {
            self.out.push(0);
        }
    }

    fn put<const N: usize>(&mut self, bytes: [u8; N]) {
        self.align(N);
        self.out.extend_from_slice(&bytes);
    }

    fn len_u32(&mut self, n: usize, path: &str) -> Result<()> {
        let n = u32::try_from(n).map_err(|_| CdrError::Data {
            field: path.to_string(),
            offset: self.out.len(),
            reason: format!("{n} elements do not fit a CDR length"),
        })?;
        self.put(n.to_le_bytes());
        Ok(())
    }

    fn message(&mut self, schema: &Schema, t: &MessageType, value: &Value, path: &str) -> Result<()> {
        let Value::Message(fields) = value else {
            return Err(mismatch(path, &format!("a {} message", t.name), value));
        };
        if t.fields.is_empty() {
            self.out.push(0);
            return Ok(());
        }
        for f in &t.fields {
            let p = join(path, &f.name);
            let v = fields
                .iter()
                .find(|(n, _)| *n == f.name)
                .map(|(_, v)| v)
                .ok_or_else(|| CdrError::Data {
                    field: p.clone(),
                    offset: self.out.len(),
                    reason: "missing".into(),
                })?;
            self.field(schema, f, v, &p)?;
        }
        Ok(())
    }

    fn field(&mut self, schema: &Schema, f: &Field, value: &Value, path: &str) -> Result<()> {
        if f.array == ArrayKind::Single {
            return self.element(schema, &f.ty, value, path);
        }
        let Value::Array(items) = value else {
            return Err(mismatch(path, "an array", value));
        };
        match f.array {
            ArrayKind::Fixed(n) if items.len() != n => {
                return Err(mismatch(path, &format!("exactly {n} elements"), value));
            }
            ArrayKind::Sequence { max: Some(m) } if items.len() > m => {
                return Err(mismatch(path, &format!("at most {m} elements"), value));
            }
            ArrayKind::Sequence { .. } => self.len_u32(items.len(), path)?,
            _ => {}
        }
        for (i, item) in items.iter().enumerate() {
            self.element(schema, &f.ty, item, &format!("{path}[{i}]"))?;
        }
        Ok(())
    }

    fn element(&mut self, schema: &Schema, ty: &FieldType, value: &Value, path: &str) -> Result<()> {
        match ty {
            FieldType::Message(name) => {
                let t = schema.get(name).ok_or_else(|| mismatch(path, name, value))?;
                self.message(schema, t, value, path)
            }
            FieldType::Primitive(p) => self.primitive(*p, value, path),
        }
    }

    fn primitive(&mut self, p: Primitive, value: &Value, path: &str) -> Result<()> {
        let int = |v: &Value| -> Option<i128> {
            match v {
                Value::Int(i) => Some(i128::from(*i)),
                Value::UInt(u) => Some(i128::from(*u)),
                Value::Bool(b) => Some(i128::from(*b)),
                _ => None,
            }
        };
        macro_rules! integer {
            ($t:ty) => {{
                let n = int(value)
                    .and_then(|n| <$t>::try_from(n).ok())
                    .ok_or_else(|| mismatch(path, stringify!($t), value))?;
                self.put(n.to_le_bytes());
            }};
        }
        match p {
            Primitive::Bool => match value {
                Value::Bool(b) => self.put([u8::from(*b)]),
                _ => return Err(mismatch(path, "a bool", value)),
            },
            Primitive::Byte | Primitive::Char | Primitive::UInt8 => integer!(u8),
            Primitive::Int8 => integer!(i8),
            Primitive::Int16 => integer!(i16),
            Primitive::UInt16 => integer!(u16),
            Primitive::Int32 => integer!(i32),
            Primitive::UInt32 => integer!(u32),
            Primitive::Int64 => integer!(i64),
            Primitive::UInt64 => integer!(u64),
            Primitive::Float32 | Primitive::Float64 => {
                let f = match value {
                    Value::Float(f) => *f,
                    other => int(other).ok_or_else(|| mismatch(path, "a number", value))? as f64,
                };
                if p == Primitive::Float32 {
                    self.put((f as f32).to_le_bytes());
                } else {
                    self.put(f.to_le_bytes());
                }
            }
            Primitive::String => {
                let Value::String(s) = value else {
                    return Err(mismatch(path, "a string", value));
                };
                self.len_u32(s.len() + 1, path)?;
                self.out.extend_from_slice(s.as_bytes());
                self.out.push(0);
            }
            Primitive::WString => {
                let Value::String(s) = value else {
                    return Err(mismatch(path, "a string", value));
                };
                let units: Vec<u16> = s.encode_utf16().collect();
                self.len_u32(units.len(), path)?;
                for u in units {
                    self.put(u.to_le_bytes());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn encoding_a_decoded_message_gives_its_canonical_bytes() {
        let s = Schema::parse(
            "p/msg/A",
            "uint8 a\nfloat64 b\nstring c\nint16[] d\nB[2] e\nbool f\nwstring w\n===\nMSG: p/B\nfloat32 x\nstring[<=2] t\n",
        )
        .unwrap();
        let v = Value::Message(vec![
            ("a".into(), Value::UInt(7)),
            ("b".into(), Value::Float(-2.5)),
            ("c".into(), Value::String("héllo".into())),
            ("d".into(), Value::Array(vec![Value::Int(1), Value::Int(-2)])),
            (
                "e".into(),
                Value::Array(vec![
                    Value::Message(vec![
                        ("x".into(), Value::Float(0.5)),
                        ("t".into(), Value::Array(vec![Value::String("q".into())])),
                    ]),
                    Value::Message(vec![
                        ("x".into(), Value::Float(1.0)),
                        ("t".into(), Value::Array(vec![])),
                    ]),
                ]),
            ),
            ("f".into(), Value::Bool(true)),
            ("w".into(), Value::String("ω".into())),
        ]);
        let bytes = s.encode(&v).unwrap();
        assert_eq!(s.decode(&bytes).unwrap(), v);
        assert_eq!(s.canonical(&bytes).unwrap(), bytes);
        let e = s
            .encode(&Value::Message(vec![("a".into(), Value::Int(300))]))
            .unwrap_err();
        assert!(e.to_string().contains("`a`"), "{e}");
    }
}
