//! Where the dashboard's data comes from: a folder, or an object store.

use std::path::PathBuf;

use ubunye::state::{self, Scan, ScanOptions};
use ubunye::sys::Sys;

use crate::top::store::Store;

/// Where the data comes from, and the machine that judges it.
#[derive(Clone, Debug)]
pub struct Source {
    /// The use-case folder as given (`-d`); a store's URL.
    pub uc: PathBuf,
    pub opts: ScanOptions,
    pub sys: Sys,
    /// The use case is in an object store: read by its looks, never from
    /// disk, and judged by its clock at each look.
    pub store: Option<Store>,
}

impl Source {
    /// The use case in the folder `uc`.
    pub fn disk(uc: PathBuf, opts: ScanOptions, sys: Sys) -> Source {
        Source { uc, opts, sys, store: None }
    }

    pub fn scan(&self) -> Result<Scan, String> {
        state::scan(&self.uc, &self.opts, &self.sys).map_err(|e| e.to_string())
    }
}
