//! The process's ROS context, created from the program's ROS arguments.

use crate::{params_file, Error, Result, RosContext as _};

/// The ROS context, once the parameter files of the ROS arguments passed [`params_file::check`]. rcl
/// refusing the ROS arguments anyway makes r2r panic: that becomes an error here, without a backtrace.
pub(crate) fn create() -> Result<r2r::Context> {
    for file in params_file::files_in(std::env::args()) {
        params_file::check(&file).map_err(Error::Parameter)?;
    }
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let created = std::panic::catch_unwind(r2r::Context::create);
    std::panic::set_hook(hook);
    match created {
        Ok(ctx) => ctx.ros_context("creating the ROS context"),
        Err(_) => Err(Error::Parameter(
            "rcl refused the ROS arguments (its error is on the line above): check --params-file, -p and -r"
                .into(),
        )),
    }
}
