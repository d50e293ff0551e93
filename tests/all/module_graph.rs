//! No import circle between the library's top-level modules, nor between the
//! front end's (tui/src), nor inside any folder of modules at any depth
//! (`bucket::*`, `state::index::*`, `top::app::*`, `cli::leases::*`, ...).
//!
//! Every file under `src/` belongs to one top-level module (`src/<m>.rs` or
//! `src/<m>/**`). Each use of another top-level module is an edge: a
//! `crate::<m>` path (also grouped, `crate::{a, b::c}`), a name the crate root
//! re-exports (`crate::RunLease` is `lease`), and a `super::` path that climbs
//! to the crate root. Comments and string literals are skipped; test modules
//! count (a test that imports a sibling is still an arrow). The graph must be
//! acyclic; it is printed (`cargo test --test all module_graph -- --nocapture`) in
//! layers, each module after everything it uses, as docs/design.md shows it.
//! A subtree (the dashboard, `tui/src/top`) is read the same way, its
//! `crate::top::<m>` paths and the `super::` chains that climb to `top` being
//! the edges between its modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Semi,
    Other,
}

/// Rust source as identifiers, `::`, braces, commas and semicolons (with their
/// line numbers); comments, strings and char literals dropped.
fn lex(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if ch == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                line += usize::from(c[i] == '\n');
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if ch == '\'' {
            // A char literal ('x', '\n', '\u{1c}'), or a lifetime ('a).
            if at(i + 1) == '\\' {
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if ch == '_' || ch.is_alphabetic() {
            let start = i;
            while i < c.len() && (c[i] == '_' || c[i].is_alphanumeric()) {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let raw_prefix = matches!(word.as_str(), "r" | "br" | "cr");
            if raw_prefix && (at(i) == '"' || (at(i) == '#' && matches!(at(i + 1), '"' | '#'))) {
                // A raw string: r"..", r#".."#.
                let mut hashes = 0;
                while at(i) == '#' {
                    hashes += 1;
                    i += 1;
                }
                i += 1;
                loop {
                    if i >= c.len() {
                        break;
                    }
                    if c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                        i += 1 + hashes;
                        break;
                    }
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            } else if matches!(word.as_str(), "b" | "c") && matches!(at(i), '"' | '\'') {
                // b"..", b'x': lexed as the literal that follows.
            } else if word == "r" && at(i) == '#' {
                // A raw identifier, r#name.
                i += 1;
            } else {
                out.push((Tok::Ident(word), line));
            }
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i] == '_' || c[i].is_alphanumeric()) {
                i += 1;
            }
            out.push((Tok::Other, line));
        } else {
            let tok = match ch {
                ':' if at(i + 1) == ':' => {
                    i += 1;
                    Tok::PathSep
                }
                '{' => Tok::Open,
                '}' => Tok::Close,
                ',' => Tok::Comma,
                ';' => Tok::Semi,
                _ => Tok::Other,
            };
            out.push((tok, line));
            i += 1;
        }
    }
    out
}

fn ident(t: Option<&(Tok, usize)>) -> Option<&str> {
    match t {
        Some((Tok::Ident(s), _)) => Some(s),
        _ => None,
    }
}

/// The names a path reaching the crate root at `toks[j]` starts with: `a` for
/// `a::..`, `a` and `b` for `{a::x, b}`.
fn root_names(toks: &[(Tok, usize)], j: usize) -> Vec<String> {
    match toks.get(j) {
        Some((Tok::Ident(s), _)) => vec![s.clone()],
        Some((Tok::Open, _)) => {
            let (mut names, mut depth, mut k, mut item_start) = (Vec::new(), 0, j, true);
            while let Some((t, _)) = toks.get(k) {
                match t {
                    Tok::Open => {
                        depth += 1;
                        item_start = depth == 1;
                    }
                    Tok::Close => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    Tok::Comma => item_start = depth == 1,
                    Tok::Ident(s) if item_start => {
                        names.push(s.clone());
                        item_start = false;
                    }
                    _ => item_start = false,
                }
                k += 1;
            }
            names
        }
        _ => Vec::new(),
    }
}

/// Every name one file's code reaches at the crate root, with its line:
/// `crate::<name>`, and `super::` chains that climb out of `module` (the file's
/// module path, `["lease", "acquire"]`) and the inline modules around them.
fn root_uses(module: &[String], src: &str) -> Vec<(String, usize)> {
    subtree_uses(&[], module, src)
}

