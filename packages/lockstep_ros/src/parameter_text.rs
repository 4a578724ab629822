//! Parameter values as text a person reads: `<type>:<value>`, e.g. `integer:4`, `double:0.5`, `bool:true`,
//! `string:patrol`, `integer_array:[1, 2]`, `double_array:[0.5, 1.0]`, `string_array:["a", "b"]`,
//! `byte_array:[0, 255]`, `bool_array:[true, false]`, `not_set`.
//!
//! The text names the type, so `integer:1` and `double:1.0` differ, and it reads back to the same value
//! ([`parse`]): doubles are written with Rust's shortest round-trip form (`NaN`, `inf` included), strings of
//! arrays as JSON strings. Bags store parameters this way (see the recorder), and `lockstep replay` compares and
//! sets them from it.

use r2r::rcl_interfaces::msg::ParameterValue;

/// The type codes of `rcl_interfaces/msg/ParameterType`.
mod kind {
    pub const NOT_SET: u8 = 0;
    pub const BOOL: u8 = 1;
    pub const INTEGER: u8 = 2;
    pub const DOUBLE: u8 = 3;
    pub const STRING: u8 = 4;
    pub const BYTE_ARRAY: u8 = 5;
    pub const BOOL_ARRAY: u8 = 6;
    pub const INTEGER_ARRAY: u8 = 7;
    pub const DOUBLE_ARRAY: u8 = 8;
    pub const STRING_ARRAY: u8 = 9;
}

