//! `ubunye top`: the dashboard. It renders the library's state model and holds no lease logic.
