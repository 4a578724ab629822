//! Files a user names, read so that no file can hang or exhaust a tool: a FIFO would block the read for
//! ever and `/dev/zero` would never end, so only regular files are read, and never more than a cap.

use std::io::Read as _;
use std::path::Path;

/// Why a file could not be read. The text does not name the file: the caller says which file it was and
/// what it was for (`parameter file x.yaml: ...`, `suite.yaml: ...`).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FileError {
    #[error("{0}")]
    Io(String),
    #[error("is a folder, not a file")]
    Folder,
    #[error("is not a regular file (a FIFO, device or socket)")]
    Special,
    #[error("{size} bytes, more than the {max} read")]
    TooLarge { size: u64, max: u64 },
    #[error("not UTF-8 text (byte {0})")]
    NotUtf8(usize),
}

/// Checks that `path` is a regular file of at most `max_bytes`, without opening it.
pub fn check_regular(path: &Path, max_bytes: u64) -> Result<std::fs::Metadata, FileError> {
    let meta = std::fs::metadata(path).map_err(|e| FileError::Io(e.to_string()))?;
    if meta.is_dir() {
        return Err(FileError::Folder);
    }
    if !meta.is_file() {
        return Err(FileError::Special);
    }
    if meta.len() > max_bytes {
        return Err(FileError::TooLarge {
            size: meta.len(),
            max: max_bytes,
        });
    }
    Ok(meta)
}

/// The bytes of the regular file `path`, refused when it holds more than `max_bytes` (checked before
/// reading, and again while reading: a file that grows is cut at the cap, not read on).
pub fn read_bytes(path: &Path, max_bytes: u64) -> Result<Vec<u8>, FileError> {
    check_regular(path, max_bytes)?;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(max_bytes.saturating_add(1)).read_to_end(&mut bytes))
        .map_err(|e| FileError::Io(e.to_string()))?;
    let size = bytes.len() as u64;
    if size > max_bytes {
        return Err(FileError::TooLarge { size, max: max_bytes });
    }
    Ok(bytes)
}

/// [`read_bytes`] as UTF-8 text.
pub fn read_text(path: &Path, max_bytes: u64) -> Result<String, FileError> {
    String::from_utf8(read_bytes(path, max_bytes)?)
        .map_err(|e| FileError::NotUtf8(e.utf8_error().valid_up_to()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn only_regular_files_within_the_cap_are_read() {
        let dir = std::env::temp_dir().join(format!("lockstep_ranges_file_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = dir.join("a.txt");
        std::fs::write(&text, "héllo").unwrap();
        assert_eq!(read_text(&text, 100).unwrap(), "héllo");
        assert_eq!(
            read_text(&text, 3).unwrap_err(),
            FileError::TooLarge { size: 6, max: 3 }
        );
        std::fs::write(&text, [b'a', 0xff]).unwrap();
        assert_eq!(read_text(&text, 100).unwrap_err(), FileError::NotUtf8(1));
        assert_eq!(read_text(&dir, 100).unwrap_err(), FileError::Folder);
        assert_eq!(
            read_text(Path::new("/dev/zero"), 100).unwrap_err(),
            FileError::Special
        );
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            // Refused without being opened: opening a FIFO blocks until a writer comes.
            assert_eq!(read_text(&fifo, 100).unwrap_err(), FileError::Special);
        }
        assert!(matches!(
            read_text(&dir.join("missing"), 100),
            Err(FileError::Io(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
