//! `leases list --json`, streamed: a row is turned into its JSON as soon as
//! its task is read (on a thread of its own, beside the reading), and kept as
//! bytes in a bucket per state, spilled to an unnamed temporary file (in
//! `$TMPDIR`, never in the use case) past a few MB. The document is then
//! written bucket by bucket, most severe first: the order and the bytes of
//! `serde_json::to_writer_pretty` over the whole listing, held in memory by one
//! task at a time (a year of hourly batches is a million rows).

use std::fs::File;
use std::io::{self, Read, Seek, Write};

use serde::Serialize;

use ubunye::state::{State, UnreadableFile};

/// serde_json's pretty printing (two spaces a level), begun `level` deep: a
/// row is written where it sits in the document in one pass, with no text of
/// its own to indent again (`PrettyFormatter` always begins at the left edge).
struct Indented {
    level: usize,
    has_value: bool,
}

impl Indented {
    fn newline<W: ?Sized + Write>(&self, w: &mut W, comma: bool) -> io::Result<()> {
        w.write_all(if comma { b",\n" } else { b"\n" })?;
        for _ in 0..self.level {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    fn open<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    fn close<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.newline(w, false)?;
        }
        w.write_all(bracket)
    }
}

impl serde_json::ser::Formatter for Indented {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.newline(w, !first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.newline(w, !first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// Write `value` as `to_writer_pretty` writes it `level` deep in a document.
fn pretty_at<W: Write, T: Serialize + ?Sized>(w: &mut W, value: &T, level: usize) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(w, Indented { level, has_value: false });
    value.serialize(&mut ser).map_err(io::Error::other)
}

/// Bytes kept in memory before a bucket goes to its temporary file.
const IN_MEMORY: usize = 4 << 20;

/// The rows of one state, as JSON, in the order they came.
#[derive(Default)]
struct Bucket {
    bytes: Vec<u8>,
    file: Option<File>,
    /// No temporary file can be had or grown: the rows stay in memory.
    in_memory: bool,
    rows: usize,
}

impl Bucket {
    fn spill(&mut self) -> io::Result<()> {
        if self.in_memory {
            return Ok(());
        }
        if self.file.is_none() {
            // No temporary file to be had: the rows stay in memory.
            match tempfile::tempfile() {
                Ok(f) => self.file = Some(f),
                Err(_) => {
                    self.in_memory = true;
                    return Ok(());
                }
            }
        }
        let Some(f) = self.file.as_mut() else { return Ok(()) };
        let at = f.stream_position()?;
        if f.write_all(&self.bytes).is_ok() {
            self.bytes.clear();
            return Ok(());
        }
        // The temporary file cannot grow (a full disk, `ulimit -f`): what it
        // holds comes back, and the rows stay in memory from now on.
        // (Only what was written whole: a write cut short left a part after it.)
        f.rewind()?;
        let mut held = Vec::with_capacity(at as usize + self.bytes.len());
        f.take(at).read_to_end(&mut held)?;
        held.append(&mut self.bytes);
        self.bytes = held;
        self.file = None;
        self.in_memory = true;
        Ok(())
    }

    fn copy_to<W: Write>(&mut self, out: &mut W) -> io::Result<()> {
        if let Some(f) = self.file.as_mut() {
            f.rewind()?;
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                out.write_all(&buf[..n])?;
            }
        }
        out.write_all(&self.bytes)
    }
}

/// The listing's rows as they come, in a bucket per state.
pub(super) struct Rows {
    /// A bucket per state, at its [`State::rank`] (most severe first).
    buckets: Vec<Bucket>,
    held: usize,
}

impl Rows {
    pub(super) fn new() -> Rows {
        Rows { buckets: State::ALL.iter().map(|_| Bucket::default()).collect(), held: 0 }
    }

    /// How many rows there are.
    pub(super) fn len(&self) -> usize {
        self.buckets.iter().map(|b| b.rows).sum()
    }

    /// Add a row of this state; rows of one state must come in their order.
    pub(super) fn push<T: Serialize>(&mut self, state: State, row: &T) -> io::Result<()> {
        let b = &mut self.buckets[state.rank()];
        let before = b.bytes.len();
        if b.rows > 0 {
            b.bytes.extend_from_slice(b",");
        }
        b.bytes.extend_from_slice(b"\n    ");
        pretty_at(&mut b.bytes, row, 2)?;
        b.rows += 1;
        self.held += b.bytes.len() - before;
        if self.held > IN_MEMORY {
            for b in &mut self.buckets {
                b.spill()?;
            }
            self.held = self.buckets.iter().map(|b| b.bytes.len()).sum();
        }
        Ok(())
    }

