//! The elements that start processes: `<node>` (with its `param`, `remap` and `env` children) and
//! `<executable>`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use roxmltree::Node;
use serde_norway::Value;

use super::bounds::scope_bytes;
use super::check_attributes;
use super::source::Source;
use super::walker::{at, Scope, Walker};
use crate::error::{LaunchError, Location, Result};
use crate::plan::{absolute, join_namespace, typed_value, NodeSpec, ParamSource, ProcessSpec};
use crate::prefix::{split_shell, PREFIX_ATTRIBUTE};

impl Walker<'_> {
    pub(super) fn node(&mut self, src: &Source<'_>, node: Node<'_, '_>, scope: &mut Scope) -> Result<()> {
        let here = at(src, node);
        let pkg = self.required(src, node, scope, "pkg")?;
        let exec = self.required(src, node, scope, "exec")?;
        if self.flag(src, node, scope, "respawn", false)? {
            return Err(LaunchError::invalid(
                &here,
                "respawn=\"true\" is not supported by lockstep launch",
            ));
        }
        let program = self.node_program(&here, &pkg, &exec)?;
        let prefix = self.launch_prefix(src, node, scope)?;
        let name = self.expand(src, node, scope, "name")?;
        let namespace = self.expand(src, node, scope, "namespace")?.unwrap_or_default();
        let args = split_words(&self.expand(src, node, scope, "args")?.unwrap_or_default());
        let ros_args = split_words(&self.expand(src, node, scope, "ros_args")?.unwrap_or_default());
        let output = self.output(src, node, scope)?;
        let shutdown_on_exit = self.on_exit(src, node, scope)?;
        self.one_more_process(src, node)?;
        self.spend(src, node, scope_bytes(scope))?;
        let mut spec = NodeSpec {
            name: name.clone(),
            namespace: join_namespace(&scope.namespace, &namespace),
            params: Vec::new(),
            remaps: scope.remaps.clone(),
            ros_args,
        };
        if !scope.params.is_empty() {
            spec.params.push(ParamSource::Inline(scope.params.clone()));
        }
        let mut env = scope.env.clone();
        self.node_children(src, node, scope, &mut spec, &mut env)?;
        let label = self.label(name.as_deref().unwrap_or(&exec));
        self.plan.processes.push(ProcessSpec {
            label,
            prefix,
            program,
            args,
            node: Some(spec),
            env: env.into_iter().collect(),
            cwd: None,
            output,
            shutdown_on_exit,
            waits: scope.waits.clone(),
            at: here,
        });
        Ok(())
    }

    /// The installed executable `exec` of package `pkg`; an error listing where it was looked for.
    fn node_program(&self, here: &Location, pkg: &str, exec: &str) -> Result<PathBuf> {
        self.index.executable(pkg, exec).map_err(|searched| {
            let searched: Vec<String> = searched.iter().map(|p| p.display().to_string()).collect();
            LaunchError::invalid(
                here,
                format!(
                    "executable {exec} of package {pkg} not found (searched {})",
                    searched.join(", ")
                ),
            )
        })
    }

    /// `launch-prefix=`: the words to run before the command, its value (after substitution) split as a
    /// shell would; none when it is absent or blank. An unbalanced quote is an error at the attribute.
    fn launch_prefix(&mut self, src: &Source<'_>, node: Node<'_, '_>, scope: &Scope) -> Result<Vec<String>> {
        let Some(text) = self.expand(src, node, scope, PREFIX_ATTRIBUTE)? else {
            return Ok(Vec::new());
        };
        split_shell(&text).map_err(|message| {
            let place = node
                .attributes()
                .find(|a| a.name() == PREFIX_ATTRIBUTE)
                .map_or_else(|| at(src, node), |a| src.location(a.range_value().start));
            LaunchError::invalid(&place, format!("{PREFIX_ATTRIBUTE}=\"{text}\": {message}"))
        })
    }

    /// The `<param>`, `<remap>` and `<env>` children of a `<node>`, added to its `spec` and `env`.
    fn node_children(
        &mut self,
        src: &Source<'_>,
        node: Node<'_, '_>,
        scope: &Scope,
        spec: &mut NodeSpec,
        env: &mut BTreeMap<String, Option<String>>,
    ) -> Result<()> {
        for child in node.children().filter(Node::is_element) {
            let tag = child.tag_name().name();
            let known: &[&str] = match tag {
                "param" => &["name", "value", "from", "value-sep"],
                "remap" => &["from", "to"],
                "env" => &["name", "value"],
                other => {
                    return Err(LaunchError::UnsupportedTag {
                        at: at(src, child),
                        tag: other.to_string(),
                        hint: " inside <node> (supported: param, remap, env)".into(),
                    })
                }
            };
            check_attributes(src, child, known)?;
            if !self.condition(src, child, scope)? {
                continue;
            }
            match tag {
                "param" => self.param(src, child, scope, &mut spec.params)?,
                "remap" => {
                    let from = self.required(src, child, scope, "from")?;
                    let to = self.required(src, child, scope, "to")?;
                    spec.remaps.push((from, to));
                }
                _ => {
                    let name = self.required(src, child, scope, "name")?;
                    let value = self.required(src, child, scope, "value")?;
                    env.insert(name, Some(value));
                }
            }
        }
        Ok(())
    }

    fn param(
        &mut self,
        src: &Source<'_>,
        node: Node<'_, '_>,
        scope: &Scope,
        params: &mut Vec<ParamSource>,
    ) -> Result<()> {
        if node.children().any(|c| c.is_element()) {
            return Err(LaunchError::UnsupportedTag {
                at: at(src, node),
                tag: "param".into(),
                hint: " with nested <param> elements (write the names with dots: name=\"group.key\")".into(),
            });
        }
        if let Some(from) = self.expand(src, node, scope, "from")? {
            let path = absolute(Path::new(&from));
            if !path.is_file() {
                return Err(LaunchError::invalid(
                    &at(src, node),
                    format!("parameter file {} does not exist", path.display()),
                ));
            }
            params.push(ParamSource::File(path));
            return Ok(());
        }
        let name = self.required(src, node, scope, "name")?;
        let text = self.required(src, node, scope, "value")?;
        let value = match self.expand(src, node, scope, "value-sep")? {
            Some(sep) if !sep.is_empty() => Value::Sequence(
                text.split(sep.as_str())
                    .map(|item| typed_value(item.trim()))
                    .collect(),
            ),
            _ => typed_value(&text),
        };
        match params.last_mut() {
            Some(ParamSource::Inline(values)) => values.push((name, value)),
            _ => params.push(ParamSource::Inline(vec![(name, value)])),
        }
        Ok(())
    }

    pub(super) fn executable(
        &mut self,
        src: &Source<'_>,
        node: Node<'_, '_>,
        scope: &mut Scope,
    ) -> Result<()> {
        let here = at(src, node);
        if self.flag(src, node, scope, "shell", false)? {
            return Err(LaunchError::invalid(
                &here,
                "shell=\"true\" is not supported by lockstep launch",
            ));
        }
        let cmd = split_words(&self.required(src, node, scope, "cmd")?);
        let Some((program, args)) = cmd.split_first() else {
            return Err(LaunchError::invalid(&here, "cmd=\"\" names no program"));
        };
        let prefix = self.launch_prefix(src, node, scope)?;
        let name = self.expand(src, node, scope, "name")?;
        let cwd = self.expand(src, node, scope, "cwd")?.map(PathBuf::from);
        let output = self.output(src, node, scope)?;
        let shutdown_on_exit = self.on_exit(src, node, scope)?;
        self.one_more_process(src, node)?;
        self.spend(src, node, scope_bytes(scope))?;
        let mut env = scope.env.clone();
        for child in node.children().filter(Node::is_element) {
            if child.tag_name().name() != "env" {
                return Err(LaunchError::UnsupportedTag {
                    at: at(src, child),
                    tag: child.tag_name().name().to_string(),
                    hint: " inside <executable> (only <env name value>)".into(),
                });
            }
            check_attributes(src, child, &["name", "value"])?;
            if self.condition(src, child, scope)? {
                let name = self.required(src, child, scope, "name")?;
                let value = self.required(src, child, scope, "value")?;
                env.insert(name, Some(value));
            }
        }
        let base = name.unwrap_or_else(|| {
            Path::new(program)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| program.clone())
        });
        let label = self.label(&base);
        self.plan.processes.push(ProcessSpec {
            label,
            prefix,
            program: PathBuf::from(program),
            args: args.to_vec(),
            node: None,
            env: env.into_iter().collect(),
            cwd,
            output,
            shutdown_on_exit,
            waits: scope.waits.clone(),
            at: here,
        });
        Ok(())
    }
}

/// Whitespace-separated words; single or double quotes keep spaces inside a word.
fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            None => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::split_words;

    #[test]
    fn words_split_on_whitespace_and_keep_quoted_spaces() {
        assert_eq!(split_words("  a b\t'c d' \"\" e"), vec!["a", "b", "c d", "", "e"]);
        assert!(split_words("   ").is_empty());
    }
}
