//! The error type of schema parsing, decoding and encoding, in a leaf module of its own so the
//! parser and the codecs share it without importing the parent module.

/// What can go wrong reading a definition or decoding a message.
#[derive(Debug, thiserror::Error)]
pub enum CdrError {
    /// A line of a message definition could not be understood.
    #[error("definition of `{type_name}`, line {line}: {reason}: `{text}`")]
    Definition {
        /// The type whose text holds the line.
        type_name: String,
        /// 1-based line number within that type's text.
        line: usize,
        /// The line.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A field refers to a type the schema text does not define.
    #[error("`{type_name}` field `{field}` has type `{missing}`, which the definition does not include")]
    MissingType {
        /// The type holding the field.
        type_name: String,
        /// The field.
        field: String,
        /// The type that is not defined.
        missing: String,
    },
    /// Types that contain themselves (the wire format would be infinite).
    #[error("`{type_name}` contains itself through {path}")]
    Recursive {
        /// The type.
        type_name: String,
        /// The chain of fields leading back to it.
        path: String,
    },
    /// The encapsulation header names an encoding this decoder does not read.
    #[error("unsupported CDR encapsulation 0x{kind:02x} (reads XCDR1: 0x00 big endian, 0x01 little endian)")]
    Encapsulation {
        /// The second header byte.
        kind: u8,
    },
    /// The message ends, or holds an impossible value, at `offset`.
    #[error("at byte {offset}, field `{field}`: {reason}")]
    Data {
        /// Field path (`pose.position.x`, `data[3]`).
        field: String,
        /// Byte offset from the start of the serialized message (header included).
        offset: usize,
        /// What was wrong.
        reason: String,
    },
}

/// `Result` with a [`CdrError`].
pub type Result<T, E = CdrError> = std::result::Result<T, E>;
