//! The censuses as Prometheus metrics, made with `prometheus-client`: its
//! OpenMetrics text, and without the `# EOF` line the Prometheus text format
//! (every metric here is a gauge, which the two write alike).

use prometheus_client::encoding::text::encode_registry;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

use ubunye::census::{Census, WAITING};
use ubunye::state::{Flag, State};

type Labels = Vec<(&'static str, String)>;
type Count = Family<Labels, Gauge>;
type Secs = Family<Labels, Gauge<f64, AtomicU64>>;

/// Which text to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `text/plain; version=0.0.4`.
    Prometheus,
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
}

impl Format {
    /// The HTTP `Content-Type` of the text.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// A label value escaped as the text formats ask (`\\`, `\"`, `\n`):
/// `prometheus-client` writes label values as they are given, and a path or
/// a run id read from a lease may hold any of the three.
fn esc(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// The text of the censuses, and what took `scan` to make them.
pub fn render(censuses: &[Census], format: Format, per_batch: bool) -> String {
    let mut reg = Registry::with_prefix("ubunye");
    let batches = Count::default();
    let flagged = Count::default();
    let heartbeat = Secs::default();
    let oldest = Secs::default();
    let findings = Count::default();
    let up = Count::default();
    let errors = Count::default();
    let duration = Secs::default();
    let lease_age = Secs::default();
    let lease_stalled = Count::default();
    for c in censuses {
        let uc = || vec![("use_case", esc(&c.use_case))];
        up.get_or_create(&uc()).set(i64::from(c.error.is_none()));
        errors.get_or_create(&uc()).set(c.scan_errors as i64);
        duration.get_or_create(&uc()).set(c.duration.as_secs_f64());
        for (task, t) in &c.tasks {
            let of = |k: &'static str, v: String| vec![("use_case", esc(&c.use_case)), ("task", esc(task)), (k, v)];
            for s in State::ALL {
                batches.get_or_create(&of("state", s.word().into())).set(t.states[s.rank()] as i64);
            }
            for f in Flag::ALL {
                let n = t.flags.get(&f).copied().unwrap_or(0);
                flagged.get_or_create(&of("flag", f.word().into())).set(n as i64);
            }
            if let Some(age) = t.max_heartbeat_age {
                let labels = vec![("use_case", esc(&c.use_case)), ("task", esc(task))];
                heartbeat.get_or_create(&labels).set(age.as_secs_f64());
            }
        }
        for s in WAITING {
            if let Some(age) = c.oldest.get(&s) {
                oldest
                    .get_or_create(&vec![("use_case", esc(&c.use_case)), ("state", s.word().into())])
                    .set(age.as_secs_f64());
            }
        }
        for (kind, n) in &c.findings {
            findings.get_or_create(&vec![("use_case", esc(&c.use_case)), ("kind", kind.to_string())]).set(*n as i64);
        }
        for h in c.held.iter().filter(|_| per_batch) {
            let labels = vec![
                ("use_case", esc(&c.use_case)),
                ("task", esc(&h.task)),
                ("key", esc(&h.key)),
                ("run_id", esc(&h.run_id)),
            ];
            lease_age.get_or_create(&labels).set(h.heartbeat_age.as_secs_f64());
            lease_stalled.get_or_create(&labels).set(i64::from(h.stalled));
        }
    }
    reg.register("batches", "Batches of a task in each state (leases list's verdict)", batches);
    reg.register("batches_flagged", "Batches of a task with each flag (stalled: alive, heartbeat stopped)", flagged);
    reg.register(
        "lease_heartbeat_age_max_seconds",
        "The oldest heartbeat among a task's held leases: the lease file's age by the disk's clock",
        heartbeat,
    );
    reg.register(
        "oldest_lease_age_seconds",
        "Age of the oldest dead, kept, pending or orphaned lease of a use case (absent when there is none)",
        oldest,
    );
    reg.register("doctor_findings", "Doctor's findings by kind", findings);
    reg.register("use_case_up", "1 when the use case could be read, 0 when not", up);
    reg.register(
        "scan_errors",
        "What the scan could not read: the use case, folders that cannot be listed, unreadable leases",
        errors,
    );
    reg.register("scan_duration_seconds", "How long reading the use case took", duration);
    if per_batch {
        reg.register("lease_heartbeat_age_seconds", "A held lease's heartbeat age (--per-batch)", lease_age);
        reg.register("lease_stalled", "1 when a held lease's run is stalled (--per-batch)", lease_stalled);
    }
    let mut raw = String::new();
    // Writing to a String cannot fail.
    let _ = encode_registry(&mut raw, &reg);
    let mut text = in_order(&raw);
    if format == Format::OpenMetrics {
        text.push_str("# EOF\n");
    }
    text
}

/// The text with each family's samples in order (by use case, then task,
/// then the rest of their labels): a family keeps its series in a hash map,
/// and a text read by people, or compared from one run to the next, wants
/// them in one order.
fn in_order(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut samples: Vec<&str> = Vec::new();
    let flush = |samples: &mut Vec<&str>, out: &mut String| {
        samples.sort_unstable();
        for s in samples.drain(..) {
            out.push_str(s);
            out.push('\n');
        }
    };
    for line in text.lines() {
        if line.starts_with('#') {
            flush(&mut samples, &mut out);
            out.push_str(line);
            out.push('\n');
        } else {
            samples.push(line);
        }
    }
    flush(&mut samples, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped_so_none_can_end_its_own_quote() {
        assert_eq!(esc("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        let c = ubunye::census::Census {
            use_case: "/x\"} 0\nforged{a=\"b".into(),
            error: Some("gone".into()),
            ..Default::default()
        };
        let text = render(&[c], Format::Prometheus, false);
        assert!(!text.lines().any(|l| l.starts_with("forged")), "{text}");
        assert!(text.contains("use_case=\"/x\\\"} 0\\nforged{a=\\\"b\""), "{text}");
    }

    #[test]
    fn each_familys_samples_come_in_order() {
        let raw = "# HELP a A.\n# TYPE a gauge\na{x=\"2\"} 1\na{x=\"1\"} 2\n# HELP b B.\n# TYPE b gauge\nb 3\n";
        let want = "# HELP a A.\n# TYPE a gauge\na{x=\"1\"} 2\na{x=\"2\"} 1\n# HELP b B.\n# TYPE b gauge\nb 3\n";
        assert_eq!(in_order(raw), want);
    }
}
