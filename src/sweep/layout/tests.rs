//! Tests of `layout`.

use super::*;

fn cal(points: Vec<(usize, f64)>, one: f64, many: f64) -> Calibration {
    Calibration {
        key: "k".into(),
        cores: 2,
        one_trial: points,
        batch: 128,
        one_trial_examples_per_s: one,
        many_trials_examples_per_s: many,
        concurrency: if many > one * MIN_GAIN { 2 } else { 1 },
        measured: String::new(),
        n_val: 0,
        fused: Vec::new(),
    }
}

#[test]
fn the_step_time_line_goes_through_two_measured_points() {
    // t(B) = 1 ms + 10 µs·B
    let c = cal(vec![(16, 0.00116), (1024, 0.01124)], 1.0, 1.0);
    assert!((c.step_s(16) - 0.00116).abs() < 1e-9);
    assert!((c.step_s(1024) - 0.01124).abs() < 1e-9);
    assert!((c.step_s(256) - (0.001 + 0.00001 * 256.0)).abs() < 1e-9);
    // one point: proportional
    let c = cal(vec![(128, 0.01)], 1.0, 1.0);
    assert!((c.step_s(64) - 0.005).abs() < 1e-9);
}

#[test]
fn speedup_is_the_measured_total_throughput_ratio() {
    let c = cal(vec![(128, 0.01)], 1000.0, 1500.0);
    assert_eq!(c.concurrency, 2);
    assert_eq!(c.speedup(1), 1.0);
    assert!((c.speedup(2) - 1.5).abs() < 1e-12);
    let c = cal(vec![(128, 0.01)], 1000.0, 1040.0);
    assert_eq!(
        c.concurrency, 1,
        "a gain under 5 % keeps one trial at a time"
    );
}

#[test]
fn thread_budget_splits_the_cores_over_cpu_trials_only() {
    let cpu = DeviceSpec::Cpu { workers: 1 };
    assert_eq!(threads_per_trial(&cpu, 1, 2), None);
    assert_eq!(threads_per_trial(&cpu, 2, 2), Some(1));
    assert_eq!(threads_per_trial(&cpu, 3, 2), Some(1));
    assert_eq!(threads_per_trial(&cpu, 2, 8), Some(4));
    let gpu = DeviceSpec::Cuda { devices: vec![0] };
    assert_eq!(threads_per_trial(&gpu, 2, 2), None);
}

#[test]
fn the_cached_estimate_and_the_gpu_scale_warning() {
    let (_, preset) = crate::workload::presets::find_preset("digits-mlp-sgd").unwrap();
    let mut cfg = SweepConfig::from_preset(preset, None, PathBuf::from("runs"));
    // the bound of one trial at a time first (the preset runs two at once)
    cfg.concurrency = 1;
    let mut c = cal(
        vec![(16, 0.001 + 16e-5), (1024, 0.001 + 1024e-5)],
        1e3,
        1.5e3,
    );
    c.key = calibration_key(&cfg.preset.workload, cfg.precision, cores());
    let mut cals = BTreeMap::new();
    assert!(
        estimate_from(&cfg, &cals).is_none(),
        "no calibration, no estimate"
    );
    cals.insert(c.key.clone(), c.clone());
    let (layout, e) = estimate_from(&cfg, &cals).unwrap();
    assert_eq!((layout.concurrency, e.concurrency), (1, 1));
    assert!(e.upper_s > 0.0 && e.trials == cfg.batch_sizes.len() * cfg.trials_per_batch);
    // evaluations cost: more validation examples, a longer bound
    let mut bigger = cals.clone();
    bigger.get_mut(&c.key).unwrap().n_val = 10_000;
    assert!(estimate_from(&cfg, &bigger).unwrap().1.upper_s > e.upper_s);
    // half the trials, half the time
    let mut half = cfg.clone();
    half.trials_per_batch /= 2;
    let h = estimate_from(&half, &cals).unwrap().1.upper_s;
    assert!(
        (h - e.upper_s / 2.0).abs() < 1e-9 * e.upper_s,
        "{h} vs {}",
        e.upper_s
    );
    // 2 at once on a machine where that measured 1.5x: the bound divides by 1.5
    let mut two = cfg.clone();
    two.concurrency = 2;
    let t = estimate_from(&two, &cals).unwrap().1.upper_s;
    assert!((t - e.upper_s / 1.5).abs() < 1e-9 * e.upper_s);
    // not a GPU-scale preset: no warning; GPU-scale on the CPU: the bound, or how to get one
    assert_eq!(gpu_scale_warning(&cfg, Some(&e)), None);
    cfg.preset.sweep.gpu_scale = true;
    let w = gpu_scale_warning(&cfg, Some(&e)).unwrap();
    assert!(
        w.contains("GPU-scale") && w.contains(&human_s(e.upper_s)),
        "{w}"
    );
    let w = gpu_scale_warning(&cfg, None).unwrap();
    assert!(w.contains("sweep digits-mlp-sgd --dry-run"), "{w}");
    // on CUDA neither applies
    cfg.devices = DeviceSpec::Cuda { devices: vec![0] };
    assert_eq!(gpu_scale_warning(&cfg, None), None);
    assert!(estimate_from(&cfg, &cals).is_none());
}

#[test]
fn human_times() {
    assert_eq!(human_s(42.4), "42 s");
    assert_eq!(human_s(250.0), "4 min 10 s");
    assert_eq!(human_s(7260.0), "2 h 1 min");
}
