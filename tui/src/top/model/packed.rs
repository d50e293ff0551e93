//! Light batches packed: what the dashboard keeps of each of the finished
//! batches that are most of a big use case (docs/design.md, "The dashboard's
//! model stays small"). A [`ubunye::state::Batch`] is 360 bytes before its
//! strings, each its own allocation; packed, a finished batch is its strings
//! one after the other, each after its length, about 200 bytes in a chunk
//! that all the batches of its task's read share ([`Packer`]): no allocation
//! of its own, nothing of it left among what a read frees.
//!
//! Packing never loses anything: [`Packed::unpack`] gives back the very batch
//! that was packed (a test holds it to that over random batches), and a
//! batch with anything a packed row has no place for (a lease, a mark, a
//! flag, a problem, a record's own variables) is not packed: it stays whole.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use ubunye::state::{Batch, FinishedInfo, RecordInfo, State};

use super::text::{Reader, put, put_len};

/// A finished, light batch's fields, packed ([`Packer`]): a span of a chunk
/// shared with the other batches packed with it.
#[derive(Clone, Debug)]
pub struct Packed {
    chunk: Arc<Box<[u8]>>,
    at: u32,
    len: u32,
}

/// Packs batches one after the other into one chunk ([`Packer::finish`]).
#[derive(Default)]
pub struct Packer {
    buf: Vec<u8>,
}

/// A batch packed into a [`Packer`], before the chunk is made.
pub struct Span {
    at: u32,
    len: u32,
}

impl Packer {
    /// Pack a light batch (its task is kept apart, by number) and its
    /// variables as one line; None when it holds what a packed row has no
    /// place for, or the chunk is full (4 GiB).
    pub fn pack(&mut self, b: &Batch, vars: Option<&str>) -> Option<Span> {
        if !packable(b) {
            return None;
        }
        let at = self.buf.len();
        encode(&mut self.buf, b, vars);
        let end = self.buf.len();
        match (u32::try_from(at), u32::try_from(end - at), u32::try_from(end)) {
            (Ok(at), Ok(len), Ok(_)) => Some(Span { at, len }),
            _ => {
                self.buf.truncate(at);
                None
            }
        }
    }

    /// A packed batch copied into this chunk as it is.
    pub fn copy(&mut self, p: &Packed) -> Option<Span> {
        let at = u32::try_from(self.buf.len()).ok()?;
        u32::try_from(self.buf.len() + p.bytes().len()).ok()?;
        self.buf.extend_from_slice(p.bytes());
        Some(Span { at, len: p.len })
    }

    /// The chunk, made once every batch is packed; each span becomes a
    /// [`Packed`] with [`Chunk::get`].
    pub fn finish(self) -> Chunk {
        Chunk(Arc::new(self.buf.into_boxed_slice()))
    }
}

/// The bytes of batches packed together.
pub struct Chunk(Arc<Box<[u8]>>);

impl Chunk {
    pub fn get(&self, s: Span) -> Packed {
        Packed { chunk: self.0.clone(), at: s.at, len: s.len }
    }
}

