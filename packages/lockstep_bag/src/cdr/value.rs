//! A decoded message, printed as `ros2 topic echo` prints it.

use std::fmt::Write;

/// One decoded value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `bool`.
    Bool(bool),
    /// Signed integers.
    Int(i64),
    /// Unsigned integers (`byte`, `char` and `uint*`).
    UInt(u64),
    /// `float32` (widened, as rclpy shows it) and `float64`.
    Float(f64),
    /// `string` and `wstring`.
    String(String),
    /// Arrays and sequences.
    Array(Vec<Value>),
    /// A message: its fields in order.
    Message(Vec<(String, Value)>),
}

/// A leaf of a decoded message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Leaf<'a> {
    /// A number or bool, as f64.
    Number(f64),
    /// A string.
    Text(&'a str),
}

impl Value {
    /// The field `name` of a message value.
    pub fn field(&self, name: &str) -> Option<&Value> {
        match self {
            Value::Message(fields) => fields.iter().find(|(n, _)| n == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Every number and bool with its path (`pose.position.x`, `ranges[3]`), in field order, as f64.
    pub fn numeric_leaves(&self) -> Vec<(String, f64)> {
        self.leaves()
            .into_iter()
            .filter_map(|(path, leaf)| match leaf {
                Leaf::Number(x) => Some((path, x)),
                Leaf::Text(_) => None,
            })
            .collect()
    }

    /// Every leaf with its path, in field order: numbers and bools as f64, strings as text.
    pub fn leaves(&self) -> Vec<(String, Leaf<'_>)> {
        let mut out = Vec::new();
        self.collect_leaves(String::new(), &mut out);
        out
    }

    fn collect_leaves<'a>(&'a self, path: String, out: &mut Vec<(String, Leaf<'a>)>) {
        match self {
            Value::Bool(b) => out.push((path, Leaf::Number(f64::from(u8::from(*b))))),
            Value::Int(i) => out.push((path, Leaf::Number(*i as f64))),
            Value::UInt(u) => out.push((path, Leaf::Number(*u as f64))),
            Value::Float(f) => out.push((path, Leaf::Number(*f))),
            Value::String(s) => out.push((path, Leaf::Text(s))),
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    v.collect_leaves(format!("{path}[{i}]"), out);
                }
            }
            Value::Message(fields) => {
                for (name, v) in fields {
                    let p = if path.is_empty() {
                        name.clone()
                    } else {
                        format!("{path}.{name}")
                    };
                    v.collect_leaves(p, out);
                }
            }
        }
    }

    /// Block-style YAML, as `ros2 topic echo` prints a message (without the `---` that follows it).
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        match self {
            Value::Message(fields) if !fields.is_empty() => write_fields(fields, 0, &mut out),
            other => {
                out.push_str(&scalar_or_flow(other));
                out.push('\n');
            }
        }
        out
    }
}

fn write_fields(fields: &[(String, Value)], indent: usize, out: &mut String) {
    for (i, (name, value)) in fields.iter().enumerate() {
        // The first field follows what the caller wrote (`- ` of a list item, or its indentation).
        if i > 0 {
            out.push_str(&" ".repeat(indent));
        }
        out.push_str(name);
        out.push(':');
        write_value(value, indent, out);
    }
}

/// Writes what follows `key:` (a space and a scalar, or a newline and a nested block).
fn write_value(value: &Value, indent: usize, out: &mut String) {
    match value {
        Value::Message(fields) if !fields.is_empty() => {
            out.push('\n');
            out.push_str(&" ".repeat(indent + 2));
            write_fields(fields, indent + 2, out);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            write_items(items, indent, out);
        }
        other => {
            out.push(' ');
            out.push_str(&scalar_or_flow(other));
            out.push('\n');
        }
    }
}

