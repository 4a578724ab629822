//! ROS parameter values (`rcl_interfaces/msg/ParameterValue`, here [`ParamValue`] with the same fields) as
//! the Foxglove protocol carries them, and back. Doubles go out with `type: float64` (so `2.0` stays a
//! double in the app), double arrays with `float64_array`, byte arrays as base64 with `byte_array`. Coming
//! in, a number takes the type the parameter has now (an integer parameter refuses `1.5`; a double
//! parameter takes `3`), and a parameter the node does not have yet takes the type the JSON value shows.

use data_encoding::BASE64;
use serde_json::{Number, Value};

/// A ROS parameter value: the fields of `rcl_interfaces/msg/ParameterValue`, without ROS (the node copies
/// them to and from the message).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParamValue {
    /// One of [`kind`].
    pub type_: u8,
    pub bool_value: bool,
    pub integer_value: i64,
    pub double_value: f64,
    pub string_value: String,
    pub byte_array_value: Vec<u8>,
    pub bool_array_value: Vec<bool>,
    pub integer_array_value: Vec<i64>,
    pub double_array_value: Vec<f64>,
    pub string_array_value: Vec<String>,
}

/// `rcl_interfaces/msg/ParameterType` constants.
pub mod kind {
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

/// `/robot/node.param.sub` -> (`/robot/node`, `param.sub`): ROS names have no dots, parameter names may.
pub fn split_name(name: &str) -> Option<(&str, &str)> {
    let (node, param) = name.split_once('.')?;
    (node.starts_with('/') && node.len() > 1 && !param.is_empty()).then_some((node, param))
}

fn double(x: f64) -> Value {
    Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// The protocol's value and `type` of a ROS value; `None` for a parameter that is not set.
pub fn to_json(v: &ParamValue) -> Option<(Value, Option<&'static str>)> {
    Some(match v.type_ {
        kind::BOOL => (Value::Bool(v.bool_value), None),
        kind::INTEGER => (Value::from(v.integer_value), None),
        kind::DOUBLE => (double(v.double_value), Some("float64")),
        kind::STRING => (Value::String(v.string_value.clone()), None),
        kind::BYTE_ARRAY => (
            Value::String(BASE64.encode(&v.byte_array_value)),
            Some("byte_array"),
        ),
        kind::BOOL_ARRAY => (Value::from(v.bool_array_value.clone()), None),
        kind::INTEGER_ARRAY => (Value::from(v.integer_array_value.clone()), None),
        kind::DOUBLE_ARRAY => (
            Value::Array(v.double_array_value.iter().map(|x| double(*x)).collect()),
            Some("float64_array"),
        ),
        kind::STRING_ARRAY => (Value::from(v.string_array_value.clone()), None),
        _ => return None,
    })
}

/// The ROS value for a protocol value with optional `type_name`, given the type the parameter has now
/// (`kind::NOT_SET` if the node does not have it). The error says what does not fit.
pub fn from_json(value: &Value, type_name: Option<&str>, current: u8) -> Result<ParamValue, String> {
    let mut out = ParamValue::default();
    let wants_double = type_name == Some("float64") || current == kind::DOUBLE;
    match value {
        Value::Bool(b) => {
            out.type_ = kind::BOOL;
            out.bool_value = *b;
        }
        Value::Number(n) => {
            if wants_double || (current != kind::INTEGER && n.as_i64().is_none()) {
                out.type_ = kind::DOUBLE;
                out.double_value = n.as_f64().ok_or("not a finite number")?;
            } else {
                out.type_ = kind::INTEGER;
                out.integer_value = n
                    .as_i64()
                    .ok_or_else(|| format!("{n} is not an integer (the parameter is an integer)"))?;
            }
        }
        Value::String(text) if type_name == Some("byte_array") || current == kind::BYTE_ARRAY => {
            out.type_ = kind::BYTE_ARRAY;
            out.byte_array_value = BASE64
                .decode(text.as_bytes())
                .map_err(|e| format!("a byte array is base64: {e}"))?;
        }
        Value::String(text) => {
            out.type_ = kind::STRING;
            out.string_value = text.clone();
        }
        Value::Array(items) => array(items, type_name, current, &mut out)?,
        Value::Null => return Err("null (undeclaring a parameter) is not supported".into()),
        Value::Object(_) => return Err("an object is not a parameter value".into()),
    }
    Ok(out)
}

fn array(items: &[Value], type_name: Option<&str>, current: u8, out: &mut ParamValue) -> Result<(), String> {
    let all = |f: fn(&Value) -> bool| items.iter().all(f);
    let element = match () {
        _ if type_name == Some("float64_array") || current == kind::DOUBLE_ARRAY => kind::DOUBLE_ARRAY,
        _ if items.is_empty() && current >= kind::BOOL_ARRAY => current,
        _ if items.is_empty() => return Err("cannot tell the type of an empty array".into()),
        _ if all(Value::is_boolean) => kind::BOOL_ARRAY,
        _ if all(Value::is_string) => kind::STRING_ARRAY,
        _ if all(Value::is_i64) && current != kind::DOUBLE_ARRAY => kind::INTEGER_ARRAY,
        _ if all(Value::is_number) => kind::DOUBLE_ARRAY,
        _ => return Err("an array's items must all be booleans, numbers or strings".into()),
    };
    out.type_ = element;
    match element {
        kind::BOOL_ARRAY => out.bool_array_value = items.iter().filter_map(Value::as_bool).collect(),
        kind::STRING_ARRAY => {
            out.string_array_value = items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
        }
        kind::INTEGER_ARRAY => out.integer_array_value = items.iter().filter_map(Value::as_i64).collect(),
        _ => {
            out.double_array_value = (items.iter())
                .map(|v| v.as_f64().ok_or_else(|| format!("{v} is not a number")))
                .collect::<Result<_, _>>()?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn round_trip(v: &Value, type_name: Option<&str>, current: u8) -> (Value, Option<&'static str>) {
        to_json(&from_json(v, type_name, current).unwrap()).unwrap()
    }

    #[test]
    fn names_split_at_the_first_dot() {
        assert_eq!(split_name("/sim.time_scale"), Some(("/sim", "time_scale")));
        assert_eq!(split_name("/a/b.qos.depth"), Some(("/a/b", "qos.depth")));
        assert_eq!(split_name("time_scale"), None);
        assert_eq!(split_name("/sim."), None);
        assert_eq!(split_name(".x"), None);
    }

    #[test]
    fn numbers_take_the_type_the_parameter_has() {
        assert_eq!(
            round_trip(&json!(3), None, kind::DOUBLE),
            (json!(3.0), Some("float64"))
        );
        assert_eq!(round_trip(&json!(3), None, kind::INTEGER), (json!(3), None));
        assert_eq!(round_trip(&json!(3), None, kind::NOT_SET), (json!(3), None));
        assert_eq!(
            round_trip(&json!(3), Some("float64"), kind::NOT_SET),
            (json!(3.0), Some("float64"))
        );
        assert_eq!(
            round_trip(&json!(1.5), None, kind::NOT_SET),
            (json!(1.5), Some("float64"))
        );
        let e = from_json(&json!(1.5), None, kind::INTEGER).unwrap_err();
        assert!(e.contains("not an integer"), "{e}");
    }

    #[test]
    fn every_other_type_goes_both_ways() {
        assert_eq!(round_trip(&json!(true), None, 0), (json!(true), None));
        assert_eq!(round_trip(&json!("x"), None, 0), (json!("x"), None));
        assert_eq!(
            round_trip(&json!("AAH/"), Some("byte_array"), 0),
            (json!("AAH/"), Some("byte_array"))
        );
        assert_eq!(
            round_trip(&json!([true, false]), None, 0),
            (json!([true, false]), None)
        );
        assert_eq!(round_trip(&json!([1, 2]), None, 0), (json!([1, 2]), None));
        assert_eq!(
            round_trip(&json!([1, 2.5]), None, 0),
            (json!([1.0, 2.5]), Some("float64_array"))
        );
        assert_eq!(
            round_trip(&json!([1, 2]), None, kind::DOUBLE_ARRAY),
            (json!([1.0, 2.0]), Some("float64_array"))
        );
        assert_eq!(round_trip(&json!(["a"]), None, 0), (json!(["a"]), None));
        assert_eq!(
            round_trip(&json!([]), None, kind::STRING_ARRAY),
            (json!([]), None)
        );
        assert!(to_json(&ParamValue::default()).is_none());
    }

    #[test]
    fn what_does_not_fit_says_why() {
        for (v, words) in [
            (json!(null), "not supported"),
            (json!({"a": 1}), "object"),
            (json!([]), "empty array"),
            (json!([1, "a"]), "must all be"),
        ] {
            let e = from_json(&v, None, kind::NOT_SET).unwrap_err();
            assert!(e.contains(words), "{v}: {e}");
        }
        let e = from_json(&json!("not base64!"), Some("byte_array"), 0).unwrap_err();
        assert!(e.contains("base64"), "{e}");
    }
}
