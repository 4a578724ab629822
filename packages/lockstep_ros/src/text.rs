//! Request text echoed into a log line or an answer, kept short: a node that repeats a 10 MB goal field
//! back would fill its log and its answers with it. [`clip`] keeps the start and says how long the whole
//! was; [`echo`] is what every node echoes a request's text with.

use std::borrow::Cow;

/// How many characters of a request's text a log line or an answer repeats.
pub const ECHO_CHARS: usize = 200;

/// `text` as it is if it has at most `max_chars` characters; else its first `max_chars` characters (cut on
/// a character boundary) and how long it was: `abc…(10485760 bytes in all)`.
pub fn clip(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some((end, _)) => Cow::Owned(format!("{}…({} bytes in all)", &text[..end], text.len())),
    }
}

/// `text` clipped to [`ECHO_CHARS`]: how a request's text is repeated in a log line or an answer.
pub fn echo(text: &str) -> Cow<'_, str> {
    clip(text, ECHO_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_and_long_text_keeps_its_start_and_says_its_length() {
        assert!(matches!(clip("abc", 3), Cow::Borrowed("abc")));
        assert_eq!(clip("abcd", 3), "abc…(4 bytes in all)");
        assert_eq!(clip("", 0), "");
        let big = "x".repeat(10 * 1024 * 1024);
        let shown = echo(&big);
        assert_eq!(shown.len(), ECHO_CHARS + "…(10485760 bytes in all)".len());
        assert!(shown.ends_with("…(10485760 bytes in all)"), "{shown}");
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        // 'é' is two bytes, '€' three: every cut lands between characters.
        let text = "é€".repeat(300);
        for max in 0..10 {
            let shown = clip(&text, max);
            let kept = shown.split('…').next().unwrap_or_default();
            assert_eq!(kept.chars().count(), max, "{shown}");
        }
        assert_eq!(clip("€€", 1), "€…(6 bytes in all)");
    }
}
