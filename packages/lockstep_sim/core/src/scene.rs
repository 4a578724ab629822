//! Scene matrix files: the first line is `columns rows [cell_size_m]`, then one integer
//! road-surface typecode per cell, whitespace separated, one matrix row per line. Blank lines and lines
//! starting with `#` are ignored. Row 0 is the first matrix line; it is drawn at the top (largest y) of the
//! `map` frame, so the file looks like the map. Cell (column c, row r) covers
//! `x in [c, c+1) * cell_size_m` and `y in [rows-1-r, rows-r) * cell_size_m`.

use std::path::Path;

use crate::error::{Error, Result};

/// A cell index: 0-based column (along +x) and row (row 0 at the top, i.e. along -y).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cell {
    /// 0-based column.
    pub column: usize,
    /// 0-based row (matrix line).
    pub row: usize,
}

/// A parsed scene matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Scene {
    origin: String,
    columns: usize,
    rows: usize,
    cell_size_m: f64,
    codes: Vec<i64>,
    /// 1-based (line, character column) of each cell's token, for diagnostics.
    positions: Vec<(usize, usize)>,
}

/// The largest scene file read.
const MAX_SCENE_BYTES: u64 = 16 << 20;

impl Scene {
    /// Reads and parses a scene file; diagnostics name the path.
    pub fn load(path: impl AsRef<Path>) -> Result<Scene> {
        let path = path.as_ref();
        // Only a regular file: a FIFO would block the read, `/dev/zero` never end.
        let text = lockstep_ranges::file::read_text(path, MAX_SCENE_BYTES).map_err(|e| Error::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other(e),
        })?;
        Scene::parse(&text, &path.display().to_string())
    }

    /// Parses scene text; `origin` names it in diagnostics.
    pub fn parse(text: &str, origin: &str) -> Result<Scene> {
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l))
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
        let header = Header::parse(lines.next(), origin)?;
        let (codes, positions) = parse_rows(lines, &header, origin)?;
        Ok(Scene {
            origin: origin.to_owned(),
            columns: header.columns,
            rows: header.rows,
            cell_size_m: header.cell_size_m,
            codes,
            positions,
        })
    }

    /// The file path or origin name given at parse time.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Number of columns (cells along x).
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// Number of rows (cells along y).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Edge length of a (square) cell in metres.
    pub fn cell_size_m(&self) -> f64 {
        self.cell_size_m
    }

    /// Width (x extent) in metres.
    pub fn width_m(&self) -> f64 {
        self.columns as f64 * self.cell_size_m
    }

    /// Height (y extent) in metres.
    pub fn height_m(&self) -> f64 {
        self.rows as f64 * self.cell_size_m
    }

    /// The typecode of `cell`, if inside the grid.
    pub fn code(&self, cell: Cell) -> Option<i64> {
        (cell.column < self.columns && cell.row < self.rows)
            .then(|| self.codes[cell.row * self.columns + cell.column])
    }

    /// Every typecode, row-major.
    pub fn codes(&self) -> &[i64] {
        &self.codes
    }

    /// The distinct typecodes, sorted.
    pub fn distinct_codes(&self) -> Vec<i64> {
        let mut v = self.codes.clone();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// 1-based (line, character column) of the token of `cell` in the file.
    pub fn text_position(&self, cell: Cell) -> Option<(usize, usize)> {
        (cell.column < self.columns && cell.row < self.rows)
            .then(|| self.positions[cell.row * self.columns + cell.column])
    }

    /// The cell containing the point, if inside the grid.
    pub fn cell_at(&self, x_m: f64, y_m: f64) -> Option<Cell> {
        let (c, r) = self.signed_cell_at(x_m, y_m);
        self.checked_cell(c, r)
    }

    /// The cell indices of a point, possibly outside the grid (negative or too large).
    pub fn signed_cell_at(&self, x_m: f64, y_m: f64) -> (i64, i64) {
        let c = (x_m / self.cell_size_m).floor() as i64;
        let from_bottom = (y_m / self.cell_size_m).floor() as i64;
        (c, self.rows as i64 - 1 - from_bottom)
    }

    /// `Some(cell)` when the signed indices lie inside the grid.
    pub fn checked_cell(&self, column: i64, row: i64) -> Option<Cell> {
        (column >= 0 && row >= 0 && (column as usize) < self.columns && (row as usize) < self.rows).then_some(
            Cell {
                column: column as usize,
                row: row as usize,
            },
        )
    }

    /// Centre of `cell` in the `map` frame.
    pub fn cell_center(&self, cell: Cell) -> (f64, f64) {
        let x = (cell.column as f64 + 0.5) * self.cell_size_m;
        let y = ((self.rows - 1 - cell.row) as f64 + 0.5) * self.cell_size_m;
        (x, y)
    }

    /// Lower-left corner (min x, min y) of the cell with signed indices (may be outside the grid).
    pub fn cell_min_corner(&self, column: i64, row: i64) -> (f64, f64) {
        let x = column as f64 * self.cell_size_m;
        let y = (self.rows as i64 - 1 - row) as f64 * self.cell_size_m;
        (x, y)
    }
}

