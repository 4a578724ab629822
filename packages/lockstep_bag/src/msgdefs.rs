//! Builds rosbag2's `ros2msg` schema text for a message type from the `.msg` files installed under
//! `<prefix>/share/<pkg>/msg/` of each prefix in `AMENT_PREFIX_PATH`.
//!
//! The text is what rosbag2 Jazzy's local message definition source produces: the type's own `.msg`
//! text, then for every dependency (depth first, each dependency set in sorted order, each type once)
//! a newline, a line of 80 `=`, a line `MSG: <dependency as written>` and that type's text.

use crate::{Error, Result};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;

/// Schema encoding of concatenated `.msg` definitions.
pub const ROS2MSG: &str = "ros2msg";

const DELIMITER: &str = "================================================================================\n";

// ROS 2 primitive field types (rosbag2's list, plus wstring, which rosbag2 forgets).
const PRIMITIVES: &[&str] = &[
    "bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
    "int64", "uint64", "string", "wstring",
];

// rosbag2 gives up on definitions nested deeper than this (it guards against cycles).
const MAX_DEPTH: usize = 50;

/// A complete message definition as stored in an MCAP schema record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageDefinition {
    /// Schema encoding: `ros2msg`, or `""` when no definition is available.
    pub encoding: String,
    /// The concatenated definition text.
    pub text: String,
}

impl MessageDefinition {
    /// The "no definition available" schema: readers still see the type name but cannot decode
    /// without their own definitions.
    pub fn empty() -> Self {
        MessageDefinition {
            encoding: String::new(),
            text: String::new(),
        }
    }
}

/// Resolves and caches message definitions from a list of install prefixes.
#[derive(Debug, Clone, Default)]
pub struct MessageDefinitions {
    prefixes: Vec<PathBuf>,
    // "pkg/Type" or "pkg/msg/Type" as written -> file text, or the paths tried when missing.
    cache: HashMap<String, std::result::Result<String, Vec<PathBuf>>>,
}

impl MessageDefinitions {
    /// A resolver over the given install prefixes, searched in order (first match wins, like
    /// ament's package index).
    pub fn new<I, P>(prefixes: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        MessageDefinitions {
            prefixes: prefixes.into_iter().map(Into::into).collect(),
            cache: HashMap::new(),
        }
    }

    /// A resolver over a `:`-separated prefix list, i.e. the value of `AMENT_PREFIX_PATH` (the caller
    /// reads the environment; empty entries are skipped).
    pub fn from_prefix_path(value: &str) -> Self {
        Self::new(value.split(':').filter(|s| !s.is_empty()))
    }

    /// The prefixes searched.
    pub fn prefixes(&self) -> &[PathBuf] {
        &self.prefixes
    }

    /// The full `ros2msg` definition of `type_name` (`pkg/msg/Type` or `pkg/Type`, or the request or response
    /// of a service, `pkg/srv/Type_Request`). Fails with
    /// [`Error::DefinitionNotFound`] naming the type and every path searched when the type or one of
    /// its dependencies has no `.msg` file.
    pub fn resolve(&mut self, type_name: &str) -> Result<MessageDefinition> {
        // The request or response of a service (`pkg/srv/Type_Request`): that half of its `.srv` file.
        if let [package, "srv", name] = type_name.split('/').collect::<Vec<_>>().as_slice() {
            for (suffix, half) in [("_Request", 0), ("_Response", 1)] {
                if let Some(service) = name.strip_suffix(suffix) {
                    let (request, response) = self.resolve_service(&format!("{package}/srv/{service}"))?;
                    return Ok(if half == 0 { request } else { response });
                }
            }
        }
        let mut seen = HashSet::new();
        let text = self.append_recursive(type_name, type_name, &mut seen, MAX_DEPTH)?;
        Ok(MessageDefinition {
            encoding: ROS2MSG.to_string(),
            text,
        })
    }

    /// Like [`resolve`](Self::resolve), but falls back to [`MessageDefinition::empty`] when the
    /// definition cannot be found (the opt-in for recording types that are not installed). The error
    /// is returned beside it so callers can warn.
    pub fn resolve_or_empty(&mut self, type_name: &str) -> (MessageDefinition, Option<Error>) {
        match self.resolve(type_name) {
            Ok(def) => (def, None),
            Err(err) => (MessageDefinition::empty(), Some(err)),
        }
    }

