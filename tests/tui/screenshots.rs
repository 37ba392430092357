//! The README pictures: Setup, Live (mid-sweep and finished), Runs and Compare rendered to SVG
//! from real NQM sweeps (closed form, fast) run through the real scheduler.
//!
//! `cargo test --release --test tui -- --ignored screenshots_render` checks the pipeline in a
//! temporary directory (slow: the NQM presets' sweeps take minutes). `scaling-lab screenshot`
//! writes screenshots/*.svg, using the complete sweeps in `runs/` where there are (e.g.
//! digits-MLP) and NQM sweeps otherwise.

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
