//! Reading a ROS 2 XML launch file (and its includes) into a [`Plan`]: arguments, `let`, conditions,
//! scoped groups, namespaces, environment, remaps and parameters, as `ros2 launch` evaluates them. A tag or
//! attribute it does not know is an error with the file and line, never a silent skip.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use roxmltree::Node;

use crate::ament::PackageIndex;
use crate::error::{one_line, LaunchError, Location, Result};
use crate::limits::MAX_DEPTH;
use crate::plan::{absolute, join_namespace, typed_value, DeclaredArg, Output, Plan};
use crate::prefix::PREFIX_ATTRIBUTE;
use crate::subst::{self, Bounds, SubstEnv};

mod bounds;
mod instruction;
mod node;
mod source;
mod walker;

use bounds::scope_bytes;
use source::Source;
use walker::{applies, at, Scope, Walker};

/// How to read a launch file: command-line arguments and where packages are.
#[derive(Debug, Clone, Default)]
pub struct LaunchOptions {
    /// `name:=value` from the command line, in order.
    pub arguments: Vec<(String, String)>,
    pub index: PackageIndex,
}

/// Splits `name:=value` command-line launch arguments.
pub fn parse_arguments(args: &[String]) -> Result<Vec<(String, String)>> {
    args.iter()
        .map(|arg| match arg.split_once(":=") {
            Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
            _ => Err(LaunchError::BadArgument(one_line(arg))),
        })
        .collect()
}

/// Stack of the thread that reads launch files: the reading recurses once per nesting level, bounded by
/// [`crate::limits::MAX_DEPTH`], and at that depth (through includes, in a debug build) needs about 2 MiB;
/// a thread of its own keeps that independent of the caller's stack.
const READER_STACK_BYTES: usize = 16 << 20;