/// Whitespace-separated tokens with their 1-based character column.
fn tokens(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start: Option<(usize, usize)> = None; // (byte, char column)
    for (char_index, (byte, ch)) in line.char_indices().enumerate() {
        if ch.is_whitespace() {
            if let Some((b, c)) = start.take() {
                out.push((c, &line[b..byte]));
            }
        } else if start.is_none() {
            start = Some((byte, char_index + 1));
        }
    }
    if let Some((b, c)) = start {
        out.push((c, &line[b..]));
    }
    out
}

fn fold(mut errors: Vec<Error>) -> Option<Error> {
    match errors.len() {
        0 => None,
        1 => errors.pop(),
        _ => Some(Error::Multiple { errors }),
    }
}
/// The first line of a scene: `columns rows [cell_size_m]`.
struct Header {
    /// 1-based line of the header.
    line: usize,
    columns: usize,
    rows: usize,
    cell_size_m: f64,
}

impl Header {
    /// Parses the header line (`None`: the file has no line); at most 4,000,000 cells.
    fn parse(first: Option<(usize, &str)>, origin: &str) -> Result<Header> {
        let header_err = |line: usize, text_column: usize, message: String| Error::SceneHeader {
            origin: origin.to_owned(),
            line,
            text_column,
            message,
        };
        let Some((header_line, header)) = first else {
            return Err(header_err(
                1,
                1,
                "empty file: expected `columns rows [cell_size_m]`".into(),
            ));
        };
        let header_tokens = tokens(header);
        if header_tokens.len() < 2 || header_tokens.len() > 3 {
            return Err(header_err(
                header_line,
                1,
                format!(
                    "expected `columns rows [cell_size_m]`, found {} value(s)",
                    header_tokens.len()
                ),
            ));
        }
        let positive = |(col, tok): (usize, &str), what: &str| -> Result<usize> {
            match tok.parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(header_err(
                    header_line,
                    col,
                    format!("{what} must be a positive integer, found `{tok}`"),
                )),
            }
        };
        let columns = positive(header_tokens[0], "columns")?;
        let rows = positive(header_tokens[1], "rows")?;
        let cell_size_m = match header_tokens.get(2) {
            None => 1.0,
            Some(&(col, tok)) => match tok.parse::<f64>() {
                Ok(s) if s.is_finite() && s > 0.0 => s,
                _ => {
                    return Err(header_err(
                        header_line,
                        col,
                        format!("cell_size_m must be a positive number of metres, found `{tok}`"),
                    ))
                }
            },
        };
        if columns.saturating_mul(rows) > 4_000_000 {
            return Err(header_err(
                header_line,
                1,
                format!("{columns} x {rows} cells is more than 4,000,000"),
            ));
        }

        Ok(Header {
            line: header_line,
            columns,
            rows,
            cell_size_m,
        })
    }
}

/// Where a cell's typecode is written: 1-based line and character column.
type TextPosition = (usize, usize);

/// The typecodes of the matrix rows after the header, with the line and column of each; every ragged row
/// and non-integer is reported, then a wrong row count.
fn parse_rows<'a>(
    lines: impl Iterator<Item = (usize, &'a str)>,
    header: &Header,
    origin: &str,
) -> Result<(Vec<i64>, Vec<TextPosition>)> {
    let (columns, rows, header_line) = (header.columns, header.rows, header.line);
    let mut codes = Vec::with_capacity(columns * rows);
    let mut positions = Vec::with_capacity(columns * rows);
    let mut errors = Vec::new();
    let mut row = 0;
    let mut last_line = header_line;
    let mut first_extra_line: Option<usize> = None;
    for (line, text) in lines {
        last_line = line;
        if row >= rows {
            // Count every extra row so the message says how many there are; point at the first.
            first_extra_line.get_or_insert(line);
            row += 1;
            continue;
        }
        let cells = tokens(text);
        if cells.len() != columns {
            errors.push(Error::RaggedRow {
                origin: origin.to_owned(),
                line,
                row,
                found: cells.len(),
                expected: columns,
            });
        } else {
            for (column, (text_column, tok)) in cells.into_iter().enumerate() {
                match tok.parse::<i64>() {
                    Ok(code) => {
                        codes.push(code);
                        positions.push((line, text_column));
                    }
                    Err(_) => errors.push(Error::NotAnInteger {
                        origin: origin.to_owned(),
                        line,
                        text_column,
                        row,
                        column,
                        token: tok.to_owned(),
                    }),
                }
            }
        }
        row += 1;
    }
    if let Some(err) = fold(errors) {
        return Err(err);
    }
    if row != rows {
        return Err(Error::RowCount {
            origin: origin.to_owned(),
            line: first_extra_line.unwrap_or(last_line + 1),
            found: row,
            expected: rows,
        });
    }
    Ok((codes, positions))
}
