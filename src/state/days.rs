//! A task's batches by date: which dates ran, failed, were interrupted or
//! never ran. What a paged engineer asks after "this batch failed": did the
//! days before it run, and which days are missing? `ubunye leases history`
//! renders it.
//!
//! A batch's date is its `dt` variable. Dates are read as calendar days
//! (`2025-01-04`, or by the batch's own `dtf` when it is a `%`-format such
//! as `%Y%m%d`); between the first and the last day (or the range asked
//! for), each day with no batch is a gap. A `dt` that is not a day (an hour,
//! free text) is listed in its order, and no gaps are made around it.

use chrono::NaiveDate;
use serde::Serialize;
use serde_json::Value;

use super::{Batch, State};

/// One line of a task's history: a batch, or a day with none.
#[derive(Clone, Debug, Serialize)]
pub struct Day {
    /// The `dt` as the batch has it (a gap: the day, as `YYYY-MM-DD`).
    pub dt: String,
    /// The batch, or None for a day with no batch.
    pub batch: Option<DayBatch>,
}

/// What a history line says of a batch.
#[derive(Clone, Debug, Serialize)]
pub struct DayBatch {
    /// Its task: `<usecase>/<package>/<task>`.
    pub task: String,
    /// Its key (16 hex digits).
    pub key: String,
    /// Its state, as `leases list` says it.
    pub state: State,
    /// Its variables other than `dt`, as one line (`mode=DEV`).
    pub others: String,
    /// The run its state is of (the lease's, or the newest record's).
    pub run_id: Option<String>,
    /// Its state's note, as `leases list` says it.
    pub note: String,
}

/// A task's batches in date order, with the days between them that have
/// none. `from`/`to`: the range asked for (as `--dt A..B` gives it), which
/// widens the gaps to its ends when they are days.
pub fn by_date(batches: &[Batch], from: Option<&str>, to: Option<&str>) -> Vec<Day> {
    let dated = batches
        .iter()
        .filter_map(|b| {
            let vars = b.variables.as_ref()?;
            let dt = text(vars.get("dt")?);
            let dtf = vars.get("dtf").map(text);
            let others = vars
                .iter()
                .filter(|(k, _)| k.as_str() != "dt")
                .map(|(k, v)| format!("{k}={}", text(v)))
                .collect::<Vec<_>>()
                .join(" ");
            let batch = DayBatch {
                task: b.task.clone(),
                key: b.key.clone(),
                state: b.state,
                others,
                run_id: b.run_id.clone(),
                note: b.note.clone(),
            };
            Some(Dated { dt, dtf, batch })
        })
        .collect();
    by_date_of(dated, from, to)
}

/// A batch with its date, as [`by_date_of`] orders them.
#[derive(Clone, Debug)]
pub struct Dated {
    /// Its `dt` variable as text.
    pub dt: String,
    /// Its `dtf` variable, when it has one.
    pub dtf: Option<String>,
    /// What its line says.
    pub batch: DayBatch,
}

/// [`by_date`] of batches already reduced to their dates (the dashboard
/// keeps a batch's variables as one line, not as a map).
pub fn by_date_of(dated: Vec<Dated>, from: Option<&str>, to: Option<&str>) -> Vec<Day> {
    let mut rows: Vec<(Option<NaiveDate>, String, Day)> = dated
        .into_iter()
        .map(|d| {
            let day = as_day(&d.dt, d.dtf.as_deref());
            (day, d.dt.clone(), Day { dt: d.dt, batch: Some(d.batch) })
        })
        .collect();
    let days: Vec<NaiveDate> = rows.iter().filter_map(|r| r.0).collect();
    let first = from.and_then(|f| as_day(f, None)).or_else(|| days.iter().min().copied());
    let last = to.and_then(|t| as_day(t, None)).or_else(|| days.iter().max().copied());
    if let (Some(first), Some(last)) = (first, last) {
        let seen: std::collections::BTreeSet<NaiveDate> = days.into_iter().collect();
        // Bounded: a range of more than about 27 years makes no gaps (a typo
        // such as 2025..20250 is not a million lines).
        if (last - first).num_days() <= 10_000 {
            for d in first.iter_days().take_while(|d| *d <= last).filter(|d| !seen.contains(d)) {
                let dt = d.format("%Y-%m-%d").to_string();
                rows.push((Some(d), dt.clone(), Day { dt, batch: None }));
            }
        }
    }
    // By day, then by the text (a dt that is not a day sorts by its text,
    // after the days), then by the other variables.
    rows.sort_by(|a, b| {
        let others = |d: &Day| d.batch.as_ref().map(|b| b.others.clone()).unwrap_or_default();
        (a.0.is_none(), a.0, &a.1, others(&a.2)).cmp(&(b.0.is_none(), b.0, &b.1, others(&b.2)))
    });
    rows.into_iter().map(|(_, _, d)| d).collect()
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The calendar day a `dt` names: ISO (`2025-01-04`), or by `dtf` when it
/// is a `%`-format of a day.
fn as_day(dt: &str, dtf: Option<&str>) -> Option<NaiveDate> {
    if let Some(f) = dtf.filter(|f| f.contains('%'))
        && let Ok(d) = NaiveDate::parse_from_str(dt, f)
    {
        return Some(d);
    }
    NaiveDate::parse_from_str(dt, "%Y-%m-%d").ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(dt: &str, state: State, extra: &[(&str, &str)]) -> Batch {
        let mut b = Batch::new("demo/sales/ingest", &format!("{:0>16}", dt.replace('-', "")));
        let mut vars = serde_json::Map::new();
        vars.insert("dt".into(), Value::String(dt.into()));
        for (k, v) in extra {
            vars.insert((*k).into(), Value::String((*v).into()));
        }
        b.variables = Some(vars);
        b.state = state;
        b
    }

    #[test]
    fn days_in_order_with_the_gaps_between_and_to_the_range_ends() {
        let b = [
            batch("2025-01-04", State::Failed, &[("mode", "DEV")]),
            batch("2025-01-01", State::Finished, &[("mode", "DEV")]),
            batch("2025-01-02", State::Interrupted, &[("mode", "DEV")]),
        ];
        let shown = |days: &[Day]| -> Vec<String> {
            days.iter()
                .map(|d| format!("{} {}", d.dt, d.batch.as_ref().map(|b| b.state.word()).unwrap_or("-")))
                .collect()
        };
        assert_eq!(
            shown(&by_date(&b, None, None)),
            ["2025-01-01 finished", "2025-01-02 interrupted", "2025-01-03 -", "2025-01-04 failed"]
        );
        assert_eq!(shown(&by_date(&b, Some("2024-12-31"), Some("2025-01-05"))).first().unwrap(), "2024-12-31 -");
        assert_eq!(by_date(&b, Some("2024-12-31"), Some("2025-01-05")).len(), 6);
        // By its own dtf; an hour is listed without gaps around it.
        let odd = [
            batch("20250103", State::Finished, &[("dtf", "%Y%m%d")]),
            batch("2025-01-01", State::Finished, &[]),
            batch("hour-7", State::Dead, &[]),
        ];
        assert_eq!(
            shown(&by_date(&odd, None, None)),
            ["2025-01-01 finished", "2025-01-02 -", "20250103 finished", "hour-7 dead"]
        );
    }
}
