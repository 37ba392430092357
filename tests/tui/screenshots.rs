//! The README pictures: Setup, Live (mid-sweep and finished), Runs and Compare rendered to SVG
//! from real NQM sweeps (closed form, fast) run through the real scheduler.
//!
//! `cargo test --release --test tui_screenshots -- --ignored screenshots_render` checks the
//! pipeline in a temporary directory (slow: the NQM presets' sweeps take minutes);
//! `cargo test --release --test tui_screenshots -- --ignored write_readme` (or `scaling-lab screenshot`) writes
//! screenshots/*.svg, using the complete sweeps in `runs/` where there are (e.g. digits-MLP) and
//! NQM sweeps otherwise.

use std::path::Path;

#[test]
#[ignore = "runs four NQM sweeps (~5 min on 2 cores); run with --ignored"]
fn screenshots_render_from_real_nqm_sweeps() {
    let out = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    let files = scaling_lab::tui::render_screenshots(out.path(), runs.path()).unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "setup.svg",
            "live-mid.svg",
            "live-finished.svg",
            "runs.svg",
            "compare.svg"
        ]
    );
    let read = |n: &str| std::fs::read_to_string(out.path().join(n)).unwrap();
    for n in &names {
        let s = read(n);
        assert!(
            s.starts_with("<svg") && s.trim_end().ends_with("</svg>"),
            "{n}"
        );
    }
    assert!(read("setup.svg").contains("digits-mlp-momentum"));
    assert!(read("live-mid.svg").contains("trials finished"));
    let fin = read("live-finished.svg");
    assert!(fin.contains("sweep complete"));
    assert!(fin.contains("perfect"), "the NQM sweep shows regimes");
    assert!(read("runs.svg").contains("complete"));
    let cmp = read("compare.svg");
    assert!(
        cmp.contains("nqm-sgd") && cmp.contains("nqm-adam"),
        "compare overlays the NQM optimizers"
    );
    // the sweeps were really run and logged
    let logs = std::fs::read_dir(runs.path()).unwrap().count();
    assert!(logs >= 4, "{logs} run logs");
}

#[test]
#[ignore = "writes screenshots/ in the repository"]
fn write_readme_screenshots() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let runs = std::env::var_os("SCALING_LAB_RUNS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("runs"));
    let files = scaling_lab::tui::render_screenshots(&root.join("screenshots"), &runs).unwrap();
    for f in files {
        println!("wrote {}", f.display());
    }
    let meta = scaling_lab::tui::render_meta_screenshot(&root.join("screenshots"), &runs).unwrap();
    println!("wrote {}", meta.display());
}

#[test]
fn meta_screenshot_shows_every_trial_of_a_sweep() {
    let out = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    let p = scaling_lab::tui::render_meta_screenshot(out.path(), runs.path()).unwrap();
    assert_eq!(p.file_name().unwrap(), "meta.svg");
    let s = std::fs::read_to_string(&p).unwrap();
    assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
    assert!(s.contains("★"), "the best trial is marked");
    assert!(s.contains("B="), "one panel per batch size");
}
