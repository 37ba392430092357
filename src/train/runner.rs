//! `TrialRunner` for data workloads: picks the backend (Flex CPU, or CUDA with `--features cuda`).

use std::sync::Arc;

use anyhow::Context;
use burn::backend::{Autodiff, Flex};

use super::trainer::{run_group, TrainOptions};
use crate::core::events::TrialEvent;
use crate::core::runner::{Group, TrialRunner};
use crate::core::trial::{CancelToken, DeviceSpec, TrialOutcome, TrialSpec};
use crate::workload::spec::Workload;

pub type CpuTrain = Autodiff<Flex>;

#[derive(Clone, Debug, Default)]
pub struct BurnRunner {
    pub options: TrainOptions,
}

impl BurnRunner {
    pub fn new(options: TrainOptions) -> Self {
        BurnRunner { options }
    }

    /// Trains a group (see `TrialRunner::run_group`): an error fails every member not yet done.
    fn train_group(
        &self,
        workload: &Workload,
        group: &Group<'_>,
        emit: &mut dyn FnMut(usize, TrialEvent),
        done: &mut dyn FnMut(usize, TrialOutcome),
    ) -> anyhow::Result<()> {
        let spec = group.specs.first().context("an empty group")?;
        let ds = workload
            .dataset
            .as_ref()
            .context("this workload has no dataset (is it an NQM preset?)")?;
        let data = crate::data::load_cached(ds).map_err(|e| anyhow::anyhow!("{e}"))?;
        let (specs, cancels, cut) = (group.specs, group.cancels, group.cut.clone());
        match &spec.devices {
            DeviceSpec::Cpu { workers } => {
                anyhow::ensure!(*workers >= 1, "at least one worker is needed");
                let devices = vec![Default::default(); *workers];
                run_group::<CpuTrain>(
                    devices,
                    workload,
                    specs,
                    data,
                    &self.options,
                    cut.clone(),
                    emit,
                    cancels,
                    done,
                )
            }
            _ if self.probe_oom(workload, spec, specs.len(), &cancels[0]) => {
                for (i, s) in specs.iter().enumerate() {
                    let oom = crate::core::trial::Outcome::Oom {
                        batch_size: s.batch_size,
                        step: 0,
                    };
                    done(i, TrialOutcome::bare(oom, 0));
                }
                Ok(())
            }
            DeviceSpec::Cuda { devices } => {
                super::oom::watch_device_panics();
                let options = gpu_options(&self.options, spec, &data);
                cuda::run_group(devices, workload, group, data, &options, emit, done)
            }
            DeviceSpec::Wgpu { adapters } => {
                super::oom::watch_device_panics();
                let options = gpu_options(&self.options, spec, &data);
                super::wgpu::run_group(adapters, workload, group, data, &options, emit, done)
            }
        }
    }

    /// With `fit_probe` and a multi-trial process: whether a child process ran out of device
    /// memory on the first steps of this trial in a group of `members` (`fit_probe`). No verdict
    /// counts as "fits".
    fn probe_oom(
        &self,
        workload: &Workload,
        spec: &TrialSpec,
        members: usize,
        cancel: &CancelToken,
    ) -> bool {
        if !self.options.fit_probe || self.options.cluster.is_some() {
            return false;
        }
        let Ok(exe) = std::env::current_exe() else {
            return false;
        };
        let request = super::fit_probe::ProbeRequest {
            workload: workload.clone(),
            spec: spec.clone(),
            noise_scale: self.options.noise_scale,
            eval_batch: self.options.eval_batch,
            members,
        };
        super::fit_probe::fits(&exe, &request, cancel) == super::fit_probe::Fit::OutOfMemory
    }
}

impl TrialRunner for BurnRunner {
    /// Any number of trials fuse (the sweep's calibration and the device's memory choose how
    /// many), except a multi-node trial or one with a batch-size schedule: those train alone.
    fn max_group(&self, workload: &Workload, _devices: &DeviceSpec) -> usize {
        if self.options.cluster.is_some()
            || self.options.batch_schedule.is_some()
            || workload.dataset.is_none()
        {
            1
        } else {
            MAX_GROUP
        }
    }

    fn run_group(
        &self,
        workload: &Workload,
        group: &Group<'_>,
        emit: &mut dyn FnMut(usize, TrialEvent),
        done: &mut dyn FnMut(usize, anyhow::Result<TrialOutcome>),
    ) {
        let k = group.specs.len();
        let mut reported = vec![false; k];
        let r = self.train_group(workload, group, emit, &mut |i, o| {
            reported[i] = true;
            done(i, Ok(o));
        });
        if let Err(e) = r {
            let msg = format!("{e:#}");
            for (i, r) in reported.iter().enumerate() {
                if !r {
                    done(i, Err(anyhow::anyhow!("{msg}")));
                }
            }
        }
    }

    fn backend(&self) -> String {
        "burn-flex (cpu)".into()
    }

