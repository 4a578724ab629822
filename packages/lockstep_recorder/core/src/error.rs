//! The errors of the recorder logic, in a leaf module so that the modules which report them do not have to
//! import the crate root (which in turn imports them).

/// Errors of the recorder logic.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("parameter `{parameter}`: invalid regular expression `{pattern}`: {source}")]
    InvalidRegex {
        parameter: &'static str,
        pattern: String,
        #[source]
        source: regex::Error,
    },
    #[error("parameter `topics`: `{topic}` is not a valid topic name (expected `/name` or `name`)")]
    InvalidTopic { topic: String },
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, Error>;
