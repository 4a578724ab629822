//! rosbag2's keyboard controls for `lockstep bag play` when stdin is a terminal: the terminal stops echoing
//! and hands over each key at once while the play runs ([`Keyboard`], which puts the mode back when
//! dropped), and a thread turns the keys into the same control calls as the player's services (the core's
//! `apply_key`).

use std::io::Read as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use lockstep_bag_player::{apply_key, Control, KeyParser};

/// Said once on stderr when the keys are on.
pub const HELP: &str =
    "keys: space pause/resume, right arrow play next (paused), up/down arrows rate x1.1/x0.9";

/// The terminal on stdin without line buffering or echo (signals such as Ctrl-C still work); the old mode
/// comes back on drop.
pub struct Keyboard {
    saved: libc::termios,
}

impl Keyboard {
    /// `None` when stdin is not a terminal, or this process is not in its foreground (a background job
    /// that changed the terminal's mode would be stopped by SIGTTOU), or the mode cannot be changed.
    pub fn take() -> Option<Self> {
        // SAFETY: termios calls on fd 0 with a struct of the right type; no pointer is kept.
        unsafe {
            if libc::isatty(0) != 1 {
                return None;
            }
            let foreground = libc::tcgetpgrp(0);
            if foreground != -1 && foreground != libc::getpgrp() {
                return None;
            }
            let mut saved: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut saved) != 0 {
                return None;
            }
            let mut keys = saved;
            keys.c_lflag &= !(libc::ICANON | libc::ECHO);
            keys.c_cc[libc::VMIN] = 1;
            keys.c_cc[libc::VTIME] = 0;
            if libc::tcsetattr(0, libc::TCSANOW, &keys) != 0 {
                return None;
            }
            Some(Self { saved })
        }
    }
}

impl Drop for Keyboard {
    fn drop(&mut self) {
        // SAFETY: restores the mode read in `take` on the same fd.
        unsafe {
            libc::tcsetattr(0, libc::TCSANOW, &self.saved);
        }
    }
}

/// Read keys from stdin on a thread of its own and apply each to `control`, setting `changed` (the progress
/// line redraws at once); with `say`, each key's effect is also printed on stderr. The thread ends with
/// stdin (or with the process).
pub fn read(control: Arc<Control>, changed: Arc<AtomicBool>, say: bool) {
    let spawned = std::thread::Builder::new()
        .name("bag-play-keys".into())
        .spawn(move || {
            let mut parser = KeyParser::default();
            let mut stdin = std::io::stdin();
            let mut buffer = [0u8; 64];
            loop {
                let n = match stdin.read(&mut buffer) {
                    Ok(0) => return,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => return,
                };
                for key in buffer[..n].iter().filter_map(|&b| parser.feed(b)) {
                    let what = apply_key(&control, key);
                    changed.store(true, Ordering::SeqCst);
                    if say {
                        eprintln!("{what}");
                    }
                }
            }
        });
    if let Err(e) = spawned {
        eprintln!("keyboard controls off: {e}");
    }
}
