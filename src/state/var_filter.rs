//! Which batches a date or variables filter keeps: `--dt DATE|A..B` and
//! `--var K=V` on `leases list`, `runs` and `leases history`, and the
//! dashboard's `dt:` word. A batch's variables are its run records' (the
//! state model files them); a batch whose variables are not known is not
//! kept by any such filter.

use serde_json::{Map, Value};

/// A parsed filter on variables.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VarFilter {
    dt: Option<DtRange>,
    vars: Vec<(String, String)>,
}

/// What `--dt` keeps: one value, or a range of them.
#[derive(Clone, Debug, PartialEq, Eq)]
enum DtRange {
    /// `2025-01-04`: exactly this.
    Exact(String),
    /// `2025-01-01..2025-01-31`, `..2025-01-31`, `2025-01-01..`: both ends
    /// included, compared as text (as ISO dates and times sort).
    Range(Option<String>, Option<String>),
}

impl VarFilter {
    /// From `--dt` and each `--var K=V`: the line that says what is wrong
    /// with one of them.
    pub fn parse(dt: Option<&str>, vars: &[String]) -> Result<VarFilter, String> {
        let dt = match dt {
            None => None,
            Some(d) if d.trim().is_empty() => {
                return Err("--dt is empty: give a date (2025-01-04) or a range (2025-01-01..2025-01-31)".into());
            }
            Some(d) => Some(match d.split_once("..") {
                None => DtRange::Exact(d.to_string()),
                Some((lo, hi)) => {
                    let side = |s: &str| Some(s.to_string()).filter(|s| !s.is_empty());
                    let (lo, hi) = (side(lo), side(hi));
                    if lo.is_none() && hi.is_none() {
                        return Err(
                            "--dt .. names no date: give one end of the range or both (2025-01-01..2025-01-31)".into(),
                        );
                    }
                    if let (Some(a), Some(b)) = (&lo, &hi)
                        && a > b
                    {
                        return Err(format!("--dt {d}: the range ends before it starts: give the earlier date first"));
                    }
                    DtRange::Range(lo, hi)
                }
            }),
        };
        let vars = vars
            .iter()
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
                _ => Err(format!("--var {kv}: give it as name=value (--var region=eu)")),
            })
            .collect::<Result<_, _>>()?;
        Ok(VarFilter { dt, vars })
    }

    /// Whether it keeps every batch.
    pub fn is_empty(&self) -> bool {
        self.dt.is_none() && self.vars.is_empty()
    }

    /// Whether a batch with these variables passes.
    pub fn matches(&self, vars: Option<&Map<String, Value>>) -> bool {
        if self.is_empty() {
            return true;
        }
        let Some(vars) = vars else { return false };
        self.matches_by(|k| {
            vars.get(k).map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
        })
    }

    /// Whether a batch passes whose variable `k` reads as `text(k)` (the
    /// dashboard keeps a batch's variables as one line, `dt=… mode=…`).
    pub fn matches_by(&self, text: impl Fn(&str) -> Option<String>) -> bool {
        let dt_ok = match &self.dt {
            None => true,
            Some(DtRange::Exact(want)) => text("dt").is_some_and(|v| &v == want),
            Some(DtRange::Range(lo, hi)) => text("dt").is_some_and(|v| {
                lo.as_ref().is_none_or(|lo| v.as_str() >= lo.as_str())
                    && hi.as_ref().is_none_or(|hi| v.as_str() <= hi.as_str())
            }),
        };
        dt_ok && self.vars.iter().all(|(k, want)| text(k).is_some_and(|v| &v == want))
    }

    /// The same filter as the dashboard's `/` words: `dt:A..B`, `var:k=v`.
    pub fn add_word(&mut self, word: &str) -> Result<bool, String> {
        if let Some(d) = word.strip_prefix("dt:") {
            self.dt = VarFilter::parse(Some(d), &[])?.dt;
            return Ok(true);
        }
        if let Some(kv) = word.strip_prefix("var:") {
            self.vars.extend(VarFilter::parse(None, &[kv.to_string()])?.vars);
            return Ok(true);
        }
        Ok(false)
    }

    /// The filter as it was given, for a line that says what matched nothing.
    pub fn words(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .dt
            .iter()
            .map(|d| match d {
                DtRange::Exact(x) => format!("--dt {x}"),
                DtRange::Range(lo, hi) => {
                    format!("--dt {}..{}", lo.as_deref().unwrap_or_default(), hi.as_deref().unwrap_or_default())
                }
            })
            .collect();
        out.extend(self.vars.iter().map(|(k, v)| format!("--var {k}={v}")));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(dt: &str, mode: &str) -> Map<String, Value> {
        serde_json::from_value(serde_json::json!({"dt": dt, "mode": mode})).unwrap()
    }

    #[test]
    fn a_date_a_range_and_variables() {
        let f = |dt: Option<&str>, v: &[&str]| {
            VarFilter::parse(dt, &v.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
        };
        let jan4 = vars("2025-01-04", "DEV");
        assert!(f(None, &[]).matches(None), "no filter keeps what has no variables");
        assert!(!f(Some("2025-01-04"), &[]).matches(None));
        assert!(f(Some("2025-01-04"), &[]).matches(Some(&jan4)));
        assert!(!f(Some("2025-01"), &[]).matches(Some(&jan4)), "a date is exact, not a prefix");
        assert!(f(Some("2025-01-01..2025-01-04"), &[]).matches(Some(&jan4)), "both ends included");
        assert!(!f(Some("2025-01-05.."), &[]).matches(Some(&jan4)));
        assert!(f(Some("..2025-01-04"), &["mode=DEV"]).matches(Some(&jan4)));
        assert!(!f(None, &["mode=PROD"]).matches(Some(&jan4)));
        assert_eq!(f(Some("2025-01-01.."), &["mode=DEV"]).words(), ["--dt 2025-01-01..", "--var mode=DEV"]);
        for (dt, v) in [
            (Some(""), vec![]),
            (Some(".."), vec![]),
            (Some("2025-02-01..2025-01-01"), vec![]),
            (None, vec!["novalue".to_string()]),
        ] {
            assert!(VarFilter::parse(dt, &v).is_err(), "{dt:?} {v:?}");
        }
    }
}
