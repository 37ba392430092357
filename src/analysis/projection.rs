//! Time-to-target vs number of data-parallel devices G (docs/science.md §6).
//!
//! `t(B, G) = t_compute(B/G) + t_allreduce(P, G)`, ring all-reduce
//! `t_allreduce = 2·(G−1)/G · P/bw + 2·(G−1)·lat`, and time-to-target(G) = min over measured B ≥ G
//! of S(B)·t(B, G). `t_compute(b) = overhead + per_example·b` is fitted by least squares to the
//! trials' measured compute time per step against their per-replica batch (weighted by 1/t², i.e.
//! relative error). Rows are marked
//! `measured` only where G equals the device count the trials actually ran on AND the link is the
//! measured one; every other row is a model. CPU "workers" say nothing about GPUs: the caller must
//! label a CPU calibration as such.

use serde::{Deserialize, Serialize};

use crate::core::analysis::Analysis;
use crate::core::record::TrialRecord;

use super::stats::median;

/// A network link for the all-reduce model.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LinkModel {
    pub name: String,
    /// Bytes per second per direction.
    pub bandwidth: f64,
    /// Seconds per message hop.
    pub latency: f64,
    /// Derived from this machine's measured exchange times rather than a datasheet preset.
    pub measured: bool,
    /// Where a measured link comes from (the `bench --allreduce` table it was fitted to, or the
    /// trials' exchange times).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl LinkModel {
    /// NVLink (V100-class, ~150 GB/s per direction, ~2 µs).
    pub fn nvlink() -> Self {
        Self::preset("NVLink", 150e9, 2e-6)
    }
    /// InfiniBand EDR (100 Gb/s ≈ 12.5 GB/s, ~1.5 µs).
    pub fn infiniband() -> Self {
        Self::preset("InfiniBand EDR", 12.5e9, 1.5e-6)
    }
    /// 10 Gb Ethernet (1.25 GB/s, ~50 µs over TCP).
    pub fn ethernet_10g() -> Self {
        Self::preset("10GbE", 1.25e9, 50e-6)
    }
    fn preset(name: &str, bandwidth: f64, latency: f64) -> Self {
        LinkModel {
            name: name.into(),
            bandwidth,
            latency,
            measured: false,
            source: None,
        }
    }
    pub fn presets() -> Vec<LinkModel> {
        vec![Self::nvlink(), Self::infiniband(), Self::ethernet_10g()]
    }
    /// Ring all-reduce time of `bytes` over `g` devices.
    pub fn allreduce_s(&self, bytes: f64, g: usize) -> f64 {
        if g <= 1 {
            return 0.0;
        }
        let g = g as f64;
        2.0 * (g - 1.0) / g * bytes / self.bandwidth + 2.0 * (g - 1.0) * self.latency
    }
}

/// Replicas of a trial over all its processes (a multi-node trial's N × G).
fn world(t: &TrialRecord) -> usize {
    t.outcome.throughput.world(t.spec.devices.replicas())
}

/// Trials whose exchange crossed processes (multi-node), when there are any: their exchange
/// times are the measured link across processes; otherwise every trial (threads in one process).
fn link_trials(trials: &[TrialRecord]) -> (Vec<&TrialRecord>, Option<bool>) {
    let across: Vec<&TrialRecord> = trials
        .iter()
        .filter(|t| t.outcome.throughput.nodes >= 2)
        .collect();
    if across.is_empty() {
        (trials.iter().collect(), None)
    } else {
        let loopback = across.iter().all(|t| t.outcome.throughput.loopback);
        (across, Some(loopback))
    }
}

