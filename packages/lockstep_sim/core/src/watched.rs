//! The rule files and the scene a running simulator was loaded from, and their modification stamps: a
//! watcher reloads when a stamp changes.

use std::path::PathBuf;
use std::time::SystemTime;

/// Modification stamps of watched files, in order (`None`: cannot be read).
pub type Stamps = Vec<Option<(SystemTime, u64)>>;

/// The files in force, and how often they were switched.
#[derive(Debug, Clone)]
pub struct WatchedFiles {
    /// The scene file.
    pub scene_file: PathBuf,
    /// The rule files, in load order.
    pub rule_files: Vec<PathBuf>,
    /// How often other files were switched to.
    pub switches: u64,
    /// The stamps of the files switched to, taken before they were read: the watcher starts from them, so
    /// a write that lands after the read is not missed.
    pub stamps: Option<Stamps>,
}

impl WatchedFiles {
    /// The files loaded at start: never switched, no stamps taken yet.
    pub fn new(scene_file: PathBuf, rule_files: Vec<PathBuf>) -> Self {
        WatchedFiles {
            scene_file,
            rule_files,
            switches: 0,
            stamps: None,
        }
    }

    /// The rule files, then the scene.
    pub fn paths(&self) -> Vec<PathBuf> {
        let mut paths = self.rule_files.clone();
        paths.push(self.scene_file.clone());
        paths
    }
}

/// Modification stamps (time and size) of the watched files; a file that cannot be read counts as
/// "missing".
pub fn stamps(paths: &[PathBuf]) -> Stamps {
    paths
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .ok()
                .and_then(|m| Some((m.modified().ok()?, m.len())))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_has_no_stamp_and_a_write_changes_it() {
        let dir = std::env::temp_dir().join(format!("lockstep_sim_watch_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a.dl");
        let _ = std::fs::remove_file(&file);
        let paths = vec![file.clone()];
        assert_eq!(stamps(&paths), [None]);
        std::fs::write(&file, "x.\n").unwrap();
        let first = stamps(&paths);
        assert!(first[0].is_some());
        std::fs::write(&file, "x.\ny.\n").unwrap();
        assert_ne!(stamps(&paths), first, "the size changed");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_rule_files_come_before_the_scene() {
        let files = WatchedFiles::new("s.scene".into(), vec!["a.dl".into(), "b.dl".into()]);
        let paths: Vec<PathBuf> = ["a.dl", "b.dl", "s.scene"].iter().map(PathBuf::from).collect();
        assert_eq!(files.paths(), paths);
        assert_eq!((files.switches, files.stamps), (0, None));
    }
}
