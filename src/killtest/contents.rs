//! What an output holds, by content: a multiset of file contents per path,
//! with the run ids a file name carries taken out, so that two runs that
//! wrote the same thing compare equal whatever they named their files.

use std::collections::BTreeMap;
use std::fs;
use std::hash::Hasher;
use std::io::{self, Read};
use std::path::Path;

use serde::Serialize;

/// One file's content: its length and a 64-bit hash of its bytes (a
/// symlink's: of its target).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Digest {
    /// Bytes.
    pub len: u64,
    /// SipHash of the bytes (with fixed keys: the same in every process).
    pub hash: u64,
}

/// The files of one output: normalised relative path -> the contents found
/// there (sorted; several when runs wrote files that differ only by run id).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contents {
    /// Path (as [`normalize`] gives it) -> contents.
    pub files: BTreeMap<String, Vec<Digest>>,
    /// Files it holds in all.
    pub count: usize,
}

/// How one output differs from what it should hold.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Diff {
    /// Files the reference has that are not here (by path, normalised).
    pub missing: Vec<String>,
    /// Files here whose content the reference does not have at that path:
    /// torn, wrong, or not written by the reference at all.
    pub corrupt: Vec<String>,
    /// Extra copies of a content the reference has once: a batch landed twice.
    pub doubled: Vec<String>,
}

impl Diff {
    /// Nothing differs.
    pub fn is_empty(&self) -> bool {
        self.missing.is_empty() && self.corrupt.is_empty() && self.doubled.is_empty()
    }
}

/// `rel` with every UUID (8-4-4-4-12 hex, as run ids are) replaced by `<id>`.
pub fn normalize(rel: &str) -> String {
    const SHAPE: [usize; 5] = [8, 4, 4, 4, 12];
    let b = rel.as_bytes();
    let at = |i: usize| -> Option<usize> {
        let mut j = i;
        for (n, len) in SHAPE.iter().enumerate() {
            if n > 0 {
                if b.get(j) != Some(&b'-') {
                    return None;
                }
                j += 1;
            }
            for _ in 0..*len {
                if !b.get(j).is_some_and(u8::is_ascii_hexdigit) {
                    return None;
                }
                j += 1;
            }
        }
        // Not part of a longer run of hex digits.
        (!b.get(j).is_some_and(u8::is_ascii_hexdigit)).then_some(j)
    };
    let mut out = String::with_capacity(rel.len());
    let mut i = 0;
    while i < b.len() {
        let starts = i == 0 || !b[i - 1].is_ascii_hexdigit();
        match starts.then(|| at(i)).flatten() {
            Some(end) => {
                out.push_str("<id>");
                i = end;
            }
            None => {
                let ch = rel[i..].chars().next().unwrap_or('\u{fffd}');
                out.push(ch);
                i += ch.len_utf8().max(1);
            }
        }
    }
    out
}

fn digest_file(path: &Path) -> io::Result<Digest> {
    let mut h = std::hash::DefaultHasher::new();
    let mut f = fs::File::open(path)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut len = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.write(&buf[..n]);
        len += n as u64;
    }
    Ok(Digest { len, hash: h.finish() })
}

/// Read every file below `root` (symlinks not followed: a link is its
/// target's text), except those `skip` names (by path relative to `root`).
/// A missing `root` is an empty output.
pub fn read(root: &Path, skip: &dyn Fn(&str) -> bool) -> io::Result<Contents> {
    let mut c = Contents::default();
    if fs::symlink_metadata(root).is_err() {
        return Ok(c);
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir)? {
            let e = e?;
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap_or(&p).to_string_lossy().into_owned();
            if skip(&rel) {
                continue;
            }
            let t = e.file_type()?;
            let d = if t.is_dir() {
                stack.push(p);
                continue;
            } else if t.is_symlink() {
                let target = fs::read_link(&p)?;
                let mut h = std::hash::DefaultHasher::new();
                h.write(target.as_os_str().as_encoded_bytes());
                Digest { len: 0, hash: h.finish() }
            } else {
                digest_file(&p)?
            };
            c.files.entry(normalize(&rel)).or_default().push(d);
            c.count += 1;
        }
    }
    for v in c.files.values_mut() {
        v.sort();
    }
    Ok(c)
}

