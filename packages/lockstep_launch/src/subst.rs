//! Substitutions in attribute values: `$(var x)`, `$(env NAME [default])`, `$(find-pkg-share pkg)`,
//! `$(find-pkg-prefix pkg)`, `$(dirname)`, `$(filename)`, `$(anon name)`, nested and quoted as ROS 2 launch
//! allows (`$(var $(var which))`, `$(env HOME '/no home')`). Any other substitution is an error naming it.

use std::path::{Path, PathBuf};

use crate::limits::{bytes_text, MAX_SUBSTITUTIONS_PER_FILE, MAX_SUBSTITUTION_NESTING, MAX_VALUE_BYTES};

/// What substitutions read: launch configurations, the environment, the file being read, packages.
pub trait SubstEnv {
    /// A launch configuration (`arg`, `let`, include arguments, command line).
    fn var(&self, name: &str) -> Option<String>;
    /// An environment variable as the launched processes will see it (after `set_env`).
    fn env(&self, name: &str) -> Option<String>;
    /// The launch file being read.
    fn file(&self) -> &Path;
    /// The install prefix of a ROS package, if installed.
    fn package_prefix(&self, package: &str) -> Option<PathBuf>;
    /// A name unique to this launch, the same for the same `name` within it.
    fn anon(&mut self, name: &str) -> String;
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Sub { name: String, args: Vec<Vec<Part>> },
}

/// The names `expand` understands, for error messages.
pub const SUPPORTED: &str = "var, env, find-pkg-share, find-pkg-prefix, dirname, filename, anon";

/// How much expanding may still do: substitutions left for the file being read, and the longest value.
#[derive(Debug, Clone)]
pub struct Bounds {
    /// Substitutions evaluated so far.
    pub substitutions: usize,
    /// At most this many substitutions.
    pub max_substitutions: usize,
    /// No value (nor argument of a substitution) longer than this, in bytes.
    pub max_value_bytes: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            substitutions: 0,
            max_substitutions: MAX_SUBSTITUTIONS_PER_FILE,
            max_value_bytes: MAX_VALUE_BYTES,
        }
    }
}

/// Expands every substitution in `text` within the default [`Bounds`]; the error says which substitution
/// failed and why.
pub fn expand(text: &str, env: &mut dyn SubstEnv) -> Result<String, String> {
    expand_bounded(text, env, &mut Bounds::default())
}

/// Expands every substitution in `text`, counting them in `bounds` and refusing values past its size.
pub fn expand_bounded(text: &str, env: &mut dyn SubstEnv, bounds: &mut Bounds) -> Result<String, String> {
    let chars: Vec<char> = text.chars().collect();
    let (parts, _end) = parse_parts(&chars, 0, Stop::End, 0)?;
    eval_parts(&parts, env, bounds)
}

/// Whether `text` holds a substitution at all.
pub fn has_substitution(text: &str) -> bool {
    text.contains("$(")
}

#[derive(Clone, Copy, PartialEq)]
enum Stop {
    End,
    /// An unquoted argument: whitespace or the closing parenthesis ends it.
    Argument,
    Quote(char),
}

/// Parses text and substitutions until `stop`; `nesting` is how many `$(` enclose it.
fn parse_parts(
    chars: &[char],
    mut pos: usize,
    stop: Stop,
    nesting: usize,
) -> Result<(Vec<Part>, usize), String> {
    let mut parts = Vec::new();
    let mut text = String::new();
    while pos < chars.len() {
        let c = chars[pos];
        match stop {
            Stop::Argument if c.is_whitespace() || c == ')' => break,
            Stop::Quote(q) if c == q => break,
            _ => {}
        }
        if c == '$' && chars.get(pos + 1) == Some(&'(') {
            if !text.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut text)));
            }
            if nesting >= MAX_SUBSTITUTION_NESTING {
                return Err(format!(
                    "substitutions nest deeper than {MAX_SUBSTITUTION_NESTING} `$(` levels (limit {MAX_SUBSTITUTION_NESTING})"
                ));
            }
            let (part, next) = parse_sub(chars, pos + 2, nesting + 1)?;
            parts.push(part);
            pos = next;
        } else {
            text.push(c);
            pos += 1;
        }
    }
    if let Stop::Quote(q) = stop {
        if pos >= chars.len() {
            return Err(format!("quote {q} is never closed"));
        }
    }
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    Ok((parts, pos))
}

