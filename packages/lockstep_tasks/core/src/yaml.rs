//! YAML read with the path of the key at fault: what the configuration and the station map share.

use serde::de::DeserializeOwned;

/// Deserialize `text`; on failure, (1-based line if the parser knows it, key path, reason). The parser's
/// message may repeat the key and the line, which the caller's error shows already: both are cut from it.
pub(crate) fn deserialize<T: DeserializeOwned>(text: &str) -> Result<T, (Option<usize>, String, String)> {
    let deserializer = serde_norway::Deserializer::from_str(text);
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let key = e.path().to_string();
        let inner = e.into_inner();
        let line = inner.location().map(|l| l.line());
        let mut reason = inner.to_string();
        if let Some((head, rest)) = reason.split_once(": ") {
            if key.starts_with(head) {
                reason = rest.to_owned();
            }
        }
        if let Some(at) = reason.rfind(" at line ") {
            reason.truncate(at);
        }
        (line, key, reason)
    })
}
