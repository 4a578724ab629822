//! `lockstep_recorder`: the recorder node (see the library, [`lockstep_recorder_node`]).

use lockstep_recorder_node::RecorderParams;

fn main() -> std::process::ExitCode {
    lockstep_ros::exit_status("lockstep_recorder", run())
}

fn run() -> anyhow::Result<()> {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_recorder",
        about: "records topics of any installed message type into a rosbag2-compatible MCAP bag, like `ros2 bag record`, with the dependency headers of traced nodes and the module topology learnt from them. `lockstep bag record` runs the same recorder from the command line.",
        readme: Some(include_str!("../../README.md")),
        rules: <RecorderParams as lockstep_ros::ParamRules>::param_rules(),
    });
    lockstep_recorder_node::run("lockstep_recorder", RecorderParams::default(), None, false).map(|_| ())
}
