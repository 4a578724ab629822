//! Dynamic decoding of ROS 2 messages: CDR bytes read with nothing but the message definition stored in
//! the bag (the `ros2msg` schema text: a type's `.msg` text, then each dependency after a line of `=`
//! and `MSG: <type>`), no generated code and no ROS installation.
//!
//! - [`Schema::parse`] turns a schema text into a table of message types (fields, array kinds, bounds;
//!   constants are read and dropped: they are not on the wire).
//! - [`Schema::decode`] reads one serialized message (XCDR1 with its 4-byte encapsulation header, little
//!   or big endian: what ROS 2's rmw implementations write) into a [`Value`].
//! - [`Schema::encode`] writes a [`Value`] back as canonical CDR; [`Schema::canonical`] zeroes the padding
//!   of received bytes (the input of payload digests).
//! - [`Value::to_yaml`] prints it as `ros2 topic echo` does; [`Value::numeric_leaves`] lists every number
//!   with its field path (for comparisons).
//!
//! Errors name the type and line of a bad definition, or the field path and byte offset where a message
//! stops making sense.

mod decode;
mod encode;
mod error;
mod schema;
mod value;

pub use error::{CdrError, Result};
pub use schema::{ArrayKind, Field, FieldType, MessageType, Primitive, Schema};
pub use value::{Leaf, Value};
