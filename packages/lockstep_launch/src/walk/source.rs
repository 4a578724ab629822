//! One launch file being read: its path and a quick way from a byte offset to line and column, so that
//! the places remembered for every `<arg>`, `<node>` and `<include>` cost no rescan of the file.

use std::path::{Path, PathBuf};

use crate::error::Location;

/// Characters are counted from a mark every `MARK_BYTES` bytes.
const MARK_BYTES: usize = 4096;

pub(super) struct Source<'t> {
    pub(super) path: PathBuf,
    text: &'t str,
    /// Byte offset where each line starts.
    line_starts: Vec<usize>,
    /// Characters before byte `k * MARK_BYTES`.
    char_marks: Vec<usize>,
}

impl<'t> Source<'t> {
    pub(super) fn new(path: &Path, text: &'t str) -> Self {
        let bytes = text.as_bytes();
        let mut line_starts = vec![0];
        line_starts.extend(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        );
        let mut char_marks = Vec::with_capacity(bytes.len() / MARK_BYTES + 1);
        let mut chars = 0;
        for chunk in bytes.chunks(MARK_BYTES) {
            char_marks.push(chars);
            chars += chunk.iter().filter(|b| !is_continuation(**b)).count();
        }
        Self {
            path: path.to_path_buf(),
            text,
            line_starts,
            char_marks,
        }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Line and column (1-based, the column in characters as roxmltree counts them) of byte `pos`.
    pub(super) fn location(&self, pos: usize) -> Location {
        let pos = pos.min(self.text.len());
        let line = self.line_starts.partition_point(|start| *start <= pos);
        let start = self.line_starts.get(line.saturating_sub(1)).copied().unwrap_or(0);
        let column = self.chars_before(pos) - self.chars_before(start) + 1;
        Location {
            file: self.path.clone(),
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column).unwrap_or(u32::MAX),
        }
    }

    fn chars_before(&self, pos: usize) -> usize {
        let mark = pos / MARK_BYTES;
        let counted = self.char_marks.get(mark).copied().unwrap_or(0);
        let from = mark * MARK_BYTES;
        counted
            + self.text.as_bytes()[from.min(pos)..pos]
                .iter()
                .filter(|b| !is_continuation(**b))
                .count()
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_match_roxmltree() {
        let text = format!(
            "<a>\n  <b x=\"é\u{1F600}\"/>\r\n{}<c/>\n\n <d/></a>",
            "é".repeat(5000)
        );
        let doc = roxmltree::Document::parse(&text).unwrap();
        let source = Source::new(Path::new("f"), &text);
        for pos in (0..=text.len()).filter(|p| text.is_char_boundary(*p)) {
            let theirs = doc.text_pos_at(pos);
            let ours = source.location(pos);
            assert_eq!(
                (ours.line, ours.column),
                (theirs.row, theirs.col),
                "at byte {pos}"
            );
        }
    }
}