/// The link implied by measured exchange times: with one measurement per step the bandwidth and
/// latency cannot be separated, so latency is taken as 0 and the effective bandwidth is
/// `2·(G−1)/G · P / t_exchange` (median over trials with G ≥ 2 and a measured exchange). When
/// some trials ran across processes (multi-node), only theirs count and the link is named
/// `processes/loopback` (or `processes/network`).
pub fn measured_link(trials: &[TrialRecord]) -> Option<LinkModel> {
    let (trials, across) = link_trials(trials);
    let bws: Vec<f64> = trials
        .iter()
        .filter_map(|t| {
            let g = world(t);
            let th = &t.outcome.throughput;
            (g >= 2 && th.exchange_s > 0.0 && th.exchanged_bytes_per_step > 0).then(|| {
                let gf = g as f64;
                2.0 * (gf - 1.0) / gf * th.exchanged_bytes_per_step as f64 / th.exchange_s
            })
        })
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    let bw = median(bws)?;
    let (name, what) = match across {
        None => ("measured", "the trials' exchange times"),
        Some(true) => (
            "processes/loopback",
            "the trials' exchange times across processes over loopback",
        ),
        Some(false) => (
            "processes/network",
            "the trials' exchange times across processes over the network",
        ),
    };
    Some(LinkModel {
        name: name.into(),
        bandwidth: bw,
        latency: 0.0,
        measured: true,
        source: Some(format!(
            "{what} (one size per step: latency not separable; \
             `scaling-lab bench --allreduce` measures a table to fit)"
        )),
    })
}

/// True for a link measured across processes (a multi-node sweep's exchange times).
pub fn is_cross_process(link: &LinkModel) -> bool {
    link.measured && link.name.starts_with("processes/")
}

/// One measured all-reduce: `world` replicas, a message of `bytes`, `time_s` seconds (a row of
/// `scaling-lab bench --allreduce`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LinkSample {
    pub world: usize,
    pub bytes: f64,
    pub time_s: f64,
}

/// A saved `bench --allreduce` table: what was measured (`path`, e.g. "burn-collective in-process
/// threads, burn-flex (cpu)") and its rows. Extra fields of the saved file are ignored.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LinkTable {
    pub path: String,
    pub rows: Vec<LinkSample>,
}

/// The ring model `t = 2(G−1)·latency + 2(G−1)/G · bytes / bandwidth` fitted to every cell of a
/// table at once (weighted least squares on relative error, latency ≥ 0): (latency s, bandwidth
/// B/s, largest relative deviation of a cell from the fit). None with fewer than two usable
/// cells or no positive bandwidth.
pub fn fit_ring(samples: &[LinkSample]) -> Option<(f64, f64, f64)> {
    let pts: Vec<(f64, f64, f64)> = samples
        .iter()
        .filter(|s| s.world >= 2 && s.bytes > 0.0 && s.time_s > 0.0 && s.time_s.is_finite())
        .map(|s| {
            let g = s.world as f64;
            (2.0 * (g - 1.0), 2.0 * (g - 1.0) / g * s.bytes, s.time_s)
        })
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let (mut s11, mut s12, mut s22, mut s1t, mut s2t) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(x1, x2, t) in &pts {
        let w = 1.0 / (t * t);
        s11 += w * x1 * x1;
        s12 += w * x1 * x2;
        s22 += w * x2 * x2;
        s1t += w * x1 * t;
        s2t += w * x2 * t;
    }
    let det = s11 * s22 - s12 * s12;
    let (mut lat, mut inv_bw) = if det.abs() > 1e-300 * s11.max(1.0) * s22.max(1.0) {
        ((s1t * s22 - s2t * s12) / det, (s11 * s2t - s12 * s1t) / det)
    } else {
        (-1.0, 0.0)
    };
    if lat < 0.0 {
        lat = 0.0;
        inv_bw = s2t / s22;
    }
    if inv_bw <= 0.0 || !inv_bw.is_finite() {
        return None;
    }
    let max_rel_err = pts
        .iter()
        .map(|&(x1, x2, t)| ((lat * x1 + inv_bw * x2) / t - 1.0).abs())
        .fold(0.0, f64::max);
    Some((lat, 1.0 / inv_bw, max_rel_err))
}