/// List items at `indent` (PyYAML's default: a list under a key is not indented further).
fn write_items(items: &[Value], indent: usize, out: &mut String) {
    for item in items {
        out.push_str(&" ".repeat(indent));
        out.push_str("- ");
        match item {
            Value::Message(fields) if !fields.is_empty() => write_fields(fields, indent + 2, out),
            Value::Array(inner) if !inner.is_empty() => {
                out.push('\n');
                write_items(inner, indent + 2, out);
            }
            other => {
                out.push_str(&scalar_or_flow(other));
                out.push('\n');
            }
        }
    }
}

/// A scalar, or `[]` / `{}` for an empty array or message.
fn scalar_or_flow(value: &Value) -> String {
    match value {
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) => float(*f),
        Value::String(s) => string(s),
        Value::Array(_) => "[]".into(),
        Value::Message(_) => "{}".into(),
    }
}

/// A float as YAML 1.1 (PyYAML) reads it back: the shortest text that round-trips, with a `.` in the
/// mantissa and a sign on the exponent (`1.0e-5`, `3.4028234663852886e+38`); `.inf`, `-.inf`, `.nan`.
fn float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let s = format!("{f:?}");
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let dot = if mantissa.contains('.') { "" } else { ".0" };
            let sign = if exp.starts_with('-') { "" } else { "+" };
            format!("{mantissa}{dot}e{sign}{exp}")
        }
        None => s,
    }
}

/// A string plain when YAML would read it back as the same string, else quoted.
fn string(s: &str) -> String {
    if s.chars().any(|c| c.is_control()) {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c => out.push(c),
            }
        }
        out.push('"');
        return out;
    }
    if needs_quotes(s) {
        format!("'{}'", s.replace('\'', "''"))
    } else {
        s.to_string()
    }
}

fn needs_quotes(s: &str) -> bool {
    const RESERVED: &[&str] = &[
        "", "~", "null", "true", "false", "yes", "no", "on", "off", "y", "n", ".inf", "-.inf", ".nan",
    ];
    let lower = s.to_ascii_lowercase();
    RESERVED.contains(&lower.as_str())
        || s.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@`= ".contains(c))
        || s.ends_with([' ', ':'])
        || s.contains(": ")
        || s.contains(" #")
        || looks_numeric(s)
}

/// Whether YAML 1.1 could read `s` as a number (then it must be quoted to stay a string).
fn looks_numeric(s: &str) -> bool {
    let t = s.trim_start_matches(['+', '-']);
    !t.is_empty()
        && t.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && t.chars()
            .all(|c| c.is_ascii_hexdigit() || "._:xXoOeE+-".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_like_ros2_topic_echo() {
        let v = Value::Message(vec![
            (
                "header".into(),
                Value::Message(vec![
                    (
                        "stamp".into(),
                        Value::Message(vec![
                            ("sec".into(), Value::Int(1)),
                            ("nanosec".into(), Value::UInt(2)),
                        ]),
                    ),
                    ("frame_id".into(), Value::String(String::new())),
                ]),
            ),
            (
                "name".into(),
                Value::Array(vec![Value::String("a b".into()), Value::String("1".into())]),
            ),
            ("position".into(), Value::Array(vec![])),
            ("v".into(), Value::Float(1e-5)),
            ("w".into(), Value::Float(f64::from(f32::MAX))),
            (
                "points".into(),
                Value::Array(vec![Value::Message(vec![
                    ("x".into(), Value::Float(1.0)),
                    ("y".into(), Value::Bool(true)),
                ])]),
            ),
        ]);
        assert_eq!(
            v.to_yaml(),
            "header:\n  stamp:\n    sec: 1\n    nanosec: 2\n  frame_id: ''\nname:\n- a b\n- '1'\nposition: []\nv: 1.0e-5\nw: 3.4028234663852886e+38\npoints:\n- x: 1.0\n  y: true\n"
        );
        let leaves: Vec<String> = v.numeric_leaves().into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            leaves,
            vec![
                "header.stamp.sec",
                "header.stamp.nanosec",
                "v",
                "w",
                "points[0].x",
                "points[0].y"
            ]
        );
    }
}
