//! `ubunye killtest --example`: seed 004's three ways of one small job,
//! each kill tested, side by side. The job writes ten items, each in four
//! slow chunks, so that kills land inside its writes:
//! - naive: re-does every item on every run and writes in place, a file per
//!   item and run (as a Spark append does), run alone;
//! - skip-if-exists: skips an item whose file exists, writes in place, run
//!   alone;
//! - the naive job again, under `ubunye exec`, writing into $UBUNYE_OUT_EVENTS.

use std::ffi::OsString;
use std::path::Path;

use super::rounds::How;
use super::{KilltestArgs, outcome, report, setup};
use crate::cli::{exit, outln, say_err};

/// The job: `sh job.sh naive|skip`, writing into $UBUNYE_OUT_EVENTS.
const JOB: &str = r#"#!/bin/sh
# seed 004's job: ten items, each written in four slow chunks.
mode=$1
mkdir -p "$UBUNYE_OUT_EVENTS"
i=1
while [ "$i" -le 10 ]; do
  if [ "$mode" = skip ]; then
    f="$UBUNYE_OUT_EVENTS/item-$i.txt"
    if [ -e "$f" ]; then i=$((i + 1)); continue; fi
  else
    f="$UBUNYE_OUT_EVENTS/item-$i-$UBUNYE_RUN_ID.txt"
  fi
  : > "$f"
  for c in 1 2 3 4; do
    printf 'item %s, chunk %s: %s\n' "$i" "$c" "the same bytes on every run of this item, so that a verifier can tell" >> "$f"
    sleep 0.005
  done
  i=$((i + 1))
done
"#;

pub fn run(a: &KilltestArgs) -> i32 {
    let kills = a.kills_or(10);
    let seed = a.seed.unwrap_or(1);
    let short = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let root = std::env::temp_dir().join(format!("ubunye-killtest-example-{short}"));
    let uc = root.join("uc");
    let job = root.join("job.sh");
    if let Err(e) = std::fs::create_dir_all(&uc).and_then(|_| std::fs::write(&job, JOB)) {
        say_err(&format!("cannot make the example's folder {}: {e}", root.display()));
        return exit::USAGE;
    }
    let modes = [
        ("naive, in place", How::Bare, "naive"),
        ("skip-if-exists, in place", How::Bare, "skip"),
        ("naive, under ubunye exec", How::Exec, "naive"),
    ];
    if !a.json {
        outln(&format!(
            "seed 004's example: one job of 10 items, each written in 4 slow chunks; {kills} kills at random moments (seed {seed}), then one clean run and one rerun, three ways"
        ));
    }
    super::procs::become_subreaper();
    let stop = super::procs::Stop::on_signals();
    let mut rows = Vec::new();
    let mut json = Vec::new();
    let mut exec_passed = false;
    for (i, (label, how, mode)) in modes.iter().enumerate() {
        let args = KilltestArgs {
            kills: Some(kills),
            seed: Some(seed),
            batches: Vec::new(),
            sandbox: Some(root.join(format!("sandbox-{}", i + 1))),
            copies: Vec::new(),
            compare: None,
            bare: *how == How::Bare,
            keep: false,
            json: false,
            example: false,
            exec: exec_args(&uc, &job, mode),
        };
        let s = match setup(&args, *how) {
            Ok(s) => s,
            Err(why) => {
                say_err(&why);
                return exit::USAGE;
            }
        };
        let bar = super::bar(kills, a.json);
        let o = match outcome(&s, kills, seed, None, &bar, &stop) {
            Ok(o) => o,
            Err(code) => return code,
        };
        bar.0.finish_and_clear();
        let causes = report::causes(&o);
        let verdict = if causes.is_empty() { "PASS" } else { "FAIL" };
        if *how == How::Exec {
            exec_passed = causes.is_empty();
        }
        let figures = o.rows.first().map(report::figures).unwrap_or_default();
        rows.push((label.to_string(), figures, verdict, causes.first().cloned()));
        json.push(serde_json::json!({"mode": label, "verdict": verdict, "outcome": o, "causes": causes}));
    }
    if a.json {
        crate::cli::print_json(&serde_json::json!({"seed": seed, "kills": kills, "modes": json}));
    } else {
        let table: Vec<(String, [Option<usize>; 6])> = rows.iter().map(|(l, f, _, _)| (l.clone(), *f)).collect();
        let text = report::table("mode", &table);
        let mut lines = text.lines();
        outln(&format!("{}  verdict", lines.next().unwrap_or_default()));
        for (line, (_, _, verdict, _)) in lines.zip(&rows) {
            outln(&format!("{line}  {verdict}"));
        }
        for (label, _, _, cause) in &rows {
            if let Some(c) = cause {
                outln(&format!("- {label}: {c}"));
            }
        }
        outln(&format!(
            "under ubunye exec: {}",
            if exec_passed { "PASS" } else { "FAIL (it should not: please report it)" }
        ));
    }
    if !a.keep {
        let _ = std::fs::remove_dir_all(&root);
    }
    if exec_passed { exit::OK } else { exit::REFUSED }
}

fn exec_args(uc: &Path, job: &Path, mode: &str) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec!["-d".into(), uc.into()];
    v.extend(
        ["--task", "demo/example/items", "--dt", "2025-01-01", "--append", "events=out/events", "--", "sh"]
            .map(OsString::from),
    );
    v.push(job.into());
    v.push(mode.into());
    v
}