/// Why a text is not a parameter value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a typed parameter value (`integer:4`, `double:0.5`, ...): {reason}")]
pub struct ParseError {
    /// The text, cut to 80 characters.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

/// `value` as `<type>:<value>` (see the module docs).
pub fn format(value: &ParameterValue) -> String {
    let list = |items: Vec<String>| format!("[{}]", items.join(", "));
    match value.type_ {
        kind::BOOL => format!("bool:{}", value.bool_value),
        kind::INTEGER => format!("integer:{}", value.integer_value),
        kind::DOUBLE => format!("double:{:?}", value.double_value),
        kind::STRING => format!("string:{}", value.string_value),
        kind::BYTE_ARRAY => {
            let items = value.byte_array_value.iter().map(u8::to_string).collect();
            format!("byte_array:{}", list(items))
        }
        kind::BOOL_ARRAY => {
            let items = value.bool_array_value.iter().map(bool::to_string).collect();
            format!("bool_array:{}", list(items))
        }
        kind::INTEGER_ARRAY => {
            let items = value.integer_array_value.iter().map(i64::to_string).collect();
            format!("integer_array:{}", list(items))
        }
        kind::DOUBLE_ARRAY => {
            let items = value
                .double_array_value
                .iter()
                .map(|d| format!("{d:?}"))
                .collect();
            format!("double_array:{}", list(items))
        }
        kind::STRING_ARRAY => {
            let items = value.string_array_value.iter().map(|s| quote(s)).collect();
            format!("string_array:{}", list(items))
        }
        _ => "not_set".to_owned(),
    }
}

/// The value [`format`] wrote as `text`.
pub fn parse(text: &str) -> Result<ParameterValue, ParseError> {
    let fail = |reason: &str| ParseError {
        text: text.chars().take(80).collect(),
        reason: reason.to_owned(),
    };
    if text == "not_set" {
        return Ok(ParameterValue::default());
    }
    let (type_name, body) = text.split_once(':').ok_or_else(|| fail("no `<type>:`"))?;
    let mut v = ParameterValue::default();
    match type_name {
        "bool" => {
            v.type_ = kind::BOOL;
            v.bool_value = body.parse().map_err(|_| fail("not true or false"))?;
        }
        "integer" => {
            v.type_ = kind::INTEGER;
            v.integer_value = body.parse().map_err(|_| fail("not a 64-bit integer"))?;
        }
        "double" => {
            v.type_ = kind::DOUBLE;
            v.double_value = body.parse().map_err(|_| fail("not a number"))?;
        }
        "string" => {
            v.type_ = kind::STRING;
            v.string_value = body.to_owned();
        }
        "byte_array" => {
            v.type_ = kind::BYTE_ARRAY;
            v.byte_array_value =
                items(body, |s| s.parse().ok()).ok_or_else(|| fail("not a list of bytes"))?;
        }
        "bool_array" => {
            v.type_ = kind::BOOL_ARRAY;
            v.bool_array_value =
                items(body, |s| s.parse().ok()).ok_or_else(|| fail("not a list of bools"))?;
        }
        "integer_array" => {
            v.type_ = kind::INTEGER_ARRAY;
            v.integer_array_value =
                items(body, |s| s.parse().ok()).ok_or_else(|| fail("not a list of integers"))?;
        }
        "double_array" => {
            v.type_ = kind::DOUBLE_ARRAY;
            v.double_array_value =
                items(body, |s| s.parse().ok()).ok_or_else(|| fail("not a list of numbers"))?;
        }
        "string_array" => {
            v.type_ = kind::STRING_ARRAY;
            v.string_array_value = strings(body).ok_or_else(|| fail("not a list of quoted strings"))?;
        }
        _ => return Err(fail("unknown type")),
    }
    Ok(v)
}

/// `r2r`'s parameter value as the `rcl_interfaces` message (r2r keeps its own conversion private).
pub fn to_msg(value: &r2r::ParameterValue) -> ParameterValue {
    use r2r::ParameterValue as P;
    let mut v = ParameterValue::default();
    let code = match value {
        P::NotSet => kind::NOT_SET,
        P::Bool(b) => {
            v.bool_value = *b;
            kind::BOOL
        }
        P::Integer(i) => {
            v.integer_value = *i;
            kind::INTEGER
        }
        P::Double(d) => {
            v.double_value = *d;
            kind::DOUBLE
        }
        P::String(s) => {
            v.string_value = s.clone();
            kind::STRING
        }
        P::BoolArray(a) => {
            v.bool_array_value = a.clone();
            kind::BOOL_ARRAY
        }
        P::ByteArray(a) => {
            v.byte_array_value = a.clone();
            kind::BYTE_ARRAY
        }
        P::IntegerArray(a) => {
            v.integer_array_value = a.clone();
            kind::INTEGER_ARRAY
        }
        P::DoubleArray(a) => {
            v.double_array_value = a.clone();
            kind::DOUBLE_ARRAY
        }
        P::StringArray(a) => {
            v.string_array_value = a.clone();
            kind::STRING_ARRAY
        }
    };
    v.type_ = code;
    v
}

/// How a bag stores module parameters: MCAP metadata records (several of each name may exist, one per batch
/// the recorder stored; a reader merges them in file order).
pub mod records {
    /// `<module>/<parameter>` -> typed value ([`super::format`]): each module's parameters as read through its
    /// parameter services when the recorder first saw the module.
    pub const VALUES: &str = "lockstep_parameters";
    /// `<module>` -> `node=<fully qualified node name>;read_ns=<system time the values were asked for>`, or
    /// `node=<name>;error=<why they could not be read>`.
    pub const NODES: &str = "lockstep_parameter_nodes";
    /// `<received_ns, 20 digits>.<n, 6 digits> <module>/<parameter>` -> typed value, or `deleted`: each change
    /// seen on `/parameter_events` after the values were read, in the order received.
    pub const CHANGES: &str = "lockstep_parameter_changes";
    /// `<module>` -> changes not stored (the recorder's bound on stored parameter text was reached).
    pub const DROPPED: &str = "lockstep_parameter_changes_dropped";
    /// The value text of a deleted parameter in [`CHANGES`].
    pub const DELETED: &str = "deleted";
    /// Value text prefix of a value not stored (too long): `unrecorded:<why>`.
    pub const UNRECORDED: &str = "unrecorded:";

    /// The [`CHANGES`] key of the `n`th change, received at `received_ns`.
    pub fn change_key(received_ns: u64, n: u64, module: &str, parameter: &str) -> String {
        format!("{received_ns:020}.{n:06} {module}/{parameter}")
    }

    /// (received_ns, n, module, parameter) of a [`CHANGES`] key.
    pub fn parse_change_key(key: &str) -> Option<(u64, u64, &str, &str)> {
        let (when, name) = key.split_once(' ')?;
        let (ns, n) = when.split_once('.')?;
        let (module, parameter) = split_name(name)?;
        Some((ns.parse().ok()?, n.parse().ok()?, module, parameter))
    }

