//! Reading S3's answers: the XML of the requests signed here, and the
//! protocol's error for what `object_store` answered (one line, never a
//! credential or a signed URL).

use super::super::objects::{ErrorKind, StoreError};

/// The text of the first `<name>...</name>` in an XML answer.
pub(super) fn tag(body: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = body.find(&open)? + open.len();
    let end = body[start..].find(&format!("</{name}>"))? + start;
    Some(body[start..end].to_string())
}

pub(super) fn xml_text(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// XML text as the characters it stands for: the five named entities and
/// numeric ones (`&#34;`, `&#x1B;`); anything else is kept as written.
pub(super) fn xml_unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(end) = rest.find(';').filter(|e| *e <= 10) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let name = &rest[1..end];
        let ch = match name {
            "quot" => Some('"'),
            "apos" => Some('\''),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            _ => match name.strip_prefix("#x").or_else(|| name.strip_prefix("#X")) {
                Some(hex) => u32::from_str_radix(hex, 16).ok().and_then(char::from_u32),
                None => name.strip_prefix('#').and_then(|d| d.parse().ok()).and_then(char::from_u32),
            },
        };
        match ch {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Why a listing was refused, from its status and the error S3 put in its
/// body.
pub(super) fn list_error(bucket: &str, prefix: &str, status: u16, body: &str) -> StoreError {
    // Only S3's error code is said: a body that is not S3's (a proxy's or a
    // web server's page) may echo the signed request, and is never printed.
    let code = tag(body, "Code").filter(|c| c.len() <= 64 && c.chars().all(|c| c.is_ascii_alphanumeric()));
    let (kind, what) = match (status, code.as_deref().unwrap_or("")) {
        (404, _) | (_, "NoSuchBucket") => {
            (ErrorKind::NoBucket, format!("the bucket '{bucket}' does not exist: create it, or check -d"))
        }
        (403, "AccessDenied") => (
            ErrorKind::Denied,
            "the store denied the listing (AccessDenied): the credentials need s3:ListBucket on the bucket".into(),
        ),
        (401 | 403, _) => {
            (ErrorKind::Denied, "the store refused the credentials: check AWS_ACCESS_KEY_ID and its secret".into())
        }
        (s, "") => (ErrorKind::Other, format!("listing it: HTTP {s}")),
        (s, c) => (ErrorKind::Other, format!("listing it: HTTP {s} ({c})")),
    };
    let url =
        if matches!(kind, ErrorKind::NoBucket) { format!("s3://{bucket}") } else { format!("s3://{bucket}/{prefix}") };
    StoreError { kind, url, what }
}

pub(super) fn no_answer(text: &str) -> String {
    format!("no answer from the store: check AWS_ENDPOINT_URL and the network ({})", one_line(text))
}

/// One line: a message from the stack may hold newlines.
pub(super) fn one_line(s: &str) -> String {
    without_userinfo(&s.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// `s` with any `user:password@` of a URL in it cut out: a message never
/// carries a credential, even one put in the endpoint.
pub(super) fn without_userinfo(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("://") {
        out.push_str(&rest[..i + 3]);
        rest = &rest[i + 3..];
        let end = rest.find(|c: char| c == '/' || c.is_whitespace()).unwrap_or(rest.len());
        if let Some(at) = rest[..end].rfind('@') {
            rest = &rest[at + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// The protocol's error for what `object_store` answered.
pub(super) fn of_store_error(bucket: &str, key: &str, e: object_store::Error) -> StoreError {
    use object_store::Error as E;
    let url = if key.is_empty() { format!("s3://{bucket}") } else { format!("s3://{bucket}/{key}") };
    let text = one_line(&e.to_string());
    let kind = match &e {
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => ErrorKind::Denied,
        _ if text.contains("NoSuchBucket") => ErrorKind::NoBucket,
        _ if text.contains("AccessDenied")
            || text.contains("SignatureDoesNotMatch")
            || text.contains("InvalidAccessKeyId") =>
        {
            ErrorKind::Denied
        }
        _ if text.contains("error sending request") || text.contains("timed out") || text.contains("connect") => {
            ErrorKind::Network
        }
        _ => ErrorKind::Other,
    };
    let what = match kind {
        ErrorKind::NoBucket => format!("the bucket '{bucket}' does not exist: create it, or check -d"),
        ErrorKind::Denied => {
            format!("the store refused the credentials: check AWS_ACCESS_KEY_ID and its secret ({text})")
        }
        ErrorKind::Network => {
            format!("no answer from the store (after bounded retries): check AWS_ENDPOINT_URL and the network ({text})")
        }
        _ => text,
    };
    StoreError { kind, url, what }
}

pub(super) fn is_refusal(e: &object_store::Error) -> bool {
    use object_store::Error as E;
    matches!(e, E::AlreadyExists { .. } | E::Precondition { .. } | E::NotModified { .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_credential_of_a_url_reaches_a_message() {
        assert_eq!(
            one_line("Error performing PUT http://alice:s3cr3t@127.0.0.1:9/bkt/k in 1ms\n  (retried)"),
            "Error performing PUT http://127.0.0.1:9/bkt/k in 1ms (retried)"
        );
        assert_eq!(without_userinfo("https://u@h/x and s3://bkt/a@b"), "https://h/x and s3://bkt/a@b");
        assert_eq!(without_userinfo("no url here: a@b"), "no url here: a@b");
    }

    #[test]
    fn a_refused_listing_says_s3s_code_and_never_the_body() {
        let page = "<html>GET /bkt?list-type=2&X-Amz-Credential=AKIDSECRET&X-Amz-Signature=abc \u{1b}[31m</html>";
        let e = list_error("bkt", "uc/", 500, page);
        assert_eq!(e.what, "listing it: HTTP 500");
        let e = list_error("bkt", "uc/", 503, "<Error><Code>SlowDown</Code></Error>");
        assert_eq!(e.what, "listing it: HTTP 503 (SlowDown)");
        let e = list_error("bkt", "uc/", 403, "<Error><Code>AccessDenied</Code></Error>");
        assert!(e.what.contains("s3:ListBucket"), "{}", e.what);
        let e = list_error("bkt", "uc/", 403, "<Error><Code>SignatureDoesNotMatch</Code></Error>");
        assert!(e.what.contains("check AWS_ACCESS_KEY_ID"), "{}", e.what);
        let e = list_error("bkt", "uc/", 500, "<Error><Code>\u{1b}[2J</Code></Error>");
        assert_eq!(e.what, "listing it: HTTP 500");
    }

    #[test]
    fn xml_text_is_read_back_as_written() {
        assert_eq!(xml_unescape("&#34;abc&#34;"), "\"abc\"");
        assert_eq!(xml_unescape("&quot;e&quot; &lt;k&gt; &amp;amp; &apos;"), "\"e\" <k> &amp; '");
        assert_eq!(xml_unescape("esc&#x1B;[31m&#27;"), "esc\u{1b}[31m\u{1b}");
        assert_eq!(xml_unescape("a & b &bogus; &#xZZ; &"), "a & b &bogus; &#xZZ; &");
        assert_eq!(xml_unescape("plain/key.json"), "plain/key.json");
    }
}