/// How `got` differs from `reference`, path by path. At one path, a content
/// the reference does not have is corrupt (and stands for a missing one, as a
/// torn file does); one copy more of a content it has is doubled.
pub fn compare(reference: &Contents, got: &Contents) -> Diff {
    let mut d = Diff::default();
    let empty = Vec::new();
    let paths: std::collections::BTreeSet<&String> = reference.files.keys().chain(got.files.keys()).collect();
    for p in paths {
        let r = reference.files.get(p).unwrap_or(&empty);
        let g = got.files.get(p).unwrap_or(&empty);
        // Multiset difference of two sorted lists.
        let (mut i, mut j) = (0, 0);
        let (mut r_left, mut g_left) = (Vec::new(), Vec::new());
        while i < r.len() || j < g.len() {
            match (r.get(i), g.get(j)) {
                (Some(a), Some(b)) if a == b => {
                    i += 1;
                    j += 1;
                }
                (Some(a), Some(b)) if a < b => {
                    r_left.push(*a);
                    i += 1;
                }
                (Some(a), None) => {
                    r_left.push(*a);
                    i += 1;
                }
                (_, Some(b)) => {
                    g_left.push(*b);
                    j += 1;
                }
                (None, None) => break,
            }
        }
        let (dup, bad): (Vec<Digest>, Vec<Digest>) = g_left.into_iter().partition(|x| r.contains(x));
        d.doubled.extend(dup.iter().map(|_| p.clone()));
        d.corrupt.extend(bad.iter().map(|_| p.clone()));
        let missing = r_left.len().saturating_sub(bad.len());
        d.missing.extend(std::iter::repeat_n(p.clone(), missing));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_taken_out_of_names_and_nothing_else() {
        assert_eq!(normalize("dt=1/part-1-45fffa8e-a1a8-4b99-9b7d-1065b2a4692f.txt"), "dt=1/part-1-<id>.txt");
        assert_eq!(
            normalize("part-00000-bff91e1c-c46b-45cf-8c7b-f79ae56e744e-c000.snappy.parquet"),
            "part-00000-<id>-c000.snappy.parquet"
        );
        assert_eq!(normalize("39bc42311894ddba.json"), "39bc42311894ddba.json");
        assert_eq!(normalize("a45fffa8e-a1a8-4b99-9b7d-1065b2a4692f"), "a45fffa8e-a1a8-4b99-9b7d-1065b2a4692f");
        assert_eq!(normalize("45fffa8e-a1a8-4b99-9b7d-1065b2a4692ff"), "45fffa8e-a1a8-4b99-9b7d-1065b2a4692ff");
        assert_eq!(normalize("é-45fffa8e-a1a8-4b99-9b7d-1065b2a4692f"), "é-<id>");
    }

    fn c(files: &[(&str, &[u64])]) -> Contents {
        let mut c = Contents::default();
        for (p, hs) in files {
            let mut v: Vec<Digest> = hs.iter().map(|h| Digest { len: 1, hash: *h }).collect();
            v.sort();
            c.count += v.len();
            c.files.insert(p.to_string(), v);
        }
        c
    }

    #[test]
    fn missing_corrupt_and_doubled_are_told_apart() {
        let r = c(&[("a", &[1]), ("b", &[2]), ("c", &[3, 4])]);
        assert!(compare(&r, &r).is_empty());
        // b torn (wrong content in its place), c's 4 twice, a gone, a stray file.
        let g = c(&[("b", &[9]), ("c", &[3, 4, 4]), ("z", &[5])]);
        let d = compare(&r, &g);
        assert_eq!(d.missing, ["a"]);
        assert_eq!(d.corrupt, ["b", "z"]);
        assert_eq!(d.doubled, ["c"]);
    }

    #[test]
    fn an_output_is_read_by_content_and_skips_what_it_is_told() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("dt=1")).unwrap();
        fs::write(d.path().join("dt=1/part-45fffa8e-a1a8-4b99-9b7d-1065b2a4692f"), "x").unwrap();
        fs::write(d.path().join("foreign.txt"), "y").unwrap();
        let mut other = Contents::default();
        let got = read(d.path(), &|rel| rel == "foreign.txt").unwrap();
        assert_eq!(got.count, 1);
        assert_eq!(got.files.keys().collect::<Vec<_>>(), ["dt=1/part-<id>"]);
        fs::write(d.path().join("dt=1/part-45fffa8e-a1a8-4b99-9b7d-1065b2a4692f"), "z").unwrap();
        other.files = read(d.path(), &|rel| rel == "foreign.txt").unwrap().files;
        assert_eq!(compare(&got, &other).corrupt, ["dt=1/part-<id>"]);
        assert_eq!(read(&d.path().join("none"), &|_| false).unwrap(), Contents::default());
    }
}
