//! The store dashboard's keys and polls, state by state (no terminal).

use super::*;
use std::time::UNIX_EPOCH;
use ubunye::state::State;

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

fn batch(task: &str, k: &str, state: State) -> StoreBatch {
    StoreBatch {
        task: task.into(),
        key: k.into(),
        state,
        run_id: Some("aaaaaaaa-0000-4000-8000-000000000000".into()),
        age_secs: Some(5),
        ttl_secs: Some(120.0),
        claims: 0,
        url: format!("s3://b/uc/.ubunye/leases/{task}/{k}.json"),
        note: String::new(),
        record_status: None,
        lease_dead: None,
        variables: Some(format!("dt={k}")),
    }
}

fn phase(a: &StoreApp) -> Option<&Phase<Effect>> {
    a.popup.as_ref().map(|p| &p.phase)
}

fn app() -> StoreApp {
    let mut a = StoreApp::new("s3://b/uc", Duration::from_secs(2));
    a.looked(Ok(Polled {
        now: UNIX_EPOCH,
        batches: vec![
            batch("u/p/a", "0000000000000001", State::Finished),
            batch("u/p/a", "0000000000000002", State::Live),
            batch("u/p/b", "0000000000000003", State::Dead),
        ],
        read: 3,
    }));
    a
}

#[test]
fn read_only_the_takeover_key_is_neither_offered_nor_acted_on() {
    let mut a = app();
    a.read_only = true;
    a.selected = a.rows().iter().position(|r| r.state == State::Dead).unwrap();
    assert!(a.key(&key(KeyCode::Char('t'))).is_empty(), "no plan is read, nothing taken over");
    assert!(matches!(&a.popup, Some(p) if p.phase == Phase::Refused && p.lines[0].contains("--read-only")));
    assert!(!footer(Ctx::Main, true).iter().any(|(k, _)| *k == "t"));
    assert!(footer(Ctx::Main, false).iter().any(|(k, _)| *k == "t"));
}

#[test]
fn rows_are_most_severe_first_and_finished_ones_only_with_a() {
    let mut a = app();
    let keys = |a: &StoreApp| a.rows().iter().map(|b| b.key.clone()).collect::<Vec<_>>();
    assert_eq!(keys(&a), ["0000000000000003", "0000000000000002"]);
    a.key(&key(C('a')));
    assert_eq!(keys(&a), ["0000000000000003", "0000000000000002", "0000000000000001"]);
    a.key(&key(C('/')));
    for c in "live".chars() {
        a.key(&key(C(c)));
    }
    assert_eq!(keys(&a), ["0000000000000002"]);
    a.key(&key(Enter));
    assert_eq!(a.ctx(), Ctx::Main);
    // Esc clears the filter before it quits.
    assert!(a.key(&key(Esc)).is_empty());
    assert_eq!(a.rows().len(), 3);
    assert_eq!(a.key(&key(Esc)), [Effect::Quit(0)]);
}

#[test]
fn the_selected_batch_stays_selected_when_a_look_moves_it() {
    let mut a = app();
    a.key(&key(Down));
    assert_eq!(a.chosen().unwrap().1, "0000000000000002");
    // The dead batch is finished now: the live one moves up a row.
    a.looked(Ok(Polled {
        now: UNIX_EPOCH,
        batches: vec![
            batch("u/p/a", "0000000000000002", State::Live),
            batch("u/p/b", "0000000000000003", State::Finished),
        ],
        read: 1,
    }));
    assert_eq!((a.selected, a.chosen().unwrap().1.as_str()), (0, "0000000000000002"));
    // A failed look keeps what was shown, and says why.
    a.looked(Err("network".into()));
    assert_eq!((a.rows().len(), a.error.as_deref()), (1, Some("network")));
}

#[test]
fn a_takeover_shows_its_plan_answers_no_by_default_and_yes_only_when_asked() {
    let mut a = app();
    let (task, k) = a.chosen().unwrap();
    assert_eq!(a.key(&key(C('t'))), [Effect::Explain { task: task.clone(), key: k.clone(), plan: true }]);
    assert_eq!(phase(&a), Some(&Phase::Planning));
    a.explained(&task, &k, true, Ok(("the report".into(), Ok("the plan\nline 2".into()))));
    let asking = Phase::Asking { what: Effect::Takeover { task: task.clone(), key: k.clone() }, yes: false };
    assert_eq!(phase(&a), Some(&asking));
    assert!(a.popup.as_ref().unwrap().lines.ends_with(&["the plan".into(), "line 2".into()]));
    // Enter takes the highlighted answer: No.
    assert!(a.key(&key(Enter)).is_empty());
    assert!(a.popup.is_none());
    a.key(&key(C('t')));
    a.explained(&task, &k, true, Ok(("report".into(), Ok("plan".into()))));
    a.key(&key(Right));
    assert_eq!(a.key(&key(Enter)), [Effect::Takeover { task: task.clone(), key: k.clone() }]);
    assert_eq!(phase(&a), Some(&Phase::Running));
    // A takeover under way is not dismissed; its outcome is shown.
    a.key(&key(Esc));
    assert_eq!(phase(&a), Some(&Phase::Running));
    a.repaired(true, "took over".into());
    assert_eq!(phase(&a), Some(&Phase::Done { ok: true }));
    a.key(&key(Esc));
    assert!(a.popup.is_none());
    // y answers yes at once.
    a.key(&key(C('t')));
    a.explained(&task, &k, true, Ok(("report".into(), Ok("plan".into()))));
    assert_eq!(a.key(&key(C('y'))), [Effect::Takeover { task, key: k }]);
}

#[test]
fn a_takeover_that_does_not_apply_says_why_and_offers_nothing() {
    let mut a = app();
    a.key(&key(Down));
    let (task, k) = a.chosen().unwrap();
    a.key(&key(C('t')));
    a.explained(&task, &k, true, Ok(("plan".into(), Err("run aaaaaaaa holds it (live)".into()))));
    assert!(matches!(&a.popup, Some(p) if p.phase == Phase::Refused && p.lines[0].contains("holds it")));
    assert!(a.key(&key(C('y'))).is_empty(), "y does nothing on a refusal");
    a.key(&key(Esc));
    assert!(a.popup.is_none());
}

#[test]
fn every_key_of_the_table_is_in_the_help_and_the_footer_comes_from_it() {
    for ctx in [Ctx::Main, Ctx::Filter, Ctx::Popup, Ctx::Help] {
        for (shown, _) in footer(ctx, false) {
            assert!(KEYS.iter().any(|b| b.ctx == ctx && b.shown == shown));
        }
    }
    for b in KEYS {
        for c in b.keys {
            assert_eq!(lookup(b.ctx, &key(*c)), Some(b.act), "{:?} {c:?}", b.ctx);
        }
    }
}

/// The store's `/` filter is the use case dashboard's: `state:`, `task:`,
/// `dt:` and plain words.
#[test]
fn the_filter_reads_states_tasks_variables_and_words_as_the_use_cases_does() {
    let mut a = app();
    a.all = true;
    let keys = |a: &StoreApp| a.rows().iter().map(|b| b.key.clone()).collect::<Vec<_>>();
    for (filter, want) in [
        ("state:dead,live", vec!["0000000000000003", "0000000000000002"]),
        ("task:u/p/a", vec!["0000000000000002", "0000000000000001"]),
        ("dt:0000000000000001", vec!["0000000000000001"]),
        ("live", vec!["0000000000000002"]),
        ("state:deda", vec![]),
    ] {
        a.filter = filter.into();
        assert_eq!(keys(&a), want, "{filter}");
    }
}
