//! A tiny block-style YAML emitter.
//!
//! rosbag2 writes `metadata.yaml` with yaml-cpp in block style with a fixed key order; a serde YAML
//! serializer would sort or restyle it (serde_norway is only used to parse). Emitting by hand keeps the file byte-for-byte predictable (deterministic
//! output) and close to what `ros2 bag` writes, which people diff.

/// A YAML node in emission order.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    Map(Vec<(String, Node)>),
    Seq(Vec<Node>),
    Str(String),
    Int(i128),
    Bool(bool),
    Null,
}

impl Node {
    pub(crate) fn map() -> Self {
        Node::Map(Vec::new())
    }

    /// Appends `key: value` to a map node (no-op on other nodes).
    pub(crate) fn with(mut self, key: &str, value: Node) -> Self {
        if let Node::Map(entries) = &mut self {
            entries.push((key.to_string(), value));
        }
        self
    }

    pub(crate) fn str(s: &str) -> Self {
        Node::Str(s.to_string())
    }

    pub(crate) fn uint(v: u64) -> Self {
        Node::Int(i128::from(v))
    }

    fn is_block(&self) -> bool {
        match self {
            Node::Map(m) => !m.is_empty(),
            Node::Seq(s) => !s.is_empty(),
            _ => false,
        }
    }

    fn scalar(&self) -> String {
        match self {
            Node::Map(_) => "{}".to_string(),
            Node::Seq(_) => "[]".to_string(),
            Node::Str(s) => quote(s),
            Node::Int(i) => i.to_string(),
            Node::Bool(b) => b.to_string(),
            Node::Null => "~".to_string(),
        }
    }
}

/// Renders a node as a YAML document (ends with a newline).
pub(crate) fn emit(node: &Node) -> String {
    let mut out = String::new();
    if node.is_block() {
        emit_block(node, 0, &mut out);
    } else {
        out.push_str(&node.scalar());
        out.push('\n');
    }
    out
}

fn emit_block(node: &Node, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match node {
        Node::Map(entries) => {
            for (key, value) in entries {
                out.push_str(&pad);
                out.push_str(&quote(key));
                if value.is_block() {
                    out.push_str(":\n");
                    emit_block(value, indent + 2, out);
                } else {
                    out.push_str(": ");
                    out.push_str(&value.scalar());
                    out.push('\n');
                }
            }
        }
        Node::Seq(items) => {
            for item in items {
                if item.is_block() {
                    // Render the item two columns deeper, then put the dash in place of the first
                    // line's indentation: "  key: v" becomes "- key: v".
                    let mut sub = String::new();
                    emit_block(item, indent + 2, &mut sub);
                    out.push_str(&pad);
                    out.push_str("- ");
                    out.push_str(&sub[indent + 2..]);
                } else {
                    out.push_str(&pad);
                    out.push_str("- ");
                    out.push_str(&item.scalar());
                    out.push('\n');
                }
            }
        }
        other => {
            out.push_str(&pad);
            out.push_str(&other.scalar());
            out.push('\n');
        }
    }
}

/// Quotes a string only when a plain scalar could be misread (as a number, bool, null, or because
/// of YAML indicator characters); quoted strings use JSON-compatible double-quote escapes.
pub(crate) fn quote(s: &str) -> String {
    if is_plain_safe(s) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn is_plain_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if !(first.is_ascii_alphabetic() || first == '/' || first == '_') {
        return false;
    }
    if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '.' | '-'))
    {
        return false;
    }
    // YAML 1.1 readers (PyYAML, ruamel safe) treat these words as booleans or null.
    let lower = s.to_ascii_lowercase();
    !matches!(
        lower.as_str(),
        "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n" | "null" | "nan" | "inf"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emits_nested_block_style() {
        let doc = Node::map()
            .with("a", Node::uint(1))
            .with(
                "list",
                Node::Seq(vec![Node::map()
                    .with("x", Node::str("/t"))
                    .with("z", Node::Bool(true))]),
            )
            .with("empty", Node::Seq(vec![]))
            .with("s", Node::str(""))
            .with("m", Node::Null);
        assert_eq!(
            emit(&doc),
            "a: 1\nlist:\n  - x: /t\n    z: true\nempty: []\ns: \"\"\nm: ~\n"
        );
    }

    #[test]
    fn quotes_risky_strings() {
        assert_eq!(quote("yes"), "\"yes\"");
        assert_eq!(quote("12"), "\"12\"");
        assert_eq!(quote("a: b"), "\"a: b\"");
        assert_eq!(quote("std_msgs/msg/String"), "std_msgs/msg/String");
        assert_eq!(quote("- x\n"), "\"- x\\n\"");
    }
}
