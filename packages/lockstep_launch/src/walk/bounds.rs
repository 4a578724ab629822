//! The limits of [`crate::limits`] as the walker meets them: reading a file (size, text, include count and
//! cycles), nesting, and the text that expanding and scope copies produce.

use std::io::Read;
use std::path::{Path, PathBuf};

use roxmltree::Node;
use serde_norway::Value;

use super::source::Source;
use super::walker::{at, Scope, Walker};
use crate::error::{LaunchError, Location, Result};
use crate::limits::{bytes_text, MAX_COPIED_BYTES, MAX_DEPTH, MAX_FILE_BYTES, MAX_INCLUDES, MAX_PROCESSES};

impl Walker<'_> {
    /// Reads a launch file as text, within the size limit, unless it is already being read (an include
    /// cycle) or one launch has read too many files. The file stays on the stack of files being read
    /// until [`Walker::file`] is done with it.
    pub(super) fn read(&mut self, path: &Path, included_at: Option<&Location>) -> Result<String> {
        let here = || {
            included_at.cloned().unwrap_or_else(|| Location {
                file: path.to_path_buf(),
                line: 1,
                column: 1,
            })
        };
        self.files_read += 1;
        if self.files_read > MAX_INCLUDES {
            return Err(LaunchError::Limit {
                at: here(),
                message: format!("more than {MAX_INCLUDES} included files (limit of one launch)"),
            });
        }
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if let Some(first) = self.files.iter().position(|f| f == &canonical) {
            return Err(LaunchError::Limit {
                at: here(),
                message: format!("include cycle: {}", cycle_text(&self.files[first..], &canonical)),
            });
        }
        let io = |source| LaunchError::Io {
            path: path.to_path_buf(),
            source,
        };
        // A FIFO would block the open for ever, `/dev/zero` never end: only a regular file is read.
        lockstep_ranges::file::check_regular(path, u64::MAX).map_err(|e| io(std::io::Error::other(e)))?;
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .map_err(io)?
            .take(MAX_FILE_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() > MAX_FILE_BYTES {
            return Err(LaunchError::Limit {
                at: Location {
                    file: path.to_path_buf(),
                    line: 1,
                    column: 1,
                },
                message: format!(
                    "the file is larger than {}, the limit of one launch file",
                    bytes_text(MAX_FILE_BYTES)
                ),
            });
        }
        self.charge(bytes.len(), here)?;
        let text = String::from_utf8(bytes).map_err(|err| LaunchError::NotText {
            path: path.to_path_buf(),
            offset: err.utf8_error().valid_up_to(),
        })?;
        self.files.push(canonical);
        Ok(text)
    }

    /// Runs `inside` one nesting level deeper, refusing `node` if that is past the depth limit.
    pub(super) fn nested<T>(
        &mut self,
        src: &Source<'_>,
        node: Node<'_, '_>,
        inside: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        if self.depth >= MAX_DEPTH {
            return Err(LaunchError::Limit {
                at: at(src, node),
                message: format!(
                    "elements nest deeper than {MAX_DEPTH} levels (counting <launch>, <group> and <include> \
                     across included files; limit {MAX_DEPTH})"
                ),
            });
        }
        self.depth += 1;
        let result = inside(self);
        self.depth -= 1;
        result
    }

    /// Counts `bytes` of text produced or copied at `node`.
    pub(super) fn spend(&mut self, src: &Source<'_>, node: Node<'_, '_>, bytes: usize) -> Result<()> {
        self.charge(bytes, || at(src, node))
    }

    fn charge(&mut self, bytes: usize, at: impl FnOnce() -> Location) -> Result<()> {
        self.copied = self.copied.saturating_add(bytes).saturating_add(1);
        if self.copied > MAX_COPIED_BYTES {
            return Err(LaunchError::Limit {
                at: at(),
                message: format!(
                    "reading this launch would copy more than {} of text (files, expanded values, and what \
                     groups, includes and nodes copy of their scope; limit of one launch)",
                    bytes_text(MAX_COPIED_BYTES)
                ),
            });
        }
        Ok(())
    }

    /// Refuses the process of `node` if the launch already has as many as it may start.
    pub(super) fn one_more_process(&mut self, src: &Source<'_>, node: Node<'_, '_>) -> Result<()> {
        if self.plan.processes.len() >= MAX_PROCESSES {
            return Err(LaunchError::Limit {
                at: at(src, node),
                message: format!("more than {MAX_PROCESSES} processes (limit of one launch)"),
            });
        }
        Ok(())
    }
}

