//! The batch table's orders, sorted on packed integers: a comparator that
//! reaches into two batches for each of the 20 million comparisons of a
//! million rows missed the cache twice each (seconds a change at a million
//! batches). Each row gets one `u128` made of its ranks, sorted once; the
//! order is the one the comparators below define, exactly.

use ubunye::state::State;

use crate::top::model::BatchRef;

use super::SortBy;

/// A batch's key as an order-keeping integer: its first 8 bytes, big-endian
/// (a shorter key padded with zeros, which no key holds). Two keys with the
/// same first 8 bytes are told apart by the whole key ([`sort`]).
fn prefix(key: &str) -> u64 {
    let mut b = [0u8; 8];
    let k = key.as_bytes();
    let n = k.len().min(8);
    b[..n].copy_from_slice(&k[..n]);
    u64::from_be_bytes(b)
}

/// A state's rank in the states' own order.
fn state_rank(s: State) -> u128 {
    State::ALL.iter().filter(|o| **o < s).count() as u128
}

/// `rows` (positions: `at(i)` is batch `i`) in the order `by`, as the comparators
/// say: severity is state, then task, then key; task is task, then key; age
/// is the lease's age, oldest first, then severity; claims is the count of
/// claimed files, most first, then severity.
/// `task(i)` is batch `i`'s task's rank among the task names (the model
/// numbers its tasks: no row's task name is read).
pub(super) fn sort<'a>(
    at: impl Fn(usize) -> BatchRef<'a>,
    len: usize,
    rows: &mut Vec<usize>,
    by: SortBy,
    task: impl Fn(usize) -> u32,
    tasks: usize,
) {
    // A position must fit the packed integer's low 32 bits, a task rank 24.
    if len > u32::MAX as usize || tasks >= 1 << 24 {
        return slow(at, rows, by);
    }
    // Task then key (with the state above them for severity).
    let state = |b: &BatchRef| if by == SortBy::Task { 0 } else { state_rank(b.state()) };
    let mut packed: Vec<u128> = rows
        .iter()
        .map(|&i| {
            let b = at(i);
            state(&b) << 120 | u128::from(task(i) & 0xff_ffff) << 96 | u128::from(prefix(b.key())) << 32 | i as u128
        })
        .collect();
    // Not held beside the sort's own scratch (memory at a million rows).
    *rows = Vec::new();
    // Stable and adaptive: rows given nearly in order (the last order, after
    // a change of a few) are sorted in about one pass. Every packed integer
    // differs (the position is in it), so it is the same order either way.
    packed.sort();
    // Keys that share their first 8 bytes: by the whole key.
    let row = |p: &u128| (*p as u32) as usize;
    let mut from = 0;
    while from < packed.len() {
        let mut end = from + 1;
        while end < packed.len() && packed[end] >> 32 == packed[from] >> 32 {
            end += 1;
        }
        if end - from > 1 {
            packed[from..end].sort_unstable_by(|x, y| at(row(x)).key().cmp(at(row(y)).key()));
        }
        from = end;
    }
    rows.extend(packed.iter().map(row));
    if matches!(by, SortBy::Severity | SortBy::Task) {
        return;
    }
    // Then by the first measure, severity's place breaking ties.
    let first = |b: BatchRef| -> u64 {
        match by {
            SortBy::Age => {
                age(b).map_or(u64::MAX, |a| u64::MAX - 1 - (a.as_nanos().min(u128::from(u64::MAX - 1)) as u64))
            }
            _ => u64::MAX - b.claim_count() as u64,
        }
    };
    let mut packed: Vec<u128> =
        rows.iter().enumerate().map(|(place, &i)| u128::from(first(at(i))) << 64 | place as u128).collect();
    packed.sort();
    let placed = std::mem::take(rows);
    rows.extend(packed.iter().map(|p| placed[(*p as u64) as usize]));
}

fn age(b: BatchRef) -> Option<std::time::Duration> {
    b.lease().and_then(|l| l.holder.judgement.as_ref()).and_then(|j| j.age).map(|a| a.age)
}

/// The comparators themselves: for more rows than a `u32` counts.
pub(super) fn slow<'a>(at: impl Fn(usize) -> BatchRef<'a>, rows: &mut [usize], by: SortBy) {
    let severity = |a: BatchRef, b: BatchRef| {
        a.state().cmp(&b.state()).then_with(|| a.task().cmp(b.task())).then_with(|| a.key().cmp(b.key()))
    };
    match by {
        SortBy::Severity => rows.sort_unstable_by(|&x, &y| severity(at(x), at(y))),
        SortBy::Task => rows.sort_unstable_by(|&x, &y| {
            let (a, b) = (at(x), at(y));
            a.task().cmp(b.task()).then_with(|| a.key().cmp(b.key()))
        }),
        SortBy::Age => rows.sort_unstable_by(|&x, &y| {
            let (a, b) = (at(x), at(y));
            age(b).cmp(&age(a)).then_with(|| severity(a, b))
        }),
        SortBy::Claims => rows.sort_unstable_by(|&x, &y| {
            let (a, b) = (at(x), at(y));
            b.claim_count().cmp(&a.claim_count()).then_with(|| severity(a, b))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ubunye::state::Batch;

    /// Random batches (keys sharing their first 8 bytes, odd keys, a few
    /// tasks, every state): the packed sort gives the comparators' order.
    #[test]
    fn the_packed_order_is_the_comparators_order() {
        let mut seed = 0x5eed_u64;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for round in 0..50 {
            let n = 1 + next(400) as usize;
            // A batch is one task and key: no two alike.
            let mut seen = std::collections::HashSet::new();
            let batches: Vec<Batch> = (0..n)
                .map(|_| {
                    let task = format!("demo/t{}", next(4));
                    let key = match next(5) {
                        0 => "????????????????".to_string(),
                        1 => format!("0123abcd{:08x}", next(4)),
                        2 => format!("{:x}", next(300)),
                        _ => format!("{:016x}", next(u64::MAX)),
                    };
                    let mut b = Batch::new(&task, &key);
                    b.state = State::ALL[next(State::ALL.len() as u64) as usize];
                    b
                })
                .filter(|b| seen.insert((b.task.clone(), b.key.clone())))
                .collect();
            let n = batches.len();
            for by in [SortBy::Severity, SortBy::Task, SortBy::Age, SortBy::Claims] {
                let all: Vec<usize> = (0..n).filter(|_| next(4) != 0).collect();
                let (mut fast, mut want) = (all.clone(), all);
                let mut names: Vec<&str> = batches.iter().map(|b| b.task.as_str()).collect();
                names.sort_unstable();
                names.dedup();
                let rank = |i: usize| names.binary_search(&batches[i].task.as_str()).unwrap() as u32;
                let at = |i: usize| BatchRef::Whole { batch: &batches[i], vars: None };
                sort(at, n, &mut fast, by, rank, names.len());
                slow(at, &mut want, by);
                let shown = |rows: &[usize]| -> Vec<(State, String, String)> {
                    rows.iter().map(|&i| (batches[i].state, batches[i].task.clone(), batches[i].key.clone())).collect()
                };
                assert_eq!(shown(&fast), shown(&want), "round {round}, {by:?}");
            }
        }
    }

    #[test]
    fn a_prefix_keeps_the_order_of_keys() {
        let keys =
            ["", "0", "00000000", "0000000000000000", "01", "7d106ca7", "????????????????", "a", "ff", "ffffffffff"];
        for w in keys.windows(2) {
            assert!(prefix(w[0]) <= prefix(w[1]), "{w:?}");
        }
    }
}
