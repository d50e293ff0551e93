//! A batch's finished note as every reader reads it (FORMAT.md §8): the
//! finished check before a run, the state model and explain, in both
//! stores. A note that cannot be read, is not JSON or is empty stops a run
//! (never judged either way); a note that lists no outputs finishes nothing a
//! run is refused for; one that lists outputs refuses a run unless it
//! replaces the batch (`--rerun`).

use crate::documents::{self, Finished, Parsed};

/// The note `bytes`, read: the note, or why it cannot be read.
pub fn parse(bytes: &[u8]) -> Result<Finished, String> {
    let doc = match documents::parse_doc(bytes).map_err(|d| d.to_string())? {
        Parsed::Doc(m) if !m.is_empty() => m,
        _ => return Err("not valid JSON (a note is written in one replace, so something else changed it)".into()),
    };
    let note = Finished { doc };
    note.outputs().map_err(|d| d.to_string())?;
    Ok(note)
}

/// Whether `note` refuses a run of its batch (without `--rerun`): it lists
/// an output, as the peer checks (`if not last.get("outputs")`).
pub fn refuses(note: &Finished) -> bool {
    note.has_outputs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_note_that_lists_outputs_refuses_and_a_damaged_one_is_never_judged() {
        let listed = parse(br#"{"run_id": "r", "outputs": {"ev": {"claimed": ["a"]}}}"#).unwrap();
        assert!(refuses(&listed));
        assert!(!refuses(&parse(br#"{"run_id": "r"}"#).unwrap()));
        assert!(!refuses(&parse(br#"{"run_id": "r", "outputs": {}}"#).unwrap()));
        for bad in [&b"{}"[..], b"[]", b"{\"run_id\": \"r\", \"outp", br#"{"outputs": {"ev": {"claimed": [1]}}}"#] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
