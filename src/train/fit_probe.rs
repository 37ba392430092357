//! Does a trial at batch size B fit in a JIT device's memory? Asked in a child process
//! (`scaling-lab fit-probe`, hidden) before a sweep runs that trial in its own process.
//!
//! Why a child: CubeCL allocates on its device thread and unwraps a failed allocation there
//! ("can't allocate buffer of size: …"). The trial that asked gets `CallError` and is recorded as
//! `oom` ([`super::oom`]), but the device's fusion stream in this process does not survive the
//! panic: measured on lavapipe, a sweep of a 262,144-wide MLP at B = 1024 then B = 8 recorded *both*
//! as `oom` — B = 8 failed at step 2 with "Ordering is bigger than operations" and "Can't execute
//! the autotune plan" from burn-fusion, 202 panics in all. So before a sweep's first trial at a
//! batch size that is not yet known to fit on its devices, a child process runs that trial's first
//! two steps and one evaluation on the same devices, in the same precision, and exits: exit 0 fits,
//! [`EXIT_OOM`] ran out of memory. An out-of-memory in the child is a real allocation failure on the
//! real device, recorded as the trial's `oom` outcome with its B; the sweep's own device stays clean
//! and the sweep goes on. Any other failure of the child (a crash, a missing binary) is not a
//! verdict: the trial then runs as it would without the probe and reports its own error.
//!
//! Cost: one child per (devices, workload, precision, B) per process, and none for a B at or below
//! one known to fit (a smaller batch needs no more memory). `train` does not probe (one trial per
//! process: an out-of-memory ends the process anyway), nor does a node of a multi-node trial.
//!
//! Left: trials packed on one device (`--trials-per-device K`) are probed one at a time, so K
//! trials that fit alone but not together still fail in process (recorded `oom`; later trials on
//! that device may then fail too).

use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::core::trial::{CancelToken, TrialSpec};
use crate::workload::spec::Workload;

/// The hidden subcommand the child runs.
pub const FIT_PROBE_CMD: &str = "fit-probe";
/// The child's exit code for "out of device memory".
pub const EXIT_OOM: i32 = 3;
/// The child's exit code for any other failure (not a verdict).
pub const EXIT_FAILED: i32 = 4;

/// What the child is asked: the trial, with the options that change its memory.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct ProbeRequest {
    pub workload: Workload,
    pub spec: TrialSpec,
    pub noise_scale: bool,
    pub eval_batch: usize,
    /// Trials in the fused group the spec trains in (memory grows with them).
    #[serde(default = "one")]
    pub members: usize,
}

fn one() -> usize {
    1
}

/// The child's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Fit {
    Fits,
    OutOfMemory,
    /// No verdict (the child failed otherwise, or the trial was cancelled): why.
    Unknown(String),
}

#[derive(Default)]
struct Known {
    /// The largest batch size known to fit.
    fits_up_to: usize,
    /// Batch sizes that ran out of memory (each probed: no inference upwards).
    oom: BTreeSet<usize>,
}

/// Verdicts of this process, by [`cache_key`].
static KNOWN: Mutex<Option<HashMap<String, Known>>> = Mutex::new(None);
/// One probe at a time: two children on one device would each see less memory.
static PROBING: Mutex<()> = Mutex::new(());

/// What makes two trials' memory comparable: model, data, devices, precision and the options.
fn cache_key(r: &ProbeRequest) -> String {
    serde_json::to_string(&(
        &r.workload.model,
        &r.workload.dataset,
        &r.spec.devices,
        r.spec.precision,
        r.noise_scale,
        r.eval_batch,
        r.members,
    ))
    .unwrap_or_default()
}

fn known(key: &str, b: usize) -> Option<Fit> {
    let g = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    let k = g.as_ref()?.get(key)?;
    if b <= k.fits_up_to {
        Some(Fit::Fits)
    } else if k.oom.contains(&b) {
        Some(Fit::OutOfMemory)
    } else {
        None
    }
}

fn remember(key: &str, b: usize, fit: &Fit) {
    let mut g = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    let k = g
        .get_or_insert_with(HashMap::new)
        .entry(key.into())
        .or_default();
    match fit {
        Fit::Fits => k.fits_up_to = k.fits_up_to.max(b),
        Fit::OutOfMemory => {
            k.oom.insert(b);
        }
        Fit::Unknown(_) => {}
    }
}

