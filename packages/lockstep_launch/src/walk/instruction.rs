//! `<?lockstep wait-for process="NAME" output="REGEX" [timeout="SECONDS"] [if=...] [unless=...]?>`: the
//! processes declared after it in its scope (the rest of its `<group>` or file, and the files included
//! there) start only once the earlier process labelled NAME printed a line matching REGEX.
//!
//! An XML processing instruction, not an attribute or a tag: `ros2 launch` refuses attributes and tags it
//! does not know, but its XML parser drops processing instructions, so a launch file with one still runs
//! under `ros2 launch` (starting every process at once, as it always did). Its content is raw text: values
//! are quoted with `"` or `'`, take substitutions, and no XML entities are decoded in them.

use roxmltree::Node;

use super::source::Source;
use super::walker::{applies, at, Scope, Walker};
use crate::error::{LaunchError, Location, Result};
use crate::limits::MAX_WAIT_SECS;
use crate::plan::Wait;

/// The target of the processing instructions `lockstep launch` reads; others are left to their readers.
pub(super) const TARGET: &str = "lockstep";

/// The one instruction there is.
const WAIT_FOR: &str = "wait-for";

/// How long a wait lasts when the instruction gives no `timeout`.
pub const DEFAULT_WAIT_SECS: f64 = 60.0;

const KNOWN: [&str; 5] = ["process", "output", "timeout", "if", "unless"];

impl Walker<'_> {
    /// A processing instruction between elements: a `<?lockstep wait-for?>` adds its wait to `scope`; one
    /// for another application is skipped, as XML intends.
    pub(super) fn instruction(
        &mut self,
        src: &Source<'_>,
        node: Node<'_, '_>,
        scope: &mut Scope,
    ) -> Result<()> {
        let Some(pi) = node.pi().filter(|pi| pi.target == TARGET) else {
            return Ok(());
        };
        let here = at(src, node);
        let invalid = |message: String| LaunchError::invalid(&here, format!("<?{TARGET}?>: {message}"));
        let (directive, raw) = pseudo_attributes(pi.value.unwrap_or_default()).map_err(invalid)?;
        if directive != WAIT_FOR {
            return Err(invalid(format!(
                "unknown instruction `{directive}` (known: {WAIT_FOR})"
            )));
        }
        let mut values = Vec::with_capacity(raw.len());
        for (name, value) in raw {
            if !KNOWN.contains(&name.as_str()) {
                return Err(invalid(format!(
                    "{WAIT_FOR} has no attribute `{name}` (known: {})",
                    KNOWN.join(", ")
                )));
            }
            if values.iter().any(|(n, _): &(String, String)| *n == name) {
                return Err(invalid(format!("{WAIT_FOR}: `{name}` given twice")));
            }
            let value = self.expand_text(src, node, scope, &value, node.range().start)?;
            values.push((name, value));
        }
        let get = |name: &str| values.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        for name in ["if", "unless"] {
            if let Some(value) = get(name) {
                if !applies(&here, name, value)? {
                    return Ok(());
                }
            }
        }
        let required = |name: &str| get(name).ok_or_else(|| invalid(format!("{WAIT_FOR} needs `{name}`")));
        let wait = self.wait(&here, required("process")?, required("output")?, get("timeout"))?;
        scope.waits.push(wait);
        Ok(())
    }

    /// The wait of a `wait-for`: the process must be one declared before it (so that waiting cannot go in a
    /// circle), the pattern a regular expression, the timeout seconds in `(0, MAX_WAIT_SECS]`.
    fn wait(&self, here: &Location, process: &str, output: &str, timeout: Option<&str>) -> Result<Wait> {
        let invalid =
            |message: String| LaunchError::invalid(here, format!("<?{TARGET} {WAIT_FOR}?>: {message}"));
        if !self.plan.processes.iter().any(|p| p.label == process) {
            let labels: Vec<&str> = self.plan.processes.iter().map(|p| p.label.as_str()).collect();
            return Err(invalid(format!(
                "no process `{process}` is declared before it (declared so far: {})",
                if labels.is_empty() {
                    "none".to_string()
                } else {
                    labels.join(", ")
                }
            )));
        }
        regex::Regex::new(output).map_err(|e| invalid(format!("output=\"{output}\": {e}")))?;
        let secs = match timeout {
            None => DEFAULT_WAIT_SECS,
            Some(text) => text
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s > 0.0 && *s <= MAX_WAIT_SECS)
                .ok_or_else(|| {
                    invalid(format!(
                        "timeout=\"{text}\": expected seconds in (0, {MAX_WAIT_SECS}]"
                    ))
                })?,
        };
        Ok(Wait {
            process: process.to_string(),
            output: output.to_string(),
            timeout: std::time::Duration::from_secs_f64(secs),
            at: here.clone(),
        })
    }
}

