//! ROS 2 XML launch files where `ros2 launch` is not installed: `lockstep launch <file> [name:=value ...]`.
//!
//! [`plan_file`] reads a file and its includes into a [`Plan`] (every process with its command line), with
//! `ros2 launch`'s meaning of `arg`, `let`, `if`/`unless`, scoped `group`s, `push-ros-namespace`, `set_env`,
//! `set_remap`, `set_parameter`, `include`, `node` (`param` from a file or inline, `remap`, `env`) and
//! `executable`, and the substitutions `var`, `env`, `find-pkg-share`, `find-pkg-prefix`, `dirname`,
//! `filename`, `anon`. Anything else is an error naming the tag (or attribute, or substitution), the file and
//! the line. A `launch-prefix` is split as a shell would, and `--trace` preloads the rcl interceptor into
//! every node ([`prefix`]). [`run`] starts the plan: prefixed output, log files, SIGINT forwarding,
//! `on_exit="shutdown"`, and `<?lockstep wait-for?>`: processes held back until an earlier one prints a line.
//! A file past one of the bounds of [`limits`] (size, nesting, include cycles, expanded text) is refused with
//! the place and the limit.

pub mod ament;
mod error;
mod gate;
pub mod limits;
pub mod plan;
pub mod prefix;
mod run;
mod stuck;
pub mod subst;
mod walk;

#[cfg(feature = "cli")]
pub mod cli;

pub use ament::PackageIndex;
pub use error::{LaunchError, Location, Result};
pub use plan::{DeclaredArg, NodeSpec, Output, ParamSource, Plan, ProcessSpec, Wait};
pub use run::{run, say, sigterm_timeout, Ended, Outcome, RunOptions};
pub use walk::{parse_arguments, plan_file, LaunchOptions};
