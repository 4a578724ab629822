//! Reloading the rule files and the scene: on `~/reload`, when the watched files change, and when the
//! `scene_file` or `rule_files` parameter names other files.
//!
//! Reading and parsing the files is the slow part (a large rule file takes seconds) and blocks on the file
//! system, so a reload runs it on tokio's blocking pool ([`PreparedWorld::load`]); the node's thread, which
//! spins the node and steps the simulation, only swaps the checked result in under the simulator's lock.
//! Reloads are serialised, so an older read never replaces a newer one, and a reload of files that were
//! switched away from while it read them is dropped.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::future;
use lockstep_sim::{stamps, Mode, PreparedWorld, Stamps, WatchedFiles};

use crate::config::Statics;
use crate::shared::SharedSim;

/// Reloads the node's files into its simulator.
pub struct Reloader {
    shared: SharedSim,
    files: Mutex<WatchedFiles>,
    mode: Mode,
    one_at_a_time: tokio::sync::Mutex<()>,
}

impl Reloader {
    /// A reloader of `scene_file` and `rule_files` for the simulator in `shared` (running in `mode`).
    pub fn new(shared: SharedSim, scene_file: PathBuf, rule_files: Vec<PathBuf>, mode: Mode) -> Arc<Self> {
        Arc::new(Reloader {
            shared,
            files: Mutex::new(WatchedFiles::new(scene_file, rule_files)),
            mode,
            one_at_a_time: tokio::sync::Mutex::new(()),
        })
    }

    fn files(&self) -> Result<WatchedFiles, String> {
        Ok(self
            .files
            .lock()
            .map_err(|_| "internal error: file list mutex poisoned".to_owned())?
            .clone())
    }

    /// The watched files: the rule files, then the scene.
    fn paths(&self) -> Vec<PathBuf> {
        self.files().map(|f| f.paths()).unwrap_or_default()
    }

    /// Reloads rule files and scene; `Err` holds the diagnostics (every line names file:line:column), and
    /// then nothing changed.
    pub async fn reload(&self) -> Result<String, String> {
        let _serial = self.one_at_a_time.lock().await;
        let files = self.files()?;
        let (scene_file, rule_files, mode) = (files.scene_file, files.rule_files, self.mode);
        let world = tokio::task::spawn_blocking(move || PreparedWorld::load(&scene_file, &rule_files, mode))
            .await
            .map_err(|e| format!("internal error: the reload task failed: {e}"))?
            .map_err(|e| e.to_string())?;
        let mut s = self
            .shared
            .lock()
            .map_err(|_| "internal error: simulator mutex poisoned".to_owned())?;
        if self.files()?.switches != files.switches {
            return Err("other files were switched to while these were read; those are in force".into());
        }
        let summary = s.sim.install(world).map_err(|e| e.to_string())?;
        s.grid_dirty = true;
        s.state_dirty = true;
        Ok(summary.to_string())
    }

    /// Switches to other files (the `scene_file` or `rule_files` parameter; `None` keeps that one): they are
    /// loaded now, on the caller's thread, and on success they are in force and watched. `Err` holds the
    /// diagnostics, and then nothing changed.
    pub fn switch(
        &self,
        scene_file: Option<PathBuf>,
        rule_files: Option<Vec<PathBuf>>,
    ) -> Result<String, String> {
        let current = self.files()?;
        let scene_file = scene_file.unwrap_or(current.scene_file);
        let rule_files = rule_files.unwrap_or(current.rule_files);
        if rule_files.is_empty() {
            return Err("the list names no rule file".into());
        }
        let mut paths = rule_files.clone();
        paths.push(scene_file.clone());
        let before = stamps(&paths);
        let world = PreparedWorld::load(&scene_file, &rule_files, self.mode).map_err(|e| e.to_string())?;
        let mut s = self
            .shared
            .lock()
            .map_err(|_| "internal error: simulator mutex poisoned".to_owned())?;
        let summary = s.sim.install(world).map_err(|e| e.to_string())?;
        s.grid_dirty = true;
        s.state_dirty = true;
        let mut files = self
            .files
            .lock()
            .map_err(|_| "internal error: file list mutex poisoned".to_owned())?;
        files.scene_file = scene_file;
        files.rule_files = rule_files;
        files.switches += 1;
        files.stamps = Some(before);
        Ok(summary.to_string())
    }
}

/// The stamps, read on the blocking pool (a stalled file system must not stall the node).
async fn stamps_off_thread(paths: Arc<Vec<PathBuf>>) -> Option<Stamps> {
    tokio::task::spawn_blocking(move || stamps(&paths)).await.ok()
}

/// Polls the files every `watch_period` and reloads when one changes (if `watch_files`).
pub async fn watch_files(reloader: Arc<Reloader>, logger: String, st: Statics) {
    if !st.p.watch_files {
        return future::pending().await;
    }
    let mut paths = Arc::new(reloader.paths());
    let mut seen = stamps_off_thread(paths.clone()).await;
    let mut ticker = tokio::time::interval(st.watch_period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let Ok(files) = reloader.files() else {
            return;
        };
        if *paths != files.paths() {
            // Switched to other files by a parameter, which read them: watch those from the stamps they had
            // before that read.
            paths = Arc::new(files.paths());
            seen = files.stamps;
        }
        // Stamp before reading: a write that lands while we reload changes the stamp again, so it is seen
        // on the next round.
        let now = stamps_off_thread(paths.clone()).await;
        if now.is_none() || now == seen {
            continue;
        }
        seen = now;
        match reloader.reload().await {
            Ok(message) => r2r::log_info!(&logger, "file change: {message}"),
            Err(message) => r2r::log_error!(
                &logger,
                "file change: reload failed, the previous rules and scene stay:\n{message}"
            ),
        }
    }
}