/// Parses after `$(` up to and including the matching `)`.
fn parse_sub(chars: &[char], mut pos: usize, nesting: usize) -> Result<(Part, usize), String> {
    let start = pos;
    while pos < chars.len() && !chars[pos].is_whitespace() && chars[pos] != ')' {
        pos += 1;
    }
    let name: String = chars[start..pos].iter().collect();
    if name.is_empty() {
        return Err("`$(` without a substitution name".into());
    }
    let mut args = Vec::new();
    loop {
        while pos < chars.len() && chars[pos].is_whitespace() {
            pos += 1;
        }
        match chars.get(pos) {
            None => return Err(format!("`$({name}` is never closed with `)`")),
            Some(')') => return Ok((Part::Sub { name, args }, pos + 1)),
            Some(&q) if q == '\'' || q == '"' => {
                let (parts, end) = parse_parts(chars, pos + 1, Stop::Quote(q), nesting)?;
                args.push(parts);
                pos = end + 1;
            }
            Some(_) => {
                let (parts, end) = parse_parts(chars, pos, Stop::Argument, nesting)?;
                args.push(parts);
                pos = end;
            }
        }
    }
}

fn eval_parts(parts: &[Part], env: &mut dyn SubstEnv, bounds: &mut Bounds) -> Result<String, String> {
    let mut out = String::new();
    for part in parts {
        match part {
            Part::Text(text) => append(&mut out, text, bounds)?,
            Part::Sub { name, args } => {
                bounds.substitutions += 1;
                if bounds.substitutions > bounds.max_substitutions {
                    return Err(format!(
                        "more than {0} substitutions in one file (limit {0})",
                        bounds.max_substitutions
                    ));
                }
                let args = args
                    .iter()
                    .map(|arg| eval_parts(arg, env, bounds))
                    .collect::<Result<Vec<_>, _>>()?;
                append(&mut out, &eval_sub(name, &args, env)?, bounds)?;
            }
        }
    }
    Ok(out)
}

/// Appends `piece` unless the value would grow past the size limit.
fn append(out: &mut String, piece: &str, bounds: &Bounds) -> Result<(), String> {
    if out.len().saturating_add(piece.len()) > bounds.max_value_bytes {
        return Err(format!(
            "the value grows past {}, the limit of one expanded value",
            bytes_text(bounds.max_value_bytes)
        ));
    }
    out.push_str(piece);
    Ok(())
}

