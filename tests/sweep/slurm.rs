//! Sweeps as Slurm job arrays, against a REAL single-node Slurm cluster (scripts/slurm-local.sh:
//! Debian's slurm-wlm + munge, started here if it is not running; the packages are installed when
//! missing). Only where that is impossible (no root, no apt) do these tests skip, loudly.
//!
//! Checked: `sweep … --slurm --array 4 --wait` exits 0; every trial is logged exactly once, by the
//! array task that owns it; `report DIR --json` gives the same per-batch steps-to-target as the
//! same sweep run locally; a failed task's trials are re-submitted alone on `--resume DIR`.

use crate::common;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

use scaling_lab::cluster::sweepdir::{read_cluster_info, read_sweep_dir, shard_paths};
use scaling_lab::runlog::reader::read_run_log;

const BIN: &str = env!("CARGO_BIN_EXE_scaling-lab");
const SWEEP: [&str; 8] = [
    "sweep",
    "digits-mlp-sgd",
    "--batch-sizes",
    "16,64,256",
    "--trials",
    "4",
    "--seed",
    "5",
];

/// SLURM_CONF of a running local cluster, starting it if needed; `None` (with a loud message)
/// only when it cannot be started.
fn slurm_conf() -> Option<String> {
    static CONF: OnceLock<Option<String>> = OnceLock::new();
    CONF.get_or_init(|| {
        if let Ok(c) = std::env::var("SLURM_CONF") {
            let up = Command::new("sinfo")
                .env("SLURM_CONF", &c)
                .output()
                .is_ok_and(|o| o.status.success());
            if up {
                return Some(c);
            }
        }
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/slurm-local.sh");
        match Command::new(script).arg("start").output() {
            Ok(o) if o.status.success() => {
                let text = String::from_utf8_lossy(&o.stdout);
                let conf = text
                    .lines()
                    .find_map(|l| l.strip_prefix("export SLURM_CONF="))
                    .map(|s| s.trim().to_string());
                if conf.is_none() {
                    eprintln!("\n*** SLURM TESTS SKIPPED: slurm-local.sh printed no SLURM_CONF ***\n");
                }
                conf
            }
            Ok(o) => {
                eprintln!(
                    "\n*** SLURM TESTS SKIPPED: cannot start a local Slurm cluster (exit {:?}): {} ***\n",
                    o.status.code(),
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("\n*** SLURM TESTS SKIPPED: cannot run {script}: {e} ***\n");
                None
            }
        }
    })
    .clone()
}

/// The cluster has 2 CPUs: one Slurm test at a time keeps their timings sane.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static M: Mutex<()> = Mutex::new(());
    M.lock().unwrap_or_else(|e| e.into_inner())
}

fn run(conf: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("SLURM_CONF", conf)
        .output()
        .expect("run scaling-lab")
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// batch size → steps-to-target (None: not reached), from an `analysis` object.
fn steps(analysis: &serde_json::Value) -> BTreeMap<u64, Option<u64>> {
    analysis["per_batch"]
        .as_array()
        .expect("per_batch")
        .iter()
        .map(|p| (p["batch_size"].as_u64().unwrap(), p["steps"].as_u64()))
        .collect()
}

fn only_dir(runs: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(runs)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "one sweep directory in {}", runs.display());
    dirs[0].clone()
}

