//! What a lease in a store claims, read strictly: each output note names its
//! output (`url`), its claimed objects (`claimed`, `s3://` URLs) and the ids
//! of their uploads (`uploads`, claim -> id). A recovery acts only on claims
//! that are in the store's bucket, under their output, outside the use
//! case's `.ubunye/`, and named as the run lands its files (its uuid, then
//! `-`). A lease that claims anything else, or whose `uploads` is not a map
//! of text to text, is damaged: never judged free or dead, never acted on.

use serde_json::Value;

use super::url::StoreUrl;
use crate::documents::LeaseDoc;

/// One output's claims, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputClaims {
    /// The output's name.
    pub name: String,
    /// The keys claimed, in the lease's order.
    pub keys: Vec<String>,
    /// The saved upload ids: (key, id).
    pub uploads: Vec<(String, String)>,
}

/// The key of a claim (`s3://bucket/key`) in `bucket`.
pub fn claim_key<'a>(bucket: &str, claim: &'a str) -> Option<&'a str> {
    claim.strip_prefix("s3://")?.strip_prefix(bucket)?.strip_prefix('/')
}

/// Whether `id` is a run id as runs make them: a uuid, hyphenated, lower case.
pub fn is_run_uuid(id: &str) -> bool {
    uuid::Uuid::parse_str(id).is_ok_and(|u| u.hyphenated().to_string() == id)
}

/// Whether `key` has the name a file of run `run_id` lands under: the run's
/// uuid after any leading `_` or `.`, then `-`.
pub fn is_landed_by(key: &str, run_id: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    let rest = name.trim_start_matches(['_', '.']);
    is_run_uuid(run_id) && rest.strip_prefix(run_id).is_some_and(|r| r.starts_with('-'))
}

/// The finished batch a `--rerun` replaces: its note as read, and what its
/// run claimed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replacing {
    /// The note's ETag: the new note replaces exactly this one.
    pub etag: String,
    /// The run that finished it.
    pub run_id: String,
    /// Its claimed files per output (`s3://` URLs), to remove after the commit.
    pub claimed: Vec<(String, Vec<String>)>,
}

/// The finished batch a note (`body`, its ETag `etag`) holds, for a
/// `--rerun` to replace: None when the note names no run or its outputs
/// cannot be read (it is refused as on any run), the damage when what it
/// claimed is not what a run landed.
pub fn replacing_of(body: &[u8], etag: &str, uc: &StoreUrl) -> Option<Result<Replacing, String>> {
    let Ok(crate::documents::Parsed::Doc(m)) = crate::documents::parse_doc(body) else { return None };
    let note = crate::documents::Finished { doc: m };
    let (Some(run), Ok(outputs)) = (note.run_id().map(str::to_string), note.outputs()) else { return None };
    let claimed: Vec<(String, Vec<String>)> = outputs.into_iter().map(|o| (o.name, o.claimed)).collect();
    let rep = Replacing { etag: etag.to_string(), run_id: run, claimed };
    // Checked as the lease will be.
    let mut probe = LeaseDoc::default();
    rep.write_into(&mut probe);
    Some(store_replaces(&probe, uc).map(|_| rep))
}

impl Replacing {
    /// Refuse a note whose files are not under this run's outputs of the
    /// same names (`outputs`: its `--append`s).
    pub fn check_against(&self, outputs: &[(String, StoreUrl)], uc: &StoreUrl) -> Result<(), String> {
        for (name, files) in self.claimed.iter().filter(|(_, f)| !f.is_empty()) {
            let Some((_, under)) = outputs.iter().find(|(n, _)| n == name) else {
                return Err(format!("claims files of the output '{name}', which this run does not write"));
            };
            for f in files {
                replaced_key(f, &self.run_id, uc, Some(under))?;
            }
        }
        Ok(())
    }

    /// Put what it replaces into a lease: `replaces` (output -> the finished
    /// run's claimed URLs) and `replaces_run`.
    pub fn write_into(&self, d: &mut LeaseDoc) {
        let files: serde_json::Map<String, Value> = self
            .claimed
            .iter()
            .map(|(n, c)| (n.clone(), Value::Array(c.iter().cloned().map(Value::String).collect())))
            .collect();
        d.set("replaces", Value::Object(files));
        d.set("replaces_run", Value::String(self.run_id.clone()));
    }
}

