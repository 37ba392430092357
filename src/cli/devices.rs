//! `devices`: what this build can train on — CPU workers, CUDA GPUs, wgpu adapters — and, with
//! `--probe`, which precisions each wgpu adapter computes in (the probe a trial runs first).

use std::process::ExitCode;

use clap::Args;
use scaling_lab::train;
use scaling_lab::workload::spec::Precision;

use super::{outln, CmdResult};

#[derive(Args)]
pub struct DevicesArgs {
    /// Also run the precision probe (a tiny forward/backward in fp32, fp16, bf16) on each wgpu
    /// adapter (seconds on a software adapter: its kernels compile first).
    #[arg(long)]
    pub probe: bool,
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
        outln(&serde_json::to_string(&v)?);
        return Ok(ExitCode::SUCCESS);
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
    Ok(ExitCode::SUCCESS)
}
