//! [`Objects`] over S3 and compatible stores, through `object_store` (feature
//! `aws`): the endpoint, region and credentials come from the environment it
//! reads (`AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, `AWS_REGION`,
//! `AWS_ACCESS_KEY_ID`, ...). The requests `object_store` cannot make as the
//! protocol needs them (a DELETE with `If-Match`, a completion with
//! `If-None-Match`, the store's `Date`, the open uploads with their start, a
//! listing that takes every key as the store holds it) are signed by it and
//! sent by the same HTTP stack. No credential,
//! and no signed URL, ever reaches a message.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::multipart::MultipartStore;
use object_store::path::Path;
use object_store::signer::{SignedUrlOptions, Signer};
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};
use reqwest::Method;
use reqwest::header::{HeaderValue, IF_MATCH, IF_NONE_MATCH};

use super::objects::{ErrorKind, Got, Listed, Objects, StoreError, Upload, Written};
use answers::{is_refusal, list_error, no_answer, of_store_error, one_line, tag, xml_text, xml_unescape};

mod answers;

/// The key as the store holds it: parsed as it is (a key listed from the
/// store may hold `%`), never encoded twice. The engine's own keys are
/// plain (`url::plain_key`), so for them this is the key itself.
fn path(key: &str) -> Path {
    Path::parse(key).unwrap_or_else(|_| Path::from(key))
}

/// Requests in flight at once for uploads and completions.
const IN_FLIGHT: usize = 16;

/// Run `requests` with [`IN_FLIGHT`] of them at a time, their answers in
/// their order; the first failure ends it. Unordered in flight: one slow
/// request does not hold the others back (an ordered buffer keeps at most
/// `IN_FLIGHT` answers waiting behind its head).
async fn many<T, F>(requests: impl Iterator<Item = F>) -> Result<Vec<T>, StoreError>
where
    F: std::future::Future<Output = Result<T, StoreError>>,
{
    let mut answers: Vec<(usize, T)> =
        futures_util::stream::iter(requests.enumerate().map(|(i, f)| async move { f.await.map(|t| (i, t)) }))
            .buffer_unordered(IN_FLIGHT)
            .try_collect()
            .await?;
    answers.sort_unstable_by_key(|(i, _)| *i);
    Ok(answers.into_iter().map(|(_, t)| t).collect())
}
/// The size of each part of an upload (S3 takes 5 MiB to 5 GiB, the last part less).
const PART: usize = 8 << 20;
/// How long a request may take, and how long a connection.
const TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT: Duration = Duration::from_secs(5);

/// A bucket in S3 or a compatible store.
pub struct S3 {
    bucket: String,
    store: Arc<AmazonS3>,
    http: reqwest::Client,
    rt: tokio::runtime::Runtime,
}

/// Whether the environment names credentials `object_store` can use without
/// asking a metadata service (which, where there is none, only times out).
fn has_credentials(var: &dyn Fn(&str) -> Option<String>) -> bool {
    let set = |n: &str| var(n).is_some_and(|v| !v.trim().is_empty());
    (set("AWS_ACCESS_KEY_ID") && set("AWS_SECRET_ACCESS_KEY"))
        || set("AWS_WEB_IDENTITY_TOKEN_FILE")
        || set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        || set("AWS_CONTAINER_CREDENTIALS_FULL_URI")
        || set("UBUNYE_S3_IMDS")
}

impl S3 {
    /// The bucket `bucket`, reached as the environment says. Nothing is sent
    /// yet: the first request tells whether the bucket is there.
    pub fn from_env(bucket: &str) -> Result<S3, StoreError> {
        let vars: Vec<(String, String)> =
            std::env::vars().filter(|(k, _)| k.starts_with("AWS_") || k == "UBUNYE_S3_IMDS").collect();
        S3::from_vars(bucket, &vars)
    }

