//! `scaling-lab bench`'s output: the [`BenchReport`] the trainer's benchmarks measured
//! (`train::bench`) as text tables, one per measurement, or as one JSON object.

use std::fmt::Write as _;

use crate::train::bench::BenchReport;

/// The bench's output: one JSON object with `json`, else the text tables.
pub fn render(r: &BenchReport, json: bool) -> anyhow::Result<String> {
    Ok(if json {
        serde_json::to_string_pretty(r)? + "\n"
    } else {
        render_tables(r)
    })
}

/// The report as text tables (the CLI prints them), in the order the bench measures.
pub fn render_tables(r: &BenchReport) -> String {
    let mut out = String::new();
    cpu_and_mlp(r, &mut out);
    single_models(r, &mut out);
    fused_groups(r, &mut out);
    peers(r, &mut out);
    presets(r, &mut out);
    concurrency(r, &mut out);
    out
}

/// The machine's CPU and the MLP step per batch size.
fn cpu_and_mlp(r: &BenchReport, out: &mut String) {
    let _ = writeln!(
        out,
        "CPU: {} threads, avx2 {}, fma {}, avx512f {} (gemm picks its kernels at run time)",
        r.cpu.threads, r.cpu.avx2, r.cpu.fma, r.cpu.avx512f
    );
    let _ = writeln!(
        out,
        "MLP 784-256-10 train step (SGD momentum 0.9, {}), Flex CPU, 1 worker",
        r.precision.name()
    );
    let _ = writeln!(out, "{:>8} {:>14} {:>12}", "batch", "examples/s", "ms/step");
    for p in &r.mlp {
        let _ = writeln!(
            out,
            "{:>8} {:>14.0} {:>12.3}",
            p.batch, p.examples_per_s, p.ms_per_step
        );
    }
    let _ = writeln!(out);
}

/// The paper-size CNN, the small CNN and the char-LSTM: one line each.
fn single_models(r: &BenchReport, out: &mut String) {
    if let Some(c) = &r.cnn_paper {
        let _ = writeln!(
            out,
            "Paper-size MNIST CNN (28x28, 5x5 convs 32/64, dense 1024) at B = {}: {:.0} examples/s, {:.1} ms/step",
            c.batch, c.examples_per_s, c.ms_per_step
        );
    }
    if let Some(c) = &r.small_cnn {
        let _ = writeln!(
            out,
            "mnist-cnn-sgd small CNN (14x14, 5x5 convs 8/16, dense 32, SGD) at B = {}: {:.0} examples/s, {:.2} ms/step",
            c.batch, c.examples_per_s, c.ms_per_step
        );
    }
    if let Some(c) = &r.char_lstm {
        let _ = writeln!(
            out,
            "shakespeare-lstm-adam char-LSTM (32/64, T = 32, Adam + clip 1.0) at B = {}: {:.0} sequences/s, {:.2} ms/step",
            c.batch, c.examples_per_s, c.ms_per_step
        );
    }
}

/// Fused trial groups, and the machine's sgemm rate measured beside them.
fn fused_groups(r: &BenchReport, out: &mut String) {
    if r.fused.is_empty() {
        return;
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Fused trial groups: K trials as one program (all threads), B = 128 per trial"
    );
    let _ = writeln!(
        out,
        "model                K     examples/s   ms/step   GFLOP/s-equiv"
    );
    for g in &r.fused {
        let _ = writeln!(
            out,
            "{:<12} {:>8} {:>14.0} {:>9.2} {:>15}",
            g.model,
            g.members,
            g.examples_per_s,
            g.ms_per_step,
            g.gflops.map_or("-".into(), |v| format!("{v:.1}"))
        );
    }
    if let Some(m) = r.machine_sgemm_gflops {
        let _ = writeln!(
            out,
            "this machine's sgemm (1024^3, all threads, same run): {m:.0} GFLOP/s"
        );
    }
}

