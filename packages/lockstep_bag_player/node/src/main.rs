//! `lockstep_bag_player`: plays a bag (parameter `bag`) like `ros2 bag play`; see the crate docs and
//! [`lockstep_bag_player_node::PlayerParams`] for the parameters. It stays up after the end (`~/play` plays
//! again) unless `exit_at_end` is set.

use std::process::ExitCode;

fn main() -> ExitCode {
    lockstep_ros::help::exit_if_requested(&lockstep_ros::help::NodeHelp {
        binary: "lockstep_bag_player",
        about: "plays a bag (parameter `bag`) like `ros2 bag play`: recorded timing and QoS, a stable order for equal timestamps, /clock, and pause / resume / seek services.",
        readme: Some(include_str!("../../README.md")),
        rules: <lockstep_bag_player_node::PlayerParams as lockstep_ros::ParamRules>::param_rules(),
    });
    match lockstep_bag_player_node::run(lockstep_bag_player_node::PlayerParams::default(), false, None) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line, each cause once; never a backtrace (not `{:?}`).
            eprintln!("error: {}", lockstep_bag::error_chain(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}
