//! Tests of the report: the projection brief, the wording of notes, the regimes line.

use super::*;
use crate::analysis::tests::rec;
use crate::core::analysis::{EdgeAt, ExploredRange, Note, SearchEdge, Study};
use crate::core::trial::Outcome;
use crate::workload::spec::{LrRule, Metric, OptimizerKind, Preset, Target};

fn target() -> Target {
    Target {
        metric: Metric::ValError,
        value: 0.1,
    }
}

/// A header for `trials` of an SGD preset (val error ≤ 0.1).
fn header() -> Header {
    let mut preset: Preset = crate::core::plan::tests::preset();
    preset.workload.target = target();
    preset.workload.optimizer = OptimizerKind::Sgd;
    // a data workload (the NQM has no compute to time)
    preset.workload.model = crate::model::mlp::hidden(vec![64]);
    let cfg = crate::sweep::SweepConfig::from_preset(preset, None, "runs".into());
    crate::sweep::scheduler::make_header(&cfg, "burn-flex (cpu)")
}

/// `trials` with two slower search trials beside each (not reached within twice its steps, the
/// same throughput): enough evidence at each batch size for the curve (`analysis::evidence`).
fn thicken(trials: Vec<TrialRecord>) -> Vec<TrialRecord> {
    let mut out = trials.clone();
    for t in &trials {
        for k in 1..=2u64 {
            let mut r = t.clone();
            r.trial_id += 1000 * k;
            r.spec.trial_id = r.trial_id;
            r.spec.seed = r.trial_id;
            let steps = t.outcome.outcome.steps_to_target().unwrap_or(100);
            r.outcome.outcome = Outcome::NotReached {
                budget: 2 * steps,
                early_stopped: false,
            };
            r.outcome.noise = Default::default();
            out.push(r);
        }
    }
    out
}

