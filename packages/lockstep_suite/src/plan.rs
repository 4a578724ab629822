//! The cases of a suite: one per (recording, variant), named `<recording>__<variant>`, in recording order
//! then variant order.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::suite::{Suite, Variant};

/// One case: a recording replayed with one variant of the modules.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// `<recording>__<variant>`: its folder name under `cases/` and its JUnit name.
    pub id: String,
    /// The recording.
    pub recording: PathBuf,
    /// The variant.
    pub variant: Variant,
}

/// A recording's short name: its folder (or file stem) name, with anything but letters, digits, '_', '-'
/// and '.' as '_'.
fn short_name(path: &Path) -> String {
    let stem = if path.is_dir() {
        path.file_name()
    } else {
        path.file_stem()
    };
    let name: String = stem
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_-.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() || name.starts_with('.') {
        format!("recording{name}")
    } else {
        name
    }
}

/// Every case of `suite`; recordings with the same short name get `_2`, `_3`, ... in order.
pub fn cases(suite: &Suite) -> Vec<Case> {
    let mut names: Vec<String> = Vec::with_capacity(suite.recordings.len());
    for path in &suite.recordings {
        let base = short_name(path);
        let mut name = base.clone();
        let mut n = 1;
        while names.contains(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        names.push(name);
    }
    let mut out = Vec::with_capacity(names.len() * suite.variants.len());
    for (name, path) in names.iter().zip(&suite.recordings) {
        for variant in &suite.variants {
            out.push(Case {
                id: format!("{name}__{}", variant.name),
                recording: path.clone(),
                variant: variant.clone(),
            });
        }
    }
    out
}

/// The cases whose name matches the glob `pattern` (`run_*__fast`); none is an error.
pub fn filter(cases: Vec<Case>, pattern: &str) -> Result<Vec<Case>> {
    let glob =
        glob::Pattern::new(pattern).map_err(|e| Error::Case(format!("--filter {pattern}: {}", e.msg)))?;
    let total = cases.len();
    let kept: Vec<Case> = cases.into_iter().filter(|c| glob.matches(&c.id)).collect();
    if kept.is_empty() {
        return Err(Error::Case(format!(
            "--filter {pattern}: matches none of the {total} cases"
        )));
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_are_recordings_times_variants_with_unique_names() {
        let dir = tempfile::tempdir().unwrap();
        for d in ["a/run", "b/run", "c/x y"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
            std::fs::write(dir.path().join(d).join("metadata.yaml"), "").unwrap();
        }
        std::fs::write(dir.path().join("l.launch.xml"), "<launch/>").unwrap();
        let file = dir.path().join("s.yaml");
        let text = "recordings: ['*/*']\nmodules:\n  launch: l.launch.xml\n  variants: {one: {}, two: {arguments: {k: 2}}}\n";
        let suite = Suite::parse(text, &file).unwrap();
        let ids: Vec<String> = cases(&suite).into_iter().map(|c| c.id).collect();
        assert_eq!(
            ids,
            [
                "run__one",
                "run__two",
                "run_2__one",
                "run_2__two",
                "x_y__one",
                "x_y__two"
            ]
        );
        assert_eq!(filter(cases(&suite), "*__two").unwrap().len(), 3);
        let err = filter(cases(&suite), "nope*").unwrap_err().to_string();
        assert_eq!(err, "--filter nope*: matches none of the 6 cases");
    }
}
