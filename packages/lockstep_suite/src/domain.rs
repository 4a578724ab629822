//! A ROS_DOMAIN_ID of a case's own: each id is taken by an exclusive lock on a file in
//! `$TMPDIR/lockstep-ros-domains/` (the same files the Python test harness locks), which the kernel drops
//! when the holder ends, so cases running side by side, test runs and suites never share one while in use;
//! and never the ROS_DOMAIN_ID of the shell that runs the suite, where its own nodes may be.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// The ids handed out: 1 to 100 (DDS allows up to 232; low ids keep the UDP ports in the usual range).
pub const DOMAIN_IDS: std::ops::RangeInclusive<u32> = 1..=100;

/// A held domain id; dropped, it is free again.
#[derive(Debug)]
pub struct Domain {
    /// The id.
    pub id: u32,
    _lock: File,
}

fn lock_dir() -> PathBuf {
    std::env::temp_dir().join("lockstep-ros-domains")
}

impl Domain {
    /// A domain id no other live process holds (tries each id once, starting at a place that differs per
    /// process and call, so concurrent takers rarely collide).
    pub fn take(salt: u32) -> Result<Domain> {
        let dir = lock_dir();
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let count = DOMAIN_IDS.end() - DOMAIN_IDS.start() + 1;
        let start = std::process::id()
            .wrapping_mul(7)
            .wrapping_add(salt.wrapping_mul(13));
        // The domain this shell's own nodes use (a robot, a simulator) is never a case's.
        let own: Option<u32> = std::env::var("ROS_DOMAIN_ID")
            .ok()
            .and_then(|d| d.trim().parse().ok());
        for k in 0..count {
            let id = DOMAIN_IDS.start() + (start.wrapping_add(k)) % count;
            if own == Some(id) {
                continue;
            }
            let path = dir.join(format!("{id}.lock"));
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(&path)
                .map_err(|e| Error::io(&path, e))?;
            // SAFETY: flock on a descriptor we own; no memory is touched.
            let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
            if taken {
                return Ok(Domain { id, _lock: file });
            }
        }
        Err(Error::Case(format!(
            "every ROS domain id {}..{} is in use (locks in {})",
            DOMAIN_IDS.start(),
            DOMAIN_IDS.end(),
            dir.display()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_id_is_not_handed_out_again_until_dropped() {
        let a = Domain::take(1).unwrap();
        let b = Domain::take(1).unwrap();
        assert_ne!(a.id, b.id);
        drop(a);
        let c = Domain::take(1).unwrap();
        assert_ne!(c.id, b.id);
    }
}
