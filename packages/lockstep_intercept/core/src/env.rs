//! The environment that puts the interceptor into one program: `LD_PRELOAD` with the interceptor's shared
//! library first, and `LOCKSTEP_INTERCEPT` saying what it does there. The interceptor takes both out of its
//! own process's environment once the program initialises rcl, so the tools and nodes that program starts
//! afterwards run without it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The variable that turns the interceptor on: `record` or `replay`; anything else (or unset) forwards only.
pub const MODE_VAR: &str = "LOCKSTEP_INTERCEPT";
/// A path to the interceptor's library, used instead of looking for it beside the `lockstep` binary.
pub const LIBRARY_VAR: &str = "LOCKSTEP_INTERCEPT_LIB";
/// The file name of the interceptor's shared library.
pub const LIBRARY_FILE: &str = "liblockstep_intercept_preload.so";

/// What the interceptor does in a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Forward every call and publish headers, wiring and the event log.
    Record,
    /// Pace the node through its recorded events (lock-step replay of an unmodified node).
    Replay,
}

impl Mode {
    /// The value of [`MODE_VAR`] for this mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Record => "record",
            Mode::Replay => "replay",
        }
    }

    /// The mode a value of [`MODE_VAR`] asks for; `None` for anything else (the interceptor only forwards).
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "record" => Some(Mode::Record),
            "replay" => Some(Mode::Replay),
            _ => None,
        }
    }
}

/// Where the interceptor's library is: [`LIBRARY_VAR`] if set, else beside `exe` (cargo's target folder),
/// else in `<exe's folder>/../lib` (an install prefix), else in `lib/` of a prefix of `AMENT_PREFIX_PATH` (a
/// colcon install, where each package has its own prefix). `None` when none of these exists.
pub fn find_library(exe: &Path, override_path: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = override_path {
        return Some(path.to_path_buf());
    }
    let dir = exe.parent()?;
    let prefixes = std::env::var_os("AMENT_PREFIX_PATH").unwrap_or_default();
    let installed = std::env::split_paths(&prefixes).map(|p| p.join("lib").join(LIBRARY_FILE));
    [dir.join(LIBRARY_FILE), dir.join("../lib").join(LIBRARY_FILE)]
        .into_iter()
        .chain(installed)
        .find(|candidate| candidate.is_file())
}

/// `LD_PRELOAD` with `library` first and the entries `current` already had after it (without a second
/// copy of `library`). Entries are separated by colons or spaces, as the dynamic loader reads them.
pub fn preload_value(library: &Path, current: Option<&OsString>) -> OsString {
    let library = library.as_os_str();
    let mut value = OsString::from(library);
    if let Some(current) = current {
        let current = current.to_string_lossy();
        for entry in current.split([':', ' ']).filter(|e| !e.is_empty()) {
            if std::ffi::OsStr::new(entry) != library {
                value.push(":");
                value.push(entry);
            }
        }
    }
    value
}

/// `LD_PRELOAD` without the interceptor's library (what the interceptor leaves to the programs its host
/// starts); `None` when nothing else was preloaded.
pub fn preload_without_interceptor(current: &str) -> Option<String> {
    let kept: Vec<&str> = current
        .split([':', ' '])
        .filter(|e| !e.is_empty() && !e.ends_with(LIBRARY_FILE))
        .collect();
    (!kept.is_empty()).then(|| kept.join(":"))
}

/// The dynamic loader's variable that preloads shared libraries into a program.
pub const PRELOAD_VAR: &str = "LD_PRELOAD";

/// Why the interceptor's library cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error(
        "{LIBRARY_VAR}={}: no such file (it names the interceptor's library, {LIBRARY_FILE})",
        .0.display()
    )]
    OverrideMissing(PathBuf),
    #[error(
        "the interceptor's library {LIBRARY_FILE} is neither in {} nor in {} (`cargo build -p \
         lockstep_intercept_preload` builds it beside `lockstep`; or set {LIBRARY_VAR} to its path)",
        .beside.display(),
        .lib.display()
    )]
    NotFound { beside: PathBuf, lib: PathBuf },
    #[error(
        "the interceptor's library {}: a path in {PRELOAD_VAR} cannot hold a space or a colon",
        .0.display()
    )]
    Unpreloadable(PathBuf),
    #[error("cannot tell where this program is, to find {LIBRARY_FILE} beside it: {0}")]
    NoExe(std::io::Error),
}

