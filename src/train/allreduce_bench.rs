//! An nccl-tests-style all-reduce benchmark of the lab's own exchange path (burn-collective,
//! in-process threads on the Flex CPU backend): message size × G → time, algorithm bandwidth and
//! bus bandwidth, and a fit `t(bytes) = latency + bytes / bandwidth` per G that the
//! time-to-target projection can use as its link model. Returns values; never prints.
//!
//! Definitions as in nccl-tests: algbw = bytes / time; busbw = algbw · 2(G−1)/G (the bytes each
//! link moves in a bandwidth-optimal ring, so busbw is comparable across G and with the hardware's
//! link bandwidth). Time is the median over repetitions of one `all_reduce` (Mean) call, all G
//! threads released together by a barrier.

use std::sync::{Arc, Barrier};
use std::time::Instant;

use anyhow::{anyhow, Context};
use burn::backend::Flex;
use burn::collective::{all_reduce, finish_collective, reset_collective, PeerId, ReduceOperation};
use burn::tensor::{Tensor, TensorData, TensorPrimitive};
use serde::{Deserialize, Serialize};

/// What to measure.
#[derive(Clone, Debug)]
pub struct AllreduceBenchOptions {
    /// Message sizes in bytes (fp32 elements × 4).
    pub sizes: Vec<usize>,
    /// Numbers of replicas (threads).
    pub worlds: Vec<usize>,
    /// Repetitions per cell: `reps_small` up to 1 MiB, fewer above (each at least 3).
    pub reps_small: usize,
}

impl Default for AllreduceBenchOptions {
    fn default() -> Self {
        AllreduceBenchOptions {
            // 1 KiB … 64 MiB in steps of 4×
            sizes: (0..9).map(|i| 1024usize << (2 * i)).collect(),
            worlds: vec![2, 4, 8],
            reps_small: 20,
        }
    }
}

/// One cell of the table.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AllreduceRow {
    pub world: usize,
    pub bytes: usize,
    pub reps: usize,
    /// Median seconds of one all-reduce.
    pub time_s: f64,
    /// bytes / time (bytes per second).
    pub algbw: f64,
    /// algbw · 2(G−1)/G.
    pub busbw: f64,
}

/// `t(bytes) = latency_s + bytes / bandwidth` fitted to one G's rows (least squares on relative
/// error, so small and large messages weigh alike).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LinkFit {
    pub world: usize,
    pub latency_s: f64,
    /// Bytes per second (algorithm bandwidth of large messages).
    pub bandwidth: f64,
    /// Largest relative deviation of a measured time from the fit.
    pub max_rel_err: f64,
}

impl LinkFit {
    /// Predicted seconds of one all-reduce of `bytes`.
    pub fn time(&self, bytes: f64) -> f64 {
        self.latency_s + bytes / self.bandwidth
    }
}

/// The whole benchmark.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AllreduceBench {
    /// What was measured ("burn-collective in-process threads, burn-flex (cpu)").
    pub path: String,
    pub rows: Vec<AllreduceRow>,
    pub fits: Vec<LinkFit>,
}

impl AllreduceBench {
    pub fn fit_for(&self, world: usize) -> Option<&LinkFit> {
        self.fits.iter().find(|f| f.world == world)
    }

    /// The nccl-tests-style table plus one fit line per G.
    pub fn render(&self) -> String {
        let mut s = format!("# all-reduce (mean, fp32) — {}\n", self.path);
        s += &format!(
            "{:>4} {:>10} {:>6} {:>12} {:>12} {:>12}\n",
            "G", "size", "reps", "time", "algbw GB/s", "busbw GB/s"
        );
        for r in &self.rows {
            s += &format!(
                "{:>4} {:>10} {:>6} {:>12} {:>12.3} {:>12.3}\n",
                r.world,
                human_bytes(r.bytes),
                r.reps,
                human_time(r.time_s),
                r.algbw / 1e9,
                r.busbw / 1e9
            );
        }
        for f in &self.fits {
            s += &format!(
                "fit G={}: latency {} + bytes / {:.3} GB/s (max deviation {:.0}%)\n",
                f.world,
                human_time(f.latency_s),
                f.bandwidth / 1e9,
                f.max_rel_err * 100.0
            );
        }
        s
    }
}

