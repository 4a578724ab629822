//! `lockstep bag play`'s progress line on stderr (a terminal): bag time, percent of the window, rate,
//! `paused`, messages played; redrawn as `--progress-bar-update-rate` says (see the core's `Redraw`), at
//! once after a key, and a last time at the end.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lockstep_bag_player::{progress_line, Control, ProgressState, Redraw};

use crate::player::Started;

/// How often the thread looks at the play (the finest redraw it makes).
const LOOK: Duration = Duration::from_millis(20);

/// Start the progress thread; it ends, after a last line, once `done` is set.
pub fn spawn(
    started: &Started,
    redraw: Redraw,
    done: Arc<AtomicBool>,
    changed: Arc<AtomicBool>,
) -> Option<std::thread::JoinHandle<()>> {
    let control = started.control.clone();
    let window = (started.start_ns, started.end_ns);
    std::thread::Builder::new()
        .name("bag-play-progress".into())
        .spawn(move || show(&control, window, redraw, &done, &changed))
        .ok()
}

fn show(control: &Control, window: (u64, u64), redraw: Redraw, done: &AtomicBool, changed: &AtomicBool) {
    let mut last_drawn: Option<(u64, bool, u64)> = None;
    let mut drawn_at: Option<Instant> = None;
    loop {
        let finished = done.load(Ordering::SeqCst);
        let state = snapshot(control, window);
        let seen = (state.played, state.paused, state.rate.to_bits());
        let due = match redraw {
            Redraw::Every(period) => drawn_at.is_none_or(|t| t.elapsed() >= period),
            Redraw::OnChange => last_drawn != Some(seen),
            Redraw::Never => false,
        };
        if due || changed.swap(false, Ordering::SeqCst) || finished {
            // The cursor goes back to the line's start, so a log line printed meanwhile overwrites it.
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K{}\r", progress_line(&state));
            let _ = err.flush();
            last_drawn = Some(seen);
            drawn_at = Some(Instant::now());
        }
        if finished {
            eprintln!();
            return;
        }
        std::thread::sleep(LOOK);
    }
}

fn snapshot(control: &Control, (start_ns, end_ns): (u64, u64)) -> ProgressState {
    let (played, total) = control.progress();
    ProgressState {
        bag_ns: control.bag_now(),
        start_ns,
        end_ns,
        rate: control.rate(),
        paused: control.is_paused(),
        played,
        total,
    }
}