/// As [`root_uses`], for the modules of the subtree `prefix` (`["top"]`):
/// `crate::top::<name>` paths and `super::` chains that climb to `top`.
fn subtree_uses(prefix: &[String], module: &[String], src: &str) -> Vec<(String, usize)> {
    let toks = lex(src);
    let mut uses = Vec::new();
    // Inline `mod name { .. }`: (brace depth outside it).
    let (mut inline, mut depth) = (Vec::<usize>::new(), 0usize);
    let mut i = 0;
    while i < toks.len() {
        let after_sep = i > 0 && toks[i - 1].0 == Tok::PathSep;
        match &toks[i].0 {
            Tok::Open => depth += 1,
            Tok::Close => {
                depth = depth.saturating_sub(1);
                if inline.last() == Some(&depth) {
                    inline.pop();
                }
            }
            Tok::Ident(w)
                if w == "mod"
                    && ident(toks.get(i + 1)).is_some()
                    && toks.get(i + 2).map(|t| &t.0) == Some(&Tok::Open) =>
            {
                inline.push(depth);
            }
            Tok::Ident(w) if w == "crate" && !after_sep && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::PathSep) => {
                // `crate::` then the prefix, each followed by `::`.
                let mut k = i + 2;
                let through = prefix.iter().all(|p| {
                    let ok =
                        ident(toks.get(k)) == Some(p.as_str()) && toks.get(k + 1).map(|t| &t.0) == Some(&Tok::PathSep);
                    k += 2;
                    ok
                });
                if through {
                    for n in root_names(&toks, k) {
                        uses.push((n, toks[i].1));
                    }
                }
            }
            Tok::Ident(w) if w == "super" && !after_sep => {
                let (mut k, mut climbs) = (i, 0);
                while ident(toks.get(k)) == Some("super") && toks.get(k + 1).map(|t| &t.0) == Some(&Tok::PathSep) {
                    climbs += 1;
                    k += 2;
                }
                if climbs + prefix.len() == module.len() + inline.len() {
                    for n in root_names(&toks, k) {
                        uses.push((n, toks[i].1));
                    }
                }
                assert!(climbs <= module.len() + inline.len(), "super:: climbs above the crate root");
                i = k.max(i + 1); // `pub(super)` climbs nothing
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    uses
}

/// Names the crate root re-exports (`pub use lease::{RunLease, ..};`), by the
/// module they come from.
fn reexports(lib: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let toks = lex(lib);
    let mut out = BTreeMap::new();
    for (i, (t, _)) in toks.iter().enumerate() {
        if *t != Tok::Ident("use".into()) {
            continue;
        }
        let Some(m) = ident(toks.get(i + 1)).filter(|m| modules.contains(*m)) else { continue };
        for (t, _) in toks[i + 2..].iter().take_while(|(t, _)| *t != Tok::Semi) {
            if let Tok::Ident(name) = t
                && name != "self"
                && name != "as"
            {
                out.insert(name.clone(), m.to_string());
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file under `src/` (`lease/acquire.rs` is
/// `["lease", "acquire"]`, `lease/mod.rs` is `["lease"]`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// Edges between top-level modules: (from, to) -> the first `file:line` that makes it.
type Graph = BTreeMap<(String, String), String>;

fn graph(src: &Path) -> (BTreeSet<String>, Graph) {
    graph_of(src, &[], "lib.rs")
}

/// The graph of the modules directly below `src/<prefix>`, whose own file
/// (`root`: `lib.rs`, `top/mod.rs`) declares them and is left out. A binary's
/// `main.rs` beside `lib.rs` is another crate: left out too.
fn graph_of(src: &Path, prefix: &[&str], root: &str) -> (BTreeSet<String>, Graph) {
    let prefix: Vec<String> = prefix.iter().map(|p| p.to_string()).collect();
    let dir = prefix.iter().fold(src.to_path_buf(), |d, p| d.join(p));
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let rels: Vec<PathBuf> = files.iter().map(|f| f.strip_prefix(src).unwrap().to_path_buf()).collect();
    let root = Path::new(root);
    let skip = |r: &Path| r == root || (prefix.is_empty() && r == Path::new("main.rs"));
    let modules: BTreeSet<String> =
        rels.iter().filter(|r| !skip(r)).map(|r| module_of(r)[prefix.len()].clone()).collect();
    let names = reexports(&std::fs::read_to_string(src.join(root)).unwrap(), &modules);
    let mut edges = Graph::new();
    for (file, rel) in files.iter().zip(&rels) {
        if skip(rel) {
            continue;
        }
        let module = module_of(rel);
        let text = std::fs::read_to_string(file).unwrap();
        let me = &module[prefix.len()];
        for (name, line) in subtree_uses(&prefix, &module, &text) {
            let to = if modules.contains(&name) { Some(name) } else { names.get(&name).cloned() };
            if let Some(to) = to.filter(|t| t != me) {
                edges.entry((me.clone(), to)).or_insert_with(|| format!("{}:{line}", src.join(rel).display()));
            }
        }
    }
    (modules, edges)
}

/// The strongly connected components with more than one module (each one an
/// import circle), by Tarjan's algorithm.
fn circles(modules: &BTreeSet<String>, edges: &Graph) -> Vec<Vec<String>> {
    struct T<'a> {
        adj: BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        for w in t.adj.get(v).cloned().unwrap_or_default() {
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.stack.contains(&w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t =
        T { adj: BTreeMap::new(), index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), out: Vec::new() };
    for (a, b) in edges.keys() {
        t.adj.entry(a.as_str()).or_default().push(b.as_str());
    }
    for m in modules {
        if !t.index.contains_key(m.as_str()) {
            visit(&mut t, m);
        }
    }
    t.out
}

/// Each module's layer: 0 uses no other module, n uses some module of layer n - 1
/// and none above (only for an acyclic graph).
fn layers(modules: &BTreeSet<String>, edges: &Graph) -> BTreeMap<usize, Vec<String>> {
    fn layer(m: &str, edges: &Graph, memo: &mut BTreeMap<String, usize>) -> usize {
        if let Some(l) = memo.get(m) {
            return *l;
        }
        let l = edges.keys().filter(|(a, _)| a == m).map(|(_, b)| layer(b, edges, memo) + 1).max().unwrap_or(0);
        memo.insert(m.to_string(), l);
        l
    }
    let mut memo = BTreeMap::new();
    let mut out: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for m in modules {
        out.entry(layer(m, edges, &mut memo)).or_default().push(m.clone());
    }
    out
}

fn uses_of<'a>(m: &str, edges: &'a Graph) -> Vec<&'a str> {
    edges.keys().filter(|(a, _)| a == m).map(|(_, b)| b.as_str()).collect()
}

/// Fails with every circle's arrows and where each is made; else prints the
/// layers.
fn check(what: &str, modules: &BTreeSet<String>, edges: &Graph) {
    let found = circles(modules, edges);
    if !found.is_empty() {
        let mut why = String::new();
        for comp in &found {
            why.push_str(&format!("circle among {}:\n", comp.join(", ")));
            for ((a, b), at) in edges {
                if comp.contains(a) && comp.contains(b) {
                    why.push_str(&format!("  {a} -> {b}  ({at})\n"));
                }
            }
        }
        panic!("{what} import each other in a circle:\n{why}");
    }
    println!("{what}, each after what it uses:");
    for (n, ms) in layers(modules, edges) {
        for m in ms {
            let uses = uses_of(&m, edges);
            let uses = if uses.is_empty() { "-".to_string() } else { uses.join(", ") };
            println!("  {n:>2} {m:<11} -> {uses}");
        }
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_top_level_modules_import_each_other_without_a_circle() {
    let (modules, edges) = graph(&repo().join("src"));
    check("The library's top-level modules", &modules, &edges);
}

#[test]
fn the_front_ends_modules_import_each_other_without_a_circle() {
    let src = repo().join("tui/src");
    let (modules, edges) = graph_of(&src, &[], "lib.rs");
    assert!(modules.contains("top") && modules.contains("cli"), "{modules:?}");
    check("The front end's top-level modules (tui/src)", &modules, &edges);
    let (modules, edges) = graph_of(&src, &["top"], "top/mod.rs");
    assert!(modules.contains("event") && modules.contains("runtime"), "{modules:?}");
    assert!(!edges.is_empty(), "the dashboard's modules were read");
    check("The dashboard's modules (top::*)", &modules, &edges);
    let (modules, edges) = graph_of(&src, &["cli"], "cli/mod.rs");
    assert!(modules.contains("leases"), "{modules:?}");
    check("The CLI's modules (cli::*)", &modules, &edges);
}

/// Every folder of modules (`src/bucket/`, `src/state/index/`,
/// `tui/src/top/app/`, ...), read as a subtree: its modules import each
/// other without a circle, at any depth.
#[test]
fn no_folder_of_modules_has_an_import_circle() {
    let (mut checked, mut failed) = (0, Vec::new());
    for src in [repo().join("src"), repo().join("tui/src")] {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let folders: BTreeSet<Vec<String>> = files
            .iter()
            .filter(|f| f.file_name().is_some_and(|n| n == "mod.rs"))
            .map(|f| module_of(f.strip_prefix(&src).unwrap()))
            .collect();
        for prefix in folders {
            let root = format!("{}/mod.rs", prefix.join("/"));
            let prefix: Vec<&str> = prefix.iter().map(String::as_str).collect();
            let (modules, edges) = graph_of(&src, &prefix, &root);
            let what = format!("The modules of {}/{}", src.display(), prefix.join("/"));
            if let Err(e) = std::panic::catch_unwind(|| check(&what, &modules, &edges)) {
                failed.push(e.downcast_ref::<String>().cloned().unwrap_or_default());
            }
            checked += 1;
        }
    }
    assert!(checked > 10, "only {checked} folders of modules were read");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The message type is a leaf of the loop: it carries data (the model's and
/// a popup's results) and uses nothing that handles, draws, reads or watches.
#[test]
fn the_dashboards_message_type_uses_only_data() {
    let (_, edges) = graph_of(&repo().join("tui/src"), &["top"], "top/mod.rs");
    let from_event: Vec<&str> = uses_of("event", &edges);
    for m in ["app", "ui", "runtime", "term", "watch", "workers"] {
        assert!(!from_event.contains(&m), "top::event uses {m}: {from_event:?}");
    }
}

// The reader itself: each of these would let a circle through unseen.

fn uses(module: &[&str], src: &str) -> Vec<String> {
    let module: Vec<String> = module.iter().map(|s| s.to_string()).collect();
    root_uses(&module, src).into_iter().map(|(n, _)| n).collect()
}

#[test]
fn crate_paths_count_grouped_and_inside_expressions() {
    let src = "use crate::{fsx, doc::{self, Map}};\nfn f() { crate::exec::reap::stop(); }";
    assert_eq!(uses(&["lease"], src), ["fsx", "doc", "exec"]);
}

#[test]
fn super_counts_only_when_it_climbs_to_the_root() {
    let src =
        "use super::write::x;\nuse super::super::key;\nmod tests { use super::*; use super::super::super::plan::y; }";
    assert_eq!(uses(&["lease", "acquire"], src), ["key", "plan"]);
    assert_eq!(uses(&["claims"], "use super::lease::RunLease;"), ["lease"]);
    assert!(uses(&["lease", "acquire"], "pub(super) fn f() {}").is_empty());
}

#[test]
fn comments_and_strings_are_not_code() {
    let src = r####"
        // crate::a
        /* crate::b /* nested */ crate::c */
        /// [`crate::d`]
        const S: &str = "crate::e \" crate::f";
        const R: &str = r#"crate::g " crate::h"#;
        const C: char = '"'; const Q: char = '\''; fn l<'a>(x: &'a str) {}
        use crate::i;
    "####;
    assert_eq!(uses(&["m"], src), ["i"]);
}

#[test]
fn a_subtree_reads_its_own_paths() {
    let p = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let src =
        "use crate::top::{app::App, model};\nuse crate::cli::x;\nuse super::watch::W;\nuse super::super::console;";
    let got: Vec<String> =
        subtree_uses(&p(&["top"]), &p(&["top", "ui", "draw"]), src).into_iter().map(|(n, _)| n).collect();
    assert_eq!(got, ["app", "model", "console"], "super::watch is inside ui; super::super reaches top");
    let got: Vec<String> =
        subtree_uses(&p(&["top"]), &p(&["top", "runtime"]), src).into_iter().map(|(n, _)| n).collect();
    assert_eq!(got, ["app", "model", "watch"]);
}

#[test]
fn a_circle_is_found_and_a_chain_is_not() {
    let m: BTreeSet<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let e = |pairs: &[(&str, &str)]| -> Graph {
        pairs.iter().map(|(a, b)| ((a.to_string(), b.to_string()), String::new())).collect()
    };
    assert!(circles(&m, &e(&[("a", "b"), ("b", "c")])).is_empty());
    assert_eq!(circles(&m, &e(&[("a", "b"), ("b", "c"), ("c", "a")])), [["a", "b", "c"]]);
    let r = reexports(
        "pub use error::{Error, Result};\npub use lease::RunLease;",
        &m.iter().cloned().chain(["error".into(), "lease".into()]).collect(),
    );
    assert_eq!(r.get("RunLease").map(String::as_str), Some("lease"));
    assert_eq!(r.get("Result").map(String::as_str), Some("error"));
}