    /// The whole document: `{use_case, clock, now, batches, problems}`.
    pub(super) fn write_document<W: Write, H: Serialize>(
        mut self,
        out: &mut W,
        head: &[(&str, &H)],
        problems: &[UnreadableFile],
    ) -> io::Result<()> {
        out.write_all(b"{")?;
        for (i, (name, value)) in head.iter().enumerate() {
            out.write_all(if i == 0 { b"\n  " } else { b",\n  " })?;
            serde_json::to_writer(&mut *out, name).map_err(io::Error::other)?;
            out.write_all(b": ")?;
            pretty_at(out, value, 1)?;
        }
        out.write_all(b",\n  \"batches\": [")?;
        let mut first = true;
        for b in &mut self.buckets {
            if b.rows == 0 {
                continue;
            }
            // Each bucket starts with "\n    " (its first row has no comma).
            if !first {
                out.write_all(b",")?;
            }
            first = false;
            b.copy_to(out)?;
        }
        out.write_all(if first { b"]" } else { b"\n  ]" })?;
        out.write_all(b",\n  \"problems\": ")?;
        pretty_at(out, problems, 1)?;
        out.write_all(b"\n}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Row {
        task: &'static str,
        n: u32,
        v: Vec<u32>,
        e: Vec<u32>,
        m: serde_json::Map<String, serde_json::Value>,
    }

    fn row(n: u32) -> Row {
        let mut m = serde_json::Map::new();
        if n.is_multiple_of(2) {
            m.insert("a\"b".into(), serde_json::json!({"x": [1, {"y": null}], "z": {}}));
        }
        Row { task: "t/é/\n", n, v: (0..n % 3).collect(), e: Vec::new(), m }
    }

    /// The streamed document is the bytes `to_writer_pretty` gives for the
    /// same listing held whole, whatever the mix of states and spills.
    #[test]
    fn the_streamed_document_is_the_pretty_printed_one() {
        for (rows, spill) in [(0usize, false), (1, false), (7, false), (40, true)] {
            let states: Vec<State> = (0..rows).map(|i| State::ALL[(i * 7) % State::ALL.len()]).collect();
            let mut r = Rows::new();
            for (i, s) in states.iter().enumerate() {
                r.push(*s, &row(i as u32)).unwrap();
                if spill {
                    for b in &mut r.buckets {
                        b.spill().unwrap();
                    }
                }
            }
            let mut got = Vec::new();
            r.write_document(&mut got, &[("use_case", &"/x"), ("now", &"2026")], &[]).unwrap();
            // What the whole listing, sorted by state (stable), pretty-prints to.
            let mut order: Vec<usize> = (0..rows).collect();
            order.sort_by_key(|&i| states[i]);
            let whole = serde_json::json!({
                "use_case": "/x",
                "now": "2026",
                "batches": order.iter().map(|&i| serde_json::to_value(row(i as u32)).unwrap()).collect::<Vec<_>>(),
                "problems": Vec::<u32>::new(),
            });
            let mut want = serde_json::to_vec_pretty(&whole).unwrap();
            want.push(b'\n');
            assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(want).unwrap(), "{rows} rows");
        }
    }

    /// `to_vec_pretty`'s text with each line after the first indented two
    /// spaces a level: what a value `level` deep in a pretty document is.
    fn reindented(v: &serde_json::Value, level: usize) -> String {
        let text = serde_json::to_string_pretty(v).unwrap();
        text.split('\n').collect::<Vec<_>>().join(&format!("\n{}", "  ".repeat(level)))
    }

    fn any_json() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "\\PC{0,8}|[\"\\\\\n\t\u{1}]{0,3}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::vec(("\\PC{0,5}", inner), 0..5)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// Any value, at any depth, is written in one pass as the pretty
        /// text re-indented would be.
        #[test]
        fn one_pass_is_the_pretty_text_indented(v in any_json(), level in 0usize..4) {
            let mut got = Vec::new();
            pretty_at(&mut got, &v, level).unwrap();
            proptest::prop_assert_eq!(String::from_utf8(got).unwrap(), reindented(&v, level));
        }
    }

    /// A temporary file that cannot grow gives back what it holds, and the
    /// rows stay in memory: the same document.
    #[test]
    fn a_spill_that_fails_keeps_the_rows_in_memory() {
        let mut r = Rows::new();
        let mut want = Rows::new();
        for i in 0..6u32 {
            for rows in [&mut r, &mut want] {
                rows.push(State::Finished, &row(i)).unwrap();
            }
            if i == 2 {
                // What is written so far goes to a file; then the file can no
                // longer be written (opened read-only).
                let b = &mut r.buckets[State::Finished.rank()];
                b.spill().unwrap();
                assert!(b.bytes.is_empty() && b.file.is_some());
                let f = b.file.as_mut().unwrap();
                f.rewind().unwrap();
                let mut held = Vec::new();
                f.read_to_end(&mut held).unwrap();
                let ro = tempfile::NamedTempFile::new().unwrap();
                std::fs::write(ro.path(), &held).unwrap();
                let mut ro = File::open(ro.path()).unwrap();
                ro.seek(io::SeekFrom::End(0)).unwrap();
                b.file = Some(ro);
            }
        }
        let b = &mut r.buckets[State::Finished.rank()];
        b.spill().unwrap();
        assert!(b.in_memory && b.file.is_none(), "back in memory");
        let (mut got, mut expected) = (Vec::new(), Vec::new());
        r.write_document(&mut got, &[("now", &"x")], &[]).unwrap();
        want.write_document(&mut expected, &[("now", &"x")], &[]).unwrap();
        assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(expected).unwrap());
    }
}
