//! `TrialRunner` for data workloads: picks the backend (Flex CPU, or CUDA with `--features cuda`).

use std::sync::Arc;

use anyhow::Context;
use burn::backend::{Autodiff, Flex};

use super::trainer::{run_trial, TrainOptions};
use crate::core::{CancelToken, DeviceSpec, TrialEvent, TrialOutcome, TrialRunner, TrialSpec};
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
}

impl TrialRunner for BurnRunner {
    fn run(
        &self,
        workload: &Workload,
        spec: &TrialSpec,
        emit: &mut dyn FnMut(TrialEvent),
        cancel: &CancelToken,
    ) -> anyhow::Result<TrialOutcome> {
        let ds = workload
            .dataset
            .as_ref()
            .context("this workload has no dataset (is it an NQM preset?)")?;
        let data = crate::data::load_cached(ds).map_err(|e| anyhow::anyhow!("{e}"))?;
        match &spec.devices {
            DeviceSpec::Cpu { workers } => {
                anyhow::ensure!(*workers >= 1, "at least one worker is needed");
                let devices = vec![Default::default(); *workers];
                run_trial::<CpuTrain>(devices, workload, spec, data, &self.options, emit, cancel)
            }
            DeviceSpec::Cuda { devices } => {
                cuda::run(devices, workload, spec, data, &self.options, emit, cancel)
            }
        }
    }

    fn backend(&self) -> String {
        "burn-flex (cpu)".into()
    }
}

/// The runner for a workload: the closed-form NQM or the Burn trainer.
pub fn runner_for(
    workload: &Workload,
    options: &TrainOptions,
) -> anyhow::Result<Arc<dyn TrialRunner>> {
    match workload.model {
        crate::workload::spec::ModelSpec::Nqm { .. } => Ok(Arc::new(crate::nqm::NqmRunner::new())),
        _ => Ok(Arc::new(BurnRunner::new(options.clone()))),
    }
}

#[cfg(feature = "cuda")]
pub mod cuda {
    use super::*;
    use burn::backend::cuda::CudaDevice;
    use burn::backend::Cuda;

    pub type CudaTrain = Autodiff<Cuda>;

    /// Number of CUDA devices, or a one-line reason why there are none. Burn panics when the
    /// driver is missing, so the probe runs under `catch_unwind` with the panic message silenced.
    pub fn probe() -> Result<usize, String> {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let r = std::panic::catch_unwind(|| {
            use burn::tensor::Tensor;
            let mut n = 0;
            for i in 0..16 {
                let dev = CudaDevice::new(i);
                let ok = std::panic::catch_unwind(|| {
                    let t = Tensor::<Cuda, 1>::from_floats([1.0, 2.0], &dev);
                    let _ = t.sum().into_scalar();
                })
                .is_ok();
                if !ok {
                    break;
                }
                n += 1;
            }
            n
        });
        std::panic::set_hook(prev);
        match r {
            Ok(0) | Err(_) => Err(
                "no usable CUDA device: the CUDA driver (libcuda) or a GPU was not found".into(),
            ),
            Ok(n) => Ok(n),
        }
    }

    pub fn run(
        ids: &[usize],
        workload: &Workload,
        spec: &TrialSpec,
        data: Arc<crate::data::Dataset>,
        opts: &TrainOptions,
        emit: &mut dyn FnMut(TrialEvent),
        cancel: &CancelToken,
    ) -> anyhow::Result<TrialOutcome> {
        let n = probe().map_err(|e| anyhow::anyhow!(e))?;
        for &i in ids {
            anyhow::ensure!(i < n, "cuda:{i} does not exist ({n} CUDA device(s) found)");
        }
        let devices = ids.iter().map(|&i| CudaDevice::new(i)).collect();
        run_trial::<CudaTrain>(devices, workload, spec, data, opts, emit, cancel)
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

    pub fn run(
        _ids: &[usize],
        _workload: &Workload,
        _spec: &TrialSpec,
        _data: Arc<crate::data::Dataset>,
        _opts: &TrainOptions,
        _emit: &mut dyn FnMut(TrialEvent),
        _cancel: &CancelToken,
    ) -> anyhow::Result<TrialOutcome> {
        Err(anyhow::anyhow!(probe().unwrap_err()))
    }
}