/// Whether the trial fits on its devices: from this process's earlier verdicts, or from a child
/// (`exe fit-probe`). `cancel` kills the child.
pub fn fits(exe: &std::path::Path, request: &ProbeRequest, cancel: &CancelToken) -> Fit {
    let key = cache_key(request);
    let b = request.spec.batch_size;
    if let Some(f) = known(&key, b) {
        return f;
    }
    let _one = PROBING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(f) = known(&key, b) {
        return f;
    }
    let fit = run_child(exe, request, cancel);
    remember(&key, b, &fit);
    fit
}

fn run_child(exe: &std::path::Path, request: &ProbeRequest, cancel: &CancelToken) -> Fit {
    let Ok(body) = serde_json::to_vec(request) else {
        return Fit::Unknown("cannot encode the trial".into());
    };
    let Ok(mut err_file) = tempfile::tempfile() else {
        return Fit::Unknown("cannot create a temporary file".into());
    };
    let Ok(err_out) = err_file.try_clone() else {
        return Fit::Unknown("cannot create a temporary file".into());
    };
    let child = Command::new(exe)
        .arg(FIT_PROBE_CMD)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::from(err_out))
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return Fit::Unknown(format!("cannot start {}: {e}", exe.display())),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // a child that died at once closes the pipe: its exit status says why
        let _ = stdin.write_all(&body);
    }
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if cancel.is_cancelled() => {
                let _ = child.kill();
                let _ = child.wait();
                return Fit::Unknown("cancelled".into());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Fit::Unknown(format!("cannot wait for the probe: {e}")),
        }
    };
    match status.code() {
        Some(0) => Fit::Fits,
        Some(EXIT_OOM) => Fit::OutOfMemory,
        _ => {
            use std::io::{Read, Seek};
            let mut text = String::new();
            let _ = err_file.rewind();
            let _ = err_file.read_to_string(&mut text);
            let last = text.lines().rev().find(|l| !l.trim().is_empty());
            Fit::Unknown(format!("probe {status}: {}", last.unwrap_or("no message")))
        }
    }
}

