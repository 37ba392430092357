//! `devices`: what this build can train on — CPU workers, CUDA GPUs, wgpu adapters — with
//! `--probe`, which precisions each wgpu adapter computes in (the probe a trial runs first), and
//! with `--check`, whether each GPU computes what the CPU computes (`train::device_check`: the
//! convolution block and the optimizers' updates against the CPU's own kernels; exit 1 when one
//! differs beyond f32 rounding or cannot run).

use std::process::ExitCode;

use clap::Args;
use scaling_lab::train;
use scaling_lab::train::device_check::Check;
use scaling_lab::workload::spec::Precision;

use super::{outln, CmdResult};

#[derive(Args)]
pub struct DevicesArgs {
    /// Also run the precision probe (a tiny forward/backward in fp32, fp16, bf16) on each wgpu
    /// adapter (seconds on a software adapter: its kernels compile first).
    #[arg(long)]
    pub probe: bool,
    /// Also check each GPU against the CPU: the convolution block (values and gradients) and the
    /// SGD, momentum, Nesterov and Adam updates on the same inputs, each within f32 rounding
    /// (exit 1 when one is not).
    #[arg(long)]
    pub check: bool,
    /// One JSON object instead of lines.
    #[arg(long)]
    pub json: bool,
}

pub fn cmd_devices(a: DevicesArgs) -> CmdResult {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cuda = train::runner::cuda::probe();
    let wgpu = train::wgpu::probe();
    let precisions = |index: usize| -> Vec<(Precision, Result<(), String>)> {
        [Precision::Fp32, Precision::Fp16, Precision::Bf16]
            .into_iter()
            .map(|p| (p, train::wgpu::check(&[index], p).map(|_| ())))
            .collect()
    };
    let checks = if a.check {
        device_checks(&cuda, &wgpu)
    } else {
        Vec::new()
    };
    let all_agree = checks
        .iter()
        .all(|(_, r)| r.as_ref().is_ok_and(|c| c.iter().all(Check::ok)));
    let code = if all_agree {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    if a.json {
        let adapters: Vec<serde_json::Value> = match &wgpu {
            Ok(found) => found
                .iter()
                .map(|d| {
                    let mut v = serde_json::json!({
                        "device": format!("wgpu:{}", d.index),
                        "name": d.name,
                        "type": d.kind,
                        "api": d.api,
                        "max_binding_bytes": d.max_binding_bytes,
                    });
                    if a.probe {
                        let probed: serde_json::Map<String, serde_json::Value> =
                            precisions(d.index)
                                .into_iter()
                                .map(|(p, r)| {
                                    let v = match r {
                                        Ok(()) => serde_json::Value::Bool(true),
                                        Err(e) => serde_json::Value::String(e),
                                    };
                                    (p.name().to_string(), v)
                                })
                                .collect();
                        v["precisions"] = probed.into();
                    }
                    v
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        let mut v = serde_json::json!({
            "cpu_cores": cores,
            "cuda": match &cuda { Ok(n) => serde_json::json!(n), Err(e) => serde_json::json!(e) },
            "wgpu": match &wgpu { Ok(_) => serde_json::json!(adapters), Err(e) => serde_json::json!(e) },
        });
        if let Some(k) = train::kernel_cache::configured() {
            v["kernel_cache"] = match k {
                Ok(dir) => serde_json::json!(dir),
                Err(why) => serde_json::json!({ "off": why }),
            };
        }
        if a.check {
            v["checks"] = checks_json(&checks);
        }
        outln(&serde_json::to_string(&v)?);
        return Ok(code);
    }
    outln(&format!("cpu: {cores} cores (--workers N)"));
    match cuda {
        Ok(n) => {
            for i in 0..n {
                outln(&format!("cuda:{i} (--devices cuda:{i})"));
            }
        }
        Err(e) => {
            outln(&format!("cuda: none ({e})"));
        }
    }
    match wgpu {
        Ok(found) => {
            for d in &found {
                let mut line = format!(
                    "{} (--devices wgpu:{}; largest buffer {} MiB)",
                    d.label(),
                    d.index,
                    d.max_binding_bytes >> 20
                );
                if a.probe {
                    let words: Vec<String> = precisions(d.index)
                        .into_iter()
                        .map(|(p, r)| match r {
                            Ok(()) => format!("{} yes", p.name()),
                            Err(_) => format!("{} no", p.name()),
                        })
                        .collect();
                    line.push_str(&format!(": {}", words.join(", ")));
                }
                outln(&line);
            }
        }
        Err(e) => {
            outln(&format!("wgpu: none ({e})"));
        }
    }
    if a.check {
        print_checks(&checks);
    }
    // only once a GPU backend has started (a build without one has nothing to cache)
    match train::kernel_cache::configured() {
        Some(Ok(dir)) => {
            outln(&format!(
                "kernel cache: {} ({}=off to disable)",
                dir.display(),
                train::kernel_cache::ENV
            ));
        }
        Some(Err(why)) => {
            outln(&format!("kernel cache: none ({why})"));
        }
        None => (),
    }
    Ok(code)
}

/// A device's check against the CPU, by device label.
type DeviceCheck = (String, Result<Vec<Check>, String>);

/// `--check` on every CUDA device, then every wgpu adapter.
fn device_checks(
    cuda: &Result<usize, String>,
    wgpu: &Result<Vec<train::wgpu::Adapter>, String>,
) -> Vec<DeviceCheck> {
    let mut checks = Vec::new();
    if let Ok(n) = cuda {
        for i in 0..*n {
            checks.push((format!("cuda:{i}"), train::runner::cuda::check_kernels(i)));
        }
    }
    if let Ok(found) = wgpu {
        for d in found {
            let i = d.index;
            checks.push((format!("wgpu:{i}"), train::wgpu::check_kernels(i)));
        }
    }
    checks
}

fn checks_json(checks: &[DeviceCheck]) -> serde_json::Value {
    checks
        .iter()
        .map(|(device, r)| match r {
            Ok(c) => serde_json::json!({
                "device": device,
                "agrees": c.iter().all(Check::ok),
                "checks": c,
            }),
            Err(e) => serde_json::json!({ "device": device, "agrees": false, "error": e }),
        })
        .collect()
}

/// A verdict line per device, then one line per check: its largest difference and tolerance.
fn print_checks(checks: &[DeviceCheck]) {
    if checks.is_empty() {
        outln("check: no GPU here to check against the CPU");
    }
    for (device, r) in checks {
        match r {
            Ok(c) => {
                let bad = c.iter().filter(|c| !c.ok()).count();
                outln(&if bad == 0 {
                    format!(
                        "{device} agrees with the CPU: {} checks within f32 rounding",
                        c.len()
                    )
                } else {
                    format!(
                        "{device} DIFFERS from the CPU in {bad} of {} checks",
                        c.len()
                    )
                });
                for c in c {
                    outln(&format!(
                        "  {:<22} {:>9.2e} {} {:.0e}{}",
                        c.name,
                        c.max_abs_diff,
                        if c.ok() { "≤" } else { ">" },
                        c.tolerance,
                        if c.ok() { "" } else { "  DIFFERS" }
                    ));
                }
            }
            Err(e) => {
                outln(&format!("{device}: the check could not run: {e}"));
            }
        }
    }
}
