//! `s3://bucket/prefix`: where a use case, or an output, lives in a store.

use std::fmt;

/// A place in a bucket: the bucket and a prefix of keys (no leading or
/// trailing `/`; empty for the bucket's top).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StoreUrl {
    /// The bucket's name.
    pub bucket: String,
    /// The prefix, its segments joined by `/`.
    pub prefix: String,
}

/// Whether `text` names a place in a store rather than a folder.
pub fn is_store_url(text: &str) -> bool {
    text.get(..5).is_some_and(|s| s.eq_ignore_ascii_case("s3://"))
}

impl StoreUrl {
    /// Parse `s3://bucket[/prefix]`. The error says what is wrong, in words
    /// that fit after the URL.
    pub fn parse(text: &str) -> Result<StoreUrl, String> {
        if !is_store_url(text) {
            return Err("is not an s3:// URL (s3://bucket/prefix)".into());
        }
        let rest = &text[5..];
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        check_bucket(bucket)?;
        let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
        if !prefix.is_empty() {
            for seg in prefix.split('/') {
                match seg {
                    "" => return Err("has an empty segment (two '/' in a row)".into()),
                    "." | ".." => return Err(format!("has a '{seg}' segment: name the prefix plainly")),
                    _ => {}
                }
                if let Some(c) = seg.chars().find(|c| c.is_control() || matches!(c, '?' | '#' | '\\')) {
                    return Err(format!("has {c:?} in it: keys here are plain text without ?, # or \\"));
                }
                plain_key(seg)?;
            }
        }
        Ok(StoreUrl { bucket: bucket.to_string(), prefix: prefix.to_string() })
    }

    /// The key of `rest` (a `/`-separated path) under this prefix.
    pub fn key(&self, rest: &str) -> String {
        match (self.prefix.is_empty(), rest.is_empty()) {
            (true, _) => rest.to_string(),
            (false, true) => self.prefix.clone(),
            (false, false) => format!("{}/{rest}", self.prefix),
        }
    }

    /// The URL of a key in this bucket.
    pub fn url_of(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }

    /// Whether `key` is this prefix or below it.
    pub fn holds(&self, key: &str) -> bool {
        self.prefix.is_empty()
            || key == self.prefix
            || key.strip_prefix(&self.prefix).is_some_and(|r| r.starts_with('/'))
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.prefix.is_empty() {
            write!(f, "s3://{}", self.bucket)
        } else {
            write!(f, "s3://{}/{}", self.bucket, self.prefix)
        }
    }
}

/// Refuse a key (or a part of one) that the S3 client would send changed:
/// `object_store` percent-encodes `~ % [ ] { } ^ | < > " * `` ` and a few
/// more, so the object would land under another name than the one given.
pub fn plain_key(key: &str) -> Result<(), String> {
    let sent = object_store::path::Path::from(key);
    if sent.as_ref() == key.trim_matches('/') {
        return Ok(());
    }
    let odd: String = key
        .chars()
        .filter(|c| object_store::path::Path::from(c.to_string().as_str()).as_ref() != c.to_string())
        .collect();
    Err(format!(
        "has {} in it, which the S3 client would send encoded (the object would land under another name): use letters, digits and - _ . = , + @ ! ( ) only",
        if odd.is_empty() { "a name".to_string() } else { format!("{odd:?}") }
    ))
}

/// S3's rules for a bucket name: 3 to 63 of a-z, 0-9, '.' and '-',
/// beginning and ending with a letter or digit.
fn check_bucket(b: &str) -> Result<(), String> {
    if b.is_empty() {
        return Err("names no bucket (s3://bucket/prefix)".into());
    }
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-';
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !(3..=63).contains(&b.len()) || !b.chars().all(ok_char) || !edge(b.chars().next()) || !edge(b.chars().last()) {
        return Err(format!(
            "names the bucket '{b}', which is not a bucket name (3 to 63 of a-z, 0-9, '.', '-'; a letter or digit at each end)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_into_bucket_and_prefix() {
        let u = StoreUrl::parse("s3://my-bucket/a/b/").unwrap();
        assert_eq!((u.bucket.as_str(), u.prefix.as_str()), ("my-bucket", "a/b"));
        assert_eq!(u.to_string(), "s3://my-bucket/a/b");
        assert_eq!(u.key(".ubunye/leases"), "a/b/.ubunye/leases");
        assert!(u.holds("a/b/c") && u.holds("a/b") && !u.holds("a/bc"));
        let top = StoreUrl::parse("S3://bkt").unwrap();
        assert_eq!((top.prefix.as_str(), top.key("x")), ("", "x".to_string()));
        assert_eq!(top.to_string(), "s3://bkt");
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        for (bad, says) in [
            ("/tmp/x", "not an s3:// URL"),
            ("s3://", "names no bucket"),
            ("s3:///x", "names no bucket"),
            ("s3://Big/x", "not a bucket name"),
            ("s3://ab/x", "not a bucket name"),
            ("s3://-ab/x", "not a bucket name"),
            ("s3://bkt/a//b", "empty segment"),
            ("s3://bkt/a/../b", "'..' segment"),
            ("s3://bkt/a?b", "'?'"),
            ("s3://bkt/a\nb", "'\\n'"),
            ("s3://bkt/uc~1", "\"~\""),
            ("s3://bkt/a/b[1]", "\"[]\""),
        ] {
            let e = StoreUrl::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
