//! `cargo bench`: the same measurements as `scaling-lab bench` (MLP 784-256-10 step at B = 32, 128, 1024,
//! the paper-size MNIST CNN, the mnist-cnn-sgd small CNN and the shakespeare-lstm-adam char-LSTM at
//! B = 128, every preset model at B = 128) and, when a JAX python exists
//! ($SCALING_LAB_JAX_PYTHON, else a python3 on PATH that imports jax), the JAX peers in `benches/peers/` in the same run,
//! interleaved with ours (3 rounds, best of each), with the ratios.
//! Env: SCALING_LAB_BENCH_ROUNDS (default 3), SCALING_LAB_BENCH_JSON=1 for JSON,
//! SCALING_LAB_BENCH_CONCURRENCY=1 to add the 1-vs-2-trials measurement, SCALING_LAB_BENCH_NO_PRESETS=1
//! to skip the preset models.
fn main() {
    let env = |k: &str| std::env::var(k).ok();
    let args = scaling_lab::train::bench::BenchArgs {
        steps: 200,
        rounds: env("SCALING_LAB_BENCH_ROUNDS")
            .and_then(|v| v.parse().ok())
            .unwrap_or(3),
        peer: scaling_lab::train::bench_peer::peer_python().is_some(),
        json: env("SCALING_LAB_BENCH_JSON").is_some_and(|v| v == "1"),
        concurrency: env("SCALING_LAB_BENCH_CONCURRENCY").is_some_and(|v| v == "1"),
        no_presets: env("SCALING_LAB_BENCH_NO_PRESETS").is_some_and(|v| v == "1"),
        ..Default::default()
    };
    let r = scaling_lab::train::bench::run_bench(&args);
    match scaling_lab::report::bench::render(&r, args.json) {
        Ok(text) => print!("{text}"),
        Err(e) => {
            eprintln!("bench failed: {e:#}");
            std::process::exit(1);
        }
    }
}
