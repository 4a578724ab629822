//! Who may connect and what they may do. A client may be asked for a bearer token (in the upgrade request's
//! `Authorization: Bearer <token>` header, or `?token=<token>` in the URL, since browsers cannot set headers).
//! What it sees and does is limited by allowlists of regular expressions, as foxglove_bridge's
//! `topic_whitelist`, `service_whitelist` and `param_whitelist`: topics to advertise (default: every
//! topic), services to call and parameters to set (default: none). A pattern must match the whole name.

use std::fmt;

use regex::Regex;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode};

use crate::protocol::{Parameter, SUBPROTOCOL};

/// Why an access setting cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    /// A pattern of an allowlist is not a regular expression.
    #[error("{flag} `{pattern}` is not a regular expression: {reason}")]
    BadPattern {
        flag: &'static str,
        pattern: String,
        reason: String,
    },
    /// The token is empty or holds characters a header cannot carry.
    #[error("the token {0}")]
    BadToken(&'static str),
}

/// What an allowlist limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Topics advertised to clients.
    Topics,
    /// Services clients may call.
    Services,
    /// Parameters clients may set.
    Parameters,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Topics => "topic",
            Kind::Services => "service",
            Kind::Parameters => "parameter",
        }
    }

    /// The command-line flag and the node parameter that set it.
    pub fn flag(self) -> &'static str {
        match self {
            Kind::Topics => "--allow-topics (parameter allow_topics)",
            Kind::Services => "--allow-services (parameter allow_services)",
            Kind::Parameters => "--allow-parameters (parameter allow_parameters)",
        }
    }
}

/// Names allowed: any of the patterns matches the whole name. No pattern: nothing is allowed.
#[derive(Debug, Clone)]
pub struct Allowlist {
    kind: Kind,
    patterns: Vec<String>,
    regex: Option<Regex>,
}

impl Allowlist {
    /// An allowlist of `patterns` (regular expressions, each matching whole names; empty ones are ignored).
    pub fn new(kind: Kind, patterns: &[String]) -> Result<Self, AccessError> {
        let patterns: Vec<String> = patterns.iter().filter(|p| !p.is_empty()).cloned().collect();
        for p in &patterns {
            Regex::new(p).map_err(|e| AccessError::BadPattern {
                flag: kind.flag(),
                pattern: p.clone(),
                reason: e.to_string().replace('\n', " "),
            })?;
        }
        let regex = if patterns.is_empty() {
            None
        } else {
            let alternatives: Vec<String> = patterns.iter().map(|p| format!("(?:{p})")).collect();
            let whole = format!("^(?:{})$", alternatives.join("|"));
            Some(Regex::new(&whole).map_err(|e| AccessError::BadPattern {
                flag: kind.flag(),
                pattern: patterns.join(" "),
                reason: e.to_string().replace('\n', " "),
            })?)
        };
        Ok(Self {
            kind,
            patterns,
            regex,
        })
    }

    /// Every name (`.*`).
    pub fn everything(kind: Kind) -> Self {
        Self {
            kind,
            patterns: vec![".*".into()],
            regex: Regex::new("^(?:.*)$").ok(),
        }
    }

    /// No name.
    pub fn nothing(kind: Kind) -> Self {
        Self {
            kind,
            patterns: Vec::new(),
            regex: None,
        }
    }

    /// Whether `name` may be used.
    pub fn allows(&self, name: &str) -> bool {
        self.regex.as_ref().is_some_and(|r| r.is_match(name))
    }

    /// The patterns, as given.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Why a name is refused, for a status message: the allowlist and how to change it.
    pub fn why_not(&self) -> String {
        let noun = self.kind.noun();
        if self.patterns.is_empty() {
            return format!(
                "no {noun} is in the {noun} allowlist ({}: none given, so none is allowed)",
                self.kind.flag()
            );
        }
        let given: Vec<String> = self.patterns.iter().map(|p| format!("`{p}`")).collect();
        format!(
            "it does not match the {noun} allowlist ({}: {})",
            self.kind.flag(),
            given.join(", ")
        )
    }
}

