//! Shared by the launch tests: a package prefix to resolve `pkg`/`exec` against.

#![allow(clippy::unwrap_used, dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use lockstep_launch::PackageIndex;

/// A prefix in `dir` holding package `demo` with the executables `talker` and `listener`.
pub fn index(dir: &Path) -> PackageIndex {
    let marker = dir.join("share/ament_index/resource_index/packages");
    std::fs::create_dir_all(&marker).unwrap();
    std::fs::write(marker.join("demo"), "").unwrap();
    let lib = dir.join("lib/demo");
    std::fs::create_dir_all(&lib).unwrap();
    for exec in ["talker", "listener"] {
        std::fs::write(lib.join(exec), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(lib.join(exec), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    PackageIndex {
        prefixes: vec![dir.to_path_buf()],
        fallback_dirs: vec![],
    }
}