/// The keys a `--rerun` lease replaces (`replaces`: output -> the finished
/// run's claimed URLs, `replaces_run`: that run), checked as claims are:
/// each in the bucket, outside `.ubunye/`, named as that run lands its files.
pub fn store_replaces(doc: &LeaseDoc, uc: &StoreUrl) -> Result<Vec<String>, String> {
    let replaces = doc.replaces().map_err(|e| e.to_string())?;
    if replaces.iter().all(|(_, files)| files.is_empty()) {
        return Ok(Vec::new());
    }
    let run = doc.0.get("replaces_run").and_then(Value::as_str).unwrap_or_default();
    let probe = doc.0.get("outputs").is_none();
    let mut keys = Vec::new();
    for (name, files) in replaces {
        // Under this run's own output of the same name: a note
        // cannot make a rerun delete another output's, or use case's, files.
        let under = match doc.0.get("outputs").and_then(|o| o.get(&name)).and_then(|n| n.get("url")) {
            Some(Value::String(u)) => Some(StoreUrl::parse(u).map_err(|e| format!("outputs.{name}.url {u} {e}"))?),
            _ if probe => None,
            _ => return Err(format!("replaces files of the output '{name}', which this run does not write")),
        };
        for f in files {
            keys.push(replaced_key(&f, run, uc, under.as_ref())?);
        }
    }
    Ok(keys)
}

/// A file a rerun replaces, checked: in the bucket, outside `.ubunye/`,
/// under `under` (the output it is replaced in) when given, named as `run`
/// lands its files.
fn replaced_key(f: &str, run: &str, uc: &StoreUrl, under: Option<&StoreUrl>) -> Result<String, String> {
    let state = StoreUrl { bucket: uc.bucket.clone(), prefix: uc.key(".ubunye") };
    let key = claim_key(&uc.bucket, f).ok_or_else(|| format!("replaces {f}, which is not in s3://{}", uc.bucket))?;
    if let Some(u) = under.filter(|u| !u.holds(key) || key == u.prefix) {
        return Err(format!("replaces {f}, which is not under its output {u}"));
    }
    if state.holds(key) || !is_landed_by(key, run) {
        return Err(format!("replaces {f}, which is not a file run '{run}' landed"));
    }
    Ok(key.to_string())
}