/// Splits a `setParameters` into the parameters `allow` lets be set and a status text naming the others.
pub(crate) fn split_parameters(
    allow: &Allowlist,
    parameters: Vec<Parameter>,
) -> (Vec<Parameter>, Option<String>) {
    let (allowed, refused): (Vec<Parameter>, Vec<Parameter>) =
        parameters.into_iter().partition(|p| allow.allows(&p.name));
    if refused.is_empty() {
        return (allowed, None);
    }
    let shown: Vec<String> = refused.iter().take(20).map(|p| format!("`{}`", p.name)).collect();
    let more = match refused.len() - shown.len() {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let text = format!(
        "setParameters refused for {}{more}: {}",
        shown.join(", "),
        allow.why_not()
    );
    (allowed, Some(text))
}

/// A bearer token clients must present. Its text is never printed (`Debug` shows `Token(..)`).
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// A token from text (leading and trailing white space, e.g. a file's last newline, is dropped).
    pub fn new(text: &str) -> Result<Self, AccessError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(AccessError::BadToken("is empty"));
        }
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(AccessError::BadToken(
                "may hold only visible ASCII characters (no spaces): it travels in an HTTP header",
            ));
        }
        Ok(Self(text.to_owned()))
    }

    /// Checks an upgrade request: the `Authorization: Bearer` header, else the `token` query parameter.
    pub fn check(&self, request: &Request) -> Result<(), &'static str> {
        let from_header = (request.headers().get_all("Authorization").iter())
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| {
                let (scheme, rest) = v.trim().split_once(' ')?;
                scheme
                    .eq_ignore_ascii_case("bearer")
                    .then(|| rest.trim().to_owned())
            });
        let from_query = (request.uri().query().unwrap_or("").split('&'))
            .filter_map(|pair| pair.strip_prefix("token="))
            .map(percent_decode);
        let mut offered = from_header.chain(from_query).peekable();
        if offered.peek().is_none() {
            return Err(
                "this server needs a token: send the header `Authorization: Bearer <token>` or \
                        add `?token=<token>` to the URL",
            );
        }
        if offered.any(|t| same(t.as_bytes(), self.0.as_bytes())) {
            Ok(())
        } else {
            Err("wrong token")
        }
    }
}

