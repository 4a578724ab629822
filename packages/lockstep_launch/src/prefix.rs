//! What runs around a process's own command: `launch-prefix` (the words put before it, split as
//! `ros2 launch` splits them, with Python's `shlex`), and the rcl interceptor of `lockstep launch --trace`
//! (`LD_PRELOAD` and `LOCKSTEP_INTERCEPT` in each node's environment).

use std::ffi::OsString;
use std::path::Path;

use lockstep_intercept::env::{self, Mode};

use crate::plan::Plan;

/// The attribute of `<node>` and `<executable>` that puts words before the command.
pub const PREFIX_ATTRIBUTE: &str = "launch-prefix";

/// The program a launch prefix names to run `lockstep` itself (`launch-prefix="lockstep trace --"`).
pub const LOCKSTEP: &str = "lockstep";

/// Splits `text` into words as a POSIX shell (and Python's `shlex.split`) does: whitespace separates words;
/// single quotes keep everything; double quotes keep everything but `\"` and `\\`; outside quotes a backslash
/// keeps the next character. No expansion, no comments. The error says what is unbalanced.
pub fn split_shell(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                continue;
            }
            '\'' => loop {
                match chars.next() {
                    Some('\'') => break,
                    Some(c) => word.push(c),
                    None => return Err("the quote ' is never closed".into()),
                }
            },
            '"' => double_quoted(&mut chars, &mut word)?,
            '\\' => match chars.next() {
                Some(c) => word.push(c),
                None => return Err("it ends with a backslash that escapes nothing".into()),
            },
            c => word.push(c),
        }
        in_word = true;
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// The rest of a double-quoted string, after its opening quote, into `word`.
fn double_quoted(chars: &mut std::str::Chars<'_>, word: &mut String) -> Result<(), String> {
    loop {
        match chars.next() {
            Some('"') => return Ok(()),
            Some('\\') => match chars.next() {
                Some(c @ ('"' | '\\')) => word.push(c),
                Some(c) => {
                    word.push('\\');
                    word.push(c);
                }
                None => break,
            },
            Some(c) => word.push(c),
            None => break,
        }
    }
    Err("the quote \" is never closed".into())
}

impl Plan {
    /// Runs `exe` (the `lockstep` binary running this launch) wherever a launch prefix starts with the
    /// word `lockstep`, so that `launch-prefix="lockstep trace --"` works without `lockstep` on PATH and
    /// with the same build.
    pub fn use_lockstep_binary(&mut self, exe: &Path) {
        for process in &mut self.processes {
            if let Some(first) = process.prefix.first_mut().filter(|word| *word == LOCKSTEP) {
                *first = exe.display().to_string();
            }
        }
    }

    /// Puts the interceptor (`library`) in `mode` into every process, `<node>` and `<executable>` alike
    /// (`lockstep launch --trace`): its `LD_PRELOAD` starts with `library`, before what the launch file or the
    /// launcher's environment preloads, and `LOCKSTEP_INTERCEPT` says the mode. A launch prefix runs with them
    /// too and passes them on to the node. A program that never initialises rcl, and Lockstep's own tools (the
    /// recorder, player, replay, view), are left alone by the interceptor itself.
    pub fn intercept(&mut self, library: &Path, mode: Mode) {
        let inherited = std::env::var_os(env::PRELOAD_VAR);
        for process in self.processes.iter_mut() {
            traced_env(&mut process.env, library, mode, inherited.as_ref());
        }
    }
}