/// A string kept as it is (a key, a path, the variables' line): read back
/// borrowed.
fn put_raw(out: &mut Vec<u8>, s: &str) {
    put_len(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

/// What a record keeps: its fields, in this order; the run id left out (0)
/// when it is the batch's.
fn packable(b: &Batch) -> bool {
    b.state == State::Finished
        && b.flags.is_empty()
        && b.variables.is_none()
        && b.lease.is_none()
        && b.orphans.is_empty()
        && b.done_marks.is_empty()
        && b.tombstones.is_empty()
        && b.finished.as_ref().is_none_or(|f| f.outputs.is_empty() && f.path.as_os_str().is_empty())
        && b.unreadable.is_empty()
        && b.temp_files.is_empty()
        && b.unknown_files.is_empty()
        && b.records.iter().all(|r| {
            r.backend.is_none() && r.variables.is_none() && r.locations.is_empty() && r.path.to_str().is_some()
        })
}

/// A string as a packed batch holds it: equal strings, equal bytes.
pub fn encoded(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    put(&mut out, Some(s));
    out
}

/// Pack one batch alone, in a chunk of its own ([`Packer::pack`]).
pub fn pack(b: &Batch, vars: Option<&str>) -> Option<Packed> {
    let mut p = Packer::default();
    let span = p.pack(b, vars)?;
    Some(p.finish().get(span))
}

/// The finished note's run, after [`NOTE_OWN_RUN`].
const NO_NOTE: u8 = 0;
const NOTE_NO_RUN: u8 = 1;
const NOTE_BATCH_RUN: u8 = 2;
const NOTE_OWN_RUN: u8 = 3;

/// The fields in order: key, run id, note, variables (raw, after a byte that
/// says whether they are known), the finished note (a byte: none, or which
/// run it names; then its run when its own, and its time), the number of
/// records, then each record: its run id (none: the batch's), path, status,
/// start, end, error, damage.
fn encode(out: &mut Vec<u8>, b: &Batch, vars: Option<&str>) {
    put_raw(out, &b.key);
    put(out, b.run_id.as_deref());
    put(out, Some(&b.note));
    out.push(u8::from(vars.is_some()));
    put_raw(out, vars.unwrap_or_default());
    match &b.finished {
        None => out.push(NO_NOTE),
        Some(f) => {
            match f.run_id.as_deref() {
                None => out.push(NOTE_NO_RUN),
                Some(r) if b.run_id.as_deref() == Some(r) => out.push(NOTE_BATCH_RUN),
                Some(r) => {
                    out.push(NOTE_OWN_RUN);
                    put(out, Some(r));
                }
            }
            put(out, f.finished_at.as_deref());
        }
    }
    put_len(out, b.records.len());
    for r in &b.records {
        let same = b.run_id.as_deref() == Some(r.run_id.as_str());
        put(out, if same { None } else { Some(&r.run_id) });
        put_raw(out, r.path.to_str().unwrap_or_default());
        put(out, r.status.as_deref());
        put(out, r.started_at.as_deref());
        put(out, r.ended_at.as_deref());
        put(out, r.error.as_deref());
        put(out, r.damaged.as_deref());
    }
}

fn raw<'a>(r: &mut Reader<'a>) -> &'a str {
    let n = r.len();
    let end = (r.at + n).min(r.bytes.len());
    let s = &r.bytes[r.at..end];
    r.at = end;
    // Only [`encode`] writes these, from strings, cut at their ends.
    std::str::from_utf8(s).unwrap_or_default()
}

/// One record of a packed batch, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordFields<'a> {
    pub run_id: Cow<'a, str>,
    /// Empty when it is the usual one (`<lineage>/<task>/<run id>.json`).
    pub path: &'a str,
    pub status: Option<Cow<'a, str>>,
    pub started_at: Option<Cow<'a, str>>,
    pub ended_at: Option<Cow<'a, str>>,
    pub error: Option<Cow<'a, str>>,
    pub damaged: Option<Cow<'a, str>>,
}

impl Packed {
    fn bytes(&self) -> &[u8] {
        let (at, len) = (self.at as usize, self.len as usize);
        self.chunk.get(at..at + len).unwrap_or_default()
    }

