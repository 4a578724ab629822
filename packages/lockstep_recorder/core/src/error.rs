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
    #[error("parameter `{parameter}`: `{value}` is not {expected}")]
    InvalidChoice {
        parameter: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("{output} exists already: the recorder writes a new bag directory (choose another with -o)")]
    OutputExists { output: String },
    #[error("{flag} {value} is larger than the recorder accepts")]
    TooLarge { flag: &'static str, value: u64 },
    #[error("creating bag {output}")]
    CreateBag {
        output: String,
        #[source]
        source: lockstep_bag::Error,
    },
    #[error("the bag writer thread panicked")]
    WriterPanicked,
    #[error("starting the bag writer thread: {0}")]
    Thread(#[source] std::io::Error),
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, Error>;
