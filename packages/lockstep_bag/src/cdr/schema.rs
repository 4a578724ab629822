//! The `ros2msg` schema text parsed into message types.

use super::error::{CdrError, Result};
use std::collections::BTreeMap;

/// A primitive field type of the ROS 2 message language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Primitive {
    /// `bool`: one byte, 0 or 1.
    Bool,
    /// `byte`: one unsigned byte.
    Byte,
    /// `char`: one unsigned byte.
    Char,
    /// `int8`.
    Int8,
    /// `uint8`.
    UInt8,
    /// `int16`.
    Int16,
    /// `uint16`.
    UInt16,
    /// `int32`.
    Int32,
    /// `uint32`.
    UInt32,
    /// `int64`.
    Int64,
    /// `uint64`.
    UInt64,
    /// `float32`.
    Float32,
    /// `float64`.
    Float64,
    /// `string`, optionally bounded (`string<=N`).
    String,
    /// `wstring`: UTF-16 code units (Fast CDR 2, as ROS 2 Jazzy writes it).
    WString,
}

impl Primitive {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "bool" => Self::Bool,
            "byte" => Self::Byte,
            "char" => Self::Char,
            "int8" => Self::Int8,
            "uint8" => Self::UInt8,
            "int16" => Self::Int16,
            "uint16" => Self::UInt16,
            "int32" => Self::Int32,
            "uint32" => Self::UInt32,
            "int64" => Self::Int64,
            "uint64" => Self::UInt64,
            "float32" => Self::Float32,
            "float64" => Self::Float64,
            "string" => Self::String,
            "wstring" => Self::WString,
            _ => return None,
        })
    }

    /// Bytes on the wire (and alignment) of a fixed-size primitive; `None` for strings.
    pub fn size(self) -> Option<usize> {
        match self {
            Self::Bool | Self::Byte | Self::Char | Self::Int8 | Self::UInt8 => Some(1),
            Self::Int16 | Self::UInt16 => Some(2),
            Self::Int32 | Self::UInt32 | Self::Float32 => Some(4),
            Self::Int64 | Self::UInt64 | Self::Float64 => Some(8),
            Self::String | Self::WString => None,
        }
    }
}

/// What a field holds, without its array kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    /// A primitive.
    Primitive(Primitive),
    /// A message type, by its full name `pkg/msg/Type`.
    Message(String),
}

/// Whether a field is one value or an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayKind {
    /// One value.
    Single,
    /// `T[N]`: exactly N, no length on the wire.
    Fixed(usize),
    /// `T[]` or `T[<=N]`: a length, then that many.
    Sequence {
        /// The bound of `T[<=N]`.
        max: Option<usize>,
    },
}

/// One field of a message type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Its name.
    pub name: String,
    /// Its element type.
    pub ty: FieldType,
    /// Single value or array.
    pub array: ArrayKind,
}

/// One message type: its fields in wire order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageType {
    /// Full name, `pkg/msg/Type`.
    pub name: String,
    /// Fields (constants excluded).
    pub fields: Vec<Field>,
}

/// Every message type a schema text defines, and which one it is about.
#[derive(Debug, Clone)]
pub struct Schema {
    root: String,
    types: BTreeMap<String, MessageType>,
}

/// `pkg/Type`, `pkg/msg/Type` -> `pkg/msg/Type` (`pkg/srv/Type` stays); a bare `Type` belongs to
/// `package`; `Header` is `std_msgs/msg/Header` (the one type ROS 2 still resolves without a package).
fn full_name(name: &str, package: &str) -> Option<String> {
    let parts: Vec<&str> = name.split('/').collect();
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    match parts.as_slice() {
        ["Header"] => Some("std_msgs/msg/Header".into()),
        [t] if ident(t) => Some(format!("{package}/msg/{t}")),
        [p, t] | [p, "msg", t] if ident(p) && ident(t) => Some(format!("{p}/msg/{t}")),
        [p, "srv", t] if ident(p) && ident(t) => Some(format!("{p}/srv/{t}")),
        _ => None,
    }
}

