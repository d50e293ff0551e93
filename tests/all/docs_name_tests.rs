//! Every test the reference docs cite exists: the last column of the tables
//! in docs/guarantees.md (what is promised, and the test that shows it) and
//! docs/differences.md (where this engine decides otherwise than the peer,
//! and the test). A test renamed or removed without its doc says so here.
//!
//! A citation is `file.rs::name` (a path from the repository root), or
//! `module::name` / `module::tests::name` (a test in a source module or a
//! test module of that name): `name` must be a `fn` in that file, or, for
//! `module::tests`, the file must hold a `mod tests`.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under the places tests and the code live.
fn sources() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for d in ["src", "tests", "tui/src", "tui/tests"] {
        walk(&root().join(d), &mut out);
    }
    out
}

/// The citations in the last cell of each table row of `doc`.
fn citations(doc: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(doc)).unwrap();
    let mut out = Vec::new();
    for line in text.lines().filter(|l| l.starts_with('|') && !l.starts_with("|---")) {
        let cells: Vec<&str> = line.trim_end_matches('|').split('|').collect();
        let Some(last) = cells.last() else { continue };
        for (i, part) in last.split('`').enumerate() {
            let token = part.trim();
            let looks_cited = token.contains("::")
                && token.chars().all(|c| c.is_ascii_alphanumeric() || "_/.:".contains(c))
                && !token.ends_with("::");
            if i % 2 == 1 && looks_cited {
                out.push(token.to_string());
            }
        }
    }
    out
}

/// Whether `citation` names a test that is there.
fn exists(citation: &str, files: &[PathBuf]) -> bool {
    let parts: Vec<&str> = citation.split("::").collect();
    let (first, name) = (parts[0], parts[parts.len() - 1]);
    let holds = |p: &Path| {
        let text = std::fs::read_to_string(p).unwrap_or_default();
        if name == "tests" { text.contains("mod tests") } else { text.contains(&format!("fn {name}(")) }
    };
    if first.ends_with(".rs") {
        return holds(&root().join(first));
    }
    // The module's path: every part but the name, `tests` left out
    // (`documents::finished_note::tests::x` is in documents/finished_note.rs).
    let path: Vec<&str> = parts[..parts.len() - 1].iter().copied().filter(|p| *p != "tests").collect();
    let path = if path.is_empty() { first.to_string() } else { path.join("/") };
    let module = |p: &&PathBuf| {
        let s = p.to_string_lossy();
        s.ends_with(&format!("/{path}.rs")) || s.ends_with(&format!("/{path}/mod.rs"))
    };
    files.iter().filter(module).any(|p| holds(p))
}

#[test]
fn every_test_the_reference_docs_cite_exists() {
    let files = sources();
    // What a citation of nothing looks like is told as missing.
    assert!(!exists("tests/all/engine.rs::no_such_test", &files) && !exists("engine::no_such_test", &files));
    assert!(exists("documents::finished_note::tests::an_output_that_is_not_an_object_is_damage", &files));
    let mut missing = Vec::new();
    let mut cited = 0;
    for doc in ["docs/guarantees.md", "docs/differences.md"] {
        for c in citations(doc) {
            cited += 1;
            if !exists(&c, &files) {
                missing.push(format!("{doc}: {c}"));
            }
        }
    }
    assert!(cited > 100, "only {cited} citations were read: the tables changed shape?");
    assert!(missing.is_empty(), "cited tests that are not there:\n{}", missing.join("\n"));
}