/// A `<?lockstep?>` inside an element that cannot hold one (anything but `<launch>` and `<group>`) is an
/// error, not a wait that silently applies to nothing.
pub(super) fn refuse_inside(src: &Source<'_>, node: Node<'_, '_>) -> Result<()> {
    match node
        .children()
        .find(|c| c.pi().is_some_and(|pi| pi.target == TARGET))
    {
        Some(child) => Err(LaunchError::invalid(
            &at(src, child),
            format!(
                "<?{TARGET}?> inside <{}>: it goes between the elements of <launch> or <group>",
                node.tag_name().name()
            ),
        )),
        None => Ok(()),
    }
}

/// The instruction's first word and its `name="value"` (or `name='value'`) pairs, in order.
pub fn pseudo_attributes(text: &str) -> std::result::Result<(String, Vec<(String, String)>), String> {
    let mut rest = text.trim_start();
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (directive, after) = rest.split_at(end);
    if directive.is_empty() {
        return Err(format!("empty: expected `{WAIT_FOR} name=\"value\" ...`"));
    }
    rest = after.trim_start();
    let mut pairs = Vec::new();
    while !rest.is_empty() {
        let Some((name, after)) = rest.split_once('=') else {
            return Err(format!("`{rest}`: expected name=\"value\""));
        };
        let name = name.trim_end();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(format!("`{name}`: not an attribute name"));
        }
        let after = after.trim_start();
        let Some(quote) = after.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            return Err(format!("{name}=: the value must be quoted"));
        };
        let Some(close) = after[1..].find(quote) else {
            return Err(format!("{name}=: the value's closing {quote} is missing"));
        };
        pairs.push((name.to_string(), after[1..1 + close].to_string()));
        let next = &after[2 + close..];
        if !next.is_empty() && !next.starts_with(char::is_whitespace) {
            return Err(format!("{name}=: expected a space after the value"));
        }
        rest = next.trim_start();
    }
    Ok((directive.to_string(), pairs))
}

#[cfg(test)]
mod tests {
    use super::pseudo_attributes;

    #[test]
    fn pseudo_attributes_are_read_like_xml_attributes() {
        let (directive, pairs) =
            pseudo_attributes("  wait-for process=\"rec\"  output='ready: .*' timeout = \"5\" ").unwrap();
        assert_eq!(directive, "wait-for");
        let want = [("process", "rec"), ("output", "ready: .*"), ("timeout", "5")];
        assert_eq!(pairs, want.map(|(n, v)| (n.to_string(), v.to_string())));
        assert_eq!(pseudo_attributes("wait-for").unwrap().1, []);
        assert_eq!(
            pseudo_attributes("w a='\"'").unwrap().1,
            [("a".to_string(), "\"".to_string())]
        );
        for bad in [
            "",
            "w a",
            "w a=b",
            "w a=\"b",
            "w =\"b\"",
            "w a=\"b\"c=\"d\"",
            "w a b=\"c\"",
        ] {
            assert!(pseudo_attributes(bad).is_err(), "{bad:?}");
        }
    }
}
