//! The user's presets directory (`SCALING_LAB_USER_PRESETS_DIR` here; the platform's config
//! directory by default): its presets are listed by `presets` after the bundled ones, marked as
//! the user's, selected by name like them, and shown in Setup; a user preset with a bundled
//! preset's name is an error naming both files, listed and selected alike.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_scaling-lab");

fn run(args: &[&str], user_dir: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("SCALING_LAB_USER_PRESETS_DIR", user_dir)
        .env_remove("SCALING_LAB_PRESETS_DIR")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn bundled(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("presets/{name}.toml")),
    )
    .unwrap()
}

#[test]
fn user_presets_are_listed_marked_and_selected_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("presets");
    std::fs::create_dir_all(&user).unwrap();
    let mine = bundled("digits-mlp-sgd")
        .replace("name = \"digits-mlp-sgd\"", "name = \"my-digits\"")
        .replace("trials_per_batch = ", "trials_per_batch = 1 #");
    std::fs::write(user.join("my-digits.toml"), &mine).unwrap();
    let (code, out, err) = run(&["presets"], &user);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("my-digits ") && l.contains("(yours)"))
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(at, lines.len() - 1, "after the bundled presets:\n{out}");
    assert!(lines[..at].iter().all(|l| !l.contains("(yours)")), "{out}");
    // selected by name
    let runs = dir.path().join("runs");
    let (code, _, err) = run(
        &[
            "sweep",
            "my-digits",
            "--dry-run",
            "--runs-dir",
            runs.to_str().unwrap(),
        ],
        &user,
    );
    assert_eq!(code, Some(0), "{err}");
    // a bundled name: an error naming both files, listed and selected alike
    std::fs::write(user.join("digits-mlp-sgd.toml"), bundled("digits-mlp-sgd")).unwrap();
    let (code, out, _) = run(&["presets"], &user);
    assert_eq!(code, Some(0));
    let shadow = out
        .lines()
        .find(|l| l.contains("INVALID"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        shadow.contains(&user.join("digits-mlp-sgd.toml").display().to_string())
            && shadow.contains("has the name of the bundled preset"),
        "{shadow}"
    );
    let (code, _, err) = run(
        &[
            "sweep",
            "digits-mlp-sgd",
            "--dry-run",
            "--runs-dir",
            runs.to_str().unwrap(),
        ],
        &user,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("digits-mlp-sgd.toml") && err.contains("has the name of the bundled preset"),
        "{err}"
    );
    // Setup lists them after the bundled presets, marked as the user's
    let (presets, errors) = scaling_lab::tui::loader::load_presets(
        &scaling_lab::workload::presets::presets_dir(),
        Some(&user),
    );
    let last = presets.last().unwrap();
    assert_eq!((last.preset.name.as_str(), last.user), ("my-digits", true));
    assert!(presets[..presets.len() - 1].iter().all(|p| !p.user));
    assert_eq!(errors.len(), 1, "{errors:?}");
}
