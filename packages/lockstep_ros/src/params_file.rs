//! Parameter files (`--ros-args --params-file FILE`) checked before rcl reads them.
//!
//! rcl parses the files while the ROS context is created, and r2r panics when that fails: a node given a
//! folder, random bytes or a YAML anchor would end with exit 101 and a backtrace, and `/dev/zero` or a FIFO
//! would never be read to the end. So every node checks its files first and refuses a bad one in one line
//! naming the file and what is wrong in it (line and column, or the key path):
//! - a regular file (not a folder, FIFO, device or socket) of at most [`MAX_BYTES`], in UTF-8;
//! - YAML without anchors or aliases (rcl refuses them; refusing them before parsing also keeps an alias
//!   bomb from expanding);
//! - the layout rcl reads: node names (or namespaces) down to `ros__parameters`, whose values are scalars,
//!   lists of one type (integers and reals do not mix) or nested names, at most [`MAX_DEPTH`] deep.

use std::path::{Path, PathBuf};

use serde_norway::Value;

/// The largest parameter file a node reads (bytes).
pub const MAX_BYTES: u64 = 4 << 20;
/// The deepest nesting of names a parameter file may have.
pub const MAX_DEPTH: usize = 32;

/// The `--params-file` arguments among a program's arguments (inside `--ros-args ... [--]`).
pub fn files_in(args: impl IntoIterator<Item = String>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let (mut ros, mut args) = (false, args.into_iter());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--ros-args" => ros = true,
            "--" => ros = false,
            "--params-file" if ros => files.extend(args.next().map(PathBuf::from)),
            _ => {}
        }
    }
    files
}

/// Check the parameter file at `path`; the reason it cannot be used, naming the file.
pub fn check(path: &Path) -> Result<(), String> {
    let shown = path.display();
    let text = lockstep_ranges::file::read_text(path, MAX_BYTES).map_err(|e| match e {
        lockstep_ranges::file::FileError::TooLarge { size, .. } => format!(
            "parameter file {shown}: {size} bytes, more than the {MAX_BYTES} a parameter file may have"
        ),
        e => format!("parameter file {shown}: {e}"),
    })?;
    check_text(&text).map_err(|why| format!("parameter file {shown}:{why}"))
}

/// Check a parameter file's text; the reason starts with `line:column: ` or ` key path ...: `.
pub fn check_text(text: &str) -> Result<(), String> {
    if let Some((line, column, token)) = anchor(text) {
        return Err(format!(
            "{line}:{column}: YAML anchor or alias `{token}`, which rcl does not read: write the value out"
        ));
    }
    let value: Value = serde_norway::from_str(text).map_err(|e| match e.location() {
        Some(at) => format!("{}:{}: {e}", at.line(), at.column()),
        None => format!(" {e}"),
    })?;
    match value {
        Value::Null => Ok(()),
        Value::Mapping(map) => {
            for (key, value) in &map {
                walk_nodes(&key_name(key), value, 1)?;
            }
            Ok(())
        }
        _ => Err(" not a mapping of node names to their `ros__parameters`".into()),
    }
}

/// The first YAML anchor (`&name`) or alias (`*name`) outside quotes and comments: line, column, token. Only
/// where a node starts (a line's first value, after `key:`, `-`, `[`, `{` or `,`): inside a plain scalar
/// (`a &b`) the characters are text.
fn anchor(text: &str) -> Option<(usize, usize, String)> {
    for (number, line) in text.lines().enumerate() {
        let mut quote: Option<char> = None;
        let mut previous = ' ';
        // The last character that is not a space, outside quotes ('\n': none yet on this line).
        let mut last_solid = '\n';
        for (column, c) in line.char_indices() {
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if c == '#' && previous.is_whitespace() => break,
                None if c == '"' || c == '\'' => quote = Some(c),
                None if (c == '&' || c == '*')
                    && (previous.is_whitespace() || "[{,".contains(previous))
                    && "\n:-[{,".contains(last_solid) =>
                {
                    let token: String = line[column..]
                        .chars()
                        .take_while(|c| !c.is_whitespace())
                        .collect();
                    if token.len() > 1 {
                        return Some((number + 1, column + 1, token.chars().take(40).collect()));
                    }
                }
                None => {}
            }
            if !c.is_whitespace() {
                last_solid = c;
            }
            previous = c;
        }
    }
    None
}