/// Sets the interceptor's variables in a process's environment changes `changes` (set or removed, in
/// order); `inherited` is the launcher's own `LD_PRELOAD`, which the process gets unless `changes` say
/// otherwise.
pub fn traced_env(
    changes: &mut Vec<(String, Option<String>)>,
    library: &Path,
    mode: Mode,
    inherited: Option<&OsString>,
) {
    let current = match changes.iter().rev().find(|(name, _)| name == env::PRELOAD_VAR) {
        Some((_, value)) => value.as_ref().map(OsString::from),
        None => inherited.cloned(),
    };
    for (name, value) in env::variables(library, mode, current.as_ref()) {
        changes.retain(|(n, _)| n != name);
        changes.push((name.to_string(), Some(value.to_string_lossy().into_owned())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<String> {
        split_shell(text).unwrap()
    }

    #[test]
    fn prefixes_split_like_a_shell() {
        assert_eq!(split("lockstep trace --"), ["lockstep", "trace", "--"]);
        assert_eq!(split("gdb -ex run --args"), ["gdb", "-ex", "run", "--args"]);
        assert_eq!(
            split("valgrind --log-file='/tmp/my log.txt' \"--tool=memcheck\""),
            ["valgrind", "--log-file=/tmp/my log.txt", "--tool=memcheck"]
        );
        assert_eq!(
            split(r#"xterm -e "gdb -ex \"b main\" --args""#),
            ["xterm", "-e", "gdb -ex \"b main\" --args"]
        );
        assert_eq!(split(r"a\ b 'c\d' "), ["a b", r"c\d"]);
        assert_eq!(split(r#""a\nb" '' x"#), [r"a\nb", "", "x"]);
        assert_eq!(split("  tab\tand\nnewline  "), ["tab", "and", "newline"]);
    }

    #[test]
    fn an_empty_prefix_is_no_words() {
        assert!(split("").is_empty());
        assert!(split(" \t ").is_empty());
    }

    #[test]
    fn unbalanced_quotes_are_errors() {
        assert_eq!(
            split_shell("gdb -ex 'run").unwrap_err(),
            "the quote ' is never closed"
        );
        assert_eq!(
            split_shell("gdb \"run").unwrap_err(),
            "the quote \" is never closed"
        );
        assert_eq!(
            split_shell(r#"gdb "run\""#).unwrap_err(),
            "the quote \" is never closed"
        );
        assert!(split_shell("gdb \\").unwrap_err().contains("backslash"));
    }

    #[test]
    fn the_trace_env_puts_the_interceptor_first_and_the_mode() {
        let lib = Path::new("/ws/target/debug/liblockstep_intercept_preload.so");
        let mut env = vec![("A".to_string(), Some("1".to_string()))];
        traced_env(&mut env, lib, Mode::Record, None);
        assert_eq!(
            env,
            [
                ("A".to_string(), Some("1".to_string())),
                ("LD_PRELOAD".to_string(), Some(lib.display().to_string())),
                ("LOCKSTEP_INTERCEPT".to_string(), Some("record".to_string())),
            ]
        );
        // Again in replay mode: replaced, not repeated.
        traced_env(&mut env, lib, Mode::Replay, None);
        assert_eq!(env.len(), 3);
        assert_eq!(
            env[2],
            ("LOCKSTEP_INTERCEPT".to_string(), Some("replay".to_string()))
        );
    }

    #[test]
    fn the_trace_env_keeps_other_preloads() {
        let lib = Path::new("/l/liblockstep_intercept_preload.so");
        let inherited = OsString::from("/usr/lib/libasan.so");
        let mut env = Vec::new();
        traced_env(&mut env, lib, Mode::Record, Some(&inherited));
        assert_eq!(
            env[0].1.as_deref(),
            Some("/l/liblockstep_intercept_preload.so:/usr/lib/libasan.so")
        );
        // The launch file's own LD_PRELOAD wins over the launcher's; an unset one drops it.
        let mut env = vec![("LD_PRELOAD".to_string(), Some("/mine.so".to_string()))];
        traced_env(&mut env, lib, Mode::Record, Some(&inherited));
        assert_eq!(
            env[0],
            (
                "LD_PRELOAD".to_string(),
                Some("/l/liblockstep_intercept_preload.so:/mine.so".to_string())
            )
        );
        let mut env = vec![("LD_PRELOAD".to_string(), None)];
        traced_env(&mut env, lib, Mode::Record, Some(&inherited));
        assert_eq!(env[0].1.as_deref(), Some("/l/liblockstep_intercept_preload.so"));
    }
}