/// Compares without stopping at the first difference (the time taken does not tell how much was right).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `%XX` escapes and `+` of a URL query value; a malformed escape is kept as it is.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The handshake: the token (if one is set), then the subprotocol `foxglove.websocket.v1`, which the answer
/// names. A refusal is an HTTP error with the reason as its body.
#[allow(clippy::result_large_err)]
pub(crate) fn handshake(
    token: Option<&Token>,
    request: &Request,
    mut response: Response,
) -> Result<Response, ErrorResponse> {
    let refuse = |status: StatusCode, why: String| {
        let mut refusal = ErrorResponse::new(Some(why));
        *refusal.status_mut() = status;
        refusal
    };
    if let Some(token) = token {
        token
            .check(request)
            .map_err(|why| refuse(StatusCode::UNAUTHORIZED, why.to_owned()))?;
    }
    let offered = (request.headers().get_all("Sec-WebSocket-Protocol").iter())
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim() == SUBPROTOCOL);
    if !offered {
        let why = format!("this is a Foxglove WebSocket server: offer the subprotocol {SUBPROTOCOL}");
        return Err(refuse(StatusCode::BAD_REQUEST, why));
    }
    response
        .headers_mut()
        .insert("Sec-WebSocket-Protocol", HeaderValue::from_static(SUBPROTOCOL));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(kind: Kind, patterns: &[&str]) -> Allowlist {
        let patterns: Vec<String> = patterns.iter().map(|p| (*p).to_owned()).collect();
        Allowlist::new(kind, &patterns).unwrap()
    }

    fn request(uri: &str, authorization: Option<&str>) -> Request {
        let mut r = Request::builder().uri(uri);
        if let Some(a) = authorization {
            r = r.header("Authorization", a);
        }
        r.body(()).unwrap()
    }

    #[test]
    fn patterns_match_whole_names_and_no_pattern_allows_nothing() {
        let services = list(Kind::Services, &["/sim/reload", "/bag_player/.*"]);
        assert!(services.allows("/sim/reload"));
        assert!(services.allows("/bag_player/pause"));
        assert!(
            !services.allows("/sim/reload_all"),
            "a pattern matches the whole name"
        );
        assert!(!services.allows("/x/sim/reload"));
        assert!(!services.allows("/sim/set_destination"));
        let none = list(Kind::Parameters, &[]);
        assert!(!none.allows("/sim.time_scale") && !none.allows(""));
        assert!(
            !list(Kind::Services, &[""]).allows(""),
            "an empty pattern is no pattern"
        );
        assert!(Allowlist::everything(Kind::Topics).allows("/any/topic"));
        assert!(!Allowlist::nothing(Kind::Topics).allows("/odom"));
        // An alternative inside one pattern does not escape its anchors.
        let alt = list(Kind::Topics, &["/a|/b"]);
        assert!(alt.allows("/a") && alt.allows("/b") && !alt.allows("/a/c") && !alt.allows("x/b"));
    }

    #[test]
    fn a_bad_pattern_names_the_flag_and_the_pattern() {
        let e = Allowlist::new(Kind::Services, &["/ok".into(), "/sim/(".into()]).unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("--allow-services (parameter allow_services) `/sim/(`"),
            "{text}"
        );
        assert!(!text.contains('\n'), "{text}");
    }

    #[test]
    fn refusals_say_which_allowlist_and_how_to_change_it() {
        let none = list(Kind::Services, &[]).why_not();
        assert!(
            none.contains("--allow-services") && none.contains("none given"),
            "{none}"
        );
        let some = list(Kind::Parameters, &["/sim\\..*"]).why_not();
        assert!(
            some.contains("--allow-parameters") && some.contains("`/sim\\..*`"),
            "{some}"
        );
        let p = |name: &str| Parameter {
            name: name.into(),
            value: serde_json::json!(1),
            type_name: None,
        };
        let allow = list(Kind::Parameters, &["/sim\\.time_scale"]);
        let (allowed, why) = split_parameters(&allow, vec![p("/sim.time_scale"), p("/sim.mode")]);
        assert_eq!(allowed, vec![p("/sim.time_scale")]);
        let why = why.unwrap();
        assert!(
            why.starts_with("setParameters refused for `/sim.mode`: "),
            "{why}"
        );
        let many: Vec<Parameter> = (0..25).map(|i| p(&format!("/n.p{i}"))).collect();
        let (allowed, why) = split_parameters(&allow, many);
        assert!(allowed.is_empty());
        assert!(why.unwrap().contains("`/n.p19` and 5 more"));
        assert_eq!(split_parameters(&allow, vec![p("/sim.time_scale")]).1, None);
    }

    #[test]
    fn the_token_comes_in_the_header_or_the_query() {
        let token = Token::new("s3cret/+=\n").unwrap();
        assert_eq!(format!("{token:?}"), "Token(..)", "the token is never printed");
        assert_eq!(token.check(&request("/", Some("Bearer s3cret/+="))), Ok(()));
        assert_eq!(token.check(&request("/", Some("bearer  s3cret/+= "))), Ok(()));
        assert_eq!(token.check(&request("/?a=1&token=s3cret%2F%2B%3D", None)), Ok(()));
        assert_eq!(
            token.check(&request("/", Some("Bearer wrong"))),
            Err("wrong token")
        );
        assert_eq!(token.check(&request("/?token=s3cret", None)), Err("wrong token"));
        assert_eq!(
            token.check(&request("/?token=s3cret/+=x", None)),
            Err("wrong token")
        );
        let basic = token.check(&request("/", Some("Basic czNjcmV0"))).unwrap_err();
        assert!(basic.contains("needs a token"), "{basic}");
        assert!(token
            .check(&request("/", None))
            .unwrap_err()
            .contains("Authorization: Bearer"));
        assert_eq!(Token::new(" \n"), Err(AccessError::BadToken("is empty")));
        assert!(Token::new("two words").is_err());
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("%zz+%41"), "%zz A");
    }
}
