//! Errors of the simulator core. Scene diagnostics read `file:line:column: error: row R, column C: ...`, where
//! `line:column` is the position in the text (1-based) and `row`/`column` the 0-based cell indices used by the
//! simulator everywhere else (destination, rviz, the ASCII map).

use std::path::PathBuf;

/// Everything that can go wrong loading a scene or rules, or driving the simulator.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A scene file could not be read.
    #[error("{}: error: cannot read scene file: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The first line is not `columns rows [cell_size_m]`.
    #[error("{origin}:{line}:{text_column}: error: scene header: {message}")]
    SceneHeader {
        /// File path or origin name.
        origin: String,
        /// 1-based line in the file.
        line: usize,
        /// 1-based character column in the file.
        text_column: usize,
        /// What is wrong.
        message: String,
    },
    /// A cell is not an integer typecode.
    #[error("{origin}:{line}:{text_column}: error: row {row}, column {column}: `{token}` is not an integer typecode")]
    NotAnInteger {
        /// File path or origin name.
        origin: String,
        /// 1-based line in the file.
        line: usize,
        /// 1-based character column in the file.
        text_column: usize,
        /// 0-based cell row.
        row: usize,
        /// 0-based cell column.
        column: usize,
        /// The offending text.
        token: String,
    },
    /// A matrix row does not have as many cells as the header's column count.
    #[error(
        "{origin}:{line}:1: error: row {row} has {found} cell(s) but the header says {expected} columns"
    )]
    RaggedRow {
        /// File path or origin name.
        origin: String,
        /// 1-based line in the file.
        line: usize,
        /// 0-based cell row.
        row: usize,
        /// Cells found.
        found: usize,
        /// The header's column count.
        expected: usize,
    },
    /// The matrix does not have as many rows as the header says.
    #[error("{origin}:{line}:1: error: the matrix has {found} row(s) but the header says {expected}")]
    RowCount {
        /// File path or origin name.
        origin: String,
        /// 1-based line where the mismatch shows (the first extra row, or the end of the file).
        line: usize,
        /// Rows found.
        found: usize,
        /// The header's row count.
        expected: usize,
    },
    /// No `surface` rule decodes the typecode of a cell and it is not an `obstacle` either.
    #[error(
        "{origin}:{line}:{text_column}: error: row {row}, column {column}: unknown typecode {code}: no \
         `surface` rule decodes it and no `obstacle` rule claims it"
    )]
    UnknownTypecode {
        /// File path or origin name.
        origin: String,
        /// 1-based line in the file.
        line: usize,
        /// 1-based character column in the file.
        text_column: usize,
        /// 0-based cell row.
        row: usize,
        /// 0-based cell column.
        column: usize,
        /// The typecode.
        code: i64,
    },
    /// The surface rules give a typecode an unusable or ambiguous decoding.
    #[error("{origin}: error: typecode {code}: {message}")]
    BadSurface {
        /// The scene file (the rules apply to its codes).
        origin: String,
        /// The typecode.
        code: i64,
        /// What is wrong (two decodings, a negative acceleration...).
        message: String,
    },
    /// The rule files do not derive what the simulator reads back.
    #[error("{files}: error: {message}")]
    RulesContract {
        /// The rule files, comma separated.
        files: String,
        /// The missing or misshapen predicate.
        message: String,
    },
    /// A rule file failed to load, parse or check (the diagnostics carry `file:line:column`).
    #[error(transparent)]
    Rules(#[from] lockstep_rules::Error),
    /// A cell cannot be used (as destination or start): outside the grid or an obstacle.
    #[error("error: cell (column {column}, row {row}) {reason}")]
    BadCell {
        /// Requested column.
        column: i64,
        /// Requested row.
        row: i64,
        /// Why not.
        reason: String,
    },
    /// A configuration value is out of range.
    #[error("error: `{name}` {reason}")]
    BadParameter {
        /// The configuration field.
        name: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
    /// A node parameter holds a value the simulator cannot use.
    #[error("parameter `{name}` is {value}; it must be {wanted}")]
    ParameterValue {
        /// The parameter.
        name: String,
        /// Its value, as written.
        value: String,
        /// What it must be (`> 0`, `>= 2`...).
        wanted: String,
    },
    /// A cell given as two parameters (column, row) is neither a cell nor "none".
    #[error("{name} (column {column}, row {row}): both must be >= 0, or both -1 for none")]
    CellParameter {
        /// What the cell is for (`start`, `destination`).
        name: String,
        /// The column parameter's value.
        column: i64,
        /// The row parameter's value.
        row: i64,
    },
    /// An input from outside (a command, a request, a run-time parameter) was dropped: not finite or out of
    /// range. Nothing changed.
    #[error("error: {input} dropped: {reason}")]
    BadInput {
        /// Where it came from (`cmd_vel`, `drive`, `time_scale`...).
        input: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A drive script could not be read or understood.
    #[error("{origin}:{line}: error: drive script: {message}")]
    DriveScript {
        /// The file (or `<inline>`).
        origin: String,
        /// 1-based line (0: the file as a whole).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A drive script was asked for outside commanded mode.
    #[error("drive_script `{path}` needs mode `commanded` (the mode is `{mode}`)")]
    DriveNeedsCommanded {
        /// The script, as the parameter named it.
        path: String,
        /// The mode in force.
        mode: String,
    },
    /// Several diagnostics, one per line.
    #[error("{}", errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Multiple {
        /// The diagnostics, in file order.
        errors: Vec<Error>,
    },
}

/// Result with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// `Ok` when `value` is finite and `> 0` (`positive`) or `>= 0`; the error names the field.
pub(crate) fn check_finite(name: &'static str, value: f64, positive: bool) -> Result<()> {
    if value.is_finite() && (value > 0.0 || (!positive && value == 0.0)) {
        Ok(())
    } else {
        Err(Error::BadParameter {
            name,
            reason: format!(
                "is {value}; it must be a finite number {}",
                if positive { "> 0" } else { ">= 0" }
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_allowed_where_it_means_off() {
        assert!(check_finite("x", 0.0, false).is_ok());
        assert!(check_finite("x", 0.0, true).is_err());
        assert!(check_finite("x", -1e-300, false).is_err());
        assert!(check_finite("x", f64::NAN, false).is_err());
    }
}