/// Types every ROS 2 installation has, used when a schema text refers to them without including them
/// (rosbag2 stores a service event's definition as the bare `.srv` text).
const WELL_KNOWN: &[(&str, &str)] = &[
    ("builtin_interfaces/msg/Time", "int32 sec\nuint32 nanosec\n"),
    ("builtin_interfaces/msg/Duration", "int32 sec\nuint32 nanosec\n"),
    (
        "service_msgs/msg/ServiceEventInfo",
        "uint8 event_type\nbuiltin_interfaces/Time stamp\nchar[16] client_gid\nint64 sequence_number\n",
    ),
];

/// The lines of a `.srv` text (`request --- response`) as the message types rosidl generates for a
/// service event `pkg/srv/Name_Event`: `Name_Request`, `Name_Response` and the event wrapping both.
fn service_event(root: &str, lines: &[(usize, &str)]) -> Result<Vec<MessageType>> {
    let base = root.strip_suffix("_Event").unwrap_or(root);
    let split = lines.iter().position(|(_, l)| l.trim() == "---");
    let (request, response) = match split {
        Some(i) => (&lines[..i], &lines[i + 1..]),
        None => (lines, &[][..]),
    };
    let request = parse_type(&format!("{base}_Request"), request)?;
    let response = parse_type(&format!("{base}_Response"), response)?;
    let wrapped = |name: &str, ty: &MessageType| Field {
        name: name.into(),
        ty: FieldType::Message(ty.name.clone()),
        array: ArrayKind::Sequence { max: Some(1) },
    };
    let event = MessageType {
        name: root.into(),
        fields: vec![
            Field {
                name: "info".into(),
                ty: FieldType::Message("service_msgs/msg/ServiceEventInfo".into()),
                array: ArrayKind::Single,
            },
            wrapped("request", &request),
            wrapped("response", &response),
        ],
    };
    Ok(vec![event, request, response])
}

/// A line of 3 or more `=` and nothing else separates the types of a schema text.
fn is_separator(line: &str) -> bool {
    let line = line.trim();
    line.len() >= 3 && line.chars().all(|c| c == '=')
}

impl Schema {
    /// Parses the schema text of `type_name` (as an MCAP `ros2msg` schema or a rosbag2 sqlite3
    /// `message_definition` holds it). Every message type a field uses must be in the text.
    pub fn parse(type_name: &str, text: &str) -> Result<Self> {
        let root = full_name(type_name, "").ok_or_else(|| CdrError::Definition {
            type_name: type_name.into(),
            line: 0,
            text: type_name.into(),
            reason: "not a message type name (pkg/msg/Type)".into(),
        })?;
        let mut types = BTreeMap::new();
        let mut current = root.clone();
        let mut lines: Vec<(usize, &str)> = Vec::new();
        let mut line_no = 0;
        for line in text.lines() {
            line_no += 1;
            if is_separator(line) {
                add_section(&mut types, &current, &lines)?;
                lines.clear();
                line_no = 0;
                current = String::new();
                continue;
            }
            if current.is_empty() {
                // The line after a separator names the next type: `MSG: pkg/Type`.
                let name = line.trim().strip_prefix("MSG:").map(str::trim);
                current = name
                    .and_then(|n| full_name(n, ""))
                    .ok_or_else(|| CdrError::Definition {
                        type_name: root.clone(),
                        line: 1,
                        text: line.into(),
                        reason: "expected `MSG: <pkg/Type>` after a separator line".into(),
                    })?;
                line_no = 0;
                continue;
            }
            lines.push((line_no, line));
        }
        if !current.is_empty() {
            add_section(&mut types, &current, &lines)?;
        }
        let mut schema = Schema { root, types };
        schema.add_well_known()?;
        schema.check()?;
        Ok(schema)
    }