    fn backend_on(&self, devices: &DeviceSpec) -> String {
        match devices {
            DeviceSpec::Cpu { .. } => self.backend(),
            DeviceSpec::Cuda { devices } => cuda_label(devices, &gpu_names()),
            DeviceSpec::Wgpu { adapters } => {
                super::wgpu::label(adapters, &super::wgpu::probe().unwrap_or_default())
            }
        }
    }

    fn check_devices(
        &self,
        devices: &DeviceSpec,
        precision: crate::workload::spec::Precision,
    ) -> anyhow::Result<()> {
        match devices {
            DeviceSpec::Wgpu { adapters } => super::wgpu::check(adapters, precision)
                .map(|_| ())
                .map_err(|e| anyhow::anyhow!(e)),
            _ => Ok(()),
        }
    }
}

/// The most trials one fused group holds (a sweep's groups are chosen below it).
pub const MAX_GROUP: usize = crate::workload::spec::MAX_FUSE;

/// The smallest evaluation forward on a GPU, in examples (sequences for text).
const GPU_EVAL_FLOOR: usize = 128;

/// The options of a trial on a GPU: the evaluation forward takes at most the trial's per-replica
/// batch (at least [`GPU_EVAL_FLOOR`] examples) instead of `eval_batch`, so a trial whose training
/// step fits in device memory also fits in its evaluation (measured on lavapipe: a 262,144-wide
/// MLP fitted at B = 8 but its 1,000-example evaluation needed a 1 GiB activation). The CPU keeps
/// `eval_batch` (memory is not the limit there, and larger forwards are faster).
fn gpu_options(
    options: &TrainOptions,
    spec: &TrialSpec,
    data: &crate::data::Dataset,
) -> TrainOptions {
    let per_replica = spec.batch_size / spec.devices.replicas().max(1);
    let unit = match data {
        crate::data::Dataset::Text(d) => d.seq_len,
        crate::data::Dataset::Images(_) => 1,
    };
    let mut o = options.clone();
    o.eval_batch = o
        .eval_batch
        .min(per_replica.max(GPU_EVAL_FLOOR).saturating_mul(unit));
    o
}

/// "burn-cuda (cuda:0 NVIDIA H200, cuda:1 NVIDIA H200)"; devices whose name is unknown are
/// listed by index only.
pub fn cuda_label(ids: &[usize], names: &[(usize, String)]) -> String {
    let list: Vec<String> = ids
        .iter()
        .map(|i| match names.iter().find(|(j, _)| j == i) {
            Some((_, n)) => format!("cuda:{i} {n}"),
            None => format!("cuda:{i}"),
        })
        .collect();
    format!("burn-cuda ({})", list.join(", "))
}

/// (index, name) of the visible NVIDIA GPUs from `nvidia-smi` (empty when it is missing, fails
/// or takes over 3 s). Indices follow `CUDA_VISIBLE_DEVICES` when it lists plain indices.
pub fn gpu_names() -> Vec<(usize, String)> {
    use std::process::{Command, Stdio};
    let Ok(mut child) = Command::new("nvidia-smi")
        .args(["--query-gpu=index,name", "--format=csv,noheader"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    else {
        return Vec::new();
    };
    let t0 = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if t0.elapsed() < std::time::Duration::from_secs(3) => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Vec::new();
            }
        }
    }
    let mut out = String::new();
    if let Some(mut so) = child.stdout.take() {
        use std::io::Read;
        let _ = so.read_to_string(&mut out);
    }
    let physical: Vec<(usize, String)> = out
        .lines()
        .filter_map(|l| {
            let (i, n) = l.split_once(',')?;
            Some((i.trim().parse().ok()?, n.trim().to_string()))
        })
        .collect();
    match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(v) if !v.trim().is_empty() => {
            let order: Option<Vec<usize>> = v.split(',').map(|x| x.trim().parse().ok()).collect();
            match order {
                Some(order) => order
                    .iter()
                    .enumerate()
                    .filter_map(|(logical, p)| {
                        physical
                            .iter()
                            .find(|(i, _)| i == p)
                            .map(|(_, n)| (logical, n.clone()))
                    })
                    .collect(),
                None => Vec::new(),
            }
        }
        _ => physical,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_runs_are_labelled_cuda_with_device_names() {
        let names = vec![
            (0, "NVIDIA H200".to_string()),
            (1, "NVIDIA H200".to_string()),
        ];
        assert_eq!(
            cuda_label(&[0, 1], &names),
            "burn-cuda (cuda:0 NVIDIA H200, cuda:1 NVIDIA H200)"
        );
        assert_eq!(cuda_label(&[3], &names), "burn-cuda (cuda:3)");
        let r = BurnRunner::default();
        assert!(r
            .backend_on(&DeviceSpec::Cuda { devices: vec![0] })
            .starts_with("burn-cuda (cuda:0"));
        assert_eq!(
            r.backend_on(&DeviceSpec::Cpu { workers: 2 }),
            "burn-flex (cpu)"
        );
    }
}