fn key_name(key: &Value) -> String {
    match key {
        Value::String(s) => s.chars().take(80).collect(),
        other => format!("{other:?}").chars().take(80).collect(),
    }
}

/// Node names or namespaces down to `ros__parameters`.
fn walk_nodes(path: &str, value: &Value, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(" key path `{path}`: more than {MAX_DEPTH} levels deep"));
    }
    let Value::Mapping(map) = value else {
        return Err(format!(
            " key path `{path}`: a node name must hold `ros__parameters:` (or deeper names), not a value"
        ));
    };
    for (key, value) in map {
        let name = key_name(key);
        let inner = format!("{path}.{name}");
        if name == "ros__parameters" {
            match value {
                Value::Mapping(params) => {
                    for (key, value) in params {
                        walk_parameter(&format!("{inner}.{}", key_name(key)), value, depth + 1)?;
                    }
                }
                Value::Null => {}
                _ => {
                    return Err(format!(
                        " key path `{inner}`: must be a mapping of parameter names"
                    ))
                }
            }
        } else {
            walk_nodes(&inner, value, depth + 1)?;
        }
    }
    Ok(())
}

/// A parameter: a scalar, a list of one type, or deeper names.
fn walk_parameter(path: &str, value: &Value, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(" key path `{path}`: more than {MAX_DEPTH} levels deep"));
    }
    match value {
        Value::Mapping(map) => {
            for (key, value) in map {
                walk_parameter(&format!("{path}.{}", key_name(key)), value, depth + 1)?;
            }
            Ok(())
        }
        Value::Sequence(items) => {
            let kinds: Vec<&str> = items.iter().map(kind).collect();
            if let Some(bad) = kinds
                .iter()
                .find(|k| **k == "list" || **k == "mapping" || **k == "null")
            {
                return Err(format!(
                    " key path `{path}`: a list of a {bad}: a parameter list holds values"
                ));
            }
            match kinds.iter().find(|k| **k != kinds[0]) {
                Some(other) => Err(format!(
                    " key path `{path}`: a list mixes {} and {other} (rcl reads lists of one type)",
                    kinds[0]
                )),
                None => Ok(()),
            }
        }
        Value::Tagged(_) => Err(format!(" key path `{path}`: a YAML tag, which rcl does not read")),
        _ => Ok(()),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "real",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Sequence(_) => "list",
        Value::Mapping(_) => "mapping",
        Value::Tagged(_) => "tagged value",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_files_of_the_ros_arguments_only() {
        let args = [
            "node",
            "--params-file",
            "no.yaml",
            "--ros-args",
            "-p",
            "a:=1",
            "--params-file",
            "p.yaml",
        ];
        let files = files_in(args.iter().map(|s| (*s).to_owned()));
        assert_eq!(files, vec![PathBuf::from("p.yaml")]);
    }

    #[test]
    fn what_rcl_reads_passes() {
        for text in [
            "",
            "/**:\n  ros__parameters:\n    a: 1\n    b: [1, 2]\n    c: {d: 'x#y &z'}\n    e: []\n",
            "/ns:\n  node:\n    ros__parameters:\n      x: 2.5 # a comment with &amp\n",
            "/**:\n  ros__parameters:\n    who: Tom &Jerry\n    glob: a *b\n    dash: b-&c\n",
        ] {
            assert_eq!(check_text(text), Ok(()), "{text}");
        }
    }

    #[test]
    fn each_bad_file_names_where() {
        let cases = [
            ("a: [1", "did not find"),
            (
                "/**:\n  ros__parameters:\n    x: [1, 2.5]\n",
                "`/**.ros__parameters.x`: a list mixes integer and real",
            ),
            (
                "/**:\n  ros__parameters:\n    a: &x 1\n    b: *x\n",
                "3:8: YAML anchor or alias `&x`",
            ),
            ("/**:\n  foo: 1\n", "key path `/**.foo`: a node name must hold"),
            ("just text\n", "not a mapping of node names"),
            ("/**:\n  ros__parameters:\n    x: [[1]]\n", "a list of a list"),
        ];
        for (text, words) in cases {
            let e = check_text(text).unwrap_err();
            assert!(e.contains(words), "{text:?}: {e}");
        }
        let deep = format!(
            "/**:\n  ros__parameters:\n    x: {}1{}\n",
            "{a: ".repeat(40),
            "}".repeat(40)
        );
        let e = check_text(&deep).unwrap_err();
        assert!(e.contains("more than 32 levels deep"), "{e}");
    }
}
