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
        trial_overhead_s: 0.0,
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
fn fused_groups_are_chosen_near_the_best_throughput() {
    let p = |members, eps| FusedPoint {
        members,
        threads: 1,
        examples_per_s: eps,
    };
    // 6 within 5 % of the best (3): the larger group
    assert_eq!(fuse_choice(&[p(1, 100.0), p(3, 150.0), p(6, 146.0)]), 6);
    assert_eq!(fuse_choice(&[p(1, 100.0), p(3, 150.0), p(6, 120.0)]), 3);
    // a gain under 5 %: off
    assert_eq!(fuse_choice(&[p(1, 100.0), p(3, 104.0)]), 1);
}
