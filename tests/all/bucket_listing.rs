//! The S3 client's listing against answers a real store may give and a
//! wrong endpoint does give: a server on 127.0.0.1 of the test's own, a
//! thread that answers each request with the next canned answer (bounded in
//! count and time), and records what it was asked.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ubunye::bucket::{ErrorKind, Objects, S3};

/// A server that gives `answers` in turn, one a connection, then stops;
/// the request lines it was sent.
fn serve(answers: Vec<(u16, String)>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut answers = answers.into_iter();
        while Instant::now() < deadline {
            let Ok((mut c, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            let Some((status, body)) = answers.next() else { return };
            c.set_nonblocking(false).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let mut head = Vec::new();
            let mut buf = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let line = String::from_utf8_lossy(&head).lines().next().unwrap_or_default().to_string();
            log.lock().unwrap().push(line);
            let reply = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = c.write_all(reply.as_bytes());
        }
    });
    (format!("http://{addr}"), asked)
}

fn client(endpoint: &str) -> S3 {
    let vars: Vec<(String, String)> = [
        ("AWS_ENDPOINT_URL", endpoint),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ACCESS_KEY_ID", "AKIDTEST"),
        ("AWS_SECRET_ACCESS_KEY", "s3cr3t"),
        ("AWS_REGION", "us-east-1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    S3::from_vars("bkt", &vars).unwrap()
}

fn page(keys: &[&str], next: Option<&str>) -> String {
    let contents: String = keys
        .iter()
        .map(|k| {
            format!(
                "<Contents><Key>{k}</Key><LastModified>2026-12-05T22:03:50.000Z</LastModified><ETag>&#34;e1&#34;</ETag><Size>2</Size></Contents>"
            )
        })
        .collect();
    let more = match next {
        Some(t) => format!("<IsTruncated>true</IsTruncated><NextContinuationToken>{t}</NextContinuationToken>"),
        None => "<IsTruncated>false</IsTruncated>".into(),
    };
    format!("<?xml version=\"1.0\"?><ListBucketResult><Name>bkt</Name>{more}{contents}</ListBucketResult>")
}

/// Keys as the store holds them, pages followed, an ETag with its quotes.
#[test]
fn pages_are_followed_and_keys_read_as_the_store_holds_them() {
    let (url, asked) = serve(vec![
        (200, page(&["uc/a&amp;b.json", "uc/demo//x.json"], Some("t+/="))),
        (200, page(&["uc/\u{e9}.json"], None)),
    ]);
    let listed = client(&url).list("uc/").unwrap();
    let keys: Vec<&str> = listed.iter().map(|l| l.key.as_str()).collect();
    assert_eq!(keys, ["uc/a&b.json", "uc/demo//x.json", "uc/\u{e9}.json"]);
    assert_eq!(listed[0].etag, "\"e1\"");
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[1].contains("continuation-token=t%2B%2F%3D"), "{asked:?}");
}

/// A 200 that is not a listing (a web page at the endpoint, a body cut
/// short) is never an empty bucket: the listing is refused in one line.
#[test]
fn an_answer_that_is_not_a_listing_is_never_an_empty_bucket() {
    for body in ["<html>console</html>", "", "<ListBucketResult><Contents><Key>uc/a"] {
        let (url, _) = serve(vec![(200, body.to_string())]);
        let e = client(&url).list("uc/").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unsupported, "{body:?}: {e}");
        assert!(e.what.contains("not a listing"), "{e}");
    }
}

/// A time that cannot be read is refused, never taken for 1970 (which a
/// sweep would take for an old object and delete).
#[test]
fn a_last_modified_that_cannot_be_read_is_refused() {
    let body = page(&["uc/a.json"], None).replace("2026-12-05T22:03:50.000Z", "2026-12-05T23:00:00.000");
    let (url, _) = serve(vec![(200, body)]);
    let e = client(&url).list("uc/").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    assert!(e.what.contains("LastModified"), "{e}");
}

/// A 503 (SlowDown) is tried again, as object_store tries its own; a page
/// that leads back to itself is refused, not followed for ever.
#[test]
fn a_slow_down_is_tried_again_and_a_loop_is_refused() {
    let slow = "<Error><Code>SlowDown</Code></Error>".to_string();
    let (url, asked) = serve(vec![(503, slow), (200, page(&["uc/a.json"], None))]);
    assert_eq!(client(&url).list("uc/").unwrap().len(), 1);
    assert_eq!(asked.lock().unwrap().len(), 2);
    let (url, asked) = serve(vec![(200, page(&["uc/a.json"], Some("t1"))), (200, page(&["uc/b.json"], Some("t1")))]);
    let e = client(&url).list("uc/").unwrap_err();
    assert!(e.what.contains("no new continuation token"), "{e}");
    assert_eq!(asked.lock().unwrap().len(), 2);
}

/// What a refusal says is S3's code, never the body: a page that echoes the
/// signed request would print the credential and the signature.
#[test]
fn a_refusal_never_prints_the_page_it_came_with() {
    let echo = "<html>GET /bkt?list-type=2&X-Amz-Credential=AKIDTEST&X-Amz-Signature=abc \u{1b}[31m</html>";
    let (url, _) = serve(vec![(400, echo.to_string())]);
    let e = client(&url).list("uc/").unwrap_err();
    assert_eq!(e.what, "listing it: HTTP 400");
    let text = e.to_string();
    assert!(!text.contains("AKIDTEST") && !text.contains('\u{1b}'), "{text}");
}
