//! Where packages and their executables are, as `ros2 launch` finds them: the ament resource index of each
//! prefix in AMENT_PREFIX_PATH (`<prefix>/share/ament_index/resource_index/packages/<pkg>`) and
//! `<prefix>/lib/<pkg>/<exec>`; then, for a source-tree build with no install space, the directory of the
//! running `lockstep` binary (where cargo puts every node binary).

use std::path::{Path, PathBuf};

/// The places packages are looked up in.
#[derive(Debug, Clone, Default)]
pub struct PackageIndex {
    /// Install prefixes, first wins (AMENT_PREFIX_PATH order).
    pub prefixes: Vec<PathBuf>,
    /// Directories whose executables stand in for any package's (the cargo target directory).
    pub fallback_dirs: Vec<PathBuf>,
}

impl PackageIndex {
    /// AMENT_PREFIX_PATH, then the running binary's directory.
    pub fn from_environment() -> Self {
        let prefixes = std::env::var_os("AMENT_PREFIX_PATH")
            .map(|paths| {
                std::env::split_paths(&paths)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let fallback_dirs = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(Path::to_path_buf))
            .into_iter()
            .collect();
        Self {
            prefixes,
            fallback_dirs,
        }
    }

    /// The prefix a package is installed in.
    pub fn package_prefix(&self, package: &str) -> Option<PathBuf> {
        self.prefixes
            .iter()
            .find(|prefix| {
                prefix
                    .join("share/ament_index/resource_index/packages")
                    .join(package)
                    .is_file()
            })
            .cloned()
    }

    /// The executable `exec` of `package`, or the places searched.
    pub fn executable(&self, package: &str, exec: &str) -> Result<PathBuf, Vec<PathBuf>> {
        let candidates: Vec<PathBuf> = self
            .prefixes
            .iter()
            .map(|prefix| prefix.join("lib").join(package).join(exec))
            .chain(self.fallback_dirs.iter().map(|dir| dir.join(exec)))
            .collect();
        candidates
            .iter()
            .find(|path| is_executable(path))
            .cloned()
            .ok_or(candidates)
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn finds_packages_and_executables_in_prefix_order_then_the_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, fallback) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("target"),
        );
        for (prefix, pkg) in [(&a, "p"), (&b, "p"), (&b, "q")] {
            let index = prefix.join("share/ament_index/resource_index/packages");
            std::fs::create_dir_all(&index).unwrap();
            std::fs::write(index.join(pkg), "").unwrap();
            let lib = prefix.join("lib").join(pkg);
            std::fs::create_dir_all(&lib).unwrap();
            std::fs::write(lib.join("node"), "").unwrap();
            std::fs::set_permissions(lib.join("node"), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::create_dir_all(&fallback).unwrap();
        std::fs::write(fallback.join("other"), "").unwrap();
        std::fs::set_permissions(fallback.join("other"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(fallback.join("not_exec"), "").unwrap();
        let index = PackageIndex {
            prefixes: vec![a.clone(), b.clone()],
            fallback_dirs: vec![fallback.clone()],
        };
        assert_eq!(index.package_prefix("p"), Some(a.clone()));
        assert_eq!(index.package_prefix("q"), Some(b.clone()));
        assert_eq!(index.package_prefix("r"), None);
        assert_eq!(index.executable("q", "node").unwrap(), b.join("lib/q/node"));
        assert_eq!(index.executable("p", "other").unwrap(), fallback.join("other"));
        let searched = index.executable("p", "not_exec").unwrap_err();
        assert_eq!(searched.len(), 3);
        assert_eq!(searched[2], fallback.join("not_exec"));
    }
}
