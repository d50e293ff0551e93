//! Secret-looking variable names, masked in run records as the peer masks them
//! (`ubunye.core.secrets.looks_secret` and `redact_variables`).

/// The mask the peer writes.
pub const REDACTED: &str = "***";

const SECRET_WORDS: &[&str] = &[
    "password",
    "passwords",
    "passwd",
    "pwd",
    "passphrase",
    "secret",
    "secrets",
    "token",
    "tokens",
    "credential",
    "credentials",
    "auth",
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "signingkey",
    "sas",
    "signature",
    "cookie",
    "bearer",
    "jwt",
];
const SECRET_PAIRS: &[(&str, &str)] = &[
    ("api", "key"),
    ("access", "key"),
    ("private", "key"),
    ("secret", "key"),
    ("client", "key"),
    ("session", "key"),
    ("account", "key"),
    ("master", "key"),
    ("signing", "key"),
    ("encryption", "key"),
    ("ssh", "key"),
    ("connection", "string"),
];
const NOT_SECRET_FIRST: &[&str] = &["max", "min", "num", "n"];
const NOT_SECRET_LAST: &[&str] = &[
    "limit", "limits", "count", "counts", "max", "min", "mode", "type", "name", "scope", "version", "domain", "expiry",
    "length", "path", "file", "url", "id", "header", "endpoint", "enabled", "provider", "method", "format",
];

/// What `\d` matches in the peer's regex: Python's `re` on a str pattern
/// takes a Unicode decimal digit (general category Nd) and nothing else;
/// Rust's `char::is_numeric` also takes Nl and No (`Ⅻ`, `²`, `½`), which made
/// `Ⅻmax_token` a secret here and not there. The ranges are those of the
/// peer's Python (3.11, Unicode 14.0.0), found by the peer's own regex:
///
/// ```text
/// import re; [i for i in range(0x110000) if re.fullmatch(r"\d", chr(i))]
/// ```
///
/// (collapsed into ranges); `tui/tests/all/secrets_peer.rs` holds them to the
/// installed peer.
const PYTHON_DIGITS: [(u32, u32); 62] = [
    (0x30, 0x39),
    (0x660, 0x669),
    (0x6F0, 0x6F9),
    (0x7C0, 0x7C9),
    (0x966, 0x96F),
    (0x9E6, 0x9EF),
    (0xA66, 0xA6F),
    (0xAE6, 0xAEF),
    (0xB66, 0xB6F),
    (0xBE6, 0xBEF),
    (0xC66, 0xC6F),
    (0xCE6, 0xCEF),
    (0xD66, 0xD6F),
    (0xDE6, 0xDEF),
    (0xE50, 0xE59),
    (0xED0, 0xED9),
    (0xF20, 0xF29),
    (0x1040, 0x1049),
    (0x1090, 0x1099),
    (0x17E0, 0x17E9),
    (0x1810, 0x1819),
    (0x1946, 0x194F),
    (0x19D0, 0x19D9),
    (0x1A80, 0x1A89),
    (0x1A90, 0x1A99),
    (0x1B50, 0x1B59),
    (0x1BB0, 0x1BB9),
    (0x1C40, 0x1C49),
    (0x1C50, 0x1C59),
    (0xA620, 0xA629),
    (0xA8D0, 0xA8D9),
    (0xA900, 0xA909),
    (0xA9D0, 0xA9D9),
    (0xA9F0, 0xA9F9),
    (0xAA50, 0xAA59),
    (0xABF0, 0xABF9),
    (0xFF10, 0xFF19),
    (0x104A0, 0x104A9),
    (0x10D30, 0x10D39),
    (0x11066, 0x1106F),
    (0x110F0, 0x110F9),
    (0x11136, 0x1113F),
    (0x111D0, 0x111D9),
    (0x112F0, 0x112F9),
    (0x11450, 0x11459),
    (0x114D0, 0x114D9),
    (0x11650, 0x11659),
    (0x116C0, 0x116C9),
    (0x11730, 0x11739),
    (0x118E0, 0x118E9),
    (0x11950, 0x11959),
    (0x11C50, 0x11C59),
    (0x11D50, 0x11D59),
    (0x11DA0, 0x11DA9),
    (0x16A60, 0x16A69),
    (0x16AC0, 0x16AC9),
    (0x16B50, 0x16B59),
    (0x1D7CE, 0x1D7FF),
    (0x1E140, 0x1E149),
    (0x1E2F0, 0x1E2F9),
    (0x1E950, 0x1E959),
    (0x1FBF0, 0x1FBF9),
];

