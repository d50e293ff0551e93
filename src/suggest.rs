//! How a suggested command names a batch or a use case, so that it runs as
//! printed from any folder: a paged engineer pastes what the screen showed,
//! often from another shell. A batch is `<usecase>:<key>` (the use case's
//! resolved folder, the key's first 8 digits), a use case `-d <folder>`;
//! a folder the shell would split or expand is quoted.

use std::path::Path;

/// `/data/uc:f194d8cb`, as `explain`, `takeover` and `finish` take it.
pub fn batch(root: &Path, key: &str) -> String {
    let short = key.get(..8).unwrap_or(key);
    quote(&format!("{}:{short}", root.display()))
}

/// `-d /data/uc`, as every command takes it.
pub fn dir(root: &Path) -> String {
    format!("-d {}", quote(&root.display().to_string()))
}

/// The text as one shell word: as it is when it holds only characters no
/// shell treats specially, else in single quotes.
pub fn quote(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-:,+=@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_run_as_printed() {
        assert_eq!(batch(Path::new("/tmp/uc"), "f194d8cb66cd1d2f"), "/tmp/uc:f194d8cb");
        assert_eq!(batch(Path::new("/tmp/my uc"), "f194d8cb66cd1d2f"), "'/tmp/my uc:f194d8cb'");
        assert_eq!(dir(Path::new("/tmp/it's")), r"-d '/tmp/it'\''s'");
        assert_eq!(quote("$HOME"), "'$HOME'");
    }
}
