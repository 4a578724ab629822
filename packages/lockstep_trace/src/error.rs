//! Errors of this crate.

/// What can go wrong decoding, converting or analysing dependency information.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bytes that are not a valid protobuf encoding of the expected message.
    #[error("cannot decode {what} from {len} protobuf bytes: {source}")]
    Decode {
        /// The message that was expected (`Header`, `Topology`, ...).
        what: &'static str,
        /// How many bytes were given.
        len: usize,
        #[source]
        source: prost::DecodeError,
    },
    /// A timestamp that is NaN or infinite, or out of the nanosecond range.
    #[error("{what} of module `{module}` on `{channel}` has an invalid timestamp {seconds} s")]
    BadTimestamp {
        /// Which header field.
        what: &'static str,
        /// Module that wrote it.
        module: String,
        /// Channel it describes.
        channel: String,
        /// The offending value.
        seconds: f64,
    },
    /// The module graph is not a DAG: lock-step replay needs a topological order.
    #[error("module topology has a cycle: {}", describe_cycle(.modules, .channels))]
    Cycle {
        /// Modules on the cycle in order; the last one writes a channel the first one reads.
        modules: Vec<String>,
        /// `channels[i]` is the channel through which `modules[i]` feeds the next module on the cycle.
        channels: Vec<String>,
    },
    /// A header, input or component with an empty module or channel name where one is required.
    #[error("{what}: empty {field}")]
    Empty {
        /// What was being added.
        what: String,
        /// The empty field.
        field: &'static str,
    },
    /// `Tracer::finish_latest` was asked for an input channel it never received.
    #[error("module `{module}` has no input received on `{channel}` yet")]
    NoInput {
        /// The tracer's module.
        module: String,
        /// The channel without any recorded input.
        channel: String,
    },
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, Error>;

fn describe_cycle(modules: &[String], channels: &[String]) -> String {
    let mut text = String::new();
    for (module, channel) in modules.iter().zip(channels) {
        text.push_str(&format!("{module} -({channel})-> "));
    }
    text.push_str(modules.first().map(String::as_str).unwrap_or("?"));
    text
}
