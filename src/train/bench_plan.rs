//! What `bench` will measure and about how long it takes, said before it starts, and its
//! progress as each measurement finishes (`BenchEvent`; the CLI prints them on stderr). Each
//! measurement's time is predicted from its training FLOPs and this machine's sgemm rate at an
//! assumed efficiency band (small models are bound by per-op overheads, large ones by gemm), and
//! the prediction of what is left is rescaled by what the finished measurements really took.

use std::time::Instant;

/// Progress of [`super::bench::run_bench_with`].
#[derive(Clone, Debug, PartialEq)]
pub enum BenchEvent {
    /// What will be measured, in order, and the predicted total (seconds: low, high).
    Plan {
        measurements: Vec<String>,
        estimate_s: [f64; 2],
        sgemm_gflops: Option<f64>,
    },
    /// One measurement finished: its result in words, what it took, what is predicted left.
    Done {
        index: usize,
        of: usize,
        name: String,
        result: String,
        seconds: f64,
        left_s: f64,
    },
}

/// Fraction of the machine's sgemm rate a training step reaches: the band the up-front range
/// assumes (measured here: the small CNN near the top, the ResNet-8 of width 4 near the bottom).
pub const EFFICIENCY: [f64; 2] = [0.04, 0.4];
/// The middle of the band, for the running prediction before anything has finished.
pub const EFFICIENCY_MID: f64 = 0.12;
/// Fixed cost of one measurement (model build, data, warm-up), seconds.
pub const OVERHEAD_S: f64 = 0.5;
/// A preset's trainer measurement aims at this many seconds (its steps from its FLOPs, 3–30).
pub const PRESET_CASE_S: f64 = 3.0;

/// One planned measurement: its name and its training FLOPs in all (None: not counted).
#[derive(Clone, Debug)]
pub struct Planned {
    pub name: String,
    pub flops: Option<f64>,
}

/// The plan and the clock: emits [`BenchEvent`]s.
pub struct Progress<'a> {
    planned: Vec<Planned>,
    gflops: f64,
    done: usize,
    predicted_done: f64,
    actual_done: f64,
    sink: &'a mut dyn FnMut(BenchEvent),
}

impl<'a> Progress<'a> {
    /// Emits the plan: `planned` in order on a machine of `gflops` sgemm GFLOP/s.
    pub fn start(
        planned: Vec<Planned>,
        gflops: Option<f64>,
        sink: &'a mut dyn FnMut(BenchEvent),
    ) -> Self {
        let g = gflops.filter(|g| *g > 0.0).unwrap_or(50.0);
        let total = |eff: f64| planned.iter().map(|p| predict(p, g, eff)).sum::<f64>();
        sink(BenchEvent::Plan {
            measurements: planned.iter().map(|p| p.name.clone()).collect(),
            estimate_s: [total(EFFICIENCY[1]), total(EFFICIENCY[0])],
            sgemm_gflops: gflops,
        });
        Progress {
            planned,
            gflops: g,
            done: 0,
            predicted_done: 0.0,
            actual_done: 0.0,
            sink,
        }
    }

    /// Runs the next planned measurement (`f` returns its result and its result in words).
    pub fn measure<T>(&mut self, f: impl FnOnce() -> (T, String)) -> T {
        let t0 = Instant::now();
        let (out, result) = f();
        let seconds = t0.elapsed().as_secs_f64();
        let i = self.done.min(self.planned.len().saturating_sub(1));
        let name = self
            .planned
            .get(i)
            .map(|p| p.name.clone())
            .unwrap_or_default();
        if let Some(p) = self.planned.get(i) {
            self.predicted_done += predict(p, self.gflops, EFFICIENCY_MID);
        }
        self.actual_done += seconds;
        self.done += 1;
        let scale = if self.predicted_done > 0.0 {
            self.actual_done / self.predicted_done
        } else {
            1.0
        };
        let left_s = self.planned[self.done.min(self.planned.len())..]
            .iter()
            .map(|p| predict(p, self.gflops, EFFICIENCY_MID))
            .sum::<f64>()
            * scale;
        (self.sink)(BenchEvent::Done {
            index: self.done,
            of: self.planned.len(),
            name,
            result,
            seconds,
            left_s,
        });
        out
    }
}

