//! `lockstep bag play`'s keyboard controls, as rosbag2's player has them: space pauses and resumes, the right
//! arrow plays the next message while paused, the up and down arrows change the rate by 10 % (x1.1, x0.9).
//! The keys go through the same [`Control`] as the player's services (`~/toggle_paused`, `~/play_next`,
//! `~/set_rate`), so a key and a service call do the same thing.

use crate::control::{Control, Request};

/// The rates the keys stay within (the parameter `rate`'s range).
pub const KEY_RATE_RANGE: (f64, f64) = (0.001, 1000.0);

/// A key the player acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Space,
    Right,
    Up,
    Down,
}

/// Turns the bytes a terminal sends into keys: a space, and the arrows' escape sequences (`ESC [ A`..`D`, or
/// `ESC O A`..`D` in the terminal's application mode). Other bytes are ignored.
#[derive(Debug, Default)]
pub struct KeyParser {
    /// 0: plain; 1: after ESC; 2: after ESC [ or ESC O.
    state: u8,
}

impl KeyParser {
    /// The key `byte` completes, if any.
    pub fn feed(&mut self, byte: u8) -> Option<Key> {
        match (self.state, byte) {
            (_, 0x1b) => {
                self.state = 1;
                None
            }
            (1, b'[' | b'O') => {
                self.state = 2;
                None
            }
            (2, b'A'..=b'D') => {
                self.state = 0;
                match byte {
                    b'A' => Some(Key::Up),
                    b'B' => Some(Key::Down),
                    b'C' => Some(Key::Right),
                    _ => None, // left: rosbag2 binds nothing to it
                }
            }
            (0, b' ') => Some(Key::Space),
            _ => {
                self.state = 0;
                None
            }
        }
    }
}

/// Do what `key` asks; returns what it did, for a log line.
pub fn apply(control: &Control, key: Key) -> String {
    match key {
        Key::Space => {
            control.toggle_paused();
            if control.is_paused() {
                "paused".into()
            } else {
                "resumed".into()
            }
        }
        Key::Right => {
            // The answer (refused unless paused) is the service's; a key has no one to tell.
            control.request(Request::PlayNext(Box::new(|_| {})));
            "play next".into()
        }
        Key::Up | Key::Down => {
            let factor = if key == Key::Up { 1.1 } else { 0.9 };
            let rate = control.rate() * factor;
            let (low, high) = KEY_RATE_RANGE;
            if (low..=high).contains(&rate) && control.set_rate(rate).is_ok() {
                format!("rate {}", crate::progress::rate_text(rate))
            } else {
                format!("rate stays {} (within [{low}, {high}])", control.rate())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(bytes: &[u8]) -> Vec<Key> {
        let mut parser = KeyParser::default();
        bytes.iter().filter_map(|&b| parser.feed(b)).collect()
    }

    #[test]
    fn space_and_arrows_in_both_cursor_modes_are_keys_and_the_rest_is_ignored() {
        assert_eq!(
            keys(b" \x1b[A\x1b[B\x1b[Cx\x1bOA\x1b[D\x1b\x1b[C q"),
            [
                Key::Space,
                Key::Up,
                Key::Down,
                Key::Right,
                Key::Up,
                Key::Right,
                Key::Space
            ]
        );
    }

    #[test]
    fn keys_act_on_the_control_as_the_services_do() {
        let control = Control::new(1.0, false);
        assert_eq!(apply(&control, Key::Space), "paused");
        assert!(control.is_paused());
        assert_eq!(apply(&control, Key::Up), "rate 1.1");
        assert!((control.rate() - 1.1).abs() < 1e-12);
        apply(&control, Key::Down);
        assert!((control.rate() - 0.99).abs() < 1e-12);
        apply(&control, Key::Right);
        assert!(matches!(
            control.lock().requests.front(),
            Some(Request::PlayNext(_))
        ));
        assert_eq!(apply(&control, Key::Space), "resumed");
        control.set_rate(999.0).unwrap();
        assert!(apply(&control, Key::Up).starts_with("rate stays 999"));
    }
}
