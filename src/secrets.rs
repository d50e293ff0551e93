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

/// The words of a name as the peer's regex `[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+`
/// finds them, lower-cased: `apiKey` -> api, key; `HTTPServer2` -> http, server, 2.
pub fn words(name: &str) -> Vec<String> {
    let c: Vec<char> = name.chars().collect();
    let lower = |i: usize| c.get(i).is_some_and(|x| x.is_ascii_lowercase());
    let upper = |i: usize| c.get(i).is_some_and(|x| x.is_ascii_uppercase());
    let digit = |i: usize| c.get(i).is_some_and(|x| x.is_numeric());
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
}