    /// The bucket `bucket`, reached as `vars` (`AWS_*` names and values, as
    /// the environment would hold them) say. Without credentials named there
    /// (keys, a web identity, a container role, or `UBUNYE_S3_IMDS=1` for an
    /// EC2 instance role), it refuses at once rather than wait for a metadata
    /// service that is not there.
    pub fn from_vars(bucket: &str, vars: &[(String, String)]) -> Result<S3, StoreError> {
        let err = |kind, what: String| StoreError { kind, url: format!("s3://{bucket}"), what };
        let var = |n: &str| vars.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        if !has_credentials(&var) {
            return Err(err(
                ErrorKind::Denied,
                "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_WEB_IDENTITY_TOKEN_FILE, or a container role; UBUNYE_S3_IMDS=1 to ask an EC2 instance's metadata service)".into(),
            ));
        }
        // Timeouts first: a variable (AWS_ALLOW_HTTP, ...) may set more of
        // the client's options, and must not be replaced by them.
        for name in ["AWS_ENDPOINT_URL", "AWS_ENDPOINT", "AWS_ENDPOINT_URL_S3"] {
            if var(name).is_some_and(|v| answers::without_userinfo(&v) != v) {
                return Err(err(
                    ErrorKind::Denied,
                    format!(
                        "{name} holds a user name or password (user:password@host): S3 signs each request with the access key instead; give the endpoint without them"
                    ),
                ));
            }
        }
        // Plain HTTP is refused by the client unless allowed; its own words
        // for it ("builder error") name nothing to change.
        let allowed = var("AWS_ALLOW_HTTP")
            .is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "on" | "yes" | "y"));
        for name in ["AWS_ENDPOINT_URL", "AWS_ENDPOINT", "AWS_ENDPOINT_URL_S3"] {
            if let Some(v) = var(name).filter(|v| v.trim().to_ascii_lowercase().starts_with("http://") && !allowed) {
                return Err(err(
                    ErrorKind::Other,
                    format!(
                        "{name} is {v}, plain HTTP, which is refused unless AWS_ALLOW_HTTP=true is set too (for a store on a trusted network or a test server; give https:// otherwise)"
                    ),
                ));
            }
        }
        let mut b = AmazonS3Builder::new().with_client_options(
            object_store::ClientOptions::new().with_timeout(TIMEOUT).with_connect_timeout(CONNECT),
        );
        for (k, v) in vars {
            if let Ok(key) = k.to_ascii_lowercase().parse() {
                b = b.with_config(key, v);
            }
        }
        let mut b = b.with_bucket_name(bucket).with_retry(object_store::RetryConfig {
            max_retries: 3,
            retry_timeout: Duration::from_secs(20),
            ..Default::default()
        });
        if var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")).is_none() {
            b = b.with_region("us-east-1");
        }
        let store = b.build().map_err(|e| err(ErrorKind::Other, one_line(&e.to_string())))?;
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(CONNECT)
            .build()
            .map_err(|e| err(ErrorKind::Other, one_line(&e.without_url().to_string())))?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("ubunye-s3")
            .enable_all()
            .build()
            .map_err(|e| err(ErrorKind::Other, format!("cannot start the request threads: {e}")))?;
        Ok(S3 { bucket: bucket.into(), store: Arc::new(store), http, rt })
    }

    fn error(&self, key: &str, e: object_store::Error) -> StoreError {
        of_store_error(&self.bucket, key, e)
    }

    /// A request `object_store` signs and we send, with `headers` signed too.
    async fn signed(
        &self,
        method: Method,
        key: &str,
        query: &[(&str, &str)],
        headers: &[(reqwest::header::HeaderName, &str)],
        body: Option<String>,
    ) -> Result<(u16, reqwest::header::HeaderMap, String), StoreError> {
        let url_of = |k: &str| if k.is_empty() { format!("s3://{}", self.bucket) } else { self.url(k) };
        let mut opts =
            SignedUrlOptions::default().with_query(query.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        for (name, value) in headers {
            let v = HeaderValue::from_str(value).map_err(|_| StoreError {
                kind: ErrorKind::Other,
                url: url_of(key),
                what: format!("a header value the store cannot take: {value:?}"),
            })?;
            opts = opts.with_signed_header(name.clone(), v);
        }
        let url = self
            .store
            .signed_url_opts(method.clone(), &path(key), Duration::from_secs(300), &opts)
            .await
            .map_err(|e| self.error(key, e))?;
        let mut req = self.http.request(method, url);
        for (name, value) in headers {
            req = req.header(name.clone(), *value);
        }
        if let Some(b) = body {
            req = req.body(b);
        }
        let resp = req.send().await.map_err(|e| StoreError {
            kind: ErrorKind::Network,
            url: url_of(key),
            what: no_answer(&e.without_url().to_string()),
        })?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.map_err(|e| StoreError {
            kind: ErrorKind::Network,
            url: url_of(key),
            what: one_line(&e.without_url().to_string()),
        })?;
        Ok((status, headers, text))
    }

    /// A read signed here (a listing, the bucket's `HEAD`), tried again as
    /// `object_store` tries its own: after no answer, or a 5xx (`SlowDown`
    /// among them), at most three times more, waiting 0.1, 0.2 and 0.4 s
    /// (its backoff's start). Only reads: a conditional write tried again
    /// could read its own landing as a refusal.
    async fn signed_read(
        &self,
        method: Method,
        query: &[(&str, &str)],
    ) -> Result<(u16, reqwest::header::HeaderMap, String), StoreError> {
        let mut wait = Duration::from_millis(100);
        for _ in 0..3 {
            let answer = self.signed(method.clone(), "", query, &[], None).await;
            match &answer {
                Ok((s, _, _)) if *s >= 500 => {}
                Err(StoreError { kind: ErrorKind::Network, .. }) => {}
                _ => return answer,
            }
            tokio::time::sleep(wait).await;
            wait *= 2;
        }
        self.signed(method, "", query, &[], None).await
    }

    /// A 200 to a listing of `prefix` that is not a listing (a web page at
    /// the endpoint, a body cut short) is refused, never read as an empty
    /// bucket.
    fn a_listing(&self, prefix: &str, body: &str) -> Result<(), StoreError> {
        if body.contains("<ListBucketResult") && tag(body, "IsTruncated").is_some() {
            return Ok(());
        }
        Err(StoreError {
            kind: ErrorKind::Unsupported,
            url: format!("s3://{}/{prefix}", self.bucket),
            what: "the store's answer to a listing is not a listing (is AWS_ENDPOINT_URL an S3 endpoint?)".into(),
        })
    }

    async fn complete_one(&self, u: &Upload, parts: &[String]) -> Result<Written, StoreError> {
        let mut xml = String::from("<CompleteMultipartUpload>");
        for (i, etag) in parts.iter().enumerate() {
            xml.push_str(&format!("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", i + 1, xml_text(etag)));
        }
        xml.push_str("</CompleteMultipartUpload>");
        let (status, _, body) =
            self.signed(Method::POST, &u.key, &[("uploadId", &u.id)], &[(IF_NONE_MATCH, "*")], Some(xml)).await?;
        // S3 may answer 200 and put the error in the body.
        let code = tag(&body, "Code");
        match (status, code.as_deref()) {
            (200, None) => Ok(Written::Done(tag(&body, "ETag").map(|e| xml_unescape(&e)).unwrap_or_default())),
            (412, _) | (404, _) | (_, Some("NoSuchUpload" | "PreconditionFailed")) => Ok(Written::Refused),
            (s, c) => Err(StoreError {
                kind: ErrorKind::Other,
                url: self.url(&u.key),
                what: format!("completing the upload: HTTP {s}{}", c.map(|c| format!(" ({c})")).unwrap_or_default()),
            }),
        }
    }

    async fn send_one(&self, u: &Upload) -> Result<Vec<String>, StoreError> {
        let local = |e: std::io::Error| StoreError {
            kind: ErrorKind::Local,
            url: u.file.display().to_string(),
            what: format!("cannot read it: {e}"),
        };
        let at = path(&u.key);
        let mut file = tokio::fs::File::open(&u.file).await.map_err(local)?;
        let mut left = file.metadata().await.map_err(local)?.len();
        let mut out = Vec::new();
        loop {
            // A part's buffer no larger than what is left (plus one byte, to
            // see the end): small files are most files.
            let want = usize::try_from(left.saturating_add(1)).unwrap_or(PART).min(PART);
            let buf = read_part(&mut file, want).await.map_err(local)?;
            left = left.saturating_sub(buf.len() as u64);
            let n = buf.len();
            if n == 0 && !out.is_empty() {
                break;
            }
            let part = self
                .store
                .put_part(&at, &u.id, out.len(), PutPayload::from(buf))
                .await
                .map_err(|e| self.error(&u.key, e))?;
            out.push(part.content_id);
            if n < PART {
                break;
            }
        }
        Ok(out)
    }
}

