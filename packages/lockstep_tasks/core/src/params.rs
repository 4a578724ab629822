//! Subtask parameters: values templated from the parent's (`"{from}"`, `"{from}-{to}"`) and merged with what
//! the subtask inherits by each parameter's compatibility rule (`min`: speed = min(task 1.0, map 0.8) = 0.8).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::config::Merge;

/// Parameter values by name (sorted: deterministic output).
pub type Params = BTreeMap<String, Value>;

/// What is wrong with a parameter.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamError {
    #[error("`{{{name}}}` is not a parameter of the parent (it has: {available})")]
    Unknown { name: String, available: String },
    #[error("parameter `{name}`: {reason}")]
    Merge { name: String, reason: String },
    #[error("`{name}` is not a task type (the configuration has: {available})")]
    NotATaskType { name: String, available: String },
    #[error("parameter `{name}` is missing ({template} requires {required})")]
    Missing {
        name: String,
        template: String,
        required: String,
    },
}

/// `value` with every `{name}` replaced by the parent's parameter: a string that is exactly `{name}` takes
/// the parameter's value (number, list...); inside a longer string it is written out. Lists and maps are
/// templated item by item.
pub fn substitute(value: &Value, parent: &Params) -> Result<Value, ParamError> {
    Ok(match value {
        Value::String(text) => substitute_text(text, parent)?,
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| substitute(v, parent))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), substitute(v, parent)?)))
                .collect::<Result<_, ParamError>>()?,
        ),
        other => other.clone(),
    })
}

fn lookup<'a>(name: &str, parent: &'a Params) -> Result<&'a Value, ParamError> {
    parent.get(name).ok_or_else(|| ParamError::Unknown {
        name: name.to_owned(),
        available: parent.keys().cloned().collect::<Vec<_>>().join(", "),
    })
}

fn substitute_text(text: &str, parent: &Params) -> Result<Value, ParamError> {
    let whole = text
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .filter(|name| is_name(name));
    if let Some(name) = whole {
        return Ok(lookup(name, parent)?.clone());
    }
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        let name = &rest[open + 1..close];
        if !is_name(name) {
            out.push_str(&rest[..=open]);
            rest = &rest[open + 1..];
            continue;
        }
        out.push_str(&rest[..open]);
        match lookup(name, parent)? {
            Value::String(s) => out.push_str(s),
            other => out.push_str(&other.to_string()),
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Ok(Value::String(out))
}

fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The value of parameter `name` where the inherited `parent` value meets the subtask's own `child` value.
pub fn merge(name: &str, rule: Merge, parent: &Value, child: &Value) -> Result<Value, ParamError> {
    let error = |reason: String| ParamError::Merge {
        name: name.to_owned(),
        reason,
    };
    match rule {
        Merge::Parent => Ok(parent.clone()),
        Merge::Child => Ok(child.clone()),
        Merge::Min | Merge::Max => {
            let (Some(p), Some(c)) = (parent.as_f64(), child.as_f64()) else {
                return Err(error(format!(
                    "`{}` needs two numbers, got {parent} (inherited) and {child}",
                    if rule == Merge::Min { "min" } else { "max" }
                )));
            };
            let pick = if rule == Merge::Min { p <= c } else { p >= c };
            Ok(if pick { parent.clone() } else { child.clone() })
        }
        Merge::Intersect => {
            let (Some((a, b)), Some((c, d))) = (range(parent), range(child)) else {
                return Err(error(format!(
                    "`intersect` needs two [lo, hi] ranges, got {parent} (inherited) and {child}"
                )));
            };
            let (lo, hi) = (a.max(c), b.min(d));
            if lo > hi {
                return Err(error(format!(
                    "the ranges [{a}, {b}] (inherited) and [{c}, {d}] do not intersect"
                )));
            }
            Ok(serde_json::json!([lo, hi]))
        }
    }
}

fn range(v: &Value) -> Option<(f64, f64)> {
    match v.as_array()?.as_slice() {
        [lo, hi] => Some((lo.as_f64()?, hi.as_f64()?)).filter(|(lo, hi)| lo <= hi),
        _ => None,
    }
}

/// A subtask's parameters: everything it inherits from `parent`, met by its `own` values (already
/// templated) through each parameter's rule (`rule_of`). Errors name the parameter.
pub fn derive(parent: &Params, own: &Params, rule_of: impl Fn(&str) -> Merge) -> Result<Params, ParamError> {
    let mut out = parent.clone();
    for (name, value) in own {
        let merged = match parent.get(name) {
            Some(inherited) => merge(name, rule_of(name), inherited, value)?,
            None => value.clone(),
        };
        out.insert(name.clone(), merged);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Params {
        serde_json::from_value(v).unwrap_or_default()
    }

    #[test]
    fn templating_keeps_types_and_writes_out_inside_text() {
        let parent = params(json!({"from": "A", "to": "B", "speed": 1.0, "route": [[0, 0], [5, 0]]}));
        assert_eq!(substitute(&json!("{speed}"), &parent), Ok(json!(1.0)));
        assert_eq!(
            substitute(&json!("{from}-{to} at {speed}"), &parent),
            Ok(json!("A-B at 1.0"))
        );
        assert_eq!(
            substitute(&json!({"r": "{route}", "n": 2}), &parent),
            Ok(json!({"r": [[0, 0], [5, 0]], "n": 2}))
        );
        assert_eq!(
            substitute(&json!("{ not a name }"), &parent),
            Ok(json!("{ not a name }"))
        );
        let e = substitute(&json!("{dest}"), &parent).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`{dest}` is not a parameter of the parent (it has: from, route, speed, to)"
        );
    }

    #[test]
    fn each_rule() {
        let m = |rule, p, c| merge("speed", rule, &p, &c);
        assert_eq!(m(Merge::Min, json!(1.0), json!(0.8)), Ok(json!(0.8)));
        assert_eq!(m(Merge::Max, json!(1.0), json!(0.8)), Ok(json!(1.0)));
        assert_eq!(m(Merge::Parent, json!(1.0), json!(0.8)), Ok(json!(1.0)));
        assert_eq!(m(Merge::Child, json!(1.0), json!(0.8)), Ok(json!(0.8)));
        assert_eq!(
            m(Merge::Intersect, json!([0.0, 1.0]), json!([0.5, 2.0])),
            Ok(json!([0.5, 1.0]))
        );
        let empty = m(Merge::Intersect, json!([0.0, 1.0]), json!([1.5, 2.0])).unwrap_err();
        assert_eq!(
            empty.to_string(),
            "parameter `speed`: the ranges [0, 1] (inherited) and [1.5, 2] do not intersect"
        );
        assert!(m(Merge::Min, json!("fast"), json!(0.8))
            .unwrap_err()
            .to_string()
            .contains("needs two numbers"));
    }

    #[test]
    fn derive_inherits_and_merges() {
        let parent = params(json!({"speed": 1.0, "to": "B"}));
        let own = params(json!({"speed": 0.8, "to": "O", "map": "A-B"}));
        let rule = |n: &str| if n == "speed" { Merge::Min } else { Merge::Child };
        let got = derive(&parent, &own, rule).unwrap();
        assert_eq!(got, params(json!({"speed": 0.8, "to": "O", "map": "A-B"})));
    }
}
