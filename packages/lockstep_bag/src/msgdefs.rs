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
        let (package, _, _) = split_type(type_name)?;
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
            let (package, kind, name) = split_type(type_name)?;
            let found = match kind {
                "srv" => self.service_part(package, name),
                "action" => self.action_part(package, name),
                _ => self.find(package, "msg", name),
            };
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

    /// The text of a message type a service `.srv` file defines: `<Service>_Request` and `_Response` (its
    /// halves) and `_Event` (what service introspection publishes on `<service>/_service_event`).
    fn service_part(&self, package: &str, name: &str) -> std::result::Result<String, Vec<PathBuf>> {
        let (service, part) =
            split_suffix(name, &["_Request", "_Response", "_Event"]).ok_or_else(Vec::new)?;
        let text = self.find(package, "srv", service)?;
        Ok(match part {
            "_Request" => section(&text, 0),
            "_Response" => section(&text, 1),
            _ => event_text(&format!("{package}/srv/{service}")),
        })
    }

    /// The text of a message type an action `.action` file defines, as rosidl generates them: the goal,
    /// result and feedback (its three sections), the feedback topic's message, and the requests, responses
    /// and introspection events of its goal and result services.
    fn action_part(&self, package: &str, name: &str) -> std::result::Result<String, Vec<PathBuf>> {
        const PARTS: [&str; 10] = [
            "_SendGoal_Request",
            "_SendGoal_Response",
            "_SendGoal_Event",
            "_GetResult_Request",
            "_GetResult_Response",
            "_GetResult_Event",
            "_FeedbackMessage",
            "_Goal",
            "_Result",
            "_Feedback",
        ];
        let (action, part) = split_suffix(name, &PARTS).ok_or_else(Vec::new)?;
        let text = self.find(package, "action", action)?;
        let own = |suffix: &str| format!("{package}/action/{action}{suffix}");
        const UUID: &str = "unique_identifier_msgs/msg/UUID goal_id\n";
        Ok(match part {
            "_Goal" => section(&text, 0),
            "_Result" => section(&text, 1),
            "_Feedback" => section(&text, 2),
            "_FeedbackMessage" => format!("{UUID}{} feedback\n", own("_Feedback")),
            "_SendGoal_Request" => format!("{UUID}{} goal\n", own("_Goal")),
            "_SendGoal_Response" => "bool accepted\nbuiltin_interfaces/msg/Time stamp\n".to_owned(),
            "_GetResult_Request" => UUID.to_owned(),
            "_GetResult_Response" => format!("int8 status\n{} result\n", own("_Result")),
            "_SendGoal_Event" => event_text(&own("_SendGoal")),
            _ => event_text(&own("_GetResult")),
        })
    }
}

/// `name` without the first of `suffixes` it ends with (and not only of it), and that suffix.
fn split_suffix<'a>(name: &'a str, suffixes: &[&'static str]) -> Option<(&'a str, &'static str)> {
    suffixes.iter().find_map(|suffix| {
        let base = name.strip_suffix(suffix)?;
        (!base.is_empty()).then_some((base, *suffix))
    })
}

/// Section `index` of a `.srv` or `.action` text (sections end at lines `---`); empty when it has fewer.
fn section(text: &str, index: usize) -> String {
    let mut sections = vec![String::new()];
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" {
            sections.push(String::new());
        } else if let Some(last) = sections.last_mut() {
            last.push_str(line);
        }
    }
    sections.into_iter().nth(index).unwrap_or_default()
}

/// The introspection event of service type `service` (`pkg/srv/Name`, or an action's `pkg/action/Name_SendGoal`):
/// what rosidl generates as `<service>_Event`.
fn event_text(service: &str) -> String {
    format!(
        "service_msgs/msg/ServiceEventInfo info\n{service}_Request[<=1] request\n{service}_Response[<=1] response\n"
    )
}

