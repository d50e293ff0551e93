//! The use case dashboard over a store in memory (S3's rules on a fake
//! clock), without a terminal or a server: its looks made by the library's
//! `Poller`, its effects carried out as the loop carries them out
//! (`top::workers`, `top::repair::carry_out`, the takeover in this
//! process). tui/tests/all/top_store.rs and top_store_edges.rs drive it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use ubunye::bucket::{Acquire, Holder, Lease, Memory, Objects, Place, StoreUrl, acquire};
use ubunye::layout::TaskPath;
use ubunye::state::ScanOptions;
use ubunye::sys::Sys;
use ubunye_testkit::{ELSEWHERE, FakeClock, fake_sys};
use ubunye_tui::top::app::{App, Effect};
use ubunye_tui::top::event::Event;
use ubunye_tui::top::model::{Model, Source};
use ubunye_tui::top::store::Store;
use ubunye_tui::top::{repair, workers};

use super::dash::{events_of, press};

pub const DEAD: &str = "00000000000000d1";
pub const LIVE: &str = "00000000000000a2";
pub const BAD: &str = "00000000000000b3";

pub struct World {
    pub clock: Arc<FakeClock>,
    pub mem: Arc<Memory>,
    pub app: App,
    /// The first read was made.
    read: bool,
}

pub fn url() -> StoreUrl {
    StoreUrl::parse("s3://bkt/uc").unwrap()
}

pub fn place(key: &str) -> Place {
    Place { uc: url(), task: TaskPath::parse("demo/sales/ingest").unwrap(), key: key.into() }
}

pub fn hold(w: &World, key: &str, run: &str) -> Arc<Lease> {
    let h = Holder { run_id: run.into(), host: "h".into(), pid: 7, rerun: false, actor: None };
    let sys = &w.app.model.src.sys;
    match acquire(w.mem.clone(), &place(key), &h, w.clock.clone(), &sys.timing).unwrap() {
        Acquire::Held(l, _) => l,
        _ => panic!("{key}: not held"),
    }
}

/// A dead lease (its run had claimed `claims` objects, none completed), a
/// live one, one that cannot be read; the dashboard not yet read. The dead
/// lease and the live one.
pub fn world(claims: usize) -> (World, Arc<Lease>, Arc<Lease>) {
    let (sys, clock, _) = fake_sys(ELSEWHERE, UNIX_EPOCH + Duration::from_secs(1_780_000_000));
    let mem = Arc::new(Memory::new("bkt", clock.clone()));
    let sys = Sys { clock: clock.clone(), ..sys };
    let root = PathBuf::from(url().to_string());
    // The takeover in this process: this one is no `ubunye` to start apart.
    let store = Store::new(url(), mem.clone(), false);
    let src = Source { uc: root.clone(), opts: ScanOptions::default(), sys: sys.clone(), store: Some(store) };
    let empty = ubunye_tui::top::empty(&root, &ubunye::layout::lineage_root(&root), &sys);
    let app = App::new(Model::new(src, empty), false, "poll 2s (store)");
    let w = World { clock, mem, app, read: false };
    let dead = hold(&w, DEAD, "dddddddd-0000-4000-8000-000000000001");
    if claims > 0 {
        dead.save(|d| {
            let claimed: Vec<String> = (0..claims)
                .map(|i| format!("s3://bkt/lake/ev/dddddddd-0000-4000-8000-000000000001-part-{i}.csv"))
                .collect();
            let note = serde_json::json!({"appends": true, "exact": true, "state": "writing", "url": "s3://bkt/lake/ev", "claimed": claimed});
            d.outputs_mut().insert("ev".into(), note);
        })
        .unwrap();
    }
    w.clock.advance(w.app.model.src.sys.timing.heartbeat_timeout + Duration::from_secs(60));
    let live = hold(&w, LIVE, "aaaaaaaa-0000-4000-8000-000000000002");
    w.mem.put(&format!("uc/.ubunye/leases/demo/sales/ingest/{BAD}.json"), b"{\"run_id\": ".to_vec()).unwrap();
    (w, dead, live)
}

impl World {
    /// A look (the first read, or a poll), as the loop reads it.
    pub fn look(&mut self) {
        let effects = if !self.read {
            self.read = true;
            self.app.start_loading();
            vec![Effect::FullScan]
        } else {
            self.app.handle(Event::Poll)
        };
        for e in effects {
            let events = events_of(&self.app, &e);
            assert!(!events.is_empty(), "{e:?}");
            let more = self.app.handle_all(events);
            self.carry_out(&more);
        }
    }

    /// Press keys, and carry out what they ask as the loop would.
    pub fn press(&mut self, keys: &str) -> Vec<Effect> {
        let effects = press(&mut self.app, keys);
        self.carry_out(&effects);
        effects
    }

    /// The event an effect brings back, made now (not handed to the app).
    pub fn result_of(&self, e: &Effect) -> Option<Event> {
        let src = self.app.model.src.clone();
        Some(match e {
            Effect::Explain(id) => workers::explain(&src, id.clone()),
            Effect::Plan { kind, ids } => workers::plan(&src, &self.app.model.scan.root.clone(), *kind, ids.clone()),
            Effect::Examine => workers::examine(&src),
            Effect::Repair(plan) => Event::Repaired(Box::new(repair::carry_out(&src, (**plan).clone()))),
            _ => return None,
        })
    }

    /// Carry out what the app asked, as the loop would, and what that asks.
    pub fn carry_out(&mut self, effects: &[Effect]) {
        for e in effects {
            if let Effect::FullScan = e {
                let more = self.app.handle_all(events_of(&self.app, e));
                self.carry_out(&more);
                continue;
            }
            if let Some(ev) = self.result_of(e) {
                let more = self.app.handle(ev);
                self.carry_out(&more);
            }
        }
    }

    pub fn tick(&mut self) {
        let more = self.app.handle(Event::Tick);
        self.carry_out(&more);
    }

    /// The selected batch's key.
    pub fn chosen(&self) -> String {
        self.app.selected_batch().unwrap().key().to_string()
    }
}
