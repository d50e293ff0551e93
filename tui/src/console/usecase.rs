//! The use-case folder `-d` names, checked the same way for every command
//! that reads one (list, explain, takeover, finish, runs, doctor, top): one
//! line and exit 2 when it cannot be one, saying what it is instead.

use std::path::{Path, PathBuf};

use ubunye::state::ScanError;

/// The use-case folder, canonical; or the line that says why `dir` is not one.
pub fn check(dir: &Path) -> Result<PathBuf, String> {
    let meta = std::fs::metadata(dir).map_err(|e| ScanError::NoFolder(dir.to_path_buf(), e.to_string()).to_string())?;
    if !meta.is_dir() {
        return Err(format!(
            "{} is a file, not a folder: point -d at the use-case folder (the folder the Python engine's `ubunye run -d` takes)",
            dir.display()
        ));
    }
    let root =
        std::fs::canonicalize(dir).map_err(|e| ScanError::NoFolder(dir.to_path_buf(), e.to_string()).to_string())?;
    if root.join(".ubunye").is_dir() {
        return Ok(root);
    }
    if let Some(above) = ubunye::layout::use_case_above(&root) {
        return Err(format!(
            "{} is Ubunye's own .ubunye/ folder (or inside it), not a use case: point -d at the folder that holds it, -d {}",
            dir.display(),
            above.display()
        ));
    }
    Err(ScanError::NotAUseCase(root).to_string())
}