/// Up to `want` bytes from `file`: fewer only at its end.
async fn read_part(file: &mut tokio::fs::File, want: usize) -> std::io::Result<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; want];
    let mut filled = 0;
    while filled < want {
        let n = file.read(&mut buf[filled..]).await?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    buf.truncate(filled);
    Ok(buf)
}

impl Objects for S3 {
    fn bucket(&self) -> &str {
        &self.bucket
    }

    fn get(&self, key: &str) -> Result<Option<Got>, StoreError> {
        self.rt.block_on(self.get_one(key))
    }

    fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Got>>, StoreError> {
        self.rt.block_on(async { many(keys.iter().map(|k| self.get_one(k))).await })
    }

    fn head(&self, key: &str) -> Result<Option<Listed>, StoreError> {
        self.rt.block_on(async {
            match self.store.head(&path(key)).await {
                Ok(m) => Ok(Some(Listed {
                    key: key.into(),
                    etag: m.e_tag.unwrap_or_default(),
                    modified: SystemTime::from(m.last_modified),
                    size: m.size,
                })),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(self.error(key, e)),
            }
        })
    }

    fn create(&self, key: &str, body: Vec<u8>) -> Result<Written, StoreError> {
        self.put_mode(key, body, PutMode::Create)
    }

    fn update(&self, key: &str, body: Vec<u8>, etag: &str) -> Result<Written, StoreError> {
        self.put_mode(key, body, PutMode::Update(UpdateVersion { e_tag: Some(etag.into()), version: None }))
    }

