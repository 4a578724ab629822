//! The errors of generic subscriptions and publishers.

use crate::rcl_node::RclError;
use crate::typesupport::TypeSupportError;

/// What can go wrong creating or using a generic entity.
#[derive(Debug, thiserror::Error)]
pub enum GenericError {
    #[error(transparent)]
    TypeSupport(#[from] TypeSupportError),
    #[error("{what} `{topic}`: {source}")]
    Rcl {
        what: &'static str,
        topic: String,
        #[source]
        source: RclError,
    },
    #[error(transparent)]
    Node(#[from] RclError),
}