    fn append_recursive(
        &mut self,
        type_name: &str,
        root: &str,
        seen: &mut HashSet<String>,
        depth: usize,
    ) -> Result<String> {
        if depth == 0 {
            return Err(Error::InvalidArgument(format!(
                "message definition of `{root}` nests deeper than {MAX_DEPTH} levels (a cycle?)"
            )));
        }
        let (package, _) = split_type(type_name)?;
        let package = package.to_string();
        let mut result = self.load(type_name, root)?;
        self.append_dependencies(&mut result, &package, root, seen, depth)?;
        Ok(result)
    }

    /// Appends to `result` (a definition's own text) each dependency not in `seen`, as rosbag2 does.
    fn append_dependencies(
        &mut self,
        result: &mut String,
        package: &str,
        root: &str,
        seen: &mut HashSet<String>,
        depth: usize,
    ) -> Result<()> {
        for dep in dependencies(&result.clone(), package) {
            if seen.insert(dep.clone()) {
                result.push('\n');
                result.push_str(DELIMITER);
                result.push_str("MSG: ");
                result.push_str(&dep);
                result.push('\n');
                let text = self.append_recursive(&dep, root, seen, depth - 1)?;
                result.push_str(&text);
            }
        }
        Ok(())
    }

    /// The request and response definitions of a service type (`pkg/srv/Type`) from its `.srv` file: each
    /// half's own text followed by its dependencies, as for a message (the schemas the Foxglove protocol
    /// advertises a service with).
    pub fn resolve_service(&mut self, type_name: &str) -> Result<(MessageDefinition, MessageDefinition)> {
        let parts: Vec<&str> = type_name.split('/').collect();
        let [package, "srv", name] = parts.as_slice() else {
            return Err(Error::BadTypeName {
                type_name: type_name.to_string(),
            });
        };
        let text = self
            .find(package, "srv", name)
            .map_err(|searched| Error::DefinitionNotFound {
                type_name: type_name.to_string(),
                needed_by: None,
                searched,
            })?;
        let mut halves = text.split_inclusive('\n');
        let request: String = halves
            .by_ref()
            .take_while(|line| line.trim_end() != "---")
            .collect();
        let response: String = halves.collect();
        if request.len() == text.len() {
            return Err(Error::InvalidArgument(format!(
                "{type_name}: no `---` line between request and response"
            )));
        }
        let mut out = Vec::new();
        for mut half in [request, response] {
            self.append_dependencies(&mut half, package, type_name, &mut HashSet::new(), MAX_DEPTH)?;
            out.push(MessageDefinition {
                encoding: ROS2MSG.to_string(),
                text: half,
            });
        }
        let response = out.pop().unwrap_or_else(MessageDefinition::empty);
        let request = out.pop().unwrap_or_else(MessageDefinition::empty);
        Ok((request, response))
    }

    /// The text of `share/<package>/<kind>/<name>.<kind>` in the first prefix that has it, or the paths tried.
    fn find(&self, package: &str, kind: &str, name: &str) -> std::result::Result<String, Vec<PathBuf>> {
        let mut tried = Vec::new();
        for prefix in &self.prefixes {
            let path = (prefix.join("share").join(package).join(kind)).join(format!("{name}.{kind}"));
            match std::fs::read_to_string(&path) {
                Ok(text) => return Ok(text),
                Err(_) => tried.push(path),
            }
        }
        Err(tried)
    }

    fn load(&mut self, type_name: &str, root: &str) -> Result<String> {
        if !self.cache.contains_key(type_name) {
            let (package, name) = split_type(type_name)?;
            let found = self.find(package, "msg", name);
            self.cache.insert(type_name.to_string(), found);
        }
        match self.cache.get(type_name) {
            Some(Ok(text)) => Ok(text.clone()),
            Some(Err(tried)) => Err(Error::DefinitionNotFound {
                type_name: type_name.to_string(),
                needed_by: (type_name != root).then(|| root.to_string()),
                searched: tried.clone(),
            }),
            None => Err(Error::DefinitionNotFound {
                type_name: type_name.to_string(),
                needed_by: None,
                searched: Vec::new(),
            }),
        }
    }
}

