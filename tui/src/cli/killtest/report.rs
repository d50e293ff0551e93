//! What killtest prints: seed 004's table, the causes, one verdict line.

use serde::Serialize;

use super::rounds::{Outcome, Row};

/// The columns of a row, in the table's order.
pub const COLUMNS: [&str; 6] = ["missing", "corrupt", "doubled", "redone", "leftover", "foreign-lost"];

/// A row's figures (redone: None when unknown).
/// With --compare, the contents are the user's command's to judge: those
/// three columns show `-`.
pub fn figures(r: &Row) -> [Option<usize>; 6] {
    let by_content = |f: fn(&ubunye::killtest::Diff) -> usize| r.compare.is_none().then(|| r.sum(f));
    [
        by_content(|d| d.missing.len()),
        by_content(|d| d.corrupt.len()),
        by_content(|d| d.doubled.len()),
        r.redone,
        Some(r.debris.leftover.len()),
        Some(r.debris.foreign_lost.len()),
    ]
}

/// The table: a header and one line per row, `label` before each.
pub fn table(label: &str, rows: &[(String, [Option<usize>; 6])]) -> String {
    let w = rows.iter().map(|(l, _)| l.len()).chain([label.len()]).max().unwrap_or(0);
    let mut s = format!("{label:<w$}");
    for c in COLUMNS {
        s.push_str(&format!("  {c}"));
    }
    s.push('\n');
    for (l, f) in rows {
        s.push_str(&format!("{l:<w$}"));
        for (c, v) in COLUMNS.iter().zip(f) {
            let v = v.map_or("-".to_string(), |n| n.to_string());
            s.push_str(&format!("  {v:>width$}", width = c.len()));
        }
        s.push('\n');
    }
    s
}

/// Why it fails, most telling first; empty: it passes.
pub fn causes(o: &Outcome) -> Vec<String> {
    let mut c = Vec::new();
    const SHOWN: usize = 5;
    for p in o.outside.iter().take(SHOWN) {
        let into = o.outside_in.iter().find(|(q, _)| q == p).map(|(_, name)| name.as_str());
        c.push(match into {
            Some(name) => format!(
                "the command wrote {p} into output {name} in place, not beneath its staging folder $UBUNYE_OUT_{}: a kill leaves it half written, and no takeover removes it",
                name.to_uppercase()
            ),
            None => format!("the command wrote {p} outside its outputs: a kill leaves it behind, half written, and no takeover removes it"),
        });
    }
    if o.outside.len() > SHOWN {
        c.push(format!(
            "... and {} more file(s) written outside $UBUNYE_OUT_<NAME> (--json lists them all)",
            o.outside.len() - SHOWN
        ));
    }
    if let Some(first) = o.escaped.first() {
        c.push(format!(
            "{} process(es) left a run's session and outlived it (first: {first}): neither ubunye exec nor a takeover can stop such a process, and it can write after its batch is judged; start helpers in the command's own session",
            o.escaped.len()
        ));
    }
    for name in &o.empty_outputs {
        c.push(format!(
            "the reference run wrote nothing beneath $UBUNYE_OUT_{} (output {name} is empty): nothing about it can be checked; does the command write it in place instead?",
            ubunye::exec::env_name("", name)
        ));
    }
    for p in &o.real_changed {
        c.push(format!(
            "the real use case's output changed while killtest ran: {p}; the command writes by a path of its own, not where ubunye exec tells it"
        ));
    }
    for (i, r) in o.rows.iter().enumerate() {
        for (name, d) in r.outputs.iter().filter(|_| r.compare.is_none()) {
            let first = |v: &[String]| v.first().cloned().unwrap_or_default();
            let rerun = i > 0;
            if !d.missing.is_empty() {
                c.push(format!(
                    "{}: output {name} lacks {} file(s) the reference run wrote (first: {})",
                    r.check,
                    d.missing.len(),
                    first(&d.missing)
                ));
            }
            if !d.corrupt.is_empty() {
                let why = if rerun {
                    "the command reads its own output, or is not deterministic (run ids, times, random values in what it writes): a rerun does not give the same result"
                } else {
                    "torn, or not what an uninterrupted run writes"
                };
                c.push(format!(
                    "{}: output {name} holds {} file(s) the reference run did not write (first: {}): {why}",
                    r.check,
                    d.corrupt.len(),
                    first(&d.corrupt)
                ));
            }
            if !d.doubled.is_empty() {
                c.push(format!("{}: output {name} holds {} extra cop(ies) of what the reference wrote once (first: {}): a batch landed twice", r.check, d.doubled.len(), first(&d.doubled)));
            }
        }
        for l in &r.debris.leftover {
            c.push(format!("{}: left behind: {l}", r.check));
        }
        for l in &r.debris.foreign_lost {
            c.push(format!("{}: a file no run wrote was removed or changed: {l}", r.check));
        }
        if let Some(Err(why)) = &r.compare {
            c.push(format!("{}: {why}", r.check));
        }
    }
    c.extend(o.errors.iter().cloned());
    c
}

/// The whole report as JSON (docs/json.md).
#[derive(Serialize)]
pub struct Json<'a> {
    /// PASS or FAIL.
    pub verdict: &'static str,
    /// The seed (to repeat it).
    pub seed: u64,
    /// exec or bare.
    pub how: super::rounds::How,
    /// The batches, by label.
    pub batches: Vec<&'a str>,
    /// What happened and what was found.
    #[serde(flatten)]
    pub outcome: &'a Outcome,
    /// Why it fails.
    pub causes: Vec<String>,
    /// The sandbox, and whether it was kept.
    pub sandbox: String,
    /// Kept (a FAIL, --keep or --sandbox), else removed.
    pub kept: bool,
}