/// The claims of `doc` (a lease in `uc`'s bucket), checked; the damage in
/// words when any is not what a run of this engine writes.
pub fn store_claims(doc: &LeaseDoc, uc: &StoreUrl) -> Result<Vec<OutputClaims>, String> {
    let notes = doc.notes().map_err(|e| e.to_string())?;
    let run_id = doc.run_id();
    let state = StoreUrl { bucket: uc.bucket.clone(), prefix: uc.key(".ubunye") };
    let raw = match doc.0.get("outputs") {
        Some(Value::Object(m)) => m.clone(),
        _ => Default::default(),
    };
    let mut out = Vec::new();
    for n in notes {
        let note = raw.get(&n.name).and_then(Value::as_object).cloned().unwrap_or_default();
        let uploads: Vec<(String, String)> = match note.get("uploads") {
            None => Vec::new(),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(c, id)| match id {
                    Value::String(id) => Ok((c.clone(), id.clone())),
                    _ => Err(format!("outputs.{}.uploads.{c} is not an upload id (text)", n.name)),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(format!("outputs.{}.uploads is not a map of claims to upload ids", n.name)),
        };
        if n.claimed.is_empty() && uploads.is_empty() {
            out.push(OutputClaims { name: n.name, keys: Vec::new(), uploads: Vec::new() });
            continue;
        }
        let url = match note.get("url") {
            Some(Value::String(u)) => StoreUrl::parse(u).map_err(|e| format!("outputs.{}.url {u} {e}", n.name))?,
            _ => return Err(format!("outputs.{} claims objects but names no output (url)", n.name)),
        };
        if url.bucket != uc.bucket || url.prefix.is_empty() || state.holds(&url.prefix) {
            return Err(format!("outputs.{}.url {url} is not an output of this use case's bucket", n.name));
        }
        let check = |claim: &str| -> Result<String, String> {
            let key = claim_key(&uc.bucket, claim)
                .ok_or_else(|| format!("the claim {claim} is not in s3://{}", uc.bucket))?;
            if !url.holds(key) || key == url.prefix || state.holds(key) {
                return Err(format!("the claim {claim} is not under its output {url}"));
            }
            if !is_landed_by(key, &run_id) {
                return Err(format!("the claim {claim} is not named as run {run_id} lands its files"));
            }
            Ok(key.to_string())
        };
        let keys = n.claimed.iter().map(|c| check(c)).collect::<Result<Vec<_>, _>>()?;
        let uploads = uploads
            .into_iter()
            .map(|(c, id)| {
                let key = check(&c)?;
                if !keys.contains(&key) {
                    return Err(format!("outputs.{}.uploads names {c}, which is not claimed", n.name));
                }
                Ok((key, id))
            })
            .collect::<Result<Vec<_>, String>>()?;
        out.push(OutputClaims { name: n.name, keys, uploads });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "a62c7fc5-98c2-4e9d-a076-52f9b61c4711";

    fn doc(outputs: serde_json::Value) -> LeaseDoc {
        LeaseDoc(serde_json::json!({"run_id": RUN, "outputs": outputs}).as_object().unwrap().clone())
    }

    #[test]
    fn only_a_name_landed_by_the_run_counts_as_its_own() {
        assert!(is_landed_by(&format!("lake/ev/k=1/{RUN}-part-0.csv"), RUN));
        assert!(is_landed_by(&format!("lake/ev/_{RUN}-meta"), RUN));
        assert!(!is_landed_by(&format!("lake/ev/x{RUN}-part-0.csv"), RUN), "the run id inside another name");
        assert!(!is_landed_by(&format!("lake/{RUN}-ev/part-0.csv"), RUN), "the run id in a folder");
        assert!(!is_landed_by("lake/ev/a62c7fc5-part.csv", "a62c7fc5"), "a piece of a uuid proves nothing");
        assert!(!is_landed_by(&format!("lake/ev/{}-x", RUN.to_uppercase()), &RUN.to_uppercase()));
        assert!(!is_landed_by("lake/ev/-x", ""));
    }

    #[test]
    fn claims_outside_their_output_or_badly_named_are_damage() {
        let uc = StoreUrl::parse("s3://bkt/uc").unwrap();
        let good = format!("s3://bkt/lake/ev/{RUN}-p.csv");
        let ok = store_claims(
            &doc(serde_json::json!({"ev": {"url": "s3://bkt/lake/ev", "claimed": [good], "uploads": {good.clone(): "u1"}}})),
            &uc,
        )
        .unwrap();
        assert_eq!(ok[0].keys, [format!("lake/ev/{RUN}-p.csv")]);
        assert_eq!(ok[0].uploads, [(format!("lake/ev/{RUN}-p.csv"), "u1".to_string())]);
        for (outputs, says) in [
            (serde_json::json!({"ev": {"claimed": [good]}}), "names no output"),
            (serde_json::json!({"ev": {"url": "s3://bkt/lake/other", "claimed": [good]}}), "not under its output"),
            (serde_json::json!({"ev": {"url": "s3://bkt/uc/.ubunye", "claimed": [good]}}), "not an output"),
            (
                serde_json::json!({"ev": {"url": "s3://bkt/lake", "claimed": ["s3://bkt/lake/ev/x-p.csv"]}}),
                "not named as run",
            ),
            (serde_json::json!({"ev": {"url": "s3://bkt/lake/ev", "claimed": [good], "uploads": ["u1"]}}), "not a map"),
            (
                serde_json::json!({"ev": {"url": "s3://bkt/lake/ev", "claimed": [good], "uploads": {good.clone(): 1}}}),
                "not an upload id",
            ),
            (
                serde_json::json!({"ev": {"url": "s3://bkt/lake/ev", "claimed": [], "uploads": {good.clone(): "u"}}}),
                "not claimed",
            ),
            (serde_json::json!({"ev": {"url": "s3://other/lake/ev", "claimed": [good]}}), "not an output"),
        ] {
            let e = store_claims(&doc(outputs.clone()), &uc).unwrap_err();
            assert!(e.contains(says), "{outputs}: {e}");
        }
    }
}
