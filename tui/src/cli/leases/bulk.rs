//! `ubunye leases takeover|finish --state S [--task T] [--dt ..] [--var ..]`:
//! one plan for every batch the filter names, asked once (default No), then
//! each batch re-checked by the engine as it is acted on, one audit line
//! each. A bulk repair killed midway leaves each batch as a single repair
//! would: done, or still to repair.

use super::repair::{Kind, REPAIRABLE, RepairArgs, ask, can_ask, render_plan};
use super::{Purpose, locate};
use crate::cli::{exit, say_err};
use ubunye::repair::{self, RepairPlan};
use ubunye::state::{self, ScanOptions, State};

/// A batch the filter named that the repair does not apply to, and why.
#[derive(serde::Serialize)]
struct Skipped {
    task: String,
    key: String,
    state: State,
    why: String,
}

/// What a bulk repair did, for `--json`.
#[derive(serde::Serialize)]
struct Report {
    planned: Vec<RepairPlan>,
    skipped: Vec<Skipped>,
    done: Vec<repair::RepairOutcome>,
    failed: Vec<Skipped>,
}

pub fn run(a: &RepairArgs, kind: Kind) -> i32 {
    let sys = crate::console::machine::sys_for(&a.which.dir.dir);
    let vars = match a.filter.filter() {
        Ok(f) => f,
        Err(why) => {
            say_err(&why);
            return exit::USAGE;
        }
    };
    let mut states: Vec<State> = a.states.iter().filter_map(|w| State::parse(w)).collect();
    if states.is_empty() {
        states = REPAIRABLE.to_vec();
    }
    let opts = ScanOptions {
        lineage_dir: a.which.lineage.lineage_dir.clone(),
        task_glob: a.which.task.clone(),
        ..ScanOptions::default()
    };
    let mut named = Vec::new();
    let head = state::scan_tasks(&a.which.dir.dir, &opts, &sys, |_, batches| {
        named.extend(batches.into_iter().filter(|b| states.contains(&b.state) && vars.matches(b.variables.as_ref())));
    });
    let scan = match head {
        Ok(h) => h.into_scan(),
        Err(e) => {
            say_err(&e.to_string());
            return exit::USAGE;
        }
    };
    let (mut planned, mut skipped) = (Vec::new(), Vec::new());
    for b in named {
        let (task, key, st) = (b.task.clone(), b.key.clone(), b.state);
        let e = ubunye::explain::explain(&scan, b);
        match repair::check(kind, &e) {
            Ok(p) => planned.push(p),
            Err(why) => skipped.push(Skipped { task, key, state: st, why }),
        }
    }
    let mut report = Report { planned, skipped, done: Vec::new(), failed: Vec::new() };
    if !a.json {
        let mut text = String::new();
        for p in &report.planned {
            text.push_str(&render_plan(p));
        }
        for s in &report.skipped {
            text.push_str(&format!("skip {} {} ({}): {}\n", s.task, s.key, s.state.word(), s.why));
        }
        text.push_str(&format!(
            "{} batch(es) to {}, {} skipped.\n",
            report.planned.len(),
            kind.command().trim_start_matches("ubunye leases "),
            report.skipped.len()
        ));
        crate::cli::out(&text);
    }
    if report.planned.is_empty() || a.dry_run {
        if a.json {
            crate::cli::print_json(&report);
        } else if a.dry_run {
            crate::cli::outln("(--dry-run: nothing was changed)");
        }
        return if report.planned.is_empty() && !report.skipped.is_empty() { exit::REFUSED } else { exit::OK };
    }
    if !a.yes {
        if let Err(code) = can_ask(a) {
            return code;
        }
        if !ask(&format!("Go ahead with all {}?", report.planned.len())) {
            crate::cli::outln("Nothing was done.");
            return exit::REFUSED;
        }
    }
    let n = report.planned.len();
    for (i, plan) in std::mem::take(&mut report.planned).into_iter().enumerate() {
        let at = format!("[{}/{n}] {} {}", i + 1, plan.task, &plan.key[..8.min(plan.key.len())]);
        if plan.state != State::Orphan {
            say_err(&format!(
                "{at}: waiting {} for {} to write its lease again (a live run is left alone)…",
                humantime::format_duration(sys.timing.settle),
                plan.holder
                    .as_deref()
                    .filter(|r| !r.is_empty())
                    .map(ubunye::documents::short)
                    .map(|r| format!("run {r}"))
                    .unwrap_or_else(|| "its run".into())
            ));
        }
        // Each batch is looked at again as it is acted on, and the engine
        // re-checks it: what changed since the plan is left alone.
        let outcome = locate(&a.which.dir, &a.which.lineage, &plan.key, Some(&plan.task), Purpose::Repair, &sys)
            .and_then(|(_, current)| {
                repair::execute(&a.which.dir.dir, &plan, &current, a.which.lineage.lineage_dir.clone(), sys.clone())
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = repair::audit(&scan.root, &plan, &outcome, &sys) {
            say_err(&format!(
                "could not write the audit line to {}: {e}",
                scan.root.join(".ubunye/repairs.jsonl").display()
            ));
        }
        match outcome {
            Ok(o) => {
                if !a.json {
                    crate::cli::out(&format!("{at}: {}", crate::report::repair_outcome(&o)));
                }
                report.done.push(o);
            }
            Err(why) => {
                say_err(&format!("{at}: {why}"));
                report.failed.push(Skipped { task: plan.task.clone(), key: plan.key.clone(), state: plan.state, why });
            }
        }
        report.planned.push(plan);
    }
    if a.json {
        crate::cli::print_json(&report);
    }
    if report.failed.is_empty() { exit::OK } else { exit::REFUSED }
}