impl LinkTable {
    /// The measured link of this table (ring model fitted to all its cells).
    pub fn link(&self) -> Option<LinkModel> {
        let (latency, bandwidth, dev) = fit_ring(&self.rows)?;
        let mut worlds: Vec<usize> = self.rows.iter().map(|r| r.world).collect();
        worlds.sort_unstable();
        worlds.dedup();
        let worlds: Vec<String> = worlds.iter().map(|g| g.to_string()).collect();
        Some(LinkModel {
            name: "measured".into(),
            bandwidth,
            latency,
            measured: true,
            source: Some(format!(
                "fit of `bench --allreduce` ({}; {} cells, G = {}; largest deviation {:.0}%)",
                self.path,
                self.rows.len(),
                worlds.join(", "),
                dev * 100.0
            )),
        })
    }
}

/// The measured link beside the trials' own exchange times: (G, payload bytes, median measured
/// seconds per step, the link model's seconds) at the most common G ≥ 2 of the trials. None when
/// no trial exchanged gradients.
pub fn exchange_check(trials: &[TrialRecord], link: &LinkModel) -> Option<(usize, f64, f64, f64)> {
    // A link measured across processes is checked against those trials only.
    let trials = if is_cross_process(link) {
        link_trials(trials).0
    } else {
        trials.iter().collect()
    };
    let with: Vec<(usize, f64, f64)> = trials
        .iter()
        .filter_map(|t| {
            let g = world(t);
            let th = &t.outcome.throughput;
            (g >= 2 && th.exchange_s > 0.0 && th.exchanged_bytes_per_step > 0).then_some((
                g,
                th.exchanged_bytes_per_step as f64,
                th.exchange_s,
            ))
        })
        .collect();
    let mut gs: Vec<usize> = with.iter().map(|w| w.0).collect();
    gs.sort_unstable();
    let g = gs
        .iter()
        .copied()
        .max_by_key(|g| (gs.iter().filter(|x| *x == g).count(), *g))?;
    let at_g: Vec<&(usize, f64, f64)> = with.iter().filter(|w| w.0 == g).collect();
    let bytes = median(at_g.iter().map(|w| w.1).collect())?;
    let measured = median(at_g.iter().map(|w| w.2).collect())?;
    Some((g, bytes, measured, link.allreduce_s(bytes, g)))
}

/// `t_compute(b) = overhead_s + per_example_s·b` for a per-replica batch b.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ComputeModel {
    pub overhead_s: f64,
    pub per_example_s: f64,
    /// Devices per trial during the calibration.
    pub replicas: usize,
    pub samples: usize,
    /// Bytes each replica sends per step (the all-reduce payload P).
    pub param_bytes: f64,
}

impl ComputeModel {
    pub fn step_compute_s(&self, per_replica_batch: f64) -> f64 {
        self.overhead_s + self.per_example_s * per_replica_batch
    }
}

