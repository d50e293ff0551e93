//! The dashboard's views. A leaf: the key table says per view which keys
//! work, and the state and the drawing switch on it.

/// The views.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Batches,
    Runs,
    Doctor,
    /// One task's batches by date, the days with none as gaps (`h`).
    History,
}

impl View {
    pub const ALL: [View; 4] = [View::Batches, View::Runs, View::Doctor, View::History];

    /// The view's tab in the header, and its name in the help: `2 runs`.
    pub fn title(self) -> &'static str {
        match self {
            View::Batches => "1 batches",
            View::Runs => "2 runs",
            View::Doctor => "3 doctor",
            View::History => "4 history",
        }
    }

    /// Its place in [`View::ALL`] (and in the per-view selection).
    pub fn index(self) -> usize {
        match self {
            View::Batches => 0,
            View::Runs => 1,
            View::Doctor => 2,
            View::History => 3,
        }
    }
}