/// Predicted seconds of one measurement at efficiency `eff` of `gflops`.
pub fn predict(p: &Planned, gflops: f64, eff: f64) -> f64 {
    OVERHEAD_S + p.flops.unwrap_or(0.0) / (gflops * 1e9 * eff)
}

/// Steps of a preset's trainer measurement at `batch`: about [`PRESET_CASE_S`] seconds at the
/// middle efficiency, 3–30 (a paper-size model's step takes seconds on a CPU).
pub fn preset_steps(train_flops_per_example: Option<f64>, batch: usize, gflops: f64) -> u64 {
    match train_flops_per_example.filter(|f| *f > 0.0) {
        Some(f) => {
            let per_step = f * batch as f64 / (gflops * 1e9 * EFFICIENCY_MID);
            ((PRESET_CASE_S / per_step).floor() as u64).clamp(3, 30)
        }
        None => 30,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_comes_first_and_each_measurement_rescales_what_is_left() {
        let planned: Vec<Planned> = (0..3)
            .map(|i| Planned {
                name: format!("case {i}"),
                flops: Some(1e9 * EFFICIENCY_MID), // 1 s of compute at 1 GFLOP/s
            })
            .collect();
        let mut events = Vec::new();
        let mut sink = |e: BenchEvent| events.push(e);
        let mut p = Progress::start(planned, Some(1.0), &mut sink);
        let x = p.measure(|| {
            std::thread::sleep(std::time::Duration::from_millis(30));
            (7, "seven".to_string())
        });
        assert_eq!(x, 7);
        drop(p);
        let BenchEvent::Plan {
            measurements,
            estimate_s,
            ..
        } = &events[0]
        else {
            panic!("{events:?}")
        };
        assert_eq!(measurements.len(), 3);
        // 3 × (overhead + compute at the band's ends)
        let hi = 3.0 * (OVERHEAD_S + EFFICIENCY_MID / EFFICIENCY[0]);
        let lo = 3.0 * (OVERHEAD_S + EFFICIENCY_MID / EFFICIENCY[1]);
        assert!((estimate_s[0] - lo).abs() < 1e-9 && (estimate_s[1] - hi).abs() < 1e-9);
        let BenchEvent::Done {
            index,
            of,
            name,
            result,
            seconds,
            left_s,
        } = &events[1]
        else {
            panic!("{events:?}")
        };
        assert_eq!(
            (*index, *of, name.as_str(), result.as_str()),
            (1, 3, "case 0", "seven")
        );
        // what is left: the two others, each predicted as long as the first really took
        assert!(
            (left_s - 2.0 * seconds).abs() < 1e-9,
            "{left_s} vs {seconds}"
        );
    }

    #[test]
    fn a_preset_measurement_is_sized_from_its_flops() {
        // a step predicted at 10 s (a paper-size model) gets the floor; a cheap one the cap
        assert_eq!(
            preset_steps(Some(10.0 * 50e9 * EFFICIENCY_MID / 128.0), 128, 50.0),
            3
        );
        assert_eq!(preset_steps(Some(1e3), 128, 50.0), 30);
        assert_eq!(preset_steps(None, 128, 50.0), 30);
        let s = preset_steps(Some(0.1 * 50e9 * EFFICIENCY_MID / 128.0), 128, 50.0);
        assert_eq!(s, 30);
        let s = preset_steps(Some(0.5 * 50e9 * EFFICIENCY_MID / 128.0), 128, 50.0);
        assert_eq!(s, 6);
    }
}