fn human_bytes(b: usize) -> String {
    if b >= 1 << 20 {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

fn human_time(t: f64) -> String {
    if t >= 1.0 {
        format!("{t:.2} s")
    } else if t >= 1e-3 {
        format!("{:.2} ms", t * 1e3)
    } else {
        format!("{:.1} µs", t * 1e6)
    }
}

/// Weighted least squares of t = a + c·n with weights 1/t² (relative error); `a` ≥ 0.
pub fn fit_link(world: usize, rows: &[(f64, f64)]) -> Option<LinkFit> {
    if rows.len() < 2 {
        return None;
    }
    let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(n, t) in rows {
        let w = 1.0 / (t * t).max(1e-300);
        sw += w;
        sx += w * n;
        sy += w * t;
        sxx += w * n * n;
        sxy += w * n * t;
    }
    let det = sw * sxx - sx * sx;
    if det.abs() < 1e-300 {
        return None;
    }
    let mut c = (sw * sxy - sx * sy) / det;
    let mut a = (sy - c * sx) / sw;
    if a < 0.0 {
        // pure bandwidth through the origin
        a = 0.0;
        c = sxy / sxx;
    }
    if c <= 0.0 {
        return None;
    }
    let max_rel_err = rows
        .iter()
        .map(|&(n, t)| ((a + c * n) / t - 1.0).abs())
        .fold(0.0, f64::max);
    Some(LinkFit {
        world,
        latency_s: a,
        bandwidth: 1.0 / c,
        max_rel_err,
    })
}

fn reps_for(bytes: usize, small: usize) -> usize {
    match bytes {
        b if b <= 1 << 20 => small.max(3),
        b if b <= 4 << 20 => (small / 2).max(3),
        _ => 3,
    }
}

/// Runs the benchmark; `progress` sees each row as it is measured. Holds the process-wide
/// collective (no trial can run multi-replica meanwhile).
pub fn allreduce_bench(
    opts: &AllreduceBenchOptions,
    progress: &mut dyn FnMut(&AllreduceRow),
) -> anyhow::Result<AllreduceBench> {
    let mut rows = Vec::new();
    for &world in &opts.worlds {
        anyhow::ensure!(
            world >= 2,
            "an all-reduce needs at least 2 replicas (got {world})"
        );
        let times = measure_world(world, &opts.sizes, opts.reps_small)?;
        for (&bytes, (reps, t)) in opts.sizes.iter().zip(times) {
            let algbw = bytes as f64 / t;
            let row = AllreduceRow {
                world,
                bytes,
                reps,
                time_s: t,
                algbw,
                busbw: algbw * 2.0 * (world - 1) as f64 / world as f64,
            };
            progress(&row);
            rows.push(row);
        }
    }
    let fits = opts
        .worlds
        .iter()
        .filter_map(|&g| {
            let pts: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.world == g)
                .map(|r| (r.bytes as f64, r.time_s))
                .collect();
            fit_link(g, &pts)
        })
        .collect();
    Ok(AllreduceBench {
        path: "burn-collective in-process threads, burn-flex (cpu)".into(),
        rows,
        fits,
    })
}

/// (reps, median seconds) per size for G threads.
fn measure_world(
    world: usize,
    sizes: &[usize],
    reps_small: usize,
) -> anyhow::Result<Vec<(usize, f64)>> {
    let _guard = super::exchange::collective_lock();
    reset_collective::<Flex>();
    let barrier = Arc::new(Barrier::new(world));
    let sizes = Arc::new(sizes.to_vec());
    let handles: Vec<_> = (0..world)
        .map(|rank| {
            let barrier = barrier.clone();
            let sizes = sizes.clone();
            std::thread::Builder::new()
                .name(format!("allreduce-bench-{rank}"))
                .spawn(move || -> Result<Vec<(usize, f64)>, String> {
                    let peer = PeerId::from(rank);
                    let dev = Default::default();
                    super::exchange::join_collective::<Flex>(rank, world, None, &dev)?;
                    let mut out = Vec::new();
                    for &bytes in sizes.iter() {
                        let n = (bytes / 4).max(1);
                        let data = vec![1.0f32 + rank as f32; n];
                        let t = Tensor::<Flex, 1>::from_data(TensorData::new(data, [n]), &dev);
                        let reps = reps_for(bytes, reps_small);
                        let mut times = Vec::with_capacity(reps);
                        for i in 0..=reps {
                            barrier.wait();
                            let t0 = Instant::now();
                            let p = t.clone().into_primitive().tensor();
                            let r = all_reduce::<Flex>(peer, p, ReduceOperation::Mean)
                                .map_err(|e| format!("all-reduce: {e:?}"))?;
                            // make sure the result exists (Flex is eager; this is a cheap read)
                            let r = Tensor::<Flex, 1>::from_primitive(TensorPrimitive::Float(r));
                            let first: f32 = r.narrow(0, 0, 1).into_scalar();
                            let dt = t0.elapsed().as_secs_f64();
                            if rank == 0 && i == 0 {
                                let want = 1.0 + (world as f32 - 1.0) / 2.0;
                                if (first - want).abs() > 1e-4 {
                                    return Err(format!("wrong mean {first}, expected {want}"));
                                }
                            }
                            if i > 0 {
                                times.push(dt); // i = 0 is the warm-up
                            }
                        }
                        times.sort_by(|a, b| a.total_cmp(b));
                        out.push((reps, times[times.len() / 2]));
                    }
                    let _ = finish_collective::<Flex>(peer);
                    Ok(out)
                })
                .context("spawning a benchmark thread")
        })
        .collect::<anyhow::Result<_>>()?;
    let mut results: Vec<Vec<(usize, f64)>> = Vec::new();
    for h in handles {
        results.push(
            h.join()
                .map_err(|_| anyhow!("a benchmark thread panicked"))?
                .map_err(|e| anyhow!("{e}"))?,
        );
    }
    // A call ends for everyone when the slowest peer has contributed: report the slowest thread.
    let mut merged = results[0].clone();
    for r in &results[1..] {
        for (m, x) in merged.iter_mut().zip(r) {
            m.1 = m.1.max(x.1);
        }
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_recovers_latency_and_bandwidth() {
        let (lat, bw) = (50e-6, 2e9);
        let pts: Vec<(f64, f64)> = (0..8)
            .map(|i| {
                let n = 1024.0 * 4f64.powi(i);
                (n, lat + n / bw)
            })
            .collect();
        let f = fit_link(2, &pts).unwrap();
        assert!((f.latency_s / lat - 1.0).abs() < 1e-6, "{f:?}");
        assert!((f.bandwidth / bw - 1.0).abs() < 1e-6, "{f:?}");
        assert!(f.max_rel_err < 1e-6);
        assert!((f.time(1e6) - (lat + 1e6 / bw)).abs() < 1e-12);
        assert!(fit_link(2, &pts[..1]).is_none());
    }

    #[test]
    fn a_small_table_is_measured_with_nccl_definitions() {
        let b = allreduce_bench(
            &AllreduceBenchOptions {
                sizes: vec![4096, 65536],
                worlds: vec![2, 3],
                reps_small: 3,
            },
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(b.rows.len(), 4);
        for r in &b.rows {
            assert!(r.time_s > 0.0);
            assert!((r.algbw - r.bytes as f64 / r.time_s).abs() < 1e-6 * r.algbw);
            let factor = 2.0 * (r.world as f64 - 1.0) / r.world as f64;
            assert!((r.busbw / r.algbw - factor).abs() < 1e-12);
        }
        assert!(b.render().contains("busbw"));
        assert!(allreduce_bench(
            &AllreduceBenchOptions {
                worlds: vec![1],
                ..Default::default()
            },
            &mut |_| {}
        )
        .is_err());
    }
}