    /// Adds the [`WELL_KNOWN`] types that fields use and the text leaves out.
    fn add_well_known(&mut self) -> Result<()> {
        loop {
            let missing: Vec<&(&str, &str)> = WELL_KNOWN
                .iter()
                .filter(|(name, _)| !self.types.contains_key(*name))
                .filter(|(name, _)| {
                    self.types
                        .values()
                        .flat_map(|t| &t.fields)
                        .any(|f| f.ty == FieldType::Message((*name).into()))
                })
                .collect();
            if missing.is_empty() {
                return Ok(());
            }
            for (name, text) in missing {
                let lines: Vec<(usize, &str)> = text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect();
                self.types.insert((*name).into(), parse_type(name, &lines)?);
            }
        }
    }

    /// The type the schema is about.
    pub fn root(&self) -> &MessageType {
        &self.types[&self.root]
    }

    /// A type of the schema by full name (`pkg/msg/Type`).
    pub fn get(&self, name: &str) -> Option<&MessageType> {
        self.types.get(name)
    }

    /// Every field's type is defined, and no type contains itself.
    fn check(&self) -> Result<()> {
        for t in self.types.values() {
            for f in &t.fields {
                if let FieldType::Message(m) = &f.ty {
                    if !self.types.contains_key(m) {
                        return Err(CdrError::MissingType {
                            type_name: t.name.clone(),
                            field: f.name.clone(),
                            missing: m.clone(),
                        });
                    }
                }
            }
        }
        for name in self.types.keys() {
            self.check_acyclic(name, &mut Vec::new())?;
        }
        Ok(())
    }

    /// No chain of single or fixed-array fields leads from `name` back to a type on `path` (a sequence
    /// may hold its own type: it can be empty).
    fn check_acyclic(&self, name: &str, path: &mut Vec<(String, String)>) -> Result<()> {
        for f in &self.types[name].fields {
            let FieldType::Message(m) = &f.ty else { continue };
            if matches!(f.array, ArrayKind::Sequence { .. }) {
                continue;
            }
            path.push((name.to_string(), f.name.clone()));
            if path.iter().any(|(t, _)| t == m) {
                let chain: Vec<String> = path.iter().map(|(t, f)| format!("{t}.{f}")).collect();
                return Err(CdrError::Recursive {
                    type_name: m.clone(),
                    path: chain.join(" -> "),
                });
            }
            self.check_acyclic(m, path)?;
            path.pop();
        }
        Ok(())
    }
}

/// Adds the type of one section of a schema text (the first one defines it if a type appears twice); a
/// service event's section is its `.srv` text.
fn add_section(types: &mut BTreeMap<String, MessageType>, name: &str, lines: &[(usize, &str)]) -> Result<()> {
    let parsed = if name.contains("/srv/") && name.ends_with("_Event") {
        service_event(name, lines)?
    } else {
        vec![parse_type(name, lines)?]
    };
    for t in parsed {
        types.entry(t.name.clone()).or_insert(t);
    }
    Ok(())
}

/// The fields of type `name` from the lines of its `.msg` text.
fn parse_type(name: &str, lines: &[(usize, &str)]) -> Result<MessageType> {
    let package = name.split('/').next().unwrap_or_default();
    let mut fields = Vec::new();
    for &(line_no, raw) in lines {
        let bad = |reason: &str| CdrError::Definition {
            type_name: name.into(),
            line: line_no,
            text: raw.into(),
            reason: reason.into(),
        };
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (ty, rest) = line
            .split_once(char::is_whitespace)
            .ok_or_else(|| bad("expected `<type> <name>`"))?;
        let rest = rest.trim_start();
        let name_end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let (field_name, after) = rest.split_at(name_end);
        if field_name.is_empty() {
            return Err(bad("expected a field name after the type"));
        }
        if after.trim_start().starts_with('=') {
            continue; // a constant: not on the wire
        }
        let (base, array) = split_array(ty).ok_or_else(|| bad("bad array suffix"))?;
        // `string<=N` / `wstring<=N`: the bound does not change the wire format.
        let base = base.split_once("<=").map_or(base, |(b, _)| b);
        let ty = match Primitive::parse(base) {
            Some(p) => FieldType::Primitive(p),
            None => match base {
                "time" => FieldType::Message("builtin_interfaces/msg/Time".into()),
                "duration" => FieldType::Message("builtin_interfaces/msg/Duration".into()),
                _ => FieldType::Message(full_name(base, package).ok_or_else(|| bad("unknown field type"))?),
            },
        };
        fields.push(Field {
            name: field_name.into(),
            ty,
            array,
        });
    }
    Ok(MessageType {
        name: name.into(),
        fields,
    })
}