/// `SWEEP --slurm --array N --wait` (+ `extra`) into `tmp/slurm`; it must succeed. Returns the
/// output and the one sweep directory it created.
fn array_sweep(conf: &str, tmp: &Path, tasks: &str, extra: &[&str]) -> (Output, PathBuf) {
    let runs = tmp.join("slurm");
    let mut args = SWEEP.to_vec();
    args.extend(["--slurm", "--array", tasks, "--wait", "--runs-dir"]);
    args.push(runs.to_str().unwrap());
    args.extend(extra);
    let o = run(conf, &args);
    assert!(
        o.status.success(),
        "slurm sweep failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let dir = only_dir(&runs);
    (o, dir)
}

/// batch size → the confirmed S(B), from an `analysis` object.
fn confirmed(analysis: &serde_json::Value) -> BTreeMap<u64, serde_json::Value> {
    analysis["per_batch"]
        .as_array()
        .expect("per_batch")
        .iter()
        .map(|p| (p["batch_size"].as_u64().unwrap(), p["confirmed"].clone()))
        .collect()
}

/// The same sweep run locally: its analysis and its log's trials (id → record).
fn local_run(
    conf: &str,
    tmp: &Path,
) -> (
    serde_json::Value,
    BTreeMap<u64, scaling_lab::core::record::TrialRecord>,
) {
    let runs = tmp.join("local");
    let mut args = SWEEP.to_vec();
    args.extend(["--json", "--runs-dir", runs.to_str().unwrap()]);
    let o = run(conf, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    let log = read_run_log(Path::new(v["log"].as_str().unwrap())).unwrap();
    let trials = log.trials.into_iter().map(|t| (t.trial_id, t)).collect();
    (v["analysis"].clone(), trials)
}

#[test]
fn array_sweep_matches_the_local_sweep() {
    let Some(conf) = slurm_conf() else { return };
    let _g = serial();
    let tmp = tempfile::tempdir().unwrap();
    let (o, dir) = array_sweep(&conf, tmp.path(), "4", &["--json"]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(err.contains("submitted Slurm job"), "{err}");
    // the confirm stage ran as a second array job once the search's had ended
    assert!(
        err.contains("the confirm stage, array task(s) 0-3"),
        "{err}"
    );
    let (local, local_trials) = local_run(&conf, tmp.path());
    assert!(local_trials.len() > 12, "the local sweep confirmed nothing");

    // one shard log per array task; each trial (search and confirm) logged once, by the task
    // that owns it
    let shards = shard_paths(&dir).unwrap();
    assert_eq!(shards.keys().copied().collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    let mut seen = HashSet::new();
    let mut confirm_seen = 0;
    for (i, p) in &shards {
        let log = read_run_log(p).unwrap();
        let search = log.trials.iter().filter(|t| t.spec.is_search()).count();
        assert_eq!(search, 3, "{}", p.display());
        for t in &log.trials {
            // the same trial as the local sweep's where both ran it: a search trial's spec, and a
            // confirm trial of the same configuration to the same step (or stopped at its block's
            // quorum in one of them: an array task holds a quarter of a block, the local sweep all)
            if let Some(l) = local_trials.get(&t.trial_id) {
                if t.spec.is_search() || t.spec == l.spec {
                    assert_eq!(t.spec, l.spec, "trial {}", t.trial_id);
                }
                if t.spec.confirm.is_some() && t.spec == l.spec {
                    assert!(
                        common::same_or_quorum_cut(&t.outcome.outcome, &l.outcome.outcome),
                        "trial {}: {:?} vs {:?}",
                        t.trial_id,
                        t.outcome.outcome,
                        l.outcome.outcome
                    );
                    confirm_seen += 1;
                }
            }
            assert_eq!(
                t.trial_id % 4,
                *i as u64,
                "trial {} in shard {i}",
                t.trial_id
            );
            assert!(seen.insert(t.trial_id), "trial {} logged twice", t.trial_id);
        }
    }
    assert!(
        confirm_seen > 0,
        "no confirm trial in common with the local sweep"
    );
    let merged = read_sweep_dir(&dir).unwrap();
    assert_eq!(json(&o)["trials_done"], merged.trials.len());
    // every confirm trial the merged search calls for ran (each shard caps its search trials at
    // its own best, so more of them may reach than locally and the confirmed configurations can
    // differ from the local sweep's: the stage is a pure function of the records either way)
    let cfg = scaling_lab::cluster::sweepdir::config_of(&dir).unwrap();
    let want: std::collections::BTreeSet<u64> =
        scaling_lab::sweep::confirm_stage_ids(&cfg, &merged.trials)
            .into_iter()
            .collect();
    let got: std::collections::BTreeSet<u64> = merged
        .trials
        .iter()
        .filter(|t| t.spec.confirm.is_some())
        .map(|t| t.trial_id)
        .collect();
    assert!(!want.is_empty());
    assert_eq!(got, want, "confirm trials of the array sweep");
    assert_eq!(seen.len(), merged.trials.len());
    assert_eq!(
        merged.status(),
        scaling_lab::runlog::reader::LogStatus::Complete
    );
    let info = read_cluster_info(&dir).unwrap();
    assert_eq!((info.array, info.jobs.len()), (4, 2));

    // the merged report equals the same sweep run locally
    let rep = run(&conf, &["report", dir.to_str().unwrap(), "--json"]);
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    let slurm_steps = steps(&json(&rep)["analysis"]);
    assert_eq!(slurm_steps.len(), 3);
    assert!(slurm_steps.values().any(|s| s.is_some()), "{slurm_steps:?}");
    assert_eq!(
        slurm_steps,
        steps(&local),
        "per-batch steps-to-target: slurm vs local"
    );
    assert_eq!(json(&rep)["readout"], "confirmed");
    assert_eq!(local["readout"], "confirmed");
    assert!(confirmed(&json(&rep)["analysis"])
        .values()
        .all(|c| c["complete"] == true));
}

#[test]
fn resume_resubmits_only_the_unfinished_task() {
    let Some(conf) = slurm_conf() else { return };
    let _g = serial();
    let tmp = tempfile::tempdir().unwrap();
    let (_, dir) = array_sweep(&conf, tmp.path(), "3", &[]);
    let before_log = read_sweep_dir(&dir).unwrap();
    let before = before_log.analysis();
    let shard0 = read_run_log(&dir.join("shard-0.jsonl"))
        .unwrap()
        .trials
        .len();

    // task 1 "was pre-empted" after its first trial: keep the header and one record, and tear
    // the next line in half (a crash mid-write)
    let shard1 = dir.join("shard-1.jsonl");
    let text = std::fs::read_to_string(&shard1).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let torn = &lines[2][..lines[2].len() / 2];
    std::fs::write(&shard1, format!("{}\n{}\n{torn}", lines[0], lines[1])).unwrap();
    // its 3 search trials, and its share of the confirm stage where the rest of a B's search is
    // logged
    let missing = scaling_lab::cluster::sweepdir::missing_trials(&dir).unwrap();
    let confirm_base = scaling_lab::core::confirm::CONFIRM_ID_BASE;
    assert_eq!(missing.iter().filter(|&&id| id < confirm_base).count(), 3);
    assert!(missing.iter().all(|id| id % 3 == 1), "{missing:?}");

    let dry = run(
        &conf,
        &["sweep", "--resume", dir.to_str().unwrap(), "--dry-run"],
    );
    assert!(dry.status.success());
    let script = String::from_utf8_lossy(&dry.stdout);
    assert!(script.contains("#SBATCH --array=1\n"), "{script}");

    let o = run(
        &conf,
        &[
            "sweep",
            "--resume",
            dir.to_str().unwrap(),
            "--wait",
            "--json",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("re-submitting array task(s) 1"), "{err}");
    let after = read_sweep_dir(&dir).unwrap();
    assert_eq!(after.trials.len(), before_log.trials.len());
    // the search task, then the confirm stage after it
    assert_eq!(read_cluster_info(&dir).unwrap().jobs.len(), 4);
    let steps_of = |a: &scaling_lab::core::analysis::Analysis| {
        a.per_batch
            .iter()
            .map(|p| (p.batch_size, p.steps, p.confirmed.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(steps_of(&after.analysis()), steps_of(&before));
    // other shards were not re-run: shard 0 still holds exactly its trials
    assert_eq!(
        read_run_log(&dir.join("shard-0.jsonl"))
            .unwrap()
            .trials
            .len(),
        shard0
    );
}

#[test]
fn dry_run_prints_the_array_script_and_creates_nothing() {
    // needs no cluster: nothing is submitted
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("r");
    let mut args = SWEEP.to_vec();
    args.extend([
        "--slurm",
        "--array",
        "4",
        "--partition",
        "gpu",
        "--gres",
        "gpu:1",
        "--time",
        "00:30:00",
        "--dry-run",
        "--runs-dir",
        runs.to_str().unwrap(),
    ]);
    let o = Command::new(BIN).args(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = String::from_utf8_lossy(&o.stdout);
    for l in [
        "#SBATCH --array=0-3",
        "#SBATCH --partition=gpu",
        "#SBATCH --gres=gpu:1",
        "#SBATCH --time=00:30:00",
        "--shard \"$SLURM_ARRAY_TASK_ID/4\"",
    ] {
        assert!(s.contains(l), "missing `{l}`:\n{s}");
    }
    assert!(!runs.exists(), "--dry-run created {}", runs.display());
    // and a multi-node job: srun inside
    let mut args = SWEEP.to_vec();
    args.extend(["--slurm", "--nodes", "2", "--dry-run"]);
    let o = Command::new(BIN).args(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(s.contains("#SBATCH --nodes=2"), "{s}");
    assert!(s.contains("exec srun --kill-on-bad-exit=1 "), "{s}");
}
