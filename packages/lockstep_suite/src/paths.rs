//! A suite's `recordings` globs expanded without following symlinked folders: `maze/**/rec_*` over a folder
//! that links to itself would otherwise be walked without end (the `glob` crate follows every link). The walk
//! is bounded too: a pattern that visits more than [`MAX_VISITED`] entries is refused, naming it.

use std::path::{Component, Path, PathBuf};

/// The most folder entries one pattern may visit.
pub const MAX_VISITED: usize = 200_000;

/// The paths matching `pattern` (absolute, or relative to the working folder), sorted. `Err`: why not (an
/// invalid pattern, or too many entries visited).
pub fn expand(pattern: &Path) -> Result<Vec<PathBuf>, String> {
    let text = pattern.to_string_lossy();
    let matcher = glob::Pattern::new(&text).map_err(|e| format!("not a valid glob: {}", e.msg))?;
    let options = glob::MatchOptions {
        require_literal_separator: true,
        require_literal_leading_dot: false,
        case_sensitive: true,
    };
    // The literal folders before the first component with a wildcard: the walk starts there.
    let mut root = PathBuf::new();
    let mut rest = 0;
    let mut recursive = false;
    let components: Vec<Component<'_>> = pattern.components().collect();
    for (i, c) in components.iter().enumerate() {
        let part = c.as_os_str().to_string_lossy();
        if part.contains(['*', '?', '[']) {
            rest = components.len() - i;
            recursive = components[i..].iter().any(|c| c.as_os_str() == "**");
            break;
        }
        root.push(c);
    }
    if rest == 0 {
        return Ok(if pattern.exists() {
            vec![pattern.to_owned()]
        } else {
            Vec::new()
        });
    }
    let here = root.as_os_str().is_empty();
    let start = if here { Path::new(".") } else { root.as_path() };
    let mut walk = walkdir::WalkDir::new(start).min_depth(1).follow_links(false);
    if !recursive {
        walk = walk.max_depth(rest);
    }
    let mut found = Vec::new();
    for (visited, entry) in walk.into_iter().filter_map(Result::ok).enumerate() {
        if visited >= MAX_VISITED {
            return Err(format!(
                "visits more than {MAX_VISITED} folder entries under {}: narrow the pattern",
                root.display()
            ));
        }
        // Under the working folder the walk says `./x`, the pattern `x`.
        let path = if here {
            entry.path().strip_prefix(".").unwrap_or(entry.path()).to_owned()
        } else {
            entry.into_path()
        };
        if matcher.matches_path_with(&path, options) {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_folder_linking_to_itself_is_walked_once() {
        let dir = tempfile::tempdir().unwrap();
        let maze = dir.path().join("maze");
        std::fs::create_dir_all(maze.join("deep/er")).unwrap();
        for link in ["a", "b", "deep/c"] {
            std::os::unix::fs::symlink(&maze, maze.join(link)).unwrap();
        }
        std::fs::write(maze.join("rec_1.mcap"), "").unwrap();
        std::fs::write(maze.join("deep/er/rec_2.mcap"), "").unwrap();
        let found = expand(&maze.join("**/rec_*")).unwrap();
        assert_eq!(
            found,
            vec![maze.join("deep/er/rec_2.mcap"), maze.join("rec_1.mcap")]
        );
        assert_eq!(
            expand(&maze.join("rec_*")).unwrap(),
            vec![maze.join("rec_1.mcap")]
        );
        assert_eq!(
            expand(&maze.join("*/er/*.mcap")).unwrap(),
            vec![maze.join("deep/er/rec_2.mcap")]
        );
        assert_eq!(
            expand(&maze.join("rec_1.mcap")).unwrap(),
            vec![maze.join("rec_1.mcap")]
        );
        assert!(expand(&maze.join("[")).unwrap_err().contains("not a valid glob"));
    }
}

/// The most entries looked at in a folder to tell whether it is a bag folder.
const MAX_BAG_DIR_ENTRIES: usize = 10_000;

/// What a path a `recordings` pattern matched is to a suite.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// A bag: a regular `.mcap` / `.db3` file, or a folder holding `metadata.yaml` or such a file.
    Bag,
    /// Not a recording (another file, a folder without a bag): left out of the suite.
    Other,
    /// A `.mcap` / `.db3` name that is no regular file (a FIFO, a device): refused, with why.
    Refused(String),
}

/// Sorts a matched path: a bag, something else, or a bag name on a special file (reading a FIFO or
/// `/dev/zero` would block or never end).
pub fn classify(path: &Path) -> Found {
    let Ok(meta) = std::fs::metadata(path) else {
        return Found::Other;
    };
    if meta.is_dir() {
        return if is_bag_dir(path) {
            Found::Bag
        } else {
            Found::Other
        };
    }
    if !path.extension().is_some_and(|e| e == "mcap" || e == "db3") {
        return Found::Other;
    }
    if meta.is_file() {
        Found::Bag
    } else {
        Found::Refused(format!("{} is not a regular file", path.display()))
    }
}

fn is_bag_dir(path: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(path) else {
        return false;
    };
    entries.take(MAX_BAG_DIR_ENTRIES).flatten().any(|e| {
        let name = e.path();
        name.file_name().is_some_and(|n| n == "metadata.yaml")
            || name.extension().is_some_and(|x| x == "mcap" || x == "db3")
    })
}
