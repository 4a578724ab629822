//! rosbag2's own compression (`ros2 bag record --compression-mode file|message --compression-format
//! zstd`), as metadata.yaml declares it in `compression_mode` / `compression_format`:
//! - `FILE`: every storage file is one zstd stream (`<name>_<N>.mcap.zstd`, `<name>_<N>.db3.zstd`).
//!   The reader decompresses each once, when the bag is opened, streaming it into a scratch
//!   directory under the system's temporary directory ([`std::env::temp_dir`]), removed when the
//!   reader is dropped; the bag directory itself is never written to.
//! - `MESSAGE`: the storage files are plain, but each message's data is a zstd frame; it is
//!   decompressed when the message is read.

use crate::metadata::BagMetadata;
use crate::{Error, Result};
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// How rosbag2 compressed a bag (metadata.yaml `compression_mode`; the only format is zstd).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BagCompression {
    /// No rosbag2 compression (MCAP chunks may still be compressed: that is the storage's own).
    #[default]
    None,
    /// Each storage file compressed whole with zstd (`compression_mode: FILE`).
    File,
    /// Each message's data compressed with zstd (`compression_mode: MESSAGE`).
    Message,
}

impl BagCompression {
    /// rosbag2's name of the mode: `""`, `FILE` or `MESSAGE`.
    pub fn mode(self) -> &'static str {
        match self {
            BagCompression::None => "",
            BagCompression::File => "FILE",
            BagCompression::Message => "MESSAGE",
        }
    }

    /// The compression format: `""` for none, else `zstd` (the only one rosbag2 ships).
    pub fn format(self) -> &'static str {
        match self {
            BagCompression::None => "",
            BagCompression::File | BagCompression::Message => ZSTD,
        }
    }
}

const ZSTD: &str = "zstd";
/// The magic number every zstd frame starts with (0xFD2FB528, little endian).
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// Bytes copied per step while decompressing a file.
const COPY_BUFFER: usize = 256 * 1024;

/// The compression a bag's metadata declares. Modes are matched ignoring case (rosbag2 writes
/// `FILE`, `rosbags` writes `file`); an empty mode or `none` means no compression, whatever the
/// format says. Any other mode, or a format other than zstd, is an error naming the bag.
pub(super) fn compression_of(bag: &Path, md: &BagMetadata) -> Result<BagCompression> {
    let mode = md.compression_mode.trim();
    let compression = if mode.is_empty() || mode.eq_ignore_ascii_case("none") {
        return Ok(BagCompression::None);
    } else if mode.eq_ignore_ascii_case("file") {
        BagCompression::File
    } else if mode.eq_ignore_ascii_case("message") {
        BagCompression::Message
    } else {
        return Err(unsupported(bag, md));
    };
    if md.compression_format.trim().eq_ignore_ascii_case(ZSTD) {
        Ok(compression)
    } else {
        Err(unsupported(bag, md))
    }
}

fn unsupported(bag: &Path, md: &BagMetadata) -> Error {
    Error::UnsupportedCompression {
        path: bag.to_path_buf(),
        mode: md.compression_mode.clone(),
        format: md.compression_format.clone(),
    }
}

/// Whether a storage file listed by a `FILE`-compressed bag is compressed: it is when its name
/// ends in `.zstd` or it starts with the zstd magic number. (rosbag2 compresses a file once it is
/// closed, so the last file of a bag whose recorder was killed can be plain.)
pub(super) fn is_compressed_file(path: &Path) -> Result<bool> {
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case(ZSTD)) {
        return Ok(true);
    }
    let mut head = Vec::with_capacity(ZSTD_MAGIC.len());
    File::open(path)
        .and_then(|f| f.take(ZSTD_MAGIC.len() as u64).read_to_end(&mut head))
        .map_err(|e| Error::io(path, e))?;
    Ok(head == ZSTD_MAGIC)
}

/// The scratch directory the decompressed storage files of one reader go to; removed (with them)
/// when dropped.
pub(super) struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    /// A new empty directory under [`std::env::temp_dir`].
    pub(super) fn new() -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("lockstep_bag_")
            .tempdir()
            .map_err(|e| Error::io(std::env::temp_dir(), e))?;
        Ok(Scratch { dir })
    }

    /// Decompresses the zstd file `compressed` (the `index`-th storage file of the bag) into the
    /// scratch directory, streaming (never the whole file in memory), and returns the path of the
    /// copy: the file's name without `.zstd`, prefixed by its index so names cannot collide.
    pub(super) fn decompress_file(&self, index: usize, compressed: &Path) -> Result<PathBuf> {
        let name = compressed
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let plain = match name.len().checked_sub(".zstd".len()) {
            Some(cut) if name.is_char_boundary(cut) && name[cut..].eq_ignore_ascii_case(".zstd") => {
                &name[..cut]
            }
            _ => name.as_str(),
        };
        let to = self.dir.path().join(format!("{index}_{plain}"));
        let fail = |source: std::io::Error| Error::Decompress {
            path: compressed.to_path_buf(),
            to: to.clone(),
            format: ZSTD.to_string(),
            source,
        };
        let input = File::open(compressed).map_err(|e| Error::io(compressed, e))?;
        let mut decoder = zstd::stream::read::Decoder::new(input).map_err(fail)?;
        let mut output = BufWriter::new(File::create(&to).map_err(fail)?);
        let mut buf = vec![0u8; COPY_BUFFER];
        loop {
            let n = match decoder.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(fail(e)),
            };
            output.write_all(&buf[..n]).map_err(fail)?;
        }
        output.flush().map_err(fail)?;
        Ok(to)
    }
}

/// The data of one message of a `MESSAGE`-compressed bag, decompressed. `file`, `topic` and
/// `log_time_ns` only name the message in the error.
pub(super) fn decompress_message(data: &[u8], file: &Path, topic: &str, log_time_ns: u64) -> Result<Vec<u8>> {
    zstd::stream::decode_all(data).map_err(|source| Error::DecompressMessage {
        path: file.to_path_buf(),
        topic: topic.to_string(),
        log_time_ns,
        format: ZSTD.to_string(),
        source,
    })
}
