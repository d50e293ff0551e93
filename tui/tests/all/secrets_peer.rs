//! Secret masking is the peer's, exactly: `\d` in Python's `re` is a Unicode
//! decimal digit (Nd) only, while Rust's `char::is_numeric` also takes Nl and
//! No, so `--var 'Ⅻmax_token=abc'` was masked by us and not by the peer.
//!
//! The peer comes from `UBUNYE_PEER` (its `ubunye`; its Python is beside it),
//! as in interop.rs: without it the peer's half says SKIPPED, unless
//! `UBUNYE_REQUIRE_PEER=1` (CI), when it fails.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::common;
use common::{bin, empty_use_case, peer_python};
use ubunye_testkit::Rng;

/// The peer's `redact_variables` of each object, in one Python process.
fn peer_redacts(python: &PathBuf, objects: &[serde_json::Value]) -> Vec<serde_json::Value> {
    const SCRIPT: &str = "import json, sys\n\
        from ubunye.core.secrets import redact_variables\n\
        out = [redact_variables(v) for v in json.load(sys.stdin)]\n\
        json.dump(out, sys.stdout, ensure_ascii=True)\n";
    let mut child = Command::new(python)
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(serde_json::to_string(objects).unwrap().as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "the peer's python: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// A name made of the pieces the peer's rule turns on: secret and
/// not-secret words in any case, separators, digits of every kind (Nd of
/// several scripts, Nl, No, Nd that Unicode added after the peer's Python),
/// letters outside ASCII (ſ and K fold to s and k under IGNORECASE), and any
/// code point at all.
fn name(rng: &mut Rng) -> String {
    const WORDS: &[&str] = &[
        "token",
        "password",
        "pwd",
        "secret",
        "auth",
        "api",
        "key",
        "access",
        "private",
        "client",
        "ssh",
        "connection",
        "string",
        "max",
        "min",
        "num",
        "n",
        "limit",
        "count",
        "mode",
        "file",
        "url",
        "id",
        "dt",
        "region",
        "jwt",
        "sas",
        "bearer",
        "cookie",
        "passphrase",
        "tokens",
        "signing",
        "session",
    ];
    const DIGITS: &[&str] =
        &["0", "42", "٣", "۷", "४", "１", "𝟎", "𝟗", "Ⅻ", "Ⅰ", "ⅰ", "²", "½", "①", "〇", "𑽐", "𞓰", "७३"];
    const OTHER: &[&str] =
        &["_", "-", ".", " ", "", "é", "ß", "ſ", "K", "Ä", "Ω", "σ", "Д", "東", "İ", "ǅ", "ﬁ", "\u{0}", "\t"];
    let mut s = String::new();
    for _ in 0..1 + rng.below(5) {
        match rng.below(8) {
            0..=2 => {
                let w = rng.pick(WORDS);
                match rng.below(3) {
                    0 => s.push_str(w),
                    1 => s.push_str(&w.to_uppercase()),
                    _ => {
                        let mut c = w.chars();
                        s.extend(c.next().map(|f| f.to_ascii_uppercase()));
                        s.extend(c);
                    }
                }
            }
            3 | 4 => s.push_str(rng.pick(DIGITS)),
            5 | 6 => s.push_str(rng.pick(OTHER)),
            _ => {
                // Any scalar value, most often from the first planes.
                let top = [0x80, 0x800, 0x3_0000, 0x11_0000][rng.below(4) as usize];
                if let Some(c) = char::from_u32((rng.next_u64() % top) as u32) {
                    s.push(c);
                }
            }
        }
    }
    s
}

/// A few hundred random Unicode names: ours and the peer's agree on every one.
#[test]
fn looks_secret_agrees_with_the_peer_on_random_unicode_names() {
    let Some(python) = peer_python() else { return };
    let seed = std::env::var("UBUNYE_SECRETS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    });
    let mut rng = Rng(seed);
    let mut names: Vec<String> =
        ["Ⅻmax_token", "²max_token", "٣max_token", "api_key", "HTTPServerToken", "n_tokens"].map(String::from).to_vec();
    names.extend((0..400).map(|_| name(&mut rng)));
    let objects: Vec<serde_json::Value> = names.iter().map(|n| serde_json::json!({ n.as_str(): "abc" })).collect();
    let theirs = peer_redacts(&python, &objects);
    let differ: Vec<String> = names
        .iter()
        .zip(&theirs)
        .filter(|(n, t)| (t[n.as_str()] == "***") != ubunye::secrets::looks_secret(n))
        .map(|(n, t)| format!("{n:?} {:?}: peer {}", n.chars().map(|c| c as u32).collect::<Vec<_>>(), t[n.as_str()]))
        .collect();
    assert!(
        differ.is_empty(),
        "UBUNYE_SECRETS_SEED={seed}: {} name(s) masked differently:\n{}",
        differ.len(),
        differ.join("\n")
    );
}

/// `ubunye exec --var 'Ⅻmax_token=abc'` records the value as the peer does
/// (not masked), and still masks what is a secret.
#[test]
fn the_run_record_masks_what_the_peer_masks() {
    let (_d, uc) = empty_use_case();
    let o = Command::new(bin())
        .current_dir(uc.parent().unwrap())
        .args(["exec", "-d", "uc", "--task", "demo/sales/ingest", "-dt", "2025-01-01"])
        .args(["--var", "Ⅻmax_token=abc", "--var", "api_key=abc", "--var", "db_password=abcd", "--", "true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = uc.join(".ubunye/lineage/demo/sales/ingest");
    let file = std::fs::read_dir(&dir).unwrap().flatten().next().unwrap().path();
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let vars = &record["variables"];
    assert_eq!(vars["Ⅻmax_token"], "abc", "{vars}");
    assert_eq!(vars["api_key"], "***", "{vars}");
    let Some(python) = peer_python() else { return };
    let real = serde_json::json!({
        "dt": "2025-01-01", "mode": "DEV", "Ⅻmax_token": "abc", "api_key": "abc", "db_password": "abcd",
    });
    assert_eq!(&peer_redacts(&python, &[real])[0], vars, "the peer's redact_variables of the same variables");
}
