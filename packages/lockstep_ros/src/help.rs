//! `<node binary> --help`: what a node reads, writes, serves and takes as parameters, printed before anything
//! touches the ROS graph or the disk.
//!
//! The text comes from the node's interface table in its package README (the rows between
//! `<!-- interface: <binary> ... -->` and the end of that table), the same table the interface test checks
//! against the running node in both directions, so `--help` cannot drift from what the node really does.

use std::fmt::Write as _;

/// What a node binary says about itself on `--help` / `-h`.
#[derive(Debug, Clone, Copy)]
pub struct NodeHelp {
    /// The executable's name, as in `ros2 run <package> <binary>`.
    pub binary: &'static str,
    /// One or two sentences: what the node does.
    pub about: &'static str,
    /// The package README holding the node's interface table (`include_str!`), if it has one.
    pub readme: Option<&'static str>,
    /// The node's parameter rules (`<Params as ParamRules>::param_rules()`; `&[]` without): printed by
    /// `--param-rules`, from which `scripts/param_tables.py` writes each README row's `(allowed: ...)`.
    pub rules: &'static [crate::ParamRule],
}

/// If the command line asks for help (`--help` or `-h` before any `--ros-args`), print the node's help on
/// stdout and exit 0; with `--param-rules`, print one line per checked parameter, `name<TAB>allowed`, and exit
/// 0. Call it first thing in `main`, before the ROS context exists.
pub fn exit_if_requested(help: &NodeHelp) {
    let ours = || std::env::args().skip(1).take_while(|a| a != "--ros-args");
    let text = if help_requested(std::env::args().skip(1)) {
        render(help)
    } else if ours().any(|a| a == "--param-rules") {
        param_rules_text(help.rules)
    } else {
        return;
    };
    // Not `print!`: it panics when the reader has gone (`--help | head -1`, `| grep -q`).
    use std::io::Write as _;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    std::process::exit(0);
}

/// `name<TAB>allowed` per rule, sorted by name.
pub fn param_rules_text(rules: &[crate::ParamRule]) -> String {
    let mut lines: Vec<String> = rules
        .iter()
        .map(|r| format!("{}\t{}\n", r.name, r.allowed()))
        .collect();
    lines.sort();
    lines.concat()
}

/// Whether these arguments (without the program name) ask for help. rcl owns everything from `--ros-args`
/// on, so a `-h` there is not ours.
pub fn help_requested(args: impl IntoIterator<Item = String>) -> bool {
    args.into_iter()
        .take_while(|a| a != "--ros-args")
        .any(|a| a == "--help" || a == "-h")
}

/// One row of an interface table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub kind: String,
    pub name: String,
    pub type_name: String,
    pub notes: String,
}

/// The rows of `binary`'s interface table in `readme` (empty if the README has none).
pub fn interface_rows(readme: &str, binary: &str) -> Vec<Row> {
    let mut lines = readme.lines();
    let marker = format!("<!-- interface: {binary}");
    let found = lines.by_ref().any(|l| {
        l.trim_start()
            .strip_prefix(&marker)
            .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with("-->"))
    });
    if !found {
        return Vec::new();
    }
    lines
        .skip_while(|l| !l.trim_start().starts_with('|'))
        .take_while(|l| l.trim_start().starts_with('|'))
        .map(cells)
        .filter(|c| c.len() >= 4 && c[0] != "kind" && !c[0].starts_with("---"))
        .map(|c| Row {
            kind: c[0].clone(),
            name: c[1].clone(),
            type_name: c[2].clone(),
            notes: c[3..].join(" | "),
        })
        .collect()
}

/// The cells of a Markdown table row, with `\|` kept as `|` and code ticks removed.
fn cells(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cell = String::new();
    let mut chars = line.trim().trim_start_matches('|').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '|' => out.push(std::mem::take(&mut cell)),
            '`' => {}
            _ => cell.push(c),
        }
    }
    if !cell.trim().is_empty() {
        out.push(cell);
    }
    out.into_iter().map(|c| c.trim().to_owned()).collect()
}

/// Sections in the order a user looks for them, with the table kinds that go in each.
const SECTIONS: &[(&str, &[&str])] = &[
    ("Subscribes to", &["subscribes"]),
    ("Publishes", &["publishes"]),
    ("Services", &["service"]),
    ("Actions", &["action", "action server"]),
    ("Calls", &["service client", "action client"]),
    ("Parameters", &["parameter"]),
];