/// The interceptor's library for a program started by `exe`, as [`find_library`] finds it, checked: the
/// file exists, and its path survives `LD_PRELOAD` (which the loader splits at spaces and colons). A
/// relative `override_path` is made absolute, as the program may start elsewhere.
pub fn locate_library(exe: &Path, override_path: Option<&Path>) -> Result<PathBuf, LibraryError> {
    let override_path = override_path.map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()));
    let library = match find_library(exe, override_path.as_deref()) {
        Some(path) if path.is_file() => path,
        Some(path) => return Err(LibraryError::OverrideMissing(path)),
        None => {
            let dir = exe.parent().unwrap_or(Path::new("/"));
            return Err(LibraryError::NotFound {
                beside: dir.to_path_buf(),
                lib: dir.join("../lib"),
            });
        }
    };
    if library.to_string_lossy().contains([' ', ':', '\t', '\n']) {
        return Err(LibraryError::Unpreloadable(library));
    }
    Ok(library)
}

/// [`locate_library`] for the running program (`lockstep`), with [`LIBRARY_VAR`] from its environment.
pub fn library_for_this_program() -> Result<PathBuf, LibraryError> {
    let exe = std::env::current_exe().map_err(LibraryError::NoExe)?;
    let override_path = std::env::var_os(LIBRARY_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    locate_library(&exe, override_path.as_deref())
}

/// The variables that put the interceptor in `mode` into a program whose `LD_PRELOAD` would otherwise be
/// `current`: [`PRELOAD_VAR`] (see [`preload_value`]) and [`MODE_VAR`].
pub fn variables(library: &Path, mode: Mode, current: Option<&OsString>) -> [(&'static str, OsString); 2] {
    [
        (PRELOAD_VAR, preload_value(library, current)),
        (MODE_VAR, OsString::from(mode.as_str())),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interceptor_goes_first_once() {
        let lib = Path::new("/x/liblockstep_intercept_preload.so");
        assert_eq!(
            preload_value(lib, None),
            OsString::from("/x/liblockstep_intercept_preload.so")
        );
        let current = OsString::from("/a.so /x/liblockstep_intercept_preload.so:/b.so");
        assert_eq!(
            preload_value(lib, Some(&current)),
            OsString::from("/x/liblockstep_intercept_preload.so:/a.so:/b.so")
        );
    }

    #[test]
    fn the_children_keep_other_preloads_only() {
        assert_eq!(
            preload_without_interceptor("/x/liblockstep_intercept_preload.so"),
            None
        );
        assert_eq!(
            preload_without_interceptor("/x/liblockstep_intercept_preload.so:/a.so"),
            Some("/a.so".to_owned())
        );
    }

    #[test]
    fn modes_parse() {
        assert_eq!(Mode::parse("record"), Some(Mode::Record));
        assert_eq!(Mode::parse(" replay\n"), Some(Mode::Replay));
        assert_eq!(Mode::parse("off"), None);
        assert_eq!(Mode::parse(Mode::Record.as_str()), Some(Mode::Record));
    }

    #[test]
    fn the_library_is_found_beside_the_binary_or_in_lib() {
        let dir = std::env::temp_dir().join(format!("lockstep_env_{}", std::process::id()));
        let bin = dir.join("prefix/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let exe = bin.join("lockstep");
        let err = locate_library(&exe, None).unwrap_err().to_string();
        assert!(err.contains(&bin.display().to_string()), "{err}");
        assert!(err.contains("cargo build -p lockstep_intercept_preload"), "{err}");
        assert!(!err.contains('\n'), "{err}");
        std::fs::create_dir_all(dir.join("prefix/lib")).unwrap();
        std::fs::write(dir.join("prefix/lib").join(LIBRARY_FILE), b"").unwrap();
        assert_eq!(
            locate_library(&exe, None).unwrap(),
            bin.join("../lib").join(LIBRARY_FILE)
        );
        std::fs::write(bin.join(LIBRARY_FILE), b"").unwrap();
        assert_eq!(locate_library(&exe, None).unwrap(), bin.join(LIBRARY_FILE));
        let missing = dir.join("nowhere.so");
        let err = locate_library(&exe, Some(&missing)).unwrap_err().to_string();
        assert!(err.starts_with("LOCKSTEP_INTERCEPT_LIB="), "{err}");
        let spaced = dir.join("a b.so");
        std::fs::write(&spaced, b"").unwrap();
        assert!(matches!(
            locate_library(&exe, Some(&spaced)),
            Err(LibraryError::Unpreloadable(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_variables_say_library_and_mode() {
        let lib = Path::new("/x/liblockstep_intercept_preload.so");
        let [preload, mode] = variables(lib, Mode::Replay, Some(&OsString::from("/a.so")));
        assert_eq!(
            preload,
            (
                "LD_PRELOAD",
                OsString::from("/x/liblockstep_intercept_preload.so:/a.so")
            )
        );
        assert_eq!(mode, ("LOCKSTEP_INTERCEPT", OsString::from("replay")));
    }
}