fn eval_sub(name: &str, args: &[String], env: &mut dyn SubstEnv) -> Result<String, String> {
    let arity = |min: usize, max: usize| -> Result<(), String> {
        if args.len() < min || args.len() > max {
            let wanted = if min == max {
                format!("{min}")
            } else {
                format!("{min} to {max}")
            };
            return Err(format!(
                "$({name}) takes {wanted} argument(s), got {}",
                args.len()
            ));
        }
        Ok(())
    };
    match name {
        "var" => {
            arity(1, 1)?;
            env.var(&args[0]).ok_or_else(|| {
                format!("$(var {}): no launch argument or `let` named `{}` is set here", args[0], args[0])
            })
        }
        "env" => {
            arity(1, 2)?;
            match (env.env(&args[0]), args.get(1)) {
                (Some(value), _) => Ok(value),
                (None, Some(default)) => Ok(default.clone()),
                (None, None) => Err(format!(
                    "$(env {0}): environment variable {0} is not set (give a default: $(env {0} <default>))",
                    args[0]
                )),
            }
        }
        "find-pkg-share" | "find-pkg-prefix" => {
            arity(1, 1)?;
            let prefix = env.package_prefix(&args[0]).ok_or_else(|| {
                format!(
                    "$({name} {0}): package {0} is not installed in any prefix of AMENT_PREFIX_PATH \
                     (source an install space, or use $(dirname) for files beside this one)",
                    args[0]
                )
            })?;
            let path = if name == "find-pkg-share" {
                prefix.join("share").join(&args[0])
            } else {
                prefix
            };
            Ok(path.display().to_string())
        }
        "dirname" => {
            arity(0, 0)?;
            let dir = env.file().parent().unwrap_or(Path::new("."));
            Ok(dir.display().to_string())
        }
        "filename" => {
            arity(0, 0)?;
            Ok(env.file().display().to_string())
        }
        "anon" => {
            arity(1, 1)?;
            Ok(env.anon(&args[0]))
        }
        "eval" | "command" | "find-exec" | "exec-in-pkg" | "optenv" | "not" | "and" | "or" | "equals"
        | "notequals" => Err(format!(
            "$({name}) is not supported by lockstep launch (supported: {SUPPORTED}); run this file with ros2 launch"
        )),
        other => Err(format!("unknown substitution $({other}) (supported: {SUPPORTED})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    struct Env {
        vars: BTreeMap<String, String>,
        file: PathBuf,
    }

    impl SubstEnv for Env {
        fn var(&self, name: &str) -> Option<String> {
            self.vars.get(name).cloned()
        }
        fn env(&self, name: &str) -> Option<String> {
            (name == "SET").then(|| "yes".to_string())
        }
        fn file(&self) -> &Path {
            &self.file
        }
        fn package_prefix(&self, package: &str) -> Option<PathBuf> {
            (package == "known").then(|| PathBuf::from("/opt/ws"))
        }
        fn anon(&mut self, name: &str) -> String {
            format!("{name}_1")
        }
    }

    fn env() -> Env {
        let vars = [("a", "A"), ("which", "a"), ("empty", "")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Env {
            vars,
            file: PathBuf::from("/ws/launch/x.launch.xml"),
        }
    }

    #[test]
    fn expands_nested_quoted_and_plain_text() {
        let mut e = env();
        assert_eq!(expand("plain", &mut e).unwrap(), "plain");
        assert_eq!(expand("x-$(var a)-y", &mut e).unwrap(), "x-A-y");
        assert_eq!(expand("$(var $(var which))", &mut e).unwrap(), "A");
        assert_eq!(expand("[$(var empty)]", &mut e).unwrap(), "[]");
        assert_eq!(expand("$(env UNSET 'a b')", &mut e).unwrap(), "a b");
        assert_eq!(expand("$(env SET 'a b')", &mut e).unwrap(), "yes");
        assert_eq!(
            expand("$(dirname)/../config", &mut e).unwrap(),
            "/ws/launch/../config"
        );
        assert_eq!(expand("$(filename)", &mut e).unwrap(), "/ws/launch/x.launch.xml");
        assert_eq!(
            expand("$(find-pkg-share known)/c", &mut e).unwrap(),
            "/opt/ws/share/known/c"
        );
        assert_eq!(expand("$(find-pkg-prefix known)", &mut e).unwrap(), "/opt/ws");
        assert_eq!(expand("$(anon talker)", &mut e).unwrap(), "talker_1");
    }

    #[test]
    fn errors_name_the_substitution() {
        let mut e = env();
        let err = |text: &str, e: &mut Env| expand(text, e).unwrap_err();
        assert!(err("$(var nope)", &mut e).contains("`nope`"));
        assert!(err("$(env UNSET)", &mut e).contains("UNSET is not set"));
        assert!(err("$(eval 1+1)", &mut e).contains("$(eval) is not supported"));
        assert!(err("$(bogus)", &mut e).contains("unknown substitution $(bogus)"));
        assert!(err("$(var a", &mut e).contains("never closed"));
        assert!(err("$(var 'a)", &mut e).contains("never closed"));
        assert!(err("$(find-pkg-share other)", &mut e).contains("package other is not installed"));
        assert!(err("$(var a b)", &mut e).contains("takes 1 argument"));
    }
}