    fn put(&self, key: &str, body: Vec<u8>) -> Result<String, StoreError> {
        match self.put_mode(key, body, PutMode::Overwrite)? {
            Written::Done(e) => Ok(e),
            Written::Refused => {
                Err(StoreError { kind: ErrorKind::Other, url: self.url(key), what: "a plain write was refused".into() })
            }
        }
    }

    fn delete_if(&self, key: &str, etag: &str) -> Result<bool, StoreError> {
        self.rt.block_on(async {
            let (status, _, body) = self.signed(Method::DELETE, key, &[], &[(IF_MATCH, etag)], None).await?;
            match status {
                200 | 204 => Ok(true),
                404 | 412 => Ok(false),
                s => Err(StoreError {
                    kind: if s == 403 { ErrorKind::Denied } else { ErrorKind::Other },
                    url: self.url(key),
                    what: format!(
                        "deleting it: HTTP {s}{}",
                        tag(&body, "Code").map(|c| format!(" ({c})")).unwrap_or_default()
                    ),
                }),
            }
        })
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.rt.block_on(async {
            match self.store.delete(&path(key)).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(self.error(key, e)),
            }
        })
    }

    /// Every object under `prefix`, by a ListObjectsV2 signed here: its keys
    /// as the store holds them. `object_store`'s listing fails whole on one
    /// key it cannot take as a path (an empty segment, `..`, a control
    /// character), which would blind every look at the use case; the
    /// listing's readers say such a key instead (`url::plain_key`).
    fn list(&self, prefix: &str) -> Result<Vec<Listed>, StoreError> {
        self.rt.block_on(async {
            let mut out = Vec::new();
            let mut token = String::new();
            let mut tokens = std::collections::HashSet::new();
            // Bounded: 10,000 pages of up to 1,000 objects.
            for _ in 0..10_000 {
                let mut q: Vec<(&str, &str)> = vec![("list-type", "2"), ("prefix", prefix)];
                if !token.is_empty() {
                    q.push(("continuation-token", &token));
                }
                let (status, _, body) = self.signed_read(Method::GET, &q).await?;
                if status != 200 {
                    return Err(list_error(&self.bucket, prefix, status, &body));
                }
                self.a_listing(prefix, &body)?;
                for o in body.split("<Contents>").skip(1) {
                    let Some(key) = tag(o, "Key") else { continue };
                    let key = xml_unescape(&key);
                    // An object's age decides what is dead and what a sweep
                    // removes: a time that cannot be read is never taken
                    // for 1970.
                    let Some(modified) = tag(o, "LastModified")
                        .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
                        .map(SystemTime::from)
                    else {
                        return Err(StoreError {
                            kind: ErrorKind::Unsupported,
                            url: self.url(&key),
                            what: "the listing gives it no LastModified that can be read (RFC 3339)".into(),
                        });
                    };
                    out.push(Listed {
                        key,
                        etag: tag(o, "ETag").map(|e| xml_unescape(&e)).unwrap_or_default(),
                        modified,
                        size: tag(o, "Size").and_then(|n| n.parse().ok()).unwrap_or(0),
                    });
                }
                if tag(&body, "IsTruncated").as_deref() != Some("true") {
                    out.sort_by(|a, b| a.key.cmp(&b.key));
                    return Ok(out);
                }
                token = tag(&body, "NextContinuationToken").map(|t| xml_unescape(&t)).unwrap_or_default();
                // A page with no way on, or one that leads back: never
                // listed for ever, nor twice.
                if token.is_empty() || !tokens.insert(token.clone()) {
                    return Err(StoreError {
                        kind: ErrorKind::Unsupported,
                        url: format!("s3://{}/{prefix}", self.bucket),
                        what: "the store's listing says it goes on, with no new continuation token".into(),
                    });
                }
            }
            Err(StoreError {
                kind: ErrorKind::Other,
                url: format!("s3://{}/{prefix}", self.bucket),
                what: "more than 10,000,000 objects under it: not listed".into(),
            })
        })
    }

    fn any(&self, prefix: &str) -> Result<bool, StoreError> {
        self.rt.block_on(async {
            let q = [("list-type", "2"), ("max-keys", "1"), ("prefix", prefix)];
            let (status, _, body) = self.signed_read(Method::GET, &q).await?;
            if status != 200 {
                return Err(list_error(&self.bucket, prefix, status, &body));
            }
            self.a_listing(prefix, &body)?;
            Ok(body.contains("<Contents>"))
        })
    }

    fn now(&self) -> Result<SystemTime, StoreError> {
        self.rt.block_on(async {
            // HEAD of the bucket: it reads nothing, and says whether the
            // bucket is there and the credentials are taken.
            let (status, headers, _) = self.signed_read(Method::HEAD, &[]).await?;
            let bucket_err = |kind, what: String| StoreError { kind, url: format!("s3://{}", self.bucket), what };
            match status {
                200 => {}
                404 => {
                    return Err(bucket_err(
                        ErrorKind::NoBucket,
                        format!("the bucket '{}' does not exist: create it, or check -d", self.bucket),
                    ));
                }
                401 | 403 => {
                    return Err(bucket_err(
                        ErrorKind::Denied,
                        "the store refused the credentials: check AWS_ACCESS_KEY_ID and its secret".into(),
                    ));
                }
                s => return Err(bucket_err(ErrorKind::Other, format!("HEAD of the bucket: HTTP {s}"))),
            }
            let date = headers.get(reqwest::header::DATE).and_then(|v| v.to_str().ok()).unwrap_or_default();
            chrono::DateTime::parse_from_rfc2822(date).map(SystemTime::from).map_err(|_| {
                bucket_err(
                    ErrorKind::Unsupported,
                    format!("the store's answer has no Date to read its clock by ({date:?})"),
                )
            })
        })
    }

    fn start_uploads(&self, keys: &[String]) -> Result<Vec<String>, StoreError> {
        self.rt.block_on(async {
            many(
                keys.iter()
                    .map(|k| async move { self.store.create_multipart(&path(k)).await.map_err(|e| self.error(k, e)) }),
            )
            .await
        })
    }

    fn send_parts(&self, uploads: &[Upload]) -> Result<Vec<Vec<String>>, StoreError> {
        self.rt.block_on(async { many(uploads.iter().map(|u| self.send_one(u))).await })
    }

    fn complete_new(&self, uploads: &[(Upload, Vec<String>)]) -> Result<Vec<Written>, StoreError> {
        self.rt.block_on(async { many(uploads.iter().map(|(u, p)| self.complete_one(u, p))).await })
    }

    fn open_uploads_aged(&self, prefix: &str) -> Result<Vec<(String, String, Option<SystemTime>)>, StoreError> {
        self.rt.block_on(async {
            let mut out = Vec::new();
            let (mut key_marker, mut id_marker) = (String::new(), String::new());
            // Bounded: 1,000 pages of up to 1,000 uploads.
            for _ in 0..1000 {
                let mut q: Vec<(&str, &str)> = vec![("uploads", ""), ("prefix", prefix)];
                if !key_marker.is_empty() {
                    q.push(("key-marker", &key_marker));
                    q.push(("upload-id-marker", &id_marker));
                }
                let (status, _, body) = self.signed_read(Method::GET, &q).await?;
                if status != 200 {
                    return Err(StoreError {
                        kind: ErrorKind::Other,
                        url: format!("s3://{}/{prefix}", self.bucket),
                        what: format!("listing the open uploads: HTTP {status}"),
                    });
                }
                for upload in body.split("<Upload>").skip(1) {
                    if let (Some(k), Some(id)) = (tag(upload, "Key"), tag(upload, "UploadId")) {
                        let initiated = tag(upload, "Initiated")
                            .and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok())
                            .map(SystemTime::from);
                        out.push((xml_unescape(&k), xml_unescape(&id), initiated));
                    }
                }
                if tag(&body, "IsTruncated").as_deref() != Some("true") {
                    break;
                }
                key_marker = tag(&body, "NextKeyMarker").map(|k| xml_unescape(&k)).unwrap_or_default();
                id_marker = tag(&body, "NextUploadIdMarker").map(|k| xml_unescape(&k)).unwrap_or_default();
                if key_marker.is_empty() {
                    break;
                }
            }
            out.sort();
            Ok(out)
        })
    }

    fn abort(&self, key: &str, id: &str) -> Result<(), StoreError> {
        self.rt.block_on(async {
            match self.store.abort_multipart(&path(key), &id.to_string()).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) if one_line(&e.to_string()).contains("NoSuchUpload") => Ok(()),
                Err(e) => Err(self.error(key, e)),
            }
        })
    }
}

impl S3 {
    async fn get_one(&self, key: &str) -> Result<Option<Got>, StoreError> {
        match self.store.get(&path(key)).await {
            Ok(r) => {
                let meta = r.meta.clone();
                let body = r.bytes().await.map_err(|e| self.error(key, e))?;
                Ok(Some(Got {
                    body: body.to_vec(),
                    etag: meta.e_tag.unwrap_or_default(),
                    modified: SystemTime::from(meta.last_modified),
                }))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error(key, e)),
        }
    }

    fn put_mode(&self, key: &str, body: Vec<u8>, mode: PutMode) -> Result<Written, StoreError> {
        self.rt.block_on(async {
            match self.store.put_opts(&path(key), PutPayload::from(body), PutOptions::from(mode)).await {
                Ok(r) => Ok(Written::Done(r.e_tag.unwrap_or_default())),
                Err(e) if is_refusal(&e) => Ok(Written::Refused),
                Err(object_store::Error::NotFound { .. }) => Err(StoreError {
                    kind: ErrorKind::NoBucket,
                    url: self.url(key),
                    what: format!("the bucket '{}' does not exist: create it, or check -d", self.bucket),
                }),
                Err(e) => Err(self.error(key, e)),
            }
        })
    }
}
