//! The sandbox a killtest runs in: beside the use case (or `--sandbox`),
//! never inside it; two copies of it, with killtest's marker that shortens
//! the settle (`ubunye::sys::sandbox`).

use std::path::{Path, PathBuf};

use ubunye::killtest;

use super::plan::Plan;

/// The sandbox's places.
pub struct Sandbox {
    /// Its top folder.
    pub root: PathBuf,
    /// The reference run's use case.
    pub reference: PathBuf,
    /// The kill rounds' use case.
    pub killed: PathBuf,
}

/// The sandbox: `dir` (which must be missing or empty) or a new folder
/// beside the use case; the marker that shortens the settle; each use case
/// with the copies and [`killtest::FOREIGN`] in every append output.
pub fn sandbox(plan: &Plan, dir: Option<&Path>) -> Result<Sandbox, String> {
    let root = match dir {
        Some(d) => {
            let abs = ubunye::beneath::normpath(&std::env::current_dir().map_err(|e| e.to_string())?.join(d));
            let real = std::fs::canonicalize(&plan.real_uc).unwrap_or_else(|_| plan.real_uc.clone());
            let inside = |p: &Path| p.starts_with(&plan.real_uc) || p.starts_with(&real);
            if inside(&abs) || std::fs::canonicalize(&abs).is_ok_and(|c| inside(&c)) {
                return Err(format!(
                    "--sandbox {}: inside the use case {}; give a folder outside it (killtest never writes in the use case)",
                    d.display(),
                    plan.real_uc.display()
                ));
            }
            if std::fs::read_dir(d).is_ok_and(|mut r| r.next().is_some()) {
                return Err(format!("--sandbox {}: not empty; give a new or empty folder", d.display()));
            }
            std::fs::create_dir_all(d).map_err(|e| format!("--sandbox {}: {e}", d.display()))?;
            d.to_path_buf()
        }
        None => {
            let parent = plan.real_uc.parent().unwrap_or(Path::new("/"));
            let name = plan.real_uc.file_name().map_or("uc".into(), |n| n.to_string_lossy().into_owned());
            let short = &uuid::Uuid::new_v4().simple().to_string()[..8];
            let root = parent.join(format!(".ubunye-killtest-{name}-{short}"));
            std::fs::create_dir(&root).map_err(|e| {
                format!("cannot make the sandbox {} beside the use case ({e}): give --sandbox DIR", root.display())
            })?;
            root
        }
    };
    let root = std::fs::canonicalize(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    let made = fill(plan, &root);
    if made.is_err() {
        // Nothing half made is left: the folder was new or empty.
        if let Ok(rd) = std::fs::read_dir(&root) {
            for e in rd.flatten() {
                let _ = std::fs::remove_dir_all(e.path()).or_else(|_| std::fs::remove_file(e.path()));
            }
        }
        if dir.is_none() {
            let _ = std::fs::remove_dir(&root);
        }
    }
    made
}

fn fill(plan: &Plan, root: &Path) -> Result<Sandbox, String> {
    let root = root.to_path_buf();
    let io = |p: &Path, e: std::io::Error| format!("the sandbox {}: {e}", p.display());
    std::fs::write(root.join(ubunye::sys::sandbox::MARKER), "ubunye killtest's sandbox\n").map_err(|e| io(&root, e))?;
    let name = plan.real_uc.file_name().map_or("uc".into(), |n| n.to_os_string());
    let sb = Sandbox { reference: root.join("reference").join(&name), killed: root.join("killed").join(&name), root };
    for uc in [&sb.reference, &sb.killed] {
        std::fs::create_dir_all(uc).map_err(|e| io(uc, e))?;
        for c in &plan.copies {
            copy_tree(&plan.real_uc.join(c), &uc.join(c)).map_err(|e| io(&uc.join(c), e))?;
        }
        killtest::plant_foreign(uc, &plan.outputs).map_err(|e| io(uc, e))?;
    }
    Ok(sb)
}

/// Copy a file or folder (symlinks as symlinks, never followed).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    let m = std::fs::symlink_metadata(from)?;
    if let Some(p) = to.parent() {
        std::fs::create_dir_all(p)?;
    }
    if m.is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(from)?, to)
    } else if m.is_dir() {
        std::fs::create_dir_all(to)?;
        for e in std::fs::read_dir(from)? {
            let e = e?;
            copy_tree(&e.path(), &to.join(e.file_name()))?;
        }
        Ok(())
    } else {
        std::fs::copy(from, to).map(|_| ())
    }
}