#[test]
fn brief_names_the_best_speedup_per_link() {
    let mut trials = vec![];
    for (i, (b, s)) in [(16usize, 800u64), (64, 220), (256, 80), (1024, 60)]
        .into_iter()
        .enumerate()
    {
        let mut r = rec(i as u64, b, 0.1, Outcome::Reached { step: s }, None);
        r.outcome.throughput.compute_s = 2e-3 + 5e-5 * b as f64;
        r.outcome.throughput.step_s = r.outcome.throughput.compute_s;
        r.outcome.throughput.params = 1_000_000;
        trials.push(r);
    }
    let mut trials = thicken(trials);
    let h = header();
    let run = |trials: &[TrialRecord]| {
        build(
            &Run {
                header: &h,
                trials,
                path: None,
                progress: Progress::default(),
                warnings: &[],
                calibrated: None,
            },
            &ReportOptions::default(),
        )
    };
    let brief = projection::brief(&run(&trials)).expect("a projection");
    assert!(
        brief.starts_with("NVLink ") && brief.contains(" · 10GbE "),
        "{brief}"
    );
    // 4 MB of gradients: 10 GbE cannot beat NVLink.
    let speed = |name: &str| -> f64 {
        let part = brief.split(" · ").find(|p| p.starts_with(name)).unwrap();
        part.split_whitespace()
            .nth(1)
            .unwrap()
            .split('×')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(speed("NVLink") > speed("10GbE"), "{brief}");
    // the brief is the report's projection: the same best cells
    let r = run(&trials);
    let nv = &r.projections.as_ref().unwrap()[0];
    let best = nv
        .rows
        .iter()
        .max_by(|a, b| a.speedup.total_cmp(&b.speedup))
        .unwrap();
    assert!(brief.starts_with(&format!("NVLink {:.1}×@G{}", best.speedup, best.devices)));
    // No timings (imported data): nothing to say.
    for t in &mut trials {
        t.outcome.throughput.compute_s = 0.0;
    }
    assert_eq!(projection::brief(&run(&trials)), None);
}

/// Every note has its wording, and the wording carries the note's numbers.
#[test]
fn notes_are_worded_with_their_numbers() {
    let cases: Vec<(Note, &str)> = vec![
        (
            Note::TooFewForRegimes { reached: 2 },
            "regimes need at least 3 batch sizes that reached the target (2 did)",
        ),
        (
            Note::MaximalNotReached { b_max: 1024.0 },
            "maximal data parallelism not reached below B = 1024",
        ),
        (
            Note::PerfectNotObserved { b_min: 4.0 },
            "perfect scaling not observed: S already falls slower than 1/B from the smallest measured B = 4",
        ),
        (
            Note::FitUncertain {
                r2: 0.8123,
                b_crit_ci: Some([3.0, 267.4]),
            },
            "the fit S = S_min(1 + B_crit/B) is uncertain (r² 0.81, B_crit 95 % 3–267): B_crit and anything projected from it are indicative only",
        ),
        (
            Note::AtSearchEdge {
                at: vec![
                    EdgeAt {
                        batch_size: 4,
                        edges: vec![SearchEdge::OneMinusMomentumLow],
                    },
                    EdgeAt {
                        batch_size: 16,
                        edges: vec![SearchEdge::LrHigh, SearchEdge::OneMinusMomentumLow],
                    },
                ],
            },
            "best trial at the edge of the search space at B = 4 (1−γ low), 16 (η high, 1−γ low): S(B) there is an upper bound (widen or re-centre the range: sweep --widen N)",
        ),
        (
            Note::RangeRecentred {
                ranges: vec![ExploredRange {
                    batch_sizes: vec![16, 64],
                    learning_rate: [2e-3, 0.02],
                    one_minus_momentum: None,
                }],
            },
            "search range re-centred (--widen) at B = 16, 64 (η 2.00e-3–0.0200 explored): S(B) there is the best over the wider range",
        ),
        (
            Note::LrRuleSetsExponent {
                rule: LrRule::Sqrt,
                exponent: Some(0.504),
            },
            "the η range is centred per B by the sqrt rule (∝ B^0.5), so the fitted \"best η ∝ B^k\" exponent (k = 0.50) is partly set by that rule",
        ),
    ];
    for (n, text) in cases {
        assert_eq!(notes::note_text(&n), text);
    }
}

#[test]
fn regimes_line_and_regime_at_read_the_partition() {
    let pts: Vec<TrialRecord> = (0..10)
        .map(|i| {
            let b = 1usize << (i + 2);
            let s = (100.0 * (1.0 + 256.0 / b as f64)).round() as u64;
            rec(i, b, 0.1, Outcome::Reached { step: s }, None)
        })
        .collect();
    let pts = thicken(pts);
    let a = crate::analysis::analyze(&Study::bare(target(), OptimizerKind::Sgd), &pts);
    let line = text::regimes_line(&a);
    assert!(line.starts_with("perfect 4–"), "{line}");
    assert_eq!(regime_at(&a, 4), Some(Regime::Perfect));
    assert_eq!(regime_at(&a, 2048), Some(Regime::Maximal));
    assert_eq!(perfect_scaling_extent(&a), Some(regime_ranges(&a)[0].1));
    assert_eq!(maximal_from(&a), regime_ranges(&a).last().map(|r| r.0));
}

/// The B_simple intervals reach every view: the text report's band, the report JSON, and the
/// CSV exports ("inf" where unbounded above, empty where a trial recorded none).
#[test]
fn the_noise_band_reaches_text_json_and_csv() {
    use crate::core::trial::NoiseInterval;
    let iv = |lo, hi| Some(NoiseInterval { lo, hi });
    let mut trials = vec![];
    for (i, (b, s, v, band)) in [
        (16usize, 800u64, 60.0, iv(20.0, None)),
        (64, 220, 80.0, iv(40.0, Some(160.0))),
        (256, 80, 100.0, iv(70.0, Some(150.0))),
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = rec(i as u64, b, 0.1, Outcome::Reached { step: s }, Some(v));
        r.outcome.noise.interval = band;
        trials.push(r);
    }
    let mut trials = thicken(trials);
    let h = header();
    let report = build(
        &Run {
            header: &h,
            trials: &trials,
            path: None,
            progress: Progress::default(),
            warnings: &[],
            calibrated: None,
        },
        &ReportOptions::default(),
    );
    let n = report.noise.as_ref().unwrap();
    assert_eq!(n.median_b_simple, 80.0);
    assert_eq!(n.interval, iv(40.0, Some(160.0)));
    assert!(
        report.text().contains("= 80.0 (fitted B_crit")
            && report.text().contains("; 95 % band 40.0–160\n"),
        "{}",
        report.text()
    );
    // one of the three best trials' intervals is unbounded above: the band is not
    assert_eq!(n.unbounded, Some([1, 3]));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["noise"]["interval"]["hi"], 160.0);
    let a = crate::analysis::analyze(&Study::bare(target(), OptimizerKind::Sgd), &trials);
    let csv = export::points_csv(&a);
    let header_cols: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let (lo_at, hi_at) = (
        header_cols
            .iter()
            .position(|c| *c == "b_simple_lo")
            .unwrap(),
        header_cols
            .iter()
            .position(|c| *c == "b_simple_hi")
            .unwrap(),
    );
    let row16: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!((row16[lo_at], row16[hi_at]), ("20", "inf"));
    let tcsv = export::trials_csv(&trials);
    let cols: Vec<&str> = tcsv.lines().next().unwrap().split(',').collect();
    let at = |name: &str| cols.iter().position(|c| *c == name).unwrap();
    let row: Vec<&str> = tcsv.lines().nth(2).unwrap().split(',').collect();
    assert_eq!(
        (row[at("b_simple_lo")], row[at("b_simple_hi")]),
        ("40", "160")
    );
    trials[0].outcome.noise.interval = None;
    let tcsv = export::trials_csv(&trials);
    let row: Vec<&str> = tcsv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(
        (row[at("b_simple_lo")], row[at("b_simple_hi")]),
        ("", ""),
        "{tcsv}"
    );
}
