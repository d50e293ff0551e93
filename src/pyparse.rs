//! Whether Python's `json.loads` would accept a text.
//!
//! serde_json is stricter than Python in two ways the peer can produce or accept:
//! the bare words `NaN`, `Infinity`, `-Infinity`, and lone UTF-16 surrogates in
//! `\u` escapes. A lease the peer can read but serde_json cannot must never be
//! taken for "empty or not JSON" (which is judged by age and claims nothing): it
//! is refused instead. This checker tells the two apart. It only validates; it
//! builds nothing.

/// `Some(true)`: Python accepts it and it is an object; `Some(false)`: Python
/// accepts it and it is not an object; `None`: Python rejects it. Nesting deeper
/// than this checker goes counts as accepted: a text that cannot be told apart
/// must be refused, never taken for garbage.
pub fn python_accepts(text: &str) -> Option<bool> {
    let mut p = P { s: text.as_bytes(), i: 0, depth: 0, too_deep: false };
    p.ws();
    let is_object = p.peek() == Some(b'{');
    let ok = p.value();
    if p.too_deep {
        return Some(is_object);
    }
    ok?;
    p.ws();
    (p.i == p.s.len()).then_some(is_object)
}

const MAX_DEPTH: usize = 900;

struct P<'a> {
    too_deep: bool,
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl P<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }
    fn lit(&mut self, w: &[u8]) -> Option<()> {
        if self.s[self.i..].starts_with(w) {
            self.i += w.len();
            Some(())
        } else {
            None
        }
    }
    fn value(&mut self) -> Option<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.too_deep = true;
            return None;
        }
        let r = match self.peek()? {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => self.string(),
            b't' => self.lit(b"true"),
            b'f' => self.lit(b"false"),
            b'n' => self.lit(b"null"),
            b'N' => self.lit(b"NaN"),
            b'I' => self.lit(b"Infinity"),
            b'-' if self.s[self.i..].starts_with(b"-Infinity") => self.lit(b"-Infinity"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        };
        self.depth -= 1;
        r
    }
    fn object(&mut self) -> Option<()> {
        self.i += 1;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return None;
            }
            self.string()?;
            self.ws();
            self.lit(b":")?;
            self.ws();
            self.value()?;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
    fn array(&mut self) -> Option<()> {
        self.i += 1;
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            self.value()?;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
    fn string(&mut self) -> Option<()> {
        self.i += 1;
        loop {
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    return Some(());
                }
                b'\\' => {
                    self.i += 1;
                    match self.peek()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 1,
                        b'u' => {
                            let hex = self.s.get(self.i + 1..self.i + 5)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            self.i += 5;
                        }
                        _ => return None,
                    }
                }
                c if c < 0x20 => return None,
                _ => self.i += 1,
            }
        }
    }
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') && self.s.get(self.i + 1).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let save = self.i;
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.digits();
            } else {
                self.i = save;
            }
        }
        Some(())
    }
    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
    }
}

/// A text Python accepts, rewritten so serde_json can read it: the bare words
/// `NaN`, `Infinity` and `-Infinity` become `null`, and lone surrogate escapes
/// become U+FFFD. For reading a field out of such a document, never for writing
/// it back.
pub fn sanitize(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut in_str = false;
    let hex_at = |i: usize| -> Option<u32> {
        let h = b.get(i..i + 4)?;
        u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
    };
    while i < b.len() {
        if in_str {
            if b[i] == b'"' {
                in_str = false;
                out.push('"');
                i += 1;
            } else if b[i] == b'\\' && b.get(i + 1) == Some(&b'u') {
                let Some(code) = hex_at(i + 2) else {
                    out.push_str(&text[i..i + 2]);
                    i += 2;
                    continue;
                };
                if (0xD800..0xDC00).contains(&code)
                    && b.get(i + 6) == Some(&b'\\')
                    && b.get(i + 7) == Some(&b'u')
                    && hex_at(i + 8).is_some_and(|c| (0xDC00..0xE000).contains(&c))
                {
                    out.push_str(&text[i..i + 12]);
                    i += 12;
                } else if (0xD800..0xE000).contains(&code) {
                    out.push_str("\\ufffd");
                    i += 6;
                } else {
                    out.push_str(&text[i..i + 6]);
                    i += 6;
                }
            } else if b[i] == b'\\' {
                // A backslash and the character after it, whatever its width.
                let next = text[i + 1..].chars().next().map_or(0, char::len_utf8);
                out.push_str(&text[i..i + 1 + next]);
                i += 1 + next;
            } else {
                let ch = text[i..].chars().next().unwrap_or('?');
                out.push(ch);
                i += ch.len_utf8();
            }
        } else if b[i] == b'"' {
            in_str = true;
            out.push('"');
            i += 1;
        } else if text[i..].starts_with("-Infinity") {
            out.push_str("null");
            i += 9;
        } else if text[i..].starts_with("Infinity") {
            out.push_str("null");
            i += 8;
        } else if text[i..].starts_with("NaN") {
            out.push_str("null");
            i += 3;
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Python's `str.isspace()`: Unicode White_Space plus `\x1c`..`\x1f`, what
/// `str.strip()` removes.
pub fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::{python_accepts, sanitize};

    #[test]
    fn sanitized_text_parses() {
        let t = r#"{"a": NaN, "b": [-Infinity, Infinity], "s": "NaN \ud800 \ud83d\ude00 \" x", "status": "success"}"#;
        let v: serde_json::Value = serde_json::from_str(&sanitize(t)).unwrap();
        assert_eq!(v["status"], "success");
        assert_eq!(v["a"], serde_json::Value::Null);
        assert_eq!(v["s"], "NaN \u{fffd} \u{1f600} \" x");
    }

    #[test]
    fn nesting_deeper_than_we_check_is_never_garbage() {
        let deep = format!("{{\"a\": {}1{}}}", "[".repeat(950), "]".repeat(950));
        assert_eq!(python_accepts(&deep), Some(true));
    }

    #[test]
    fn table() {
        let cases: &[(&str, Option<bool>)] = &[
            ("{}", Some(true)),
            (" {\"a\": [1, 2.5e3, -0, true, null]} \n", Some(true)),
            ("[1]", Some(false)),
            ("\"x\"", Some(false)),
            ("{\"a\": NaN, \"b\": -Infinity, \"c\": Infinity}", Some(true)),
            ("{\"a\": \"\\ud800\"}", Some(true)),
            ("", None),
            ("{", None),
            ("{\"a\": 1,}", None),
            ("{\"a\": 01}", None),
            ("{\"a\": \"\t\"}", None),
            ("{} x", None),
            ("{\"a\": 1.}", None),
            ("{'a': 1}", None),
        ];
        for (text, want) in cases {
            assert_eq!(python_accepts(text), *want, "{text:?}");
        }
    }
}
