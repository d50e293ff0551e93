//! The `/` filter: words that must all match. `state:dead` (or
//! `state:dead,orphan`) keeps those states, `task:demo` or `task:*/ingest`
//! those tasks (a prefix or a pattern, `ubunye::state::task_matches`, as
//! `leases list --task`), `dt:2025-01-04` or `dt:2025-01-01..2025-01-31` and
//! `var:mode=PROD` those variables (as `--dt` and `--var`); any other word
//! must appear (any case) in the task, key, variables, run, holder or note.

use ubunye::state::{State, VarFilter, task_matches};

use crate::top::model::BatchRef;

/// A parsed filter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// As typed.
    pub text: String,
    states: Vec<State>,
    tasks: Vec<String>,
    words: Vec<String>,
    /// `dt:` and `var:` words.
    vars: VarFilter,
    /// Words that name no state (`state:deda`), or a `dt:`/`var:` that
    /// cannot be read: shown, and nothing matches.
    pub unknown: Vec<String>,
}

impl Filter {
    pub fn parse(text: &str) -> Filter {
        let mut f = Filter { text: text.to_string(), ..Filter::default() };
        for word in text.split_whitespace() {
            if let Some(list) = word.strip_prefix("state:") {
                for w in list.split(',').filter(|w| !w.is_empty()) {
                    match State::parse(&w.to_ascii_lowercase()) {
                        Some(s) => f.states.push(s),
                        None => f.unknown.push(w.to_string()),
                    }
                }
            } else if let Some(t) = word.strip_prefix("task:") {
                f.tasks.push(t.to_string());
            } else if word.starts_with("dt:") || word.starts_with("var:") {
                if f.vars.add_word(word).is_err() {
                    f.unknown.push(word.to_string());
                }
            } else {
                f.words.push(word.to_lowercase());
            }
        }
        f
    }

    pub fn is_empty(&self) -> bool {
        self.text.trim().is_empty()
    }

    /// Whether a batch passes (`vars`: its variables as one line).
    pub fn matches(&self, b: BatchRef) -> bool {
        if !self.unknown.is_empty() {
            return false;
        }
        if !self.states.is_empty() && !self.states.contains(&b.state()) {
            return false;
        }
        if !self.tasks.is_empty() && !self.tasks.iter().any(|t| task_matches(t, b.task())) {
            return false;
        }
        if !self.vars.is_empty() {
            // The dashboard keeps a batch's variables as one line.
            let Some(line) = b.vars() else { return false };
            let value = |k: &str| {
                line.split(' ').find_map(|kv| kv.strip_prefix(k).and_then(|r| r.strip_prefix('='))).map(str::to_string)
            };
            if !self.vars.matches_by(value) {
                return false;
            }
        }
        if self.words.is_empty() {
            return true;
        }
        let holder = b.lease().map(|l| {
            format!(
                "{}@{}",
                l.holder.pid.map(|p| p.to_string()).unwrap_or_default(),
                l.holder.host.as_deref().unwrap_or_default()
            )
        });
        let (run, note) = (b.run_id(), b.note());
        let hay =
            [Some(b.task()), Some(b.key()), run.as_deref(), Some(&*note), Some(b.state().word()), holder.as_deref()];
        let vars = b.vars();
        self.words.iter().all(|w| {
            hay.iter().flatten().any(|h| h.to_lowercase().contains(w))
                || vars.is_some_and(|v| v.to_lowercase().contains(w))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_parsed() {
        let f = Filter::parse("state:dead,orphan task:demo/* 2025");
        assert_eq!(f.states, vec![State::Dead, State::Orphan]);
        assert_eq!(f.tasks, vec!["demo/*".to_string()]);
        assert_eq!(f.words, vec!["2025".to_string()]);
        assert!(Filter::parse("  ").is_empty());
        assert_eq!(Filter::parse("state:deda").unknown, vec!["deda".to_string()]);
        assert!(Filter::parse("dt:2025-01-01..2025-01-31 var:mode=DEV").unknown.is_empty());
        assert_eq!(Filter::parse("dt:2025-02..2025-01 var:x").unknown, vec!["dt:2025-02..2025-01", "var:x"]);
    }
}