/// Fits the compute model to trials with a measured compute time.
pub fn calibrate_compute(trials: &[TrialRecord]) -> Option<ComputeModel> {
    let pts: Vec<(f64, f64, usize, f64)> = trials
        .iter()
        .filter(|t| t.outcome.throughput.compute_s > 0.0)
        .map(|t| {
            let g = world(t);
            let th = &t.outcome.throughput;
            (
                t.spec.batch_size as f64 / g as f64,
                th.compute_s,
                g,
                // fp32 gradients of every parameter (what a replica all-reduces per step).
                (th.exchanged_bytes_per_step as f64).max(th.params as f64 * 4.0),
            )
        })
        .collect();
    if pts.is_empty() {
        return None;
    }
    // Weighted least squares with weights 1/y²: minimises the relative error, so the small
    // batches (short steps) are fitted as well as the large ones.
    let w: Vec<f64> = pts.iter().map(|p| 1.0 / (p.1 * p.1)).collect();
    let n: f64 = w.iter().sum();
    let mx = pts.iter().zip(&w).map(|(p, w)| w * p.0).sum::<f64>() / n;
    let my = pts.iter().zip(&w).map(|(p, w)| w * p.1).sum::<f64>() / n;
    let sxx: f64 = pts
        .iter()
        .zip(&w)
        .map(|(p, w)| w * (p.0 - mx).powi(2))
        .sum();
    let sxy: f64 = pts
        .iter()
        .zip(&w)
        .map(|(p, w)| w * (p.0 - mx) * (p.1 - my))
        .sum();
    let (mut slope, mut icpt) = if sxx > 0.0 {
        let s = sxy / sxx;
        (s, my - s * mx)
    } else {
        (my / mx.max(1.0), 0.0)
    };
    if slope <= 0.0 || icpt < 0.0 {
        // Degenerate (noise or a single batch size): proportional model through the origin.
        let sxy0: f64 = pts.iter().zip(&w).map(|(p, w)| w * p.0 * p.1).sum();
        let sxx0: f64 = pts.iter().zip(&w).map(|(p, w)| w * p.0 * p.0).sum();
        slope = if sxx0 > 0.0 { sxy0 / sxx0 } else { 0.0 };
        icpt = 0.0;
    }
    let mut replicas: Vec<usize> = pts.iter().map(|p| p.2).collect();
    replicas.sort_unstable();
    let param_bytes = median(pts.iter().map(|p| p.3).collect()).unwrap_or(0.0);
    Some(ComputeModel {
        overhead_s: icpt,
        per_example_s: slope,
        replicas: replicas[replicas.len() / 2],
        samples: pts.len(),
        param_bytes,
    })
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ProjectionRow {
    pub devices: usize,
    pub batch_size: usize,
    pub steps: u64,
    pub compute_s: f64,
    pub allreduce_s: f64,
    pub step_s: f64,
    pub time_to_target_s: f64,
    /// Relative to G = 1.
    pub speedup: f64,
    /// True only when G is the measured device count on the measured link.
    pub measured: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Projection {
    pub link: LinkModel,
    pub compute: ComputeModel,
    pub rows: Vec<ProjectionRow>,
}

/// Projects time-to-target for G = 1, 2, 4, … ≤ `max_devices` at the best measured B ≥ G.
pub fn project(
    analysis: &Analysis,
    compute: &ComputeModel,
    link: &LinkModel,
    max_devices: usize,
) -> Projection {
    // S(B) as the curve reads it (the confirmed seed median once the confirm stage is complete)
    let points: Vec<(usize, u64)> = analysis
        .per_batch
        .iter()
        .filter_map(|p| analysis.curve_steps(p).map(|s| (p.batch_size, s)))
        .collect();
    let mut rows: Vec<ProjectionRow> = Vec::new();
    let mut g = 1usize;
    while g <= max_devices.max(1) {
        let best = points
            .iter()
            .filter(|(b, _)| *b >= g)
            .map(|&(b, s)| {
                let c = compute.step_compute_s(b as f64 / g as f64);
                let a = link.allreduce_s(compute.param_bytes, g);
                (b, s, c, a, s as f64 * (c + a))
            })
            .min_by(|x, y| x.4.total_cmp(&y.4));
        if let Some((b, s, c, a, t)) = best {
            rows.push(ProjectionRow {
                devices: g,
                batch_size: b,
                steps: s,
                compute_s: c,
                allreduce_s: a,
                step_s: c + a,
                time_to_target_s: t,
                speedup: 1.0,
                measured: link.measured && g == compute.replicas,
            });
        }
        g *= 2;
    }
    if let Some(t1) = rows.first().map(|r| r.time_to_target_s) {
        for r in &mut rows {
            r.speedup = if r.time_to_target_s > 0.0 {
                t1 / r.time_to_target_s
            } else {
                0.0
            };
        }
    }
    Projection {
        link: link.clone(),
        compute: compute.clone(),
        rows,
    }
}

/// Projections of one sweep on every datasheet link, plus one measured link: the ring model fitted
/// to a saved `bench --allreduce` table when there is one (`table`), else the effective link of the
/// trials' own exchange times when they ran on ≥ 2 devices. None when no trial has a measured
/// compute time (e.g. imported data).
pub fn project_all(
    trials: &[TrialRecord],
    analysis: &Analysis,
    max_devices: usize,
    table: Option<&LinkTable>,
) -> Option<Vec<Projection>> {
    let compute = calibrate_compute(trials)?;
    let mut links = LinkModel::presets();
    // Exchange times measured across processes (a multi-node sweep) beat an in-process table.
    let across = measured_link(trials).filter(is_cross_process);
    links.extend(
        across
            .or_else(|| table.and_then(LinkTable::link))
            .or_else(|| measured_link(trials)),
    );
    Some(
        links
            .iter()
            .map(|l| project(analysis, &compute, l, max_devices))
            .collect(),
    )
}

/// The G = (devices the trials ran on) check: the model's time-to-target at the best measured B
/// beside the best trial's own measured training time (steps × measured seconds per step).
pub fn measured_check(
    trials: &[TrialRecord],
    analysis: &Analysis,
    compute: &ComputeModel,
) -> Option<(usize, f64, f64)> {
    let best = analysis
        .per_batch
        .iter()
        .filter_map(|p| Some((p.batch_size, p.steps?, p.best_trial?)))
        .filter_map(|(b, s, id)| {
            let t = trials.iter().find(|t| t.trial_id == id)?;
            let measured = s as f64 * t.outcome.throughput.step_s;
            (measured > 0.0).then_some((b, s, measured))
        })
        .min_by(|x, y| x.2.total_cmp(&y.2))?;
    let (b, s, measured) = best;
    let g = compute.replicas.max(1);
    let modelled = s as f64 * compute.step_compute_s(b as f64 / g as f64);
    Some((b, measured, modelled))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::analysis::BatchPoint;

    fn bp(b: usize, s: u64) -> BatchPoint {
        BatchPoint {
            batch_size: b,
            steps: Some(s),
            counts: crate::core::analysis::OutcomeCounts {
                trials: 1,
                reached: 1,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn ring_allreduce_formula() {
        let l = LinkModel {
            name: "x".into(),
            bandwidth: 1e9,
            latency: 1e-6,
            measured: false,
            source: None,
        };
        assert_eq!(l.allreduce_s(1e9, 1), 0.0);
        // G = 4: 2·3/4·1 s + 6 µs.
        assert!((l.allreduce_s(1e9, 4) - (1.5 + 6e-6)).abs() < 1e-12);
    }

    #[test]
    fn slow_links_flatten_speedup() {
        let a = Analysis {
            per_batch: (0..12)
                .map(|i| {
                    bp(
                        1 << (i + 4),
                        (1000.0 * (1.0 + 1024.0 / (1u64 << (i + 4)) as f64)) as u64,
                    )
                })
                .collect(),
            ..Analysis::default()
        };
        let c = ComputeModel {
            overhead_s: 1e-3,
            per_example_s: 1e-4,
            replicas: 1,
            samples: 3,
            param_bytes: 100e6,
        };
        let fast = project(&a, &c, &LinkModel::nvlink(), 1024);
        let slow = project(&a, &c, &LinkModel::ethernet_10g(), 1024);
        assert_eq!(fast.rows.len(), 11);
        assert!(fast
            .rows
            .iter()
            .all(|r| !r.measured && r.batch_size >= r.devices));
        let f = fast.rows.iter().map(|r| r.speedup).fold(0.0, f64::max);
        let s = slow.rows.iter().map(|r| r.speedup).fold(0.0, f64::max);
        assert!(f > 2.0 * s, "nvlink {f} vs 10GbE {s}");
        assert!(crate::report::projection::render_projection(&fast).contains("modelled"));
    }

    /// The analysis of SGD trials against val error ≤ 0.1.
    fn analyze_sgd(trials: &[TrialRecord]) -> Analysis {
        crate::analysis::analyze(
            &crate::core::analysis::Study::bare(
                crate::workload::spec::Target {
                    metric: crate::workload::spec::Metric::ValError,
                    value: 0.1,
                },
                crate::workload::spec::OptimizerKind::Sgd,
            ),
            trials,
        )
    }

    /// Reached trials at the given (B, steps), each step timed at exactly 1 ms + 10 µs/example of
    /// compute, with 25,000 parameters; and their analysis (val error ≤ 0.1, SGD).
    fn timed_trials(points: &[(usize, u64)]) -> (Vec<crate::core::record::TrialRecord>, Analysis) {
        use crate::analysis::tests::rec;
        use crate::core::trial::Outcome;
        let trials: Vec<_> = points
            .iter()
            .enumerate()
            .map(|(i, &(b, s))| {
                let mut r = rec(i as u64, b, 0.1, Outcome::Reached { step: s }, None);
                let t = 1e-3 + 1e-5 * b as f64;
                r.outcome.steps = s;
                r.outcome.throughput.compute_s = t;
                r.outcome.throughput.step_s = t;
                r.outcome.throughput.params = 25_000;
                r
            })
            .collect();
        let a = analyze_sgd(&trials);
        (trials, a)
    }

    /// Trials whose compute time is exactly 1 ms + 10 µs/example: the fit recovers it, the payload
    /// comes from the parameter count, the G = 1 check agrees, and the table marks nothing measured
    /// without a measured link.
    #[test]
    fn calibrates_from_trials_and_renders_one_table() {
        let (trials, a) = timed_trials(&[(16, 400), (64, 120), (256, 60), (1024, 50)]);
        let c = calibrate_compute(&trials).unwrap();
        assert!((c.overhead_s - 1e-3).abs() < 1e-9, "{c:?}");
        assert!((c.per_example_s - 1e-5).abs() < 1e-12, "{c:?}");
        assert_eq!(c.param_bytes, 100_000.0);
        let (b, measured, modelled) = measured_check(&trials, &a, &c).unwrap();
        // Fastest measured: B=16 400·1.16 ms = 0.464 s; B=64 120·1.64 ms = 0.197 s;
        // B=256 60·3.56 ms = 0.214 s; B=1024 50·11.24 ms = 0.562 s.
        assert_eq!(b, 64);
        assert!((measured - modelled).abs() < 1e-9);
        let ps = project_all(&trials, &a, 1024, None).unwrap();
        assert_eq!(ps.len(), 3, "no measured link without multi-device trials");
        // G ≤ the largest B measured: 1 … 1024 is 11 rows.
        assert!(ps.iter().all(|p| p.rows.len() == 11));
        let nv = &ps[0].rows;
        assert_eq!(
            (nv[0].devices, nv[0].batch_size, nv[0].speedup),
            (1, 64, 1.0)
        );
        assert!(nv[1].speedup > 1.0, "{nv:?}");
        // Ring latency 2·(G−1)·2 µs per step dominates at G = 1024 on this tiny model.
        assert!(nv[10].allreduce_s > nv[10].compute_s, "{:?}", nv[10]);
        let text = crate::report::projection::render_projection_table(
            &ps,
            "flex (cpu × 1 worker)",
            Some((b, measured, modelled)),
        );
        assert!(text.contains("NVLink") && text.contains("10GbE"), "{text}");
        assert!(text.contains("100.0 kB"), "{text}");
        assert!(!text.contains("×*"), "nothing is measured here: {text}");
        assert_eq!(
            text.lines().filter(|l| l.contains('│')).count(),
            12,
            "{text}"
        );
    }

    /// A multi-node sweep (1 worker per process × 2 processes over loopback): its exchange times
    /// are the measured link, named `processes/loopback`, with G = 2 (not the 1 worker of one
    /// process); they win over an in-process `bench --allreduce` table and over in-process
    /// trials of the same log; the compute is fitted per replica of the 2; the check uses them.
    #[test]
    fn multi_node_trials_give_the_cross_process_link() {
        use crate::analysis::tests::rec;
        use crate::core::trial::Outcome;
        let mut trials = vec![];
        for (i, (b, s)) in [(16usize, 400u64), (64, 120), (256, 60)]
            .into_iter()
            .enumerate()
        {
            let mut r = rec(i as u64, b, 0.1, Outcome::Reached { step: s }, None);
            let th = &mut r.outcome.throughput;
            // per-replica batch b/2: 1 ms + 10 µs/example
            th.compute_s = 1e-3 + 1e-5 * (b / 2) as f64;
            th.step_s = th.compute_s + 4e-3;
            th.params = 25_000;
            th.exchanged_bytes_per_step = 100_000;
            // 2·(2−1)/2 · 100 kB / 4 ms = 25 MB/s
            th.exchange_s = 4e-3;
            th.nodes = 2;
            th.loopback = true;
            trials.push(r);
        }
        // one in-process trial with 2 threads and a much faster exchange: ignored for the link
        let mut r = rec(9, 64, 0.1, Outcome::Reached { step: 130 }, None);
        r.spec.devices = crate::core::trial::DeviceSpec::Cpu { workers: 2 };
        r.outcome.throughput.compute_s = 1.3e-3;
        r.outcome.throughput.exchanged_bytes_per_step = 100_000;
        r.outcome.throughput.exchange_s = 1e-4;
        trials.push(r);
        let link = measured_link(&trials).unwrap();
        assert_eq!(link.name, "processes/loopback");
        assert!(is_cross_process(&link));
        assert!((link.bandwidth - 25e6).abs() < 1.0, "{link:?}");
        assert!(link.source.as_deref().unwrap().contains("across processes"));
        let c = calibrate_compute(&trials[..3]).unwrap();
        assert_eq!(c.replicas, 2);
        assert!((c.per_example_s - 1e-5).abs() < 1e-12, "{c:?}");
        let a = analyze_sgd(&trials);
        let table = LinkTable {
            path: "in-process".into(),
            rows: ring_table(1e-5, 4e9, 0.0),
        };
        let ps = project_all(&trials, &a, 64, Some(&table)).unwrap();
        assert_eq!(ps.len(), 4);
        assert_eq!(
            ps[3].link.name, "processes/loopback",
            "beats the in-process table"
        );
        let (g, bytes, measured, modelled) = exchange_check(&trials, &ps[3].link).unwrap();
        assert_eq!((g, bytes), (2, 100_000.0));
        assert!((measured - 4e-3).abs() < 1e-12 && (modelled - 4e-3).abs() < 1e-9);
        let text = crate::report::projection::render_projection_table(&ps, "flex", None);
        assert!(text.contains("processes/loopback 0.03 GB/s"), "{text}");
        // without multi-node trials the in-process table is the measured link again
        let ps = project_all(&trials[3..], &a, 64, Some(&table)).unwrap();
        assert!(!is_cross_process(&ps[3].link));
    }

    fn ring_table(lat: f64, bw: f64, noise: f64) -> Vec<LinkSample> {
        let mut out = vec![];
        let mut k = 0u64;
        for g in [2usize, 4, 8] {
            for i in 0..9 {
                let bytes = 1024.0 * 4f64.powi(i);
                let l = LinkModel {
                    name: "x".into(),
                    bandwidth: bw,
                    latency: lat,
                    measured: true,
                    source: None,
                };
                k += 1;
                // deterministic ±noise pattern
                let f = 1.0 + noise * if k.is_multiple_of(2) { 1.0 } else { -1.0 };
                out.push(LinkSample {
                    world: g,
                    bytes,
                    time_s: l.allreduce_s(bytes, g) * f,
                });
            }
        }
        out
    }

    /// The ring model fitted to a whole table recovers the latency and bandwidth it was made
    /// from, exactly without noise and within the noise with ±10 % on every cell.
    #[test]
    fn ring_fit_recovers_latency_and_bandwidth() {
        let (lat, bw, dev) = fit_ring(&ring_table(5e-6, 3e9, 0.0)).unwrap();
        assert!((lat / 5e-6 - 1.0).abs() < 1e-6, "{lat}");
        assert!((bw / 3e9 - 1.0).abs() < 1e-6, "{bw}");
        assert!(dev < 1e-6);
        let (lat, bw, dev) = fit_ring(&ring_table(5e-6, 3e9, 0.1)).unwrap();
        assert!((lat / 5e-6 - 1.0).abs() < 0.15, "{lat}");
        assert!((bw / 3e9 - 1.0).abs() < 0.15, "{bw}");
        assert!(dev > 0.05 && dev < 0.3, "{dev}");
        // Too little to fit, or nonsense: no model.
        assert!(fit_ring(&ring_table(5e-6, 3e9, 0.0)[..1]).is_none());
        assert!(fit_ring(&[LinkSample {
            world: 1,
            bytes: 4.0,
            time_s: 1.0
        }])
        .is_none());
    }

    /// A saved `bench --allreduce` table (its JSON, extra fields included) is found next to a log
    /// or one directory up, and the projection's measured link is its fit, not the trials'
    /// single-number link; a malformed table is skipped with a reason.
    #[test]
    fn saved_table_becomes_the_measured_link() {
        let rows: Vec<serde_json::Value> = ring_table(8e-6, 2e9, 0.0)
            .iter()
            .map(|r| {
                serde_json::json!({"world": r.world, "bytes": r.bytes as u64, "reps": 20,
                    "time_s": r.time_s, "algbw": r.bytes / r.time_s, "busbw": 0.0})
            })
            .collect();
        let json = serde_json::json!({"path": "burn-collective in-process threads, burn-flex (cpu)",
            "rows": rows, "fits": []});
        let dir = tempfile::tempdir().unwrap();
        let sweep = dir.path().join("sweep-x");
        std::fs::create_dir(&sweep).unwrap();
        let log = sweep.join("shard-0.jsonl");
        std::fs::write(&log, "").unwrap();
        assert!(crate::runlog::link_table::find_link_table(&log).0.is_none());
        std::fs::write(
            dir.path().join(crate::runlog::link_table::LINK_TABLE_FILE),
            json.to_string(),
        )
        .unwrap();
        let (t, note) = crate::runlog::link_table::find_link_table(&log);
        assert!(note.is_none());
        let t = t.expect("found one directory up");
        let l = t.link().unwrap();
        assert!(l.measured);
        assert!((l.latency / 8e-6 - 1.0).abs() < 1e-6, "{l:?}");
        assert!((l.bandwidth / 2e9 - 1.0).abs() < 1e-6, "{l:?}");
        assert!(l.source.as_deref().unwrap().contains("27 cells"), "{l:?}");
        // next to the log wins; a broken one is reported and skipped
        std::fs::write(
            sweep.join(crate::runlog::link_table::LINK_TABLE_FILE),
            "{\"rows\": 3}",
        )
        .unwrap();
        let (t2, note) = crate::runlog::link_table::find_link_table(&log);
        assert!(t2.is_some(), "falls back to the parent's table");
        assert!(note.unwrap().contains("not an all-reduce table"));

        let (trials, a) = timed_trials(&[(16, 400), (64, 120), (256, 60)]);
        let ps = project_all(&trials, &a, 64, Some(&t)).unwrap();
        assert_eq!(ps.len(), 4, "three datasheet links and the fitted one");
        let m = &ps[3];
        assert!(m.link.measured && m.link.latency > 0.0);
        // G = 2 all-reduce of 100 kB: 2·8 µs + 100 kB / 2 GB/s = 66 µs
        let r2 = m.rows.iter().find(|r| r.devices == 2).unwrap();
        assert!((r2.allreduce_s - 66e-6).abs() < 1e-9, "{r2:?}");
        let text = crate::report::projection::render_projection_table(&ps, "cpu", None);
        assert!(text.contains("measured 2.00 GB/s 8 µs"), "{text}");
    }
}
