//! An index file's text, and the next one being written. One line a file:
//!
//! ```text
//! L <ino> <stamp> <run or -> <name>             a lease, orphan or note
//! R <ino> <stamp> <run or => <key or -> <name>  a run record
//! ```
//!
//! `<ino>` is the inode the folder's listing gives (where a file's line is
//! looked for), `<stamp>` what [`super::store::stamp`] said before the file
//! was read (what the file must still say for its line to be used).

use std::collections::HashMap;
use std::ops::Range;

/// A hash for inodes and run ids that costs a multiply a word, not
/// SipHash's rounds: the index is looked up once per file of a folder of
/// 10,000, and no one chooses these keys to collide (a collision costs time,
/// never a wrong answer).
#[derive(Default, Clone, Copy)]
pub(super) struct Mix(u64);

impl std::hash::Hasher for Mix {
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}

pub(super) type Fast = std::hash::BuildHasherDefault<Mix>;

/// One line of an index file: where, in the file's text, the line and its
/// fields are.
#[derive(Clone, Debug)]
pub(super) struct Line {
    line: Range<usize>,
    stamp: Range<usize>,
    name: Range<usize>,
    run: Range<usize>,
    key: Option<Range<usize>>,
}

/// The lines of one folder, in the order they were written: the order the
/// folder was listed in, which the next listing of an unchanged folder gives
/// again. So each file's line is looked for first where the last one
/// matched; only a listing that strays from it builds a map by inode.
#[derive(Default)]
pub(super) struct Lines {
    all: Vec<(u64, Line)>,
    /// Where the next line is looked for (atomic only so that one thread
    /// may look up one folder's lines while another looks up the other's).
    next: std::sync::atomic::AtomicUsize,
    by_ino: std::sync::OnceLock<HashMap<u64, usize, Fast>>,
}

impl Lines {
    fn find(&self, ino: u64) -> Option<usize> {
        use std::sync::atomic::Ordering::Relaxed;
        let at = self.next.load(Relaxed);
        let i = match self.all.get(at) {
            Some((i, _)) if *i == ino => at,
            _ => *self
                .by_ino
                .get_or_init(|| self.all.iter().enumerate().map(|(n, (i, _))| (*i, n)).collect())
                .get(&ino)?,
        };
        self.next.store(i + 1, Relaxed);
        Some(i)
    }
}

/// What the index knew of a task's files: its text kept whole, its lines
/// pointing into it (no copy per file).
#[derive(Default)]
pub(super) struct Index {
    text: String,
    /// A lease, orphan or note: the run it names ("-" for none).
    pub(super) leases: Lines,
    /// A run record: its run id ("=" when it is its file's name without
    /// `.json`, as both engines name records), and the key its variables hash to.
    pub(super) records: Lines,
}

impl Index {
    /// The lines of `text` under `header`; nothing when its first line is
    /// another (another format, or another task's), and a line that is not
    /// whole or not well formed is left out.
    pub(super) fn parse(text: String, header: &str) -> Index {
        let mut ix = Index::default();
        let Some(body) = text.strip_prefix(header).and_then(|b| b.strip_prefix('\n')) else { return ix };
        let n = body.bytes().filter(|b| *b == b'\n').count();
        ix.leases.all.reserve(n / 2);
        ix.records.all.reserve(n / 2);
        let mut at = text.len() - body.len();
        for line in body.split_inclusive('\n') {
            let start = at;
            at += line.len();
            let Some(line) = line.strip_suffix('\n') else { continue };
            let mut fields: [Range<usize>; 6] = Default::default();
            let mut count = 0;
            let mut from = start;
            for f in line.split('\t') {
                if count == 6 {
                    count = 7;
                    break;
                }
                fields[count] = from..from + f.len();
                from += f.len() + 1;
                count += 1;
            }
            let field = |i: usize| &text[fields[i].clone()];
            let Ok(ino) = field(1).parse::<u64>() else { continue };
            let line = start..start + line.len() + 1;
            match (field(0), count) {
                ("L", 5) => {
                    let [_, _, stamp, run, name, _] = fields;
                    ix.leases.all.push((ino, Line { line, stamp, run, key: None, name }));
                }
                ("R", 6) => {
                    let key = (field(4) != "-").then(|| fields[4].clone());
                    let [_, _, stamp, run, _, name] = fields;
                    ix.records.all.push((ino, Line { line, stamp, run, key, name }));
                }
                _ => {}
            }
        }
        ix.text = text;
        ix
    }

    /// A record's run id, as kept.
    pub(super) fn run_of(&self, l: &Line) -> &str {
        match self.str(&l.run) {
            "=" => {
                let name = self.str(&l.name);
                &name[..name.len() - ".json".len()]
            }
            run => run,
        }
    }

    /// A lease's run ("" for none), and its batch's key.
    pub(super) fn lease_of(&self, l: &Line) -> (&str, &str) {
        let run = self.str(&l.run);
        (if run == "-" { "" } else { run }, &self.str(&l.name)[..16])
    }

    /// A record's key, as kept.
    pub(super) fn key_of(&self, l: &Line) -> Option<&str> {
        l.key.as_ref().map(|r| self.str(r))
    }

    /// The stamp the file had when its line was written.
    pub(super) fn stamp_of(&self, l: &Line) -> &str {
        self.str(&l.stamp)
    }

    /// The line of the file `name` listed with inode `ino`, if the index
    /// knew one (its stamp still to be compared).
    pub(super) fn get<'a>(&'a self, of: &'a Lines, ino: u64, name: &str) -> Option<&'a Line> {
        let (_, l) = &of.all[of.find(ino).filter(|_| ino != 0)?];
        (&self.text[l.name.clone()] == name).then_some(l)
    }

    /// How many lines it holds.
    pub(super) fn len(&self) -> usize {
        self.leases.all.len() + self.records.all.len()
    }

    fn str(&self, r: &Range<usize>) -> &str {
        &self.text[r.clone()]
    }
}

/// The index file being written again, in the listings' order: the line of
/// every file still there, readable and settled, and whether anything
/// differs from the old one.
#[derive(Default)]
pub(super) struct Next {
    parts: Vec<Part>,
    changed: bool,
    kept: usize,
}

enum Part {
    Old(Range<usize>),
    New(String),
    Gone,
}

impl Next {
    /// A place for the line of a file, filled once it is known whether the
    /// old line stands ([`Next::keep`]) or the file is read ([`Next::fill`]).
    pub(super) fn wait(&mut self) -> usize {
        self.parts.push(Part::Gone);
        self.parts.len() - 1
    }

    /// The old line stands: its file's stamp is the one it was read with.
    pub(super) fn keep(&mut self, at: usize, l: &Line) {
        self.parts[at] = Part::Old(l.line.clone());
        self.kept += 1;
    }

    /// A file read again: its line, and whether the old index said the same.
    pub(super) fn fill(&mut self, at: usize, old: Option<(&Index, &Line)>, line: String) {
        match old {
            Some((ix, l)) if ix.text[l.line.clone()] == line => self.kept += 1,
            _ => self.changed = true,
        }
        self.parts[at] = Part::New(line);
    }

    /// Whether the file differs from `old`: a line changed, or one gone.
    pub(super) fn differs(&self, old: &Index) -> bool {
        self.changed || self.kept != old.len()
    }

    pub(super) fn text(&self, header: &str, old: &Index) -> String {
        let mut out = format!("{header}\n");
        for p in &self.parts {
            match p {
                Part::Old(r) => out.push_str(&old.text[r.clone()]),
                Part::New(l) => out.push_str(l),
                Part::Gone => {}
            }
        }
        out
    }
}