/// Reads `path` and everything it includes into the processes to start.
pub fn plan_file(path: &Path, options: &LaunchOptions) -> Result<Plan> {
    std::thread::scope(|scope| {
        let reader = std::thread::Builder::new()
            .name("launch-reader".into())
            .stack_size(READER_STACK_BYTES)
            .spawn_scoped(scope, || read_plan(path, options))
            .map_err(|source| LaunchError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        reader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn read_plan(path: &Path, options: &LaunchOptions) -> Result<Plan> {
    let mut walker = Walker {
        index: &options.index,
        plan: Plan::default(),
        anon: BTreeMap::new(),
        labels: BTreeMap::new(),
        declared: BTreeSet::new(),
        depth: 0,
        files: Vec::new(),
        files_read: 0,
        copied: 0,
        bounds: Bounds::default(),
    };
    let mut scope = Scope::default();
    for (name, value) in &options.arguments {
        scope.vars.insert(name.clone(), value.clone());
    }
    walker.file(&absolute(path), &mut scope, None)?;
    let mut plan = walker.plan;
    let declared = walker.declared;
    plan.undeclared_overrides = options
        .arguments
        .iter()
        .filter(|(name, _)| !declared.contains(name))
        .map(|(name, _)| name.clone())
        .collect();
    Ok(plan)
}

/// Substitution context: one scope of one file.
struct Subst<'a> {
    scope: &'a Scope,
    file: &'a Path,
    index: &'a PackageIndex,
    anon: &'a mut BTreeMap<String, String>,
}

impl SubstEnv for Subst<'_> {
    fn var(&self, name: &str) -> Option<String> {
        self.scope.vars.get(name).cloned()
    }
    fn env(&self, name: &str) -> Option<String> {
        match self.scope.env.get(name) {
            Some(value) => value.clone(),
            None => std::env::var(name).ok(),
        }
    }
    fn file(&self) -> &Path {
        self.file
    }
    fn package_prefix(&self, package: &str) -> Option<PathBuf> {
        self.index.package_prefix(package)
    }
    fn anon(&mut self, name: &str) -> String {
        let next = self.anon.len();
        self.anon
            .entry(name.to_string())
            .or_insert_with(|| format!("{name}_{}_{next}", std::process::id()))
            .clone()
    }
}

impl Walker<'_> {
    fn file(&mut self, path: &Path, scope: &mut Scope, included_at: Option<&Location>) -> Result<()> {
        let text = self.read(path, included_at)?;
        let src = Source::new(path, &text);
        if let Some(pos) = bounds::too_deep(&text, MAX_DEPTH) {
            return Err(LaunchError::Limit {
                at: src.location(pos),
                message: format!(
                    "elements nest deeper than {MAX_DEPTH} levels in this file (limit {MAX_DEPTH})"
                ),
            });
        }
        let doc = roxmltree::Document::parse(&text).map_err(|source| match not_xml_kind(path) {
            Some(kind) => LaunchError::NotXml {
                path: path.to_path_buf(),
                kind,
            },
            None => LaunchError::Xml {
                path: path.to_path_buf(),
                source,
            },
        })?;
        let root = doc.root_element();
        if root.tag_name().name() != "launch" {
            return Err(LaunchError::invalid(
                &at(&src, root),
                format!(
                    "the root element is <{}>, a launch file's is <launch>",
                    root.tag_name().name()
                ),
            ));
        }
        check_attributes(&src, root, &["version"])?;
        let outer_bounds = std::mem::take(&mut self.bounds);
        let result = self.nested(&src, root, |walker| walker.children(&src, root, scope));
        self.bounds = outer_bounds;
        self.files.pop();
        result
    }

    fn children(&mut self, src: &Source<'_>, parent: Node<'_, '_>, scope: &mut Scope) -> Result<()> {
        for child in parent.children() {
            if child.is_element() {
                self.element(src, child, scope)?;
            } else if child.is_pi() {
                self.instruction(src, child, scope)?;
            }
        }
        Ok(())
    }

    fn expand(
        &mut self,
        src: &Source<'_>,
        node: Node<'_, '_>,
        scope: &Scope,
        name: &str,
    ) -> Result<Option<String>> {
        let Some(attribute) = node.attributes().find(|a| a.name() == name) else {
            return Ok(None);
        };
        let value = self.expand_text(src, node, scope, attribute.value(), attribute.range_value().start)?;
        Ok(Some(value))
    }

    /// `text` of `node` with its substitutions done; an error points at byte `pos` of the file.
    fn expand_text(
        &mut self,
        src: &Source<'_>,
        node: Node<'_, '_>,
        scope: &Scope,
        text: &str,
        pos: usize,
    ) -> Result<String> {
        let mut env = Subst {
            scope,
            file: src.path(),
            index: self.index,
            anon: &mut self.anon,
        };
        let value = subst::expand_bounded(text, &mut env, &mut self.bounds)
            .map_err(|message| LaunchError::invalid(&src.location(pos), message))?;
        self.spend(src, node, value.len())?;
        Ok(value)
    }

    fn required(
        &mut self,
        src: &Source<'_>,
        node: Node<'_, '_>,
        scope: &Scope,
        name: &str,
    ) -> Result<String> {
        self.expand(src, node, scope, name)?
            .ok_or_else(|| LaunchError::MissingAttribute {
                at: at(src, node),
                tag: node.tag_name().name().to_string(),
                attribute: name.to_string(),
            })
    }

    /// `if=` / `unless=`: whether the element applies.
    fn condition(&mut self, src: &Source<'_>, node: Node<'_, '_>, scope: &Scope) -> Result<bool> {
        for name in ["if", "unless"] {
            if let Some(value) = self.expand(src, node, scope, name)? {
                if !applies(&at(src, node), name, &value)? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// One element of a launch file: checks its attributes and condition, then does what it says.
    fn element(&mut self, src: &Source<'_>, node: Node<'_, '_>, scope: &mut Scope) -> Result<()> {
        let tag = node.tag_name().name();
        let known = known_attributes(src, node, tag)?;
        check_attributes(src, node, known)?;
        if tag != "group" {
            instruction::refuse_inside(src, node)?;
        }
        if !self.condition(src, node, scope)? {
            return Ok(());
        }
        match tag {
            "arg" => self.arg(src, node, scope),
            "node" => self.node(src, node, scope),
            "executable" => self.executable(src, node, scope),
            "group" => self.group(src, node, scope),
            "include" => self.include(src, node, scope),
            _ => self.set_in_scope(src, node, scope, tag),
        }
    }

    /// `<group>`: its children, in a copy of the scope unless `scoped="false"`.
    fn group(&mut self, src: &Source<'_>, node: Node<'_, '_>, scope: &mut Scope) -> Result<()> {
        let scoped = self.flag(src, node, scope, "scoped", true)?;
        if !node.children().any(|c| c.is_element()) {
            Ok(())
        } else if scoped {
            self.spend(src, node, scope_bytes(scope))?;
            let mut inner = scope.clone();
            self.nested(src, node, |walker| walker.children(src, node, &mut inner))
        } else {
            self.nested(src, node, |walker| walker.children(src, node, scope))
        }
    }

    /// The elements that only change the scope for what follows: `<let>`, `<push-ros-namespace>`,
    /// `<set_env>`, `<unset_env>`, `<set_remap>` and `<set_parameter>`.
    fn set_in_scope(
        &mut self,
        src: &Source<'_>,
        node: Node<'_, '_>,
        scope: &mut Scope,
        tag: &str,
    ) -> Result<()> {
        match tag {
            "let" => {
                let name = self.required(src, node, scope, "name")?;
                let value = self.required(src, node, scope, "value")?;
                scope.vars.insert(name, value);
            }
            "push-ros-namespace" | "push_ros_namespace" => {
                let namespace = self.required(src, node, scope, "namespace")?;
                scope.namespace = join_namespace(&scope.namespace, &namespace);
            }
            "set_env" => {
                let name = self.required(src, node, scope, "name")?;
                let value = self.required(src, node, scope, "value")?;
                scope.env.insert(name, Some(value));
            }
            "unset_env" => {
                let name = self.required(src, node, scope, "name")?;
                scope.env.insert(name, None);
            }
            "set_remap" => {
                let from = self.required(src, node, scope, "from")?;
                let to = self.required(src, node, scope, "to")?;
                scope.remaps.push((from, to));
            }
            _ => {
                let name = self.required(src, node, scope, "name")?;
                let value = self.required(src, node, scope, "value")?;
                scope.params.push((name, typed_value(&value)));
            }
        }
        Ok(())
    }

    fn flag(
        &mut self,
        src: &Source<'_>,
        node: Node<'_, '_>,
        scope: &Scope,
        name: &str,
        default: bool,
    ) -> Result<bool> {
        match self.expand(src, node, scope, name)?.as_deref().map(str::trim) {
            None => Ok(default),
            Some("true" | "True" | "1") => Ok(true),
            Some("false" | "False" | "0") => Ok(false),
            Some(other) => Err(LaunchError::invalid(
                &at(src, node),
                format!("{name}=\"{other}\": expected true or false"),
            )),
        }
    }

    fn arg(&mut self, src: &Source<'_>, node: Node<'_, '_>, scope: &mut Scope) -> Result<()> {
        let name = self.required(src, node, scope, "name")?;
        let default = self.expand(src, node, scope, "default")?;
        let description = node.attribute("description").map(str::to_string);
        let value = match (scope.vars.get(&name), &default) {
            (Some(value), _) => value.clone(),
            (None, Some(default)) => default.clone(),
            (None, None) => {
                return Err(LaunchError::ArgumentWithoutValue {
                    at: at(src, node),
                    name: one_line(&name),
                })
            }
        };
        scope.vars.insert(name.clone(), value.clone());
        self.declared.insert(name.clone());
        self.plan.arguments.push(DeclaredArg {
            name,
            default,
            description,
            value,
            at: at(src, node),
        });
        Ok(())
    }

    fn include(&mut self, src: &Source<'_>, node: Node<'_, '_>, scope: &mut Scope) -> Result<()> {
        let target = PathBuf::from(self.required(src, node, scope, "file")?);
        let here = at(src, node);
        if target
            .extension()
            .is_some_and(|ext| ext == "py" || ext == "yaml" || ext == "yml")
        {
            return Err(LaunchError::invalid(
                &here,
                format!("{}: lockstep launch reads XML launch files only; run Python or YAML launch files with ros2 launch", target.display()),
            ));
        }
        self.spend(src, node, scope_bytes(scope))?;
        let mut inner = scope.clone();
        for child in node.children().filter(Node::is_element) {
            if child.tag_name().name() != "arg" {
                return Err(LaunchError::UnsupportedTag {
                    at: at(src, child),
                    tag: child.tag_name().name().to_string(),
                    hint: " inside <include> (only <arg name value>)".into(),
                });
            }
            check_attributes(src, child, &["name", "value"])?;
            if !self.condition(src, child, scope)? {
                continue;
            }
            let name = self.required(src, child, scope, "name")?;
            let value = self.required(src, child, scope, "value")?;
            inner.vars.insert(name, value);
        }
        let target = absolute(&target);
        if !target.is_file() {
            return Err(LaunchError::invalid(
                &here,
                format!("included file {} does not exist", target.display()),
            ));
        }
        self.nested(src, node, |walker| walker.file(&target, &mut inner, Some(&here)))
    }

    fn output(&mut self, src: &Source<'_>, node: Node<'_, '_>, scope: &Scope) -> Result<Output> {
        match self.expand(src, node, scope, "output")?.as_deref() {
            None | Some("log") => Ok(Output::Log),
            Some("screen") => Ok(Output::Screen),
            Some("both") => Ok(Output::Both),
            Some(other) => Err(LaunchError::invalid(
                &at(src, node),
                format!("output=\"{other}\": expected screen, log or both"),
            )),
        }
    }

    fn on_exit(&mut self, src: &Source<'_>, node: Node<'_, '_>, scope: &Scope) -> Result<bool> {
        match self.expand(src, node, scope, "on_exit")?.as_deref() {
            None => Ok(false),
            Some("shutdown") => Ok(true),
            Some(other) => Err(LaunchError::invalid(
                &at(src, node),
                format!("on_exit=\"{other}\": lockstep launch knows on_exit=\"shutdown\" only"),
            )),
        }
    }

    fn label(&mut self, base: &str) -> String {
        let count = self.labels.entry(base.to_string()).or_insert(0);
        *count += 1;
        if *count == 1 {
            base.to_string()
        } else {
            format!("{base}-{count}")
        }
    }
}

/// The attributes an element of this `tag` may have; an error naming the tag (with a hint for
/// those of `ros2 launch` that need Python) for one this launcher does not run.
fn known_attributes(src: &Source<'_>, node: Node<'_, '_>, tag: &str) -> Result<&'static [&'static str]> {
    Ok(match tag {
        "arg" => &["name", "default", "description"],
        "let" => &["name", "value"],
        "node" => &[
            "pkg",
            "exec",
            "name",
            "namespace",
            "output",
            "args",
            "ros_args",
            "on_exit",
            "respawn",
            PREFIX_ATTRIBUTE,
        ],
        "executable" => &[
            "cmd",
            "name",
            "cwd",
            "output",
            "on_exit",
            "shell",
            PREFIX_ATTRIBUTE,
        ],
        "group" => &["scoped"],
        "push-ros-namespace" | "push_ros_namespace" => &["namespace"],
        "set_env" => &["name", "value"],
        "unset_env" => &["name"],
        "set_remap" => &["from", "to"],
        "set_parameter" => &["name", "value"],
        "include" => &["file"],
        other => {
            let hint = match other {
                "node_container" | "composable_node" | "load_composable_node" => {
                    " (composable nodes need rclcpp's component container)"
                }
                "timer" | "opaque_function" | "event_handler" => " (run this file with ros2 launch)",
                "param" | "remap" | "env" => " here (only inside <node>)",
                _ => "",
            };
            return Err(LaunchError::UnsupportedTag {
                at: at(src, node),
                tag: other.to_string(),
                hint: format!("{hint}; supported: arg, let, node, executable, group, push-ros-namespace, set_env, unset_env, set_remap, set_parameter, include"),
            });
        }
    })
}

fn check_attributes(src: &Source<'_>, node: Node<'_, '_>, known: &[&str]) -> Result<()> {
    for attribute in node.attributes() {
        let name = attribute.name();
        if !known.contains(&name) && name != "if" && name != "unless" {
            return Err(LaunchError::UnknownAttribute {
                at: src.location(attribute.range().start),
                tag: node.tag_name().name().to_string(),
                attribute: name.to_string(),
                known: known
                    .iter()
                    .chain(["if", "unless"].iter())
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    }
    Ok(())
}

/// The kind of launch file a name says it is, when not XML (`robot.launch.py`, `robot.launch.yaml`): said in the
/// error instead of an XML parser's complaint about its first character.
fn not_xml_kind(path: &Path) -> Option<&'static str> {
    match path.extension()?.to_str()? {
        "py" => Some("Python"),
        "yaml" | "yml" => Some("YAML"),
        _ => None,
    }
}