/// Our figures against the JAX peers', and why the peers did not run (when they did not).
fn peers(r: &BenchReport, out: &mut String) {
    if !r.peers.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Against the JAX peers (same run, best round each; ratio > 1: we are faster):"
        );
        let _ = writeln!(
            out,
            "{:<16} {:>6} {:>14} {:>14} {:>8}",
            "model", "batch", "ours ex/s", "jax ex/s", "ratio"
        );
        for p in &r.peers {
            let _ = writeln!(
                out,
                "{:<16} {:>6} {:>14.0} {:>14.0} {:>7.2}x",
                p.model, p.batch, p.ours_examples_per_s, p.peer_examples_per_s, p.ratio
            );
        }
    }
    if let Some(n) = &r.peer_note {
        let _ = writeln!(out, "{n}");
    }
}

/// Every preset's model through the trainer (or the error that stopped it).
fn presets(r: &BenchReport, out: &mut String) {
    if r.presets.is_empty() {
        return;
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Preset models at B = 128 through the trainer (eval excluded), {}:",
        r.precision.name()
    );
    let _ = writeln!(
        out,
        "{:<32} {:>14} {:>12} {:>10}",
        "preset", "examples/s", "ms/step", "params"
    );
    for p in &r.presets {
        match &p.error {
            None => {
                let _ = writeln!(
                    out,
                    "{:<32} {:>14.0} {:>12.2} {:>10}",
                    p.preset, p.examples_per_s, p.ms_per_step, p.params
                );
            }
            Some(e) => {
                let _ = writeln!(out, "{:<32} error: {e}", p.preset);
            }
        }
    }
}

/// One trial on all threads against two on one thread each, per preset.
fn concurrency(r: &BenchReport, out: &mut String) {
    if r.concurrency.is_empty() {
        return;
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Sweep concurrency at B = 128: one trial on all threads vs two trials on one thread each:"
    );
    let _ = writeln!(
        out,
        "{:<32} {:>14} {:>14} {:>12}",
        "preset", "1 trial ex/s", "2 trials ex/s", "concurrency"
    );
    for c in &r.concurrency {
        let _ = writeln!(
            out,
            "{:<32} {:>14.0} {:>14.0} {:>12}",
            c.preset,
            c.one_trial_examples_per_s,
            c.two_trials_examples_per_s,
            c.recommended_concurrency
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::bench::{CpuFeatures, PresetPoint, StepPoint};
    use crate::workload::spec::Precision;

    fn report() -> BenchReport {
        BenchReport {
            backend: "flex-cpu".into(),
            precision: Precision::Fp32,
            cpu: CpuFeatures {
                threads: 2,
                avx2: true,
                fma: true,
                avx512f: false,
            },
            mlp: vec![StepPoint {
                batch: 32,
                examples_per_s: 12345.6,
                ms_per_step: 2.5921,
            }],
            cnn_paper: None,
            small_cnn: None,
            char_lstm: None,
            presets: vec![PresetPoint {
                preset: "digits-mlp-sgd".into(),
                batch: 128,
                examples_per_s: 0.0,
                ms_per_step: 0.0,
                params: 0,
                error: Some("no data".into()),
            }],
            concurrency: Vec::new(),
            fused: Vec::new(),
            machine_sgemm_gflops: None,
            peers: Vec::new(),
            peer_note: Some("no JAX python".into()),
        }
    }

    #[test]
    fn tables_show_what_was_measured_and_only_that() {
        let t = render_tables(&report());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "CPU: 2 threads, avx2 true, fma true, avx512f false (gemm picks its kernels at run time)"
        );
        assert_eq!(lines[3], "      32          12346        2.592");
        assert!(t.contains("\nno JAX python\n"), "{t}");
        assert!(
            t.contains("digits-mlp-sgd                   error: no data"),
            "{t}"
        );
        // no fused groups, peers or concurrency measured: no table for them
        for absent in [
            "Fused trial groups",
            "Against the JAX peers",
            "Sweep concurrency",
        ] {
            assert!(!t.contains(absent), "{t}");
        }
    }

    #[test]
    fn json_is_the_report_itself() {
        let r = report();
        let j = render(&r, true).unwrap();
        assert_eq!(serde_json::from_str::<BenchReport>(&j).unwrap(), r);
        assert_eq!(render(&r, false).unwrap(), render_tables(&r));
    }
}