/// The whole help text.
pub fn render(help: &NodeHelp) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}\n", help.binary, help.about);
    let _ = writeln!(
        out,
        "Usage: {} [--ros-args [-p NAME:=VALUE]... [-r FROM:=TO]... [--params-file FILE]]",
        help.binary
    );
    let _ = writeln!(
        out,
        "  (ROS arguments as for any ROS 2 node: `-r __ns:=/robot1` for a namespace, `-r __node:=NAME` to rename it)"
    );
    match help.readme {
        Some(readme) => out.push_str(&interface_sections(readme, help.binary)),
        None => {
            let _ = writeln!(
                out,
                "\nIts parameters are served on the node's standard parameter services (`ros2 param list`)."
            );
        }
    }
    out
}

/// The node's topics, services, actions and parameters from its README table, one section each.
pub fn interface_sections(readme: &str, binary: &str) -> String {
    let rows = interface_rows(readme, binary);
    let mut out = String::new();
    let mut shown = vec![false; rows.len()];
    for (title, kinds) in SECTIONS {
        let picked: Vec<usize> = (0..rows.len())
            .filter(|&i| kinds.contains(&rows[i].kind.as_str()))
            .collect();
        section(&mut out, title, picked.iter().map(|&i| &rows[i]));
        for i in picked {
            shown[i] = true;
        }
    }
    let rest = rows.iter().zip(&shown).filter(|(_, s)| !**s).map(|(r, _)| r);
    section(&mut out, "Other", rest);
    out
}

fn section<'a>(out: &mut String, title: &str, rows: impl Iterator<Item = &'a Row>) {
    let mut rows = rows.peekable();
    if rows.peek().is_none() {
        return;
    }
    let _ = writeln!(out, "\n{title}:");
    for row in rows {
        let _ = writeln!(out, "  {}  ({})", row.name, row.type_name);
        if !row.notes.is_empty() {
            let _ = writeln!(out, "      {}", row.notes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const README: &str = "# x\n\n<!-- interface: demo_node kind:=lift -->\n\
| kind | name | type | notes |\n|---|---|---|---|\n\
| subscribes | `cmd_vel` | `geometry_msgs/msg/Twist` | commands |\n\
| parameter | `gate` | `string`, default `fixed` | a \\| b |\n\
| service | `~/reset` | `std_srvs/srv/Trigger` | back to nominal |\n\nafter\n\
<!-- interface: demo_node_2 -->\n| kind | name | type | notes |\n|---|---|---|---|\n\
| publishes | `out` | `std_msgs/msg/String` | x |\n";

    #[test]
    fn the_rows_of_one_node_and_no_other() {
        let rows = interface_rows(README, "demo_node");
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1].name, "gate");
        assert_eq!(rows[1].type_name, "string, default fixed");
        assert_eq!(rows[1].notes, "a | b");
        assert_eq!(interface_rows(README, "demo_node_2").len(), 1);
        assert!(interface_rows(README, "demo").is_empty());
    }

    #[test]
    fn sections_come_in_a_users_order() {
        let text = render(&NodeHelp {
            binary: "demo_node",
            about: "does things",
            readme: Some(README),
            rules: &[],
        });
        let at = |s: &str| text.find(s).unwrap_or(usize::MAX);
        assert!(at("Subscribes to:") < at("Services:"), "{text}");
        assert!(at("Services:") < at("Parameters:"), "{text}");
        assert!(
            text.contains("  gate  (string, default fixed)\n      a | b\n"),
            "{text}"
        );
    }

    #[test]
    fn help_is_ours_only_before_ros_args() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(help_requested(args(&["--help"])));
        assert!(help_requested(args(&["-h", "--ros-args"])));
        assert!(!help_requested(args(&["--ros-args", "-h"])));
        assert!(!help_requested(args(&["--ros-args", "-p", "a:=1"])));
    }

    #[test]
    fn param_rules_are_listed_by_name_in_their_error_words() {
        use crate::{Int, ParamRule, Real};
        const RULES: &[ParamRule] = &[
            ParamRule::real("rate_hz", Real::above(0.0, 1000.0, "Hz")),
            ParamRule::one_of("mode", &["fast", "slow"]),
            ParamRule::int("depth", Int::closed(1, 10, "messages")),
            ParamRule::non_empty("frame_id"),
        ];
        assert_eq!(
            param_rules_text(RULES),
            "depth\tan integer in [1, 10] messages\nframe_id\tnot empty\nmode\tone of `fast`, `slow`\n\
             rate_hz\tfinite and in (0, 1000] Hz\n"
        );
    }
}
