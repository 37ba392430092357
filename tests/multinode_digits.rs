//! One trial across two processes on 127.0.0.1 (burn-collective's global mode, patched in
//! vendor/): the same steps-to-target and loss trajectory as `--workers 2` in one process; ten
//! trials in a row in the same two processes (the unpatched crate hung on the second
//! all-reduce); killing one process makes the other exit with an error within 30 s.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use scaling_lab::runlog::reader::read_run_log;

const BIN: &str = env!("CARGO_BIN_EXE_scaling-lab");

/// Multi-process tests share the machine's ports and 2 cores: one at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static M: Mutex<()> = Mutex::new(());
    M.lock().unwrap_or_else(|e| e.into_inner())
}

/// A port P with P..P+3 free (orchestrator, two data services, liveness).
fn free_ports() -> u16 {
    for _ in 0..200 {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let p = l.local_addr().unwrap().port();
        drop(l);
        if p > 60000 {
            continue;
        }
        if (p..p + 4).all(|q| TcpListener::bind(("0.0.0.0", q)).is_ok()) {
            return p;
        }
    }
    panic!("no 4 consecutive free ports");
}

fn spawn(args: &[String]) -> Child {
    Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start scaling-lab")
}

fn node_args(rank: usize, port: u16) -> Vec<String> {
    vec![
        "--workers".into(),
        "1".into(),
        "--nodes".into(),
        "2".into(),
        "--node-rank".into(),
        rank.to_string(),
        "--coordinator".into(),
        format!("127.0.0.1:{port}"),
    ]
}

fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// Runs rank 0 and rank 1 with `base` + node flags; both must succeed within `limit`.
fn two_nodes(base: &[&str], limit: Duration) -> (Output, Output) {
    let port = free_ports();
    let mut a0 = strings(base);
    a0.extend(node_args(0, port));
    let mut a1 = strings(base);
    a1.extend(node_args(1, port));
    let c0 = spawn(&a0);
    let c1 = spawn(&a1);
    let t0 = Instant::now();
    let (w0, w1) = (wait_limit(c0, limit), wait_limit(c1, limit));
    let (o0, o1) = (w0.expect("rank 0 hung"), w1.expect("rank 1 hung"));
    eprintln!("two nodes: {:.1} s", t0.elapsed().as_secs_f64());
    for (r, o) in [(0, &o0), (1, &o1)] {
        assert!(
            o.status.success(),
            "rank {r} failed: {}\n{}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
    (o0, o1)
}

/// Waits for a child at most `limit` (then kills it and returns None).
fn wait_limit(mut c: Child, limit: Duration) -> Option<Output> {
    let t0 = Instant::now();
    loop {
        if c.try_wait().unwrap().is_some() {
            return Some(c.wait_with_output().unwrap());
        }
        if t0.elapsed() > limit {
            let _ = c.kill();
            let o = c.wait_with_output().unwrap();
            eprintln!(
                "killed after {limit:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1e-12)
}

/// Eval points (step, metric, train_loss) of an outcome JSON.
fn evals(outcome: &serde_json::Value) -> Vec<(u64, f64, f64)> {
    outcome["evals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["step"].as_u64().unwrap(),
                e["metric"].as_f64().unwrap(),
                e["train_loss"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn same_trajectory(what: &str, a: &[(u64, f64, f64)], b: &[(u64, f64, f64)]) {
    assert_eq!(a.len(), b.len(), "{what}: number of evaluations");
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.0, y.0, "{what}: eval steps");
        assert!(
            rel(x.2, y.2) <= 1e-4,
            "{what}: train loss at step {}: {} vs {}",
            x.0,
            x.2,
            y.2
        );
        assert!(
            (x.1 - y.1).abs() <= 1e-9,
            "{what}: val metric at step {}: {} vs {}",
            x.0,
            x.1,
            y.1
        );
    }
}

const TRAIN: [&str; 10] = [
    "train",
    "--preset",
    "digits-mlp-sgd",
    "--batch-size",
    "64",
    "--lr",
    "0.3",
    "--seed",
    "7",
    "--json",
];

#[test]
fn two_processes_train_like_two_workers() {
    let _g = serial();
    let mut local = strings(&TRAIN);
    local.extend(strings(&["--workers", "2"]));
    let l = Command::new(BIN).args(&local).output().unwrap();
    assert!(l.status.success(), "{}", String::from_utf8_lossy(&l.stderr));
    let lv = json(&l);
    let (o0, o1) = two_nodes(&TRAIN, Duration::from_secs(120));
    let (v0, v1) = (json(&o0), json(&o1));
    assert_eq!(
        lv["outcome"]["outcome"]["status"], "reached",
        "the local run reaches the target: {lv}"
    );
    for (r, v) in [(0, &v0), (1, &v1)] {
        assert_eq!(
            v["outcome"]["outcome"], lv["outcome"]["outcome"],
            "rank {r}: steps-to-target vs --workers 2"
        );
        same_trajectory(
            &format!("rank {r}"),
            &evals(&v["outcome"]),
            &evals(&lv["outcome"]),
        );
    }
    let ex = v0["outcome"]["throughput"]["exchange_s"].as_f64().unwrap();
    let ex_local = lv["outcome"]["throughput"]["exchange_s"].as_f64().unwrap();
    eprintln!(
        "exchange per step: {:.3} ms across processes vs {:.3} ms across threads",
        ex * 1e3,
        ex_local * 1e3
    );
}

#[test]
fn ten_trials_in_a_row_in_the_same_processes() {
    let _g = serial();
    let tmp = tempfile::tempdir().unwrap();
    let sweep = |runs: &Path| {
        strings(&[
            "sweep",
            "digits-mlp-sgd",
            "--batch-sizes",
            "64",
            "--trials",
            "10",
            "--seed",
            "2",
            "--concurrency",
            "1",
            "--json",
            "--runs-dir",
            runs.to_str().unwrap(),
        ])
    };
    let mut local = sweep(&tmp.path().join("local"));
    local.extend(strings(&["--workers", "2"]));
    let l = Command::new(BIN).args(&local).output().unwrap();
    assert!(l.status.success(), "{}", String::from_utf8_lossy(&l.stderr));
    let local_log = read_run_log(Path::new(json(&l)["log"].as_str().unwrap())).unwrap();

    let base = sweep(&tmp.path().join("multi"));
    let base: Vec<&str> = base.iter().map(|s| s.as_str()).collect();
    let (o0, _o1) = two_nodes(&base, Duration::from_secs(300));
    let v0 = json(&o0);
    let multi_log = read_run_log(Path::new(v0["log"].as_str().unwrap())).unwrap();
    assert_eq!(multi_log.trials.len(), 10);
    assert_eq!(local_log.trials.len(), 10);
    // only rank 0 logs
    let logs: Vec<_> = std::fs::read_dir(tmp.path().join("multi"))
        .unwrap()
        .filter_map(|e| e.ok())
        .collect();
    assert_eq!(logs.len(), 1, "rank 1 must not write a log");
    for (m, l) in multi_log.trials.iter().zip(&local_log.trials) {
        assert_eq!(m.trial_id, l.trial_id);
        assert_eq!(m.outcome.outcome, l.outcome.outcome, "trial {}", m.trial_id);
        let ev = |t: &scaling_lab::core::record::TrialRecord| {
            t.outcome
                .evals
                .iter()
                .map(|e| (e.step, e.metric, e.train_loss))
                .collect::<Vec<_>>()
        };
        same_trajectory(&format!("trial {}", m.trial_id), &ev(m), &ev(l));
    }
    let mean = |log: &scaling_lab::runlog::RunLog| {
        log.trials
            .iter()
            .map(|t| t.outcome.throughput.exchange_s)
            .sum::<f64>()
            / log.trials.len() as f64
    };
    eprintln!(
        "exchange per step over 10 trials: {:.3} ms across processes vs {:.3} ms across threads",
        mean(&multi_log) * 1e3,
        mean(&local_log) * 1e3
    );
}

#[test]
#[ignore = "flaky: the vendored ring all-reduce sometimes panics (peer closed a download) before the kill; see vendor/README.md and the issue 12 note"]
fn killing_one_node_ends_the_other_within_30_s() {
    let _g = serial();
    let port = free_ports();
    let base = strings(&[
        "train",
        "--preset",
        "digits-mlp-sgd",
        "--batch-size",
        "64",
        "--steps",
        "1000000",
        "--target",
        "0",
        "--eval-every",
        "100000",
        "--no-noise-scale",
    ]);
    let mut a0 = base.clone();
    a0.extend(node_args(0, port));
    let mut a1 = base.clone();
    a1.extend(node_args(1, port));
    let mut c0 = spawn(&a0);
    let mut c1 = spawn(&a1);
    // let them train together for a while
    std::thread::sleep(Duration::from_secs(6));
    assert!(c0.try_wait().unwrap().is_none(), "rank 0 ended early");
    assert!(c1.try_wait().unwrap().is_none(), "rank 1 ended early");
    c1.kill().unwrap();
    let _ = c1.wait();
    let t0 = Instant::now();
    let out = wait_limit(c0, Duration::from_secs(30));
    let o = out.expect("rank 0 still running 30 s after rank 1 was killed");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "rank 0 must fail: {err}");
    assert!(err.contains("multi-node"), "a clear reason: {err}");
    eprintln!(
        "rank 0 ended {:.1} s after rank 1 was killed: {}",
        t0.elapsed().as_secs_f64(),
        err.lines().last().unwrap_or("")
    );
}