/// Splits `pkg/Type` or `pkg/msg/Type` into package and type name.
fn split_type(type_name: &str) -> Result<(&str, &str)> {
    let bad = || Error::BadTypeName {
        type_name: type_name.to_string(),
    };
    let parts: Vec<&str> = type_name.split('/').collect();
    let (pkg, name) = match parts.as_slice() {
        [pkg, name] => (*pkg, *name),
        [pkg, "msg", name] => (*pkg, *name),
        _ => return Err(bad()),
    };
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ident(pkg) || !ident(name) {
        return Err(bad());
    }
    Ok((pkg, name))
}

/// Field types of a `.msg` text that are not primitives, qualified with `package` when bare, sorted.
fn dependencies(text: &str, package: &str) -> BTreeSet<String> {
    let mut deps = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim_start();
        let end = line
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '/'))
            .unwrap_or(line.len());
        if end == 0 {
            continue;
        }
        let (ty, rest) = line.split_at(end);
        // An optional array suffix, then whitespace before the field name; anything else (bounded
        // strings `string<=5`, comments, constants of odd shape) is not a message-typed field.
        let rest = match rest.strip_prefix('[') {
            Some(r) => match r.find(']') {
                Some(i) => &r[i + 1..],
                None => continue,
            },
            None => rest,
        };
        if !rest.starts_with(|c: char| c.is_whitespace()) {
            continue;
        }
        if PRIMITIVES.contains(&ty) {
            continue;
        }
        if ty.contains('/') {
            deps.insert(ty.to_string());
        } else {
            deps.insert(format!("{package}/{ty}"));
        }
    }
    deps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_message_typed_fields() {
        let deps = dependencies(
            "# c\nHeader header\nstring<=5 s\nint32[] a\ngeometry_msgs/Point[<=3] p\nuint8 X=1\nFoo[2] f\n",
            "pkg",
        );
        let deps: Vec<_> = deps.into_iter().collect();
        assert_eq!(deps, vec!["geometry_msgs/Point", "pkg/Foo", "pkg/Header"]);
    }

    #[test]
    fn a_service_splits_at_the_dashes_and_each_half_gets_its_dependencies() {
        let dir = std::env::temp_dir().join(format!("lockstep_srvdefs_{}", std::process::id()));
        let srv = dir.join("share/pkg/srv");
        let msg = dir.join("share/pkg/msg");
        std::fs::create_dir_all(&srv).unwrap();
        std::fs::create_dir_all(&msg).unwrap();
        std::fs::write(
            srv.join("Ask.srv"),
            "string question\n---\nAnswer[] answers\nbool ok\n",
        )
        .unwrap();
        std::fs::write(msg.join("Answer.msg"), "string text\n").unwrap();
        std::fs::write(srv.join("Broken.srv"), "string question\n").unwrap();
        let mut defs = MessageDefinitions::new([dir.clone()]);
        let (request, response) = defs.resolve_service("pkg/srv/Ask").unwrap();
        assert_eq!(
            defs.resolve("pkg/srv/Ask_Request").unwrap(),
            request,
            "a service's request message"
        );
        assert_eq!(defs.resolve("pkg/srv/Ask_Response").unwrap(), response);
        assert_eq!(request.text, "string question\n");
        assert_eq!(
            response.text,
            format!("Answer[] answers\nbool ok\n\n{DELIMITER}MSG: pkg/Answer\nstring text\n")
        );
        let e = defs.resolve_service("pkg/srv/Broken").unwrap_err().to_string();
        assert!(e.contains("no `---` line"), "{e}");
        assert!(defs.resolve_service("pkg/msg/Answer").is_err());
        assert!(matches!(
            defs.resolve_service("pkg/srv/Missing"),
            Err(Error::DefinitionNotFound { .. })
        ));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn splits_type_names() {
        assert_eq!(split_type("a/msg/B").unwrap(), ("a", "B"));
        assert_eq!(split_type("a/B").unwrap(), ("a", "B"));
        assert!(split_type("a/srv/B").is_err());
        assert!(split_type("B").is_err());
    }
}
