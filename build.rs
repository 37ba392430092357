// Records the git revision of the build for run-log headers (SCALING_LAB_GIT_REV).
fn main() {
    let rev = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    println!(
        "cargo:rustc-env=SCALING_LAB_GIT_REV={}{}",
        rev,
        if dirty { "-dirty" } else { "" }
    );
    // In a linked worktree `.git` is a file: ask git where HEAD and the index are, so the build
    // script does not rerun (and recompile the crate) on every build.
    for what in ["HEAD", "index"] {
        let path = std::process::Command::new("git")
            .args(["rev-parse", "--git-path", what])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| format!(".git/{what}"));
        println!("cargo:rerun-if-changed={path}");
    }
}
