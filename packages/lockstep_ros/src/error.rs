//! The crate's error type and the trait attaching what a node was doing to an r2r error; a leaf module so
//! every other module can use them without importing the crate root.

/// Any error a node's own code returns (anyhow errors convert into it).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What can go wrong while starting, running or stopping a node.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("ROS error while {action}: {source}")]
    Ros {
        action: String,
        #[source]
        source: r2r::Error,
    },
    #[error("could not start the tokio runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("node `{node}` failed: {source}")]
    Node { node: String, source: BoxError },
    #[error("the node mutex was poisoned by a panic in another thread")]
    Poisoned,
    /// A parameter's start value breaks its rule (the message names it, its value and its range).
    #[error("{0}")]
    Parameter(String),
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Attach what we were doing to an r2r error.
pub trait RosContext<T> {
    fn ros_context(self, action: impl Into<String>) -> Result<T>;

    /// Like [`RosContext::ros_context`], describing the action only on error: for calls on a hot path
    /// (publishing every message) whose description has to be formatted.
    fn with_ros_context(self, action: impl FnOnce() -> String) -> Result<T>;
}

impl<T> RosContext<T> for std::result::Result<T, r2r::Error> {
    fn ros_context(self, action: impl Into<String>) -> Result<T> {
        self.with_ros_context(|| action.into())
    }

    fn with_ros_context(self, action: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::Ros {
            action: action(),
            source,
        })
    }
}

/// r2r's name of a parameter type (`ParameterValue::Integer`) in a user's words.
pub(crate) fn type_words(ty: &str) -> &str {
    match ty.rsplit("::").next().unwrap_or(ty) {
        "Bool" => "true or false",
        "Integer" => "an integer",
        "Double" => "a real number",
        "String" => "a string",
        "ByteArray" => "a list of bytes",
        "BoolArray" => "a list of true / false",
        "IntegerArray" => "a list of integers",
        "DoubleArray" => "a list of real numbers",
        "StringArray" => "a list of strings",
        other => other,
    }
}

/// A node binary's outcome as the process's: success, or one line on stderr, `<node>: <what>: <cause>`, each
/// cause said once, and failure. Not `{:?}` of the error (what `main` returning an error prints): that is a
/// multi-line "Caused by:" list, and a backtrace whenever RUST_BACKTRACE is set.
pub fn exit_status<E>(node: &str, result: std::result::Result<(), E>) -> std::process::ExitCode
where
    E: std::ops::Deref<Target = dyn std::error::Error + Send + Sync + 'static>,
{
    let Err(error) = result else {
        return std::process::ExitCode::SUCCESS;
    };
    let text = lockstep_bag::error_chain(&*error);
    if text.starts_with(node) {
        eprintln!("{text}");
    } else {
        eprintln!("{node}: {text}");
    }
    std::process::ExitCode::FAILURE
}
