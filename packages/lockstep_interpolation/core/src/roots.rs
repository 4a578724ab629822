//! Files are read only under configured root directories: a path is resolved (relative paths against the
//! first root), symlinks and `..` followed, and the real path must lie under one of the roots' real paths.

use std::path::{Path, PathBuf};

/// Why a path may not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RootError {
    #[error("no root directories are configured: no file may be played")]
    NoRoots,
    #[error("{path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("{path} resolves to {real}, outside the configured roots ({roots})")]
    Outside {
        path: String,
        real: String,
        roots: String,
    },
}

/// The real path of `path` if it lies under one of `roots`.
pub fn resolve(path: &str, roots: &[PathBuf]) -> Result<PathBuf, RootError> {
    let first = roots.first().ok_or(RootError::NoRoots)?;
    let candidate = Path::new(path);
    let joined = if candidate.is_absolute() {
        candidate.to_owned()
    } else {
        first.join(candidate)
    };
    let real = joined.canonicalize().map_err(|e| RootError::Unreadable {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    let inside = roots
        .iter()
        .filter_map(|r| r.canonicalize().ok())
        .any(|root| real.starts_with(&root));
    if inside {
        Ok(real)
    } else {
        Err(RootError::Outside {
            path: path.to_owned(),
            real: real.display().to_string(),
            roots: roots
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_under_a_root() {
        let dir = std::env::temp_dir().join(format!("lockstep_roots_{}", std::process::id()));
        let root = dir.join("root");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("ok.csv"), "x").unwrap();
        std::fs::write(dir.join("secret.csv"), "x").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.join("secret.csv"), root.join("link.csv")).unwrap();
        let roots = vec![root.clone()];
        assert!(resolve("ok.csv", &roots).is_ok());
        assert!(resolve(root.join("ok.csv").to_str().unwrap(), &roots).is_ok());
        for bad in [
            "../secret.csv",
            "link.csv",
            dir.join("secret.csv").to_str().unwrap(),
        ] {
            let e = resolve(bad, &roots).unwrap_err();
            assert!(matches!(e, RootError::Outside { .. }), "{bad}: {e}");
        }
        assert!(matches!(
            resolve("missing.csv", &roots),
            Err(RootError::Unreadable { .. })
        ));
        assert_eq!(resolve("ok.csv", &[]), Err(RootError::NoRoots));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
