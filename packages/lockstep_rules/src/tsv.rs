//! Soufflé's fact and output files for `lockstep rules eval --facts-dir DIR --output-dir DIR`: each `.input`
//! relation is read from `DIR/<relation>.facts`, each `.output` relation written to `DIR/<relation>.csv`,
//! tab-separated, one tuple per line. Columns take the `.decl` types; undeclared ones read as an integer,
//! else a float, else a symbol.

use std::path::Path;

use anyhow::{bail, Context};

use crate::directives::ColumnType;
use crate::{Engine, Facts, RuleSet, Value};

/// The facts of every `.input` relation from `dir`; an error names the file and line.
pub fn read_inputs(rules: &RuleSet, dir: &Path) -> anyhow::Result<Facts> {
    let directives = rules.directives();
    if directives.inputs.is_empty() {
        bail!("--facts-dir: the rules have no `.input` relation to read");
    }
    let mut facts = Facts::new();
    for name in &directives.inputs {
        let path = dir.join(format!("{name}.facts"));
        let text = lockstep_ranges::file::read_text(&path, crate::limits::MAX_TEXT_BYTES as u64)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let types: Option<Vec<ColumnType>> = directives
            .decl(name)
            .map(|d| d.columns.iter().map(|(_, t)| *t).collect());
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
            let fields: Vec<&str> = line.split('\t').collect();
            let mut tuple = Vec::with_capacity(fields.len());
            for (c, field) in fields.iter().enumerate() {
                let value = match types.as_ref().and_then(|t| t.get(c)) {
                    Some(ty) => ty.read(field).with_context(|| {
                        format!(
                            "{}:{}: column {} `{field}` is not a {ty:?}",
                            path.display(),
                            i + 1,
                            c + 1
                        )
                    })?,
                    None => guess(field),
                };
                tuple.push(value);
            }
            facts.add(name, tuple);
        }
    }
    Ok(facts)
}

fn guess(field: &str) -> Value {
    if let Ok(i) = field.trim().parse::<i64>() {
        Value::Int(i)
    } else if let Some(x) = field.trim().parse::<f64>().ok().filter(|x| x.is_finite()) {
        Value::from(x)
    } else {
        Value::from(field)
    }
}

/// Write every `.output` relation to `dir/<relation>.csv` (sorted tuples); the paths written.
pub fn write_outputs(engine: &Engine, dir: &Path) -> anyhow::Result<Vec<String>> {
    let outputs = engine.rules().directives().outputs.clone();
    if outputs.is_empty() {
        bail!("--output-dir: the rules have no `.output` relation to write");
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    for name in outputs {
        let mut text = String::new();
        for tuple in engine.query(&name)? {
            let fields: Vec<String> = tuple.iter().map(|v| field(*v)).collect();
            text += &fields.join("\t");
            text.push('\n');
        }
        let path = dir.join(format!("{name}.csv"));
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

fn field(v: Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Float(x) => x.get().to_string(),
        Value::Sym(s) => s.as_str().to_owned(),
    }
}