    /// A reader past the first `n` fields.
    fn past(&self, n: usize) -> Reader<'_> {
        let mut r = Reader { bytes: self.bytes(), at: 0 };
        raw(&mut r);
        for field in 1..n {
            match field {
                3 => {
                    r.at += 1;
                    raw(&mut r);
                }
                4 => {
                    let note = r.bytes.get(r.at).copied().unwrap_or(NO_NOTE);
                    r.at += 1;
                    if note == NOTE_OWN_RUN {
                        r.skip();
                    }
                    if note != NO_NOTE {
                        r.skip();
                    }
                }
                _ => r.skip(),
            }
        }
        r
    }

    /// Its finished note's run and time: None without a note, else (the
    /// run it names, when it names one; its time).
    #[allow(clippy::type_complexity)]
    pub fn finished(&self) -> Option<(Option<Cow<'_, str>>, Option<Cow<'_, str>>)> {
        let mut r = self.past(4);
        let note = r.bytes.get(r.at).copied().unwrap_or(NO_NOTE);
        r.at += 1;
        let run = match note {
            NO_NOTE => return None,
            NOTE_NO_RUN => None,
            NOTE_BATCH_RUN => self.run_id(),
            _ => r.text(),
        };
        Some((run, r.text()))
    }

    /// The batch's key (read first, at once).
    pub fn key(&self) -> &str {
        raw(&mut Reader { bytes: self.bytes(), at: 0 })
    }

    pub fn run_id(&self) -> Option<Cow<'_, str>> {
        self.past(1).text()
    }

    pub fn note(&self) -> Cow<'_, str> {
        self.past(2).string()
    }

    /// Its variables as one line, when known.
    pub fn vars(&self) -> Option<&str> {
        let mut r = self.past(3);
        let known = r.bytes.get(r.at) == Some(&1);
        r.at += 1;
        let v = raw(&mut r);
        known.then_some(v)
    }

    /// How many records it has.
    pub fn record_count(&self) -> usize {
        self.past(5).len()
    }

    /// Its records, newest first (as a scan orders them).
    pub fn records(&self) -> impl Iterator<Item = RecordFields<'_>> + '_ {
        let mut r = self.past(5);
        let n = r.len();
        let batch_run = self.run_id().unwrap_or_default();
        (0..n).map(move |_| RecordFields {
            run_id: r.text().unwrap_or_else(|| batch_run.clone()),
            path: raw(&mut r),
            status: r.text(),
            started_at: r.text(),
            ended_at: r.text(),
            error: r.text(),
            damaged: r.text(),
        })
    }

    /// Record `i`, newest first.
    pub fn record(&self, i: usize) -> Option<RecordFields<'_>> {
        self.records().nth(i)
    }

    /// The run its finished note names, as [`encoded`] writes it: None
    /// without a note or with a note that names none (or an empty one).
    pub fn note_run_field(&self) -> Option<&[u8]> {
        let mut r = self.past(4);
        let note = r.bytes.get(r.at).copied().unwrap_or(NO_NOTE);
        r.at += 1;
        let field = match note {
            NO_NOTE | NOTE_NO_RUN => return None,
            NOTE_BATCH_RUN => self.past(1).field(),
            _ => r.field(),
        };
        (field != encoded("").as_slice()).then_some(field)
    }

    /// Each record's run (as [`encoded`] writes it) and path (empty: the
    /// usual one, `<run id>.json`), newest first.
    pub fn record_files(&self) -> impl Iterator<Item = (&[u8], &str)> + '_ {
        let batch_run = self.past(1).field();
        let mut r = self.past(5);
        let n = r.len();
        (0..n).map(move |_| {
            let run = r.field();
            let run = if run == [0] { batch_run } else { run };
            let path = raw(&mut r);
            for _ in 0..5 {
                r.skip();
            }
            (run, path)
        })
    }

    /// The bytes it holds in its chunk.
    pub fn size(&self) -> usize {
        self.len as usize
    }

    /// Its chunk, to tell which batches share one, and the chunk's size.
    pub fn chunk(&self) -> (*const Box<[u8]>, usize) {
        (Arc::as_ptr(&self.chunk), self.chunk.len())
    }

    /// The batch as it was packed, with its task.
    pub fn unpack(&self, task: &str) -> Batch {
        let mut b = Batch::new(task, self.key());
        b.state = State::Finished;
        b.run_id = self.run_id().map(Cow::into_owned);
        b.note = self.note().into_owned();
        let own = |c: Option<Cow<str>>| c.map(Cow::into_owned);
        b.finished = self.finished().map(|(run, at)| {
            Box::new(FinishedInfo { path: PathBuf::new(), run_id: own(run), finished_at: own(at), outputs: Vec::new() })
        });
        b.records = self
            .records()
            .map(|r| RecordInfo {
                run_id: r.run_id.into_owned(),
                path: PathBuf::from(r.path),
                status: own(r.status),
                started_at: own(r.started_at),
                ended_at: own(r.ended_at),
                error: own(r.error),
                backend: None,
                damaged: own(r.damaged),
                variables: None,
                locations: Vec::new(),
            })
            .collect();
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        // Long ones too: a length past 127 takes two bytes.
        prop_oneof![
            ".{0,8}",
            "[a-z0-9:\\-]{120,300}",
            "\\PC{0,40}",
            // The shapes kept short (super::text), and near misses.
            "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{11,12}",
            "20[0-9]{2}-(0[1-9]|1[0-3])-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\\.[0-9]{6}\\+0[01]:00",
            "finished at 20[0-9]{2}-(0[1-9]|1[0-2])-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]Z?",
        ]
    }

    fn record(batch_run: Option<String>) -> impl Strategy<Value = RecordInfo> {
        (
            prop_oneof![Just(batch_run.clone().unwrap_or_default()), text()],
            prop_oneof![Just(String::new()), text()],
            proptest::option::of(text()),
            proptest::option::of(text()),
            proptest::option::of(text()),
            proptest::option::of(text()),
            proptest::option::of(text()),
        )
            .prop_map(|(run_id, path, status, started_at, ended_at, error, damaged)| RecordInfo {
                run_id,
                path: PathBuf::from(path),
                status,
                started_at,
                ended_at,
                error,
                backend: None,
                damaged,
                variables: None,
                locations: Vec::new(),
            })
    }

    /// A light finished note: none, or naming no run, the batch's or its own.
    fn note(run: Option<String>) -> impl Strategy<Value = Option<Box<FinishedInfo>>> {
        let own = proptest::option::of(text());
        (0..4u8, own, proptest::option::of(text())).prop_map(move |(which, own, at)| {
            let run_id = match which {
                0 => return None,
                1 => None,
                2 => run.clone(),
                _ => own,
            };
            Some(Box::new(FinishedInfo { path: PathBuf::new(), run_id, finished_at: at, outputs: Vec::new() }))
        })
    }

    fn batch() -> impl Strategy<Value = (Batch, Option<String>)> {
        (text(), proptest::option::of(text()), text(), proptest::option::of(text())).prop_flat_map(
            |(key, run, note_line, vars)| {
                (proptest::collection::vec(record(run.clone()), 0..4), note(run.clone())).prop_map(
                    move |(records, finished)| {
                        let mut b = Batch::new("demo/sales/ingest", &key);
                        b.run_id = run.clone();
                        b.note = note_line.clone();
                        b.records = records;
                        b.finished = finished;
                        (b, vars.clone())
                    },
                )
            },
        )
    }

    fn same(a: &Batch, b: &Batch) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    proptest! {
        /// What is packed comes back whole: every field, every record.
        #[test]
        fn a_packed_batch_unpacks_to_itself((b, vars) in batch(), before in batch()) {
            // Packed alone, and after another batch in a shared chunk.
            let mut packer = Packer::default();
            let first = packer.pack(&before.0, before.1.as_deref()).expect("packable");
            let span = packer.pack(&b, vars.as_deref()).expect("packable");
            let chunk = packer.finish();
            let (p, first) = (chunk.get(span), chunk.get(first));
            prop_assert!(same(&first.unpack(&before.0.task), &before.0));
            prop_assert!(same(&pack(&b, vars.as_deref()).unwrap().unpack(&b.task), &b));
            prop_assert!(same(&p.unpack(&b.task), &b));
            prop_assert_eq!(p.vars(), vars.as_deref());
            prop_assert_eq!(p.key(), b.key.as_str());
            prop_assert_eq!(p.record_count(), b.records.len());
            for (i, r) in b.records.iter().enumerate() {
                let got = p.record(i).unwrap();
                prop_assert_eq!((&*got.run_id, got.status.as_deref()), (r.run_id.as_str(), r.status.as_deref()));
            }
            prop_assert!(p.record(b.records.len()).is_none());
        }
    }

    /// Anything a packed row has no place for keeps the batch whole.
    #[test]
    fn what_a_packed_row_cannot_hold_is_not_packed() {
        let plain = || {
            let mut b = Batch::new("t", "0123456789abcdef");
            b.records.push(RecordInfo {
                run_id: "r".into(),
                path: PathBuf::new(),
                status: Some("success".into()),
                started_at: None,
                ended_at: None,
                error: None,
                backend: None,
                damaged: None,
                variables: None,
                locations: Vec::new(),
            });
            b
        };
        assert!(pack(&plain(), None).is_some());
        let changes: Vec<fn(&mut Batch)> = vec![
            |b| b.state = State::Failed,
            |b| b.flags.push(ubunye::state::Flag::DamagedRecord),
            |b| b.variables = Some(serde_json::Map::new()),
            |b| b.temp_files.push(PathBuf::from("x.tmp")),
            |b| b.unreadable.push(ubunye::state::UnreadableFile::new(std::path::Path::new("x"), "bad")),
            |b| b.records[0].backend = Some("pandas".into()),
            |b| b.records[0].variables = Some(serde_json::Map::new()),
            |b| b.records[0].locations.push(("o".into(), "l".into())),
            |b| {
                let path = PathBuf::from("k.finished.json");
                b.finished = Some(Box::new(FinishedInfo { path, run_id: None, finished_at: None, outputs: Vec::new() }))
            },
            |b| {
                let outputs = vec![("o".to_string(), vec!["f".to_string()], false)];
                b.finished =
                    Some(Box::new(FinishedInfo { path: PathBuf::new(), run_id: None, finished_at: None, outputs }))
            },
            |b| {
                use std::os::unix::ffi::OsStrExt;
                b.records[0].path = PathBuf::from(std::ffi::OsStr::from_bytes(b"r\xff.json"));
            },
        ];
        for (i, change) in changes.into_iter().enumerate() {
            let mut b = plain();
            change(&mut b);
            assert!(pack(&b, None).is_none(), "change {i} packed");
        }
    }
}