/// `T`, `T[]`, `T[N]`, `T[<=N]` -> (T, kind).
fn split_array(ty: &str) -> Option<(&str, ArrayKind)> {
    let Some(open) = ty.find('[') else {
        return Some((ty, ArrayKind::Single));
    };
    let inner = ty[open + 1..].strip_suffix(']')?;
    let kind = if inner.is_empty() {
        ArrayKind::Sequence { max: None }
    } else if let Some(n) = inner.strip_prefix("<=") {
        ArrayKind::Sequence {
            max: Some(n.trim().parse().ok()?),
        }
    } else {
        ArrayKind::Fixed(inner.trim().parse().ok()?)
    };
    Some((&ty[..open], kind))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const TWIST: &str = "Vector3  linear\nVector3  angular\n\n================================================================================\nMSG: geometry_msgs/Vector3\n# doc\nfloat64 x\nfloat64 y\nfloat64 z\n";

    #[test]
    fn parses_nested_types_and_array_kinds() {
        let s = Schema::parse("geometry_msgs/msg/Twist", TWIST).unwrap();
        assert_eq!(s.root().fields.len(), 2);
        assert_eq!(
            s.root().fields[0].ty,
            FieldType::Message("geometry_msgs/msg/Vector3".into())
        );
        assert_eq!(s.get("geometry_msgs/msg/Vector3").unwrap().fields.len(), 3);
        let t = Schema::parse(
            "p/msg/A",
            "int32 X=3\nstring S=\"a # b\"\nstring<=5 s\nfloat64[3] f # c\nuint8[<=4] b\nHeader[] h\n====\nMSG: std_msgs/Header\nint32 a\n",
        )
        .unwrap();
        let kinds: Vec<_> = t
            .root()
            .fields
            .iter()
            .map(|f| (f.name.as_str(), f.array))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("s", ArrayKind::Single),
                ("f", ArrayKind::Fixed(3)),
                ("b", ArrayKind::Sequence { max: Some(4) }),
                ("h", ArrayKind::Sequence { max: None })
            ]
        );
    }

    #[test]
    fn errors_name_the_type_and_line() {
        let e = Schema::parse("p/msg/A", "int32 a\nfloat64[x] b\n").unwrap_err();
        assert!(e.to_string().contains("`p/msg/A`, line 2"), "{e}");
        let e = Schema::parse("p/msg/A", "Missing m\n").unwrap_err();
        assert!(e.to_string().contains("p/msg/Missing"), "{e}");
        let e = Schema::parse("p/msg/A", "B b\n===\nMSG: p/B\nA a\n").unwrap_err();
        assert!(matches!(e, CdrError::Recursive { .. }), "{e}");
        // A sequence of itself is fine (it can be empty).
        Schema::parse("p/msg/A", "A[] children\n").unwrap();
    }

    #[test]
    fn service_events_are_built_from_the_srv_text() {
        let s = Schema::parse("p/srv/Add_Event", "int64 a\nint64 b\n---\nint64 sum\n").unwrap();
        let names: Vec<&str> = s.root().fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, vec!["info", "request", "response"]);
        assert_eq!(s.get("p/srv/Add_Response").unwrap().fields[0].name, "sum");
        assert!(s.get("builtin_interfaces/msg/Time").is_some());
    }
}