/// The child: reads a [`ProbeRequest`] (JSON) on stdin, runs the trial's first two steps and one
/// evaluation, and returns its exit code (0 fits, [`EXIT_OOM`], [`EXIT_FAILED`]). Panics are not
/// printed (the device thread's out-of-memory panic is the expected answer).
pub fn child_main() -> i32 {
    use std::io::Read;
    let mut body = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut body) {
        eprintln!("fit-probe: cannot read the request: {e}");
        return EXIT_FAILED;
    }
    let req: ProbeRequest = match serde_json::from_str(&body) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fit-probe: bad request: {e}");
            return EXIT_FAILED;
        }
    };
    std::panic::set_hook(Box::new(|_| {}));
    let mut w = req.workload;
    w.step_budget = 2;
    w.eval_every = 2;
    w.eval_growth = 0.0;
    w.max_examples = None;
    w.targets.clear();
    // a transfer probe's encoding holds a fixed budget whatever B (`transfer::encode`)
    w.transfer = None;
    let runner = super::BurnRunner::new(super::TrainOptions {
        noise_scale: req.noise_scale,
        eval_batch: req.eval_batch,
        ..Default::default()
    });
    let spec = req.spec;
    let members = req.members.max(1);
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if members == 1 {
            return crate::core::runner::TrialRunner::run(
                &runner,
                &w,
                &spec,
                &mut |_| {},
                &CancelToken::new(),
            );
        }
        // a group of `members` trials (seeds differ; memory is what the probe asks about)
        let (specs, cancels) = spec.members(members);
        let group = crate::core::runner::Group {
            specs: &specs,
            cancels: &cancels,
            cut: crate::core::runner::GroupCut::None,
        };
        let mut first: Option<anyhow::Result<crate::core::trial::TrialOutcome>> = None;
        crate::core::runner::TrialRunner::run_group(
            &runner,
            &w,
            &group,
            &mut |_, _| {},
            &mut |_, r| match (&first, &r) {
                (None, _) | (Some(Ok(_)), Err(_)) => first = Some(r),
                _ => {}
            },
        );
        first.unwrap_or_else(|| Err(anyhow::anyhow!("the group reported no trial")))
    }));
    match ran {
        Ok(Ok(o)) if matches!(o.outcome, crate::core::trial::Outcome::Oom { .. }) => EXIT_OOM,
        Ok(Ok(_)) => 0,
        Ok(Err(e)) if super::oom::failed_out_of_memory(&format!("{e:#}")) => EXIT_OOM,
        Ok(Err(e)) => {
            eprintln!("fit-probe: {e:#}");
            EXIT_FAILED
        }
        Err(p) => {
            let what = crate::core::runner::panic_message(&p);
            if super::oom::failed_out_of_memory(&what) {
                EXIT_OOM
            } else {
                eprintln!("fit-probe: the trial panicked: {what}");
                EXIT_FAILED
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(b: usize) -> ProbeRequest {
        let w = crate::workload::presets::find_preset("digits-mlp-momentum")
            .unwrap()
            .1
            .workload;
        let mp: crate::workload::spec::Metaparams =
            serde_json::from_str(r#"{"learning_rate": 0.1}"#).unwrap();
        let spec = TrialSpec {
            devices: crate::core::trial::DeviceSpec::Wgpu { adapters: vec![0] },
            ..TrialSpec::cpu(b, mp)
        };
        ProbeRequest {
            workload: w,
            spec,
            noise_scale: true,
            eval_batch: 1000,
            members: 1,
        }
    }

    /// A batch at or below one that fits needs no probe; an out-of-memory is remembered for its
    /// own B only (a larger B is probed, not assumed).
    #[test]
    fn verdicts_are_remembered_monotonically_upwards_only_for_fits() {
        let r = request(64);
        let mut other = request(64);
        other.spec.precision = crate::workload::spec::Precision::Fp16;
        let key = cache_key(&r);
        assert_ne!(key, cache_key(&other), "precision is part of the key");
        assert_eq!(known(&key, 64), None);
        remember(&key, 64, &Fit::Fits);
        assert_eq!(known(&key, 32), Some(Fit::Fits));
        assert_eq!(known(&key, 64), Some(Fit::Fits));
        assert_eq!(known(&key, 128), None);
        remember(&key, 4096, &Fit::OutOfMemory);
        assert_eq!(known(&key, 4096), Some(Fit::OutOfMemory));
        assert_eq!(known(&key, 8192), None, "a larger B is probed, not assumed");
        remember(&key, 512, &Fit::Unknown("x".into()));
        assert_eq!(known(&key, 512), None, "no verdict is not remembered");
        assert_eq!(known(&cache_key(&other), 32), None);
    }

    /// A child that cannot start is no verdict (the trial then runs as without the probe).
    #[test]
    fn a_missing_binary_is_no_verdict() {
        let f = fits(
            std::path::Path::new("/nonexistent/scaling-lab"),
            &request(8),
            &CancelToken::new(),
        );
        assert!(
            matches!(f, Fit::Unknown(ref m) if m.contains("cannot start")),
            "{f:?}"
        );
    }

    /// An executable shell script standing in for the binary.
    fn script(dir: &std::path::Path, name: &str, body: &str) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let exe = dir.join(name);
        std::fs::write(&exe, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        exe
    }

    /// The child's exit codes are read as verdicts (a shell stands in for the binary).
    #[test]
    fn exit_codes_are_verdicts() {
        let dir = tempfile::tempdir().unwrap();
        for (code, want) in [(0, Fit::Fits), (EXIT_OOM, Fit::OutOfMemory)] {
            let exe = script(
                dir.path(),
                &format!("probe{code}"),
                &format!("cat >/dev/null\nexit {code}"),
            );
            assert_eq!(run_child(&exe, &request(8), &CancelToken::new()), want);
        }
        let exe = script(
            dir.path(),
            "probe-fail",
            "cat >/dev/null\necho 'no adapter' >&2\nexit 4",
        );
        let f = run_child(&exe, &request(8), &CancelToken::new());
        assert!(
            matches!(f, Fit::Unknown(ref m) if m.contains("no adapter")),
            "{f:?}"
        );
        // a cancelled trial kills a child that does not answer ("cancelled" is only returned
        // after the kill; the child would otherwise sleep 30 s and exit 0: Fits)
        let exe = script(dir.path(), "probe-hang", "sleep 30");
        let cancel = CancelToken::new();
        let c = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            c.cancel();
        });
        assert_eq!(
            run_child(&exe, &request(8), &cancel),
            Fit::Unknown("cancelled".into())
        );
    }
}