/// Splits `pkg/Type`, `pkg/msg/Type`, `pkg/srv/Type` or `pkg/action/Type` into package, kind and type name.
fn split_type(type_name: &str) -> Result<(&str, &str, &str)> {
    let bad = || Error::BadTypeName {
        type_name: type_name.to_string(),
    };
    let parts: Vec<&str> = type_name.split('/').collect();
    let (pkg, kind, name) = match parts.as_slice() {
        [pkg, name] => (*pkg, "msg", *name),
        [pkg, kind @ ("msg" | "srv" | "action"), name] => (*pkg, *kind, *name),
        _ => return Err(bad()),
    };
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ident(pkg) || !ident(name) {
        return Err(bad());
    }
    Ok((pkg, kind, name))
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
        assert_eq!(split_type("a/msg/B").unwrap(), ("a", "msg", "B"));
        assert_eq!(split_type("a/B").unwrap(), ("a", "msg", "B"));
        assert_eq!(split_type("a/srv/B").unwrap(), ("a", "srv", "B"));
        assert!(split_type("a/idl/B").is_err());
        assert!(split_type("B").is_err());
    }

    #[test]
    fn service_events_and_action_parts_are_defined_as_rosidl_generates_them() {
        let dir = std::env::temp_dir().join(format!("lockstep_eventdefs_{}", std::process::id()));
        let write = |path: &str, text: &str| {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("share/pkg/srv/Add.srv", "int64 a\n---\nint64 sum\n");
        write(
            "share/pkg/action/Count.action",
            "int32 to\n---\nint32[] seen\n---\nint32 now\n",
        );
        write(
            "share/service_msgs/msg/ServiceEventInfo.msg",
            "uint8 event_type\nbuiltin_interfaces/Time stamp\n",
        );
        write(
            "share/builtin_interfaces/msg/Time.msg",
            "int32 sec\nuint32 nanosec\n",
        );
        write("share/unique_identifier_msgs/msg/UUID.msg", "uint8[16] uuid\n");
        let mut defs = MessageDefinitions::new([&dir]);
        let event = defs.resolve("pkg/srv/Add_Event").unwrap().text;
        let sections: Vec<&str> = event.split(DELIMITER).collect();
        assert_eq!(
            sections[0],
            "service_msgs/msg/ServiceEventInfo info\npkg/srv/Add_Request[<=1] request\n\
             pkg/srv/Add_Response[<=1] response\n\n"
        );
        let heads: Vec<&str> = sections[1..].iter().map(|s| s.lines().next().unwrap()).collect();
        assert_eq!(
            heads,
            [
                "MSG: pkg/srv/Add_Request",
                "MSG: pkg/srv/Add_Response",
                "MSG: service_msgs/msg/ServiceEventInfo",
                "MSG: builtin_interfaces/Time"
            ]
        );
        assert!(sections[2].contains("int64 sum"), "{event}");
        let feedback = defs.resolve("pkg/action/Count_FeedbackMessage").unwrap().text;
        assert!(feedback
            .starts_with("unique_identifier_msgs/msg/UUID goal_id\npkg/action/Count_Feedback feedback\n"));
        assert!(
            feedback.contains("MSG: pkg/action/Count_Feedback\nint32 now\n"),
            "{feedback}"
        );
        let result = defs.resolve("pkg/action/Count_GetResult_Event").unwrap().text;
        assert!(
            result.contains("MSG: pkg/action/Count_Result\nint32[] seen\n"),
            "{result}"
        );
        assert!(
            result.contains("MSG: pkg/action/Count_GetResult_Response\nint8 status\n"),
            "{result}"
        );
        let goal = defs.resolve("pkg/action/Count_SendGoal_Request").unwrap().text;
        assert!(goal.contains("MSG: pkg/action/Count_Goal\nint32 to\n"), "{goal}");
        for missing in [
            "pkg/srv/Other_Event",
            "pkg/action/Count_Nothing",
            "pkg/action/Other_Goal",
        ] {
            assert!(defs.resolve(missing).is_err(), "{missing}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