    /// `<module>/<parameter>` split at the last `/` (a module name may hold a namespace, a parameter name
    /// holds none).
    pub fn split_name(name: &str) -> Option<(&str, &str)> {
        name.rsplit_once('/')
            .filter(|(m, p)| !m.is_empty() && !p.is_empty())
    }
}

/// A string as a JSON string literal.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `[a, b, c]` split at `, ` and each item converted; `None` when the form or an item is wrong.
fn items<T>(body: &str, convert: impl Fn(&str) -> Option<T>) -> Option<Vec<T>> {
    let inner = body.strip_prefix('[')?.strip_suffix(']')?;
    if inner.trim().is_empty() {
        return Some(Vec::new());
    }
    inner.split(',').map(|s| convert(s.trim())).collect()
}

/// `["a", "b"]` as [`quote`] wrote it.
fn strings(body: &str) -> Option<Vec<String>> {
    let mut chars = body.trim().chars().peekable();
    if chars.next()? != '[' {
        return None;
    }
    let mut out = Vec::new();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next()? {
            ']' if out.is_empty() => break,
            '"' => {}
            _ => return None,
        }
        let mut s = String::new();
        loop {
            match chars.next()? {
                '"' => break,
                '\\' => match chars.next()? {
                    '"' => s.push('"'),
                    '\\' => s.push('\\'),
                    'n' => s.push('\n'),
                    'r' => s.push('\r'),
                    't' => s.push('\t'),
                    'u' => {
                        let hex: String = (0..4).filter_map(|_| chars.next()).collect();
                        s.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                    }
                    _ => return None,
                },
                c => s.push(c),
            }
        }
        out.push(s);
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next()? {
            ',' => continue,
            ']' => break,
            _ => return None,
        }
    }
    chars.next().is_none().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(value: r2r::ParameterValue) -> String {
        let msg = to_msg(&value);
        let text = format(&msg);
        assert_eq!(parse(&text).map(|v| format(&v)), Ok(text.clone()), "{text}");
        text
    }

    #[test]
    fn every_type_reads_back_as_written() {
        use r2r::ParameterValue as P;
        assert_eq!(round_trip(P::Integer(4)), "integer:4");
        assert_eq!(round_trip(P::Double(0.5)), "double:0.5");
        assert_eq!(round_trip(P::Double(1.0)), "double:1.0");
        assert_eq!(round_trip(P::Double(f64::NAN)), "double:NaN");
        assert_eq!(round_trip(P::Bool(true)), "bool:true");
        assert_eq!(round_trip(P::String("a: b".into())), "string:a: b");
        assert_eq!(round_trip(P::NotSet), "not_set");
        assert_eq!(round_trip(P::IntegerArray(vec![1, -2])), "integer_array:[1, -2]");
        assert_eq!(round_trip(P::DoubleArray(vec![])), "double_array:[]");
        assert_eq!(
            round_trip(P::BoolArray(vec![true, false])),
            "bool_array:[true, false]"
        );
        assert_eq!(round_trip(P::ByteArray(vec![0, 255])), "byte_array:[0, 255]");
        assert_eq!(
            round_trip(P::StringArray(vec!["x, \"y\"]".into(), "\n".into()])),
            r#"string_array:["x, \"y\"]", "\n"]"#
        );
        assert_eq!(round_trip(P::StringArray(vec![])), "string_array:[]");
    }

    #[test]
    fn change_keys_read_back_and_sort_by_time() {
        let a = records::change_key(5, 1, "robot1/planner", "hold");
        let b = records::change_key(40, 0, "m", "x.y");
        assert!(a < b);
        assert_eq!(
            records::parse_change_key(&a),
            Some((5, 1, "robot1/planner", "hold"))
        );
        assert_eq!(records::parse_change_key("x y/z"), None);
    }

    #[test]
    fn integer_and_double_texts_differ_and_bad_texts_are_refused() {
        assert_ne!(format(&to_msg(&r2r::ParameterValue::Integer(1))), "double:1.0");
        for bad in [
            "4",
            "integer:x",
            "bool:yes",
            "float:1",
            "integer_array:1",
            "string_array:[a]",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