fn cycle_text(files: &[PathBuf], again: &Path) -> String {
    let mut text = String::new();
    for (i, file) in files
        .iter()
        .chain(std::iter::once(&again.to_path_buf()))
        .enumerate()
    {
        match i {
            0 => text += &file.display().to_string(),
            1 => text += &format!(" includes {}", file.display()),
            _ => text += &format!(", which includes {}", file.display()),
        }
    }
    text
}

/// About how many bytes copying `scope` copies.
pub(super) fn scope_bytes(scope: &Scope) -> usize {
    const ENTRY: usize = 16;
    let pairs = |items: &mut dyn Iterator<Item = (usize, usize)>| -> usize {
        items.map(|(a, b)| a + b + ENTRY).sum()
    };
    scope.namespace.len()
        + pairs(&mut scope.vars.iter().map(|(k, v)| (k.len(), v.len())))
        + pairs(
            &mut scope
                .env
                .iter()
                .map(|(k, v)| (k.len(), v.as_ref().map_or(0, String::len))),
        )
        + pairs(&mut scope.remaps.iter().map(|(a, b)| (a.len(), b.len())))
        + pairs(&mut scope.params.iter().map(|(k, v)| (k.len(), value_bytes(v))))
        + pairs(&mut scope.waits.iter().map(|w| (w.process.len(), w.output.len())))
}

fn value_bytes(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len(),
        Value::Sequence(items) => items.iter().map(value_bytes).sum::<usize>() + 16,
        _ => 16,
    }
}

/// The byte offset of the first element nested deeper than `limit` in `text`, found without building a
/// tree: the XML parser recurses once per level and would overflow the stack on a hostile file before
/// the walker saw it. Comments, CDATA, processing instructions, declarations and quoted attribute values
/// are skipped so that a `<` or `>` inside them does not count.
pub(super) fn too_deep(text: &str, limit: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let find = |from: usize, needle: &[u8]| -> usize {
        bytes
            .get(from..)
            .and_then(|rest| rest.windows(needle.len()).position(|w| w == needle))
            .map_or(bytes.len(), |i| from + i + needle.len())
    };
    let mut depth = 0usize;
    let mut pos = 0;
    while let Some(offset) = bytes
        .get(pos..)
        .and_then(|rest| rest.iter().position(|b| *b == b'<'))
    {
        let start = pos + offset;
        let rest = &bytes[start..];
        if rest.starts_with(b"<!--") {
            pos = find(start + 4, b"-->");
        } else if rest.starts_with(b"<![CDATA[") {
            pos = find(start + 9, b"]]>");
        } else if rest.starts_with(b"<?") {
            pos = find(start + 2, b"?>");
        } else if rest.starts_with(b"<!") || rest.starts_with(b"</") {
            if rest.starts_with(b"</") {
                depth = depth.saturating_sub(1);
            }
            pos = find(start + 2, b">");
        } else {
            // A start tag: up to its `>` outside quotes; `/>` closes it at once.
            let mut i = start + 1;
            let mut quote = None;
            let mut empty = false;
            while let Some(&b) = bytes.get(i) {
                i += 1;
                match quote {
                    Some(q) if b == q => quote = None,
                    Some(_) => {}
                    None if b == b'"' || b == b'\'' => quote = Some(b),
                    None if b == b'>' => {
                        empty = bytes.get(i.wrapping_sub(2)) == Some(&b'/');
                        break;
                    }
                    None => {}
                }
            }
            if !empty {
                depth += 1;
                if depth > limit {
                    return Some(start);
                }
            }
            pos = i;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::too_deep;

    #[test]
    fn nesting_is_measured_outside_comments_cdata_and_quotes() {
        assert_eq!(too_deep("<a><b><c/></b></a>", 2), None);
        assert_eq!(too_deep("<a><b><c></c></b></a>", 2), Some(6));
        assert_eq!(too_deep("<a><b/><b/><b/></a>", 2), None);
        assert_eq!(
            too_deep("<a><!-- <b><b><b> --><![CDATA[<b><b>]]><?pi <b> ?></a>", 1),
            None
        );
        assert_eq!(too_deep("<a x='>' y=\"<b>\"><b/></a>", 1), None);
        assert_eq!(too_deep("<a x='/'><b></b></a>", 1), Some(9));
        assert_eq!(too_deep(&"<g>".repeat(100_000), 64), Some(64 * 3));
        assert_eq!(too_deep("<a", 0), Some(0));
        assert_eq!(too_deep("", 0), None);
    }
}