#[cfg(feature = "cuda")]
pub mod cuda {
    use super::*;
    use burn::backend::cuda::CudaDevice;
    use burn::backend::Cuda;

    pub type CudaTrain = Autodiff<Cuda>;

    /// Number of CUDA devices, or a one-line reason why there are none (probed once per process).
    /// The driver counts the GPUs (no device is created past the last one: Burn panics there), then
    /// device 0 computes one sum, which loads NVRTC and compiles a kernel. A missing driver or
    /// NVRTC is a panic inside cudarc/CubeCL, so the probe runs under `catch_unwind` with the
    /// panic hook silenced, and the panic's message (which library, where it was searched) is the
    /// reason given.
    pub fn probe() -> Result<usize, String> {
        static PROBE: std::sync::OnceLock<Result<usize, String>> = std::sync::OnceLock::new();
        PROBE.get_or_init(probe_once).clone()
    }

    fn probe_once() -> Result<usize, String> {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let r = std::panic::catch_unwind(|| -> Result<usize, String> {
            use burn::tensor::{ElementConversion, Tensor};
            let n = cudarc::driver::CudaContext::device_count()
                .map_err(|e| format!("the CUDA driver could not count the GPUs ({e:?})"))?;
            if n <= 0 {
                return Err("the CUDA driver found no GPU".into());
            }
            // the kernel cache is keyed by cuda:0's architecture (PTX for one is not loaded on
            // another); CubeCL reads its configuration when the first device starts, below
            let arch = cudarc::driver::CudaContext::new(0)
                .and_then(|c| c.compute_capability())
                .map_or_else(|_| "cuda".to_string(), |(a, b)| format!("cuda-sm{a}{b}"));
            let _ = crate::train::kernel_cache::configure(&arch);
            let dev = CudaDevice::new(0);
            let t = Tensor::<Cuda, 1>::from_floats([1.0, 2.0], &dev);
            let s: f32 = t.sum().into_scalar().elem();
            if s != 3.0 {
                return Err(format!("cuda:0 computed 1 + 2 = {s}"));
            }
            Ok(n as usize)
        });
        std::panic::set_hook(prev);
        let why = match r {
            Ok(Ok(n)) => return Ok(n),
            Ok(Err(e)) => e,
            Err(p) => crate::core::runner::panic_message(&p),
        };
        Err(format!(
            "no usable CUDA device: {}",
            why.split_whitespace().collect::<Vec<_>>().join(" ")
        ))
    }

    /// The device check on cuda:`index` (`devices --check`, [`crate::train::device_check`]).
    pub fn check_kernels(index: usize) -> Result<Vec<crate::train::device_check::Check>, String> {
        let n = probe()?;
        if index >= n {
            return Err(format!(
                "cuda:{index} does not exist ({n} CUDA device(s) found)"
            ));
        }
        std::panic::catch_unwind(|| {
            crate::train::device_check::run::<CudaTrain>(&CudaDevice::new(index))
        })
        .unwrap_or_else(|p| Err(crate::core::runner::panic_message(&p)))
    }

    pub fn run_group(
        ids: &[usize],
        workload: &Workload,
        group: &Group<'_>,
        data: Arc<crate::data::Dataset>,
        opts: &TrainOptions,
        emit: &mut dyn FnMut(usize, TrialEvent),
        done: &mut dyn FnMut(usize, TrialOutcome),
    ) -> anyhow::Result<()> {
        let n = probe().map_err(|e| anyhow::anyhow!(e))?;
        for &i in ids {
            anyhow::ensure!(i < n, "cuda:{i} does not exist ({n} CUDA device(s) found)");
        }
        let devices = ids.iter().map(|&i| CudaDevice::new(i)).collect();
        super::run_group::<CudaTrain>(
            devices,
            workload,
            group.specs,
            data,
            opts,
            group.cut.clone(),
            emit,
            group.cancels,
            done,
        )
    }
}

#[cfg(not(feature = "cuda"))]
pub mod cuda {
    use super::*;

    pub fn probe() -> Result<usize, String> {
        Err(
            "this build has no CUDA support: rebuild with `cargo build --release --features cuda`"
                .into(),
        )
    }

    pub fn check_kernels(_index: usize) -> Result<Vec<crate::train::device_check::Check>, String> {
        Err(probe().unwrap_err())
    }

    pub fn run_group(
        _ids: &[usize],
        _workload: &Workload,
        _group: &Group<'_>,
        _data: Arc<crate::data::Dataset>,
        _opts: &TrainOptions,
        _emit: &mut dyn FnMut(usize, TrialEvent),
        _done: &mut dyn FnMut(usize, TrialOutcome),
    ) -> anyhow::Result<()> {
        Err(anyhow::anyhow!(probe().unwrap_err()))
    }
}
