//! Whether `lockstep-ros` can start in this shell: it links the ROS 2 libraries (rcl, rmw, the message type
//! supports), which the dynamic loader finds only once a ROS environment is sourced. Asked before handing a
//! verb over, so that a plain shell gets one line naming the library and what to source, not the loader's
//! message.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};

/// The first library `binary` needs that the dynamic loader cannot find with this process's environment, or
/// `None` when every one is found (or the question cannot be asked: then the binary is started and speaks for
/// itself). The loader answers without running the program (`LD_TRACE_LOADED_OBJECTS`, what `ldd` uses).
pub fn missing_library(binary: &Path) -> Option<String> {
    let listed = Command::new(binary)
        .env("LD_TRACE_LOADED_OBJECTS", "1")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    first_not_found(&String::from_utf8_lossy(&listed.stdout))
}

/// The first `<library> => not found` line of the loader's list.
fn first_not_found(list: &str) -> Option<String> {
    list.lines().find_map(|line| {
        let (name, found) = line.trim().split_once("=>")?;
        (found.trim() == "not found").then(|| name.trim().to_owned())
    })
}

/// The verb as the user typed it: `bag play`, `replay`.
pub fn verb_words(args: &[OsString]) -> String {
    let words = match args.first() {
        Some(first) if first == "bag" => 2,
        _ => 1,
    };
    args.iter()
        .take(words)
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a verb that joins the ROS graph says when `library` cannot be loaded.
pub fn no_ros_environment(verb: &str, library: &str) -> String {
    format!(
        "`lockstep {verb}` joins the ROS graph and needs the ROS 2 libraries, but {library} cannot be loaded: \
         source the ROS environment first (in a clone of Lockstep: `source scripts/env-local.sh`; on a ROS 2 \
         install: `source /opt/ros/jazzy/setup.bash` and the workspace's `install/setup.bash`)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loaders_list_names_the_first_missing_library() {
        let list = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibrcl_action.so => not found\n\
                    \tlibrcl.so => /opt/ros/lib/librcl.so (0x7f)\n\
                    \tlibrmw.so => not found\n";
        assert_eq!(first_not_found(list).as_deref(), Some("librcl_action.so"));
        assert_eq!(first_not_found("\tlibc.so.6 => /lib/libc.so.6 (0x7f)\n"), None);
    }

    #[test]
    fn the_verb_is_one_word_or_two_under_bag() {
        let args = |s: &str| s.split_whitespace().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(verb_words(&args("bag play -i run1")), "bag play");
        assert_eq!(verb_words(&args("replay rec/ -o out")), "replay");
        assert_eq!(verb_words(&args("view --port 8765")), "view");
    }
}