/// Whether the peer's `\d` matches `c`.
pub fn is_python_digit(c: char) -> bool {
    let c = u32::from(c);
    PYTHON_DIGITS
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// The words of a name as the peer's regex `[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+`
/// finds them (no IGNORECASE: the letters are ASCII only, the digits
/// [`is_python_digit`]), lower-cased as Python's `str.lower` does: `apiKey`
/// -> api, key; `HTTPServer2` -> http, server, 2.
pub fn words(name: &str) -> Vec<String> {
    let c: Vec<char> = name.chars().collect();
    let lower = |i: usize| c.get(i).is_some_and(|x| x.is_ascii_lowercase());
    let upper = |i: usize| c.get(i).is_some_and(|x| x.is_ascii_uppercase());
    let digit = |i: usize| c.get(i).copied().is_some_and(is_python_digit);
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let start = i;
        let mut end = None;
        if upper(i) && lower(i + 1) {
            let mut j = i + 1;
            while lower(j) {
                j += 1;
            }
            end = Some(j);
        } else if lower(i) {
            let mut j = i;
            while lower(j) {
                j += 1;
            }
            end = Some(j);
        } else if upper(i) {
            let mut n = 0;
            while upper(i + n) {
                n += 1;
            }
            let mut k = n;
            while k >= 1 && lower(i + k) {
                k -= 1;
            }
            if k >= 1 {
                end = Some(i + k);
            }
        } else if digit(i) {
            let mut j = i;
            while digit(j) {
                j += 1;
            }
            end = Some(j);
        }
        match end {
            Some(e) => {
                out.push(c[start..e].iter().collect::<String>().to_lowercase());
                i = e;
            }
            None => i += 1,
        }
    }
    out
}

/// Whether a variable's name says its value is a secret.
pub fn looks_secret(name: &str) -> bool {
    let w = words(name);
    if w.is_empty() {
        return false;
    }
    let first = w[0].as_str();
    let last = w[w.len() - 1].as_str();
    if w.len() > 1 && (NOT_SECRET_FIRST.contains(&first) || NOT_SECRET_LAST.contains(&last)) {
        return false;
    }
    if w.iter().any(|x| SECRET_WORDS.contains(&x.as_str())) {
        return true;
    }
    w.windows(2).any(|p| SECRET_PAIRS.contains(&(p[0].as_str(), p[1].as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for (name, secret) in [
            ("token", true),
            ("api_key", true),
            ("apiKey", true),
            ("API_KEY", true),
            ("db_password", true),
            ("password_file", false),
            ("max_token", false),
            ("token_limit", false),
            ("auth_mode", false),
            ("key", false),
            ("dt", false),
            ("region", false),
            ("connectionString", true),
            ("sshKey", true),
            ("HTTPServerToken", true),
            ("n_tokens", false),
        ] {
            assert_eq!(looks_secret(name), secret, "{name}");
        }
        assert_eq!(words("HTTPServer2x"), vec!["http", "server", "2", "x"]);
    }

    /// `\d` is Nd only: `Ⅻ` (Nl), `²` and `½` (No) are no word, as in the
    /// peer, so `Ⅻmax_token` is a counting name there and here.
    #[test]
    fn only_decimal_digits_are_digits() {
        assert!(!looks_secret("Ⅻmax_token"));
        assert!(!looks_secret("²max_token"));
        assert_eq!(words("Ⅻmax_token"), vec!["max", "token"]);
        assert_eq!(words("٣max_token"), vec!["٣", "max", "token"]);
        assert!(looks_secret("٣max_token"), "an Arabic-Indic digit is Nd: a word before max");
        for (c, digit) in
            [('0', true), ('9', true), ('٣', true), ('𝟎', true), ('Ⅻ', false), ('²', false), ('½', false), ('a', false)]
        {
            assert_eq!(is_python_digit(c), digit, "{c}");
        }
        assert!(PYTHON_DIGITS.windows(2).all(|w| w[0].1 < w[1].0), "sorted, apart");
    }
}
