//! Writing export files (`export`, `import-batch-science --out`, screenshots): create-new by
//! default, never through a symlink, never over a run log. What is written is rendered by
//! `report::export`.

use std::path::{Path, PathBuf};

/// Writes an output file (export), naming it in the error. Create-new semantics: an existing
/// file is never overwritten (use [`write_file_forced`] for an explicit `--force`), and a symlink
/// or a run log at `path` is always refused.
pub fn write_file(path: &Path, contents: &str) -> anyhow::Result<()> {
    write_output(path, contents, false)
}

/// [`write_file`] for `--force`: replaces an existing regular file (atomically, via a temporary
/// file and a rename) unless it is a run log; still refuses symlinks and non-regular files.
pub fn write_file_forced(path: &Path, contents: &str) -> anyhow::Result<()> {
    write_output(path, contents, true)
}

/// Whether the file at `path` starts like a run log (its first line is a run-log header).
pub fn looks_like_run_log(path: &Path) -> bool {
    use std::io::Read;
    let Ok(f) = crate::data::files::open_regular(path) else {
        return false;
    };
    let mut head = Vec::new();
    if f.take(4096).read_to_end(&mut head).is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&head);
    let first = text.lines().next().unwrap_or("");
    let compact: String = first.chars().filter(|c| !c.is_whitespace()).collect();
    compact.starts_with('{') && compact.contains("\"type\":\"header\"")
}

fn write_output(path: &Path, contents: &str, force: bool) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    let p = path.display();
    if let Ok(m) = path.symlink_metadata() {
        if m.file_type().is_symlink() {
            anyhow::bail!("{p}: is a symbolic link: outputs are never written through a link");
        }
        if !m.is_file() {
            anyhow::bail!(
                "{p}: not a regular file (it is {}): choose another output name",
                crate::data::files::file_kind(&m)
            );
        }
        if looks_like_run_log(path) {
            anyhow::bail!("{p}: is a run log: exports never overwrite a run log");
        }
        if !force {
            anyhow::bail!("{p}: already exists: choose another name (or remove it first)");
        }
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let write_new = |target: &Path| -> anyhow::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(target)
            .with_context(|| format!("cannot create {}", target.display()))?;
        f.write_all(contents.as_bytes())
            .and_then(|_| f.sync_all())
            .with_context(|| format!("cannot write {}", target.display()))
    };
    if !force {
        return write_new(path);
    }
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(format!(".partial-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    write_new(&tmp)?;
    std::fs::rename(&tmp, path).with_context(|| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {p}")
    })
}
