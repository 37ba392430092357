//! The wgpu backend (`--features wgpu`): Burn's `Wgpu` (CubeCL, WGSL shaders, fusion, autotune)
//! on Vulkan, Metal or DX12 adapters — and on Mesa's software Vulkan driver (lavapipe), which is
//! how CI runs it without a GPU. See docs/gpu.md.
//!
//! * **Adapters** are enumerated with wgpu itself on the graphics API CubeCL uses (Vulkan on
//!   Linux and Windows, Metal on macOS), in wgpu's order: `wgpu:K` is the K-th adapter there.
//!   Enumeration does not touch CubeCL, so a machine without a driver gets one line, no panic.
//! * **Precision** is probed, never assumed: the adapter's declared dtype support (CubeCL's
//!   `supports_dtype`: WGSL has no bf16), then one tiny forward/backward in that precision on
//!   a thread of its own, under `catch_unwind` and a timeout, once per process and adapter. A
//!   precision the adapter cannot do is one clear error before the trial starts.
//! * **Replicas**: `wgpu:0,1` puts one replica on each adapter; `wgpu:0,0` puts two replicas on
//!   adapter 0 (one CubeCL device, each replica thread its own stream). Gradients are
//!   all-reduced with burn-collective as on every backend.

use std::sync::Arc;

use crate::core::events::TrialEvent;
use crate::core::trial::{DeviceSpec, TrialOutcome};
use crate::workload::spec::{Precision, Workload};

use super::device_check::Check;
use super::trainer::TrainOptions;

/// One wgpu adapter as enumerated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adapter {
    /// `wgpu:index`.
    pub index: usize,
    pub name: String,
    /// "discrete", "integrated", "virtual", "cpu" (a software rasteriser such as lavapipe), "other".
    pub kind: &'static str,
    /// The graphics API: "Vulkan", "Metal", "Dx12", …
    pub api: String,
    /// Largest buffer one kernel can bind (bytes): CubeCL's largest allocation on this adapter,
    /// the limit an oversized batch runs into first.
    pub max_binding_bytes: u64,
}

impl Adapter {
    /// "wgpu:0 llvmpipe (LLVM 15.0.6, 256 bits) [Vulkan, cpu]".
    pub fn label(&self) -> String {
        format!(
            "wgpu:{} {} [{}, {}]",
            self.index, self.name, self.api, self.kind
        )
    }
}

/// The label of a run on `adapters`: "burn-wgpu (wgpu:0 llvmpipe … [Vulkan, cpu]; 2 replicas
/// sharing adapter 0)". Adapters not in `found` are listed by index only.
pub fn label(adapters: &[usize], found: &[Adapter]) -> String {
    let mut distinct: Vec<usize> = Vec::new();
    for &a in adapters {
        if !distinct.contains(&a) {
            distinct.push(a);
        }
    }
    let list: Vec<String> = distinct
        .iter()
        .map(|i| match found.iter().find(|a| a.index == *i) {
            Some(a) => a.label(),
            None => format!("wgpu:{i}"),
        })
        .collect();
    let spec = DeviceSpec::Wgpu {
        adapters: adapters.to_vec(),
    };
    let name = if fusion_off() {
        "burn-wgpu unfused"
    } else {
        "burn-wgpu"
    };
    match spec.sharing() {
        Some(s) => format!("{name} ({}; {s})", list.join(", ")),
        None => format!("{name} ({})", list.join(", ")),
    }
}

/// Checks that every index of `adapters` names one of `found` (the message lists what exists).
pub fn check_indices(adapters: &[usize], found: &[Adapter]) -> Result<(), String> {
    for &i in adapters {
        if !found.iter().any(|a| a.index == i) {
            let have: Vec<String> = found.iter().map(|a| a.label()).collect();
            return Err(format!(
                "wgpu:{i} does not exist ({} wgpu adapter{} found: {})",
                found.len(),
                if found.len() == 1 { "" } else { "s" },
                have.join("; ")
            ));
        }
    }
    Ok(())
}

/// `SCALING_LAB_FUSION=0` (or `off`/`false`): wgpu trials run without Burn's kernel fusion (an A/B
/// switch for `scripts/gpu-check.sh`; the run's backend label says "unfused").
pub fn fusion_off() -> bool {
    std::env::var("SCALING_LAB_FUSION").is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "off" | "false"
        )
    })
}

/// Mesa's device-select layer (an implicit Vulkan layer installed with Mesa's drivers, lavapipe
/// included) connects to a Wayland display whenever a Vulkan instance is created and prints
/// "error: XDG_RUNTIME_DIR is invalid or not set in the environment." twice on stderr when there
/// is no desktop session (CI, ssh, containers). Without a session it has nothing to select, so
/// it is switched off there (`NODEVICE_SELECT=1`, the layer's own switch) — which keeps a
/// refusal one line. Call it first thing in `main`, before any thread starts (it sets an
/// environment variable); a build without wgpu does nothing.
pub fn quiet_device_select_layer() {
    if cfg!(all(feature = "wgpu", target_os = "linux"))
        && std::env::var_os("XDG_RUNTIME_DIR").is_none()
        && std::env::var_os("NODEVICE_SELECT").is_none()
    {
        std::env::set_var("NODEVICE_SELECT", "1");
    }
}

/// Why no adapter was found, in one line.
pub const NO_ADAPTER: &str =
    "no usable wgpu adapter: no Vulkan/Metal/DX12 driver or GPU was found \
     (on Linux, `apt-get install mesa-vulkan-drivers libvulkan1` gives a software one, lavapipe)";

#[cfg(feature = "wgpu")]
mod imp {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    use std::time::Duration;

    use burn::backend::wgpu::graphics::{AutoGraphicsApi, GraphicsApi};
    use burn::backend::wgpu::{Wgpu, WgpuDevice};
    use burn::backend::Autodiff;
    use burn::tensor::backend::Backend;
    use burn::tensor::{DType, FloatDType, Tensor};

    use super::*;

    pub type WgpuTrain = Autodiff<Wgpu>;
    /// The same backend without Burn's fusion (`SCALING_LAB_FUSION=0`: fusion on vs off with one
    /// binary).
    pub type WgpuTrainUnfused =
        Autodiff<burn::backend::wgpu::CubeBackend<burn::backend::wgpu::WgpuRuntime, f32, i32, u32>>;

    /// How long the precision probe may take (the first kernels compile on a software device
    /// in seconds, not minutes): past it the adapter counts as unable.
    const PROBE_TIMEOUT: Duration = Duration::from_secs(180);

    /// The adapters on CubeCL's graphics API with the CubeCL device that selects each.
    fn enumerate() -> Vec<(Adapter, Option<WgpuDevice>)> {
        let backend = AutoGraphicsApi::backend();
        let instance = ::wgpu::Instance::new(::wgpu::InstanceDescriptor {
            backends: backend.into(),
            ..::wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let adapters = futures::executor::block_on(instance.enumerate_adapters(backend.into()));
        let mut seen: HashMap<&'static str, usize> = HashMap::new();
        adapters
            .iter()
            .enumerate()
            .map(|(index, a)| {
                let info = a.get_info();
                let kind = match info.device_type {
                    ::wgpu::DeviceType::DiscreteGpu => "discrete",
                    ::wgpu::DeviceType::IntegratedGpu => "integrated",
                    ::wgpu::DeviceType::VirtualGpu => "virtual",
                    ::wgpu::DeviceType::Cpu => "cpu",
                    ::wgpu::DeviceType::Other => "other",
                };
                // CubeCL selects an adapter by type and index among that type, in this order
                // (its `select_from_adapter_list`); of CPU adapters only the first.
                let k = seen.entry(kind).or_insert(0);
                let device = match kind {
                    "discrete" => Some(WgpuDevice::DiscreteGpu(*k)),
                    "integrated" => Some(WgpuDevice::IntegratedGpu(*k)),
                    "virtual" => Some(WgpuDevice::VirtualGpu(*k)),
                    "cpu" if *k == 0 => Some(WgpuDevice::Cpu),
                    _ => None,
                };
                *k += 1;
                let adapter = Adapter {
                    index,
                    name: info.name.clone(),
                    kind,
                    api: format!("{:?}", info.backend),
                    max_binding_bytes: a.limits().max_storage_buffer_binding_size,
                };
                (adapter, device)
            })
            .collect()
    }

    fn enumerated() -> &'static [(Adapter, Option<WgpuDevice>)] {
        static ALL: OnceLock<Vec<(Adapter, Option<WgpuDevice>)>> = OnceLock::new();
        ALL.get_or_init(|| {
            // before any CubeCL device starts: the autotune cache per user (kernel_cache.rs)
            let _ = crate::train::kernel_cache::configure("wgpu");
            // A broken driver may panic inside wgpu: no adapters then, and no message printed.
            quiet(|| std::panic::catch_unwind(enumerate).unwrap_or_default())
        })
    }

    /// The wgpu adapters of this machine, or a one-line reason why there are none.
    pub fn probe() -> Result<Vec<Adapter>, String> {
        let all: Vec<Adapter> = enumerated().iter().map(|(a, _)| a.clone()).collect();
        if all.is_empty() {
            return Err(NO_ADAPTER.into());
        }
        Ok(all)
    }

    /// The CubeCL device of adapter `index` (which must exist).
    pub fn device(index: usize) -> Result<WgpuDevice, String> {
        let (a, d) = enumerated()
            .iter()
            .find(|(a, _)| a.index == index)
            .ok_or_else(|| format!("wgpu:{index} does not exist"))?;
        d.clone().ok_or_else(|| {
            format!(
                "{}: CubeCL cannot select this adapter (a second CPU adapter, or of type 'other')",
                a.label()
            )
        })
    }

    /// Runs `f` with panic messages silenced process-wide (the engine never prints; a probe's
    /// panic, on its thread or CubeCL's server thread, is its result, not a message). The hook
    /// wrapper is installed once and is silent while any probe runs, so concurrent or stuck
    /// probes can neither deadlock nor leave the process silent after they end.
    fn quiet<R>(f: impl FnOnce() -> R) -> R {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static PROBING: AtomicUsize = AtomicUsize::new(0);
        static INSTALLED: std::sync::Once = std::sync::Once::new();
        INSTALLED.call_once(|| {
            let prev = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if PROBING.load(Ordering::SeqCst) == 0 {
                    prev(info)
                }
            }));
        });
        struct Done;
        impl Drop for Done {
            fn drop(&mut self) {
                PROBING.fetch_sub(1, Ordering::SeqCst);
            }
        }
        PROBING.fetch_add(1, Ordering::SeqCst);
        let _done = Done;
        f()
    }

    /// Whether adapter `index` computes in `precision`: the declared support, then one tiny
    /// forward/backward in that precision, read back and checked finite (cached per process).
    pub fn check_precision(index: usize, precision: Precision) -> Result<(), String> {
        /// Precision probes already run, per adapter: their verdicts.
        type ProbeCache = std::collections::HashMap<(usize, Precision), Result<(), String>>;
        static DONE: OnceLock<Mutex<ProbeCache>> = OnceLock::new();
        let cache = DONE.get_or_init(Default::default);
        if let Some(r) = cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(index, precision))
        {
            return r.clone();
        }
        let r = probe_precision(index, precision);
        cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((index, precision), r.clone());
        r
    }

    fn probe_precision(index: usize, precision: Precision) -> Result<(), String> {
        let dev = device(index)?;
        let label = enumerated()
            .iter()
            .find(|(a, _)| a.index == index)
            .map(|(a, _)| a.label())
            .unwrap_or_else(|| format!("wgpu:{index}"));
        let (dtype, fdtype) = match precision {
            Precision::Fp32 => (DType::F32, FloatDType::F32),
            Precision::Fp16 => (DType::F16, FloatDType::F16),
            Precision::Bf16 => (DType::BF16, FloatDType::BF16),
        };
        let name = precision.name();
        let (tx, rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name(format!("wgpu{index}-probe-{name}"))
            .spawn(move || {
                let r = quiet(|| {
                    std::panic::catch_unwind(move || -> Result<(), String> {
                        if !<Wgpu as Backend>::supports_dtype(&dev, dtype) {
                            return Err(match precision {
                                Precision::Bf16 => "WGSL has no bf16 type".into(),
                                _ => format!("the adapter does not declare {name} arithmetic"),
                            });
                        }
                        if precision == Precision::Fp32 {
                            // fp32 is every adapter's: one kernel and a read show the device runs
                            let s = Tensor::<Wgpu, 1>::ones([4], &dev).sum().into_scalar();
                            return if s == 4.0 {
                                Ok(())
                            } else {
                                Err(format!("a sum gave {s}, not 4"))
                            };
                        }
                        // A 16×16 matmul forward/backward in the precision, as a step runs it.
                        let x = Tensor::<WgpuTrain, 2>::ones([16, 16], &dev).require_grad();
                        let y = x.clone().cast(fdtype).matmul(x.clone().cast(fdtype));
                        let g = y.cast(FloatDType::F32).sum().backward();
                        let v: Vec<f32> = x
                            .grad(&g)
                            .ok_or("no gradient")?
                            .into_data()
                            .to_vec()
                            .map_err(|e| format!("{e:?}"))?;
                        if v.iter().all(|&a| a == 32.0) {
                            Ok(())
                        } else {
                            Err(format!(
                                "a {name} matmul gave wrong values ({:?}…)",
                                &v[..4]
                            ))
                        }
                    })
                    .unwrap_or_else(|p| Err(crate::core::runner::panic_message(&p)))
                });
                let _ = tx.send(r);
            });
        if spawned.is_err() {
            return Err("cannot start the precision probe thread".into());
        }
        let r = rx.recv_timeout(PROBE_TIMEOUT).unwrap_or_else(|_| {
            Err(format!(
                "the probe did not finish within {} s",
                PROBE_TIMEOUT.as_secs()
            ))
        });
        r.map_err(|why| {
            let why = why.lines().next().unwrap_or("").trim().to_string();
            format!(
                "{label} cannot compute in {name}: {why}; use --precision {}",
                if precision == Precision::Fp32 {
                    "fp32 on another device"
                } else {
                    "fp32 (or fp16 where the adapter has it)"
                }
            )
        })
    }

    /// Every adapter exists and computes in `precision`.
    pub fn check(adapters: &[usize], precision: Precision) -> Result<Vec<Adapter>, String> {
        let found = probe()?;
        check_indices(adapters, &found)?;
        let mut distinct = adapters.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        for &i in &distinct {
            device(i)?;
            check_precision(i, precision)?;
        }
        Ok(found)
    }

    /// The device check on adapter `index` (`devices --check`, [`crate::train::device_check`])
    /// with the backend a trial there trains on (unfused under `SCALING_LAB_FUSION=0`).
    pub fn check_kernels(index: usize) -> Result<Vec<Check>, String> {
        let dev = device(index)?;
        quiet(|| {
            std::panic::catch_unwind(|| {
                if fusion_off() {
                    crate::train::device_check::run::<WgpuTrainUnfused>(&dev)
                } else {
                    crate::train::device_check::run::<WgpuTrain>(&dev)
                }
            })
            .unwrap_or_else(|p| Err(crate::core::runner::panic_message(&p)))
        })
    }

    /// A fused group of trials on the adapters (see `trainer::run_group`).
    pub fn run_group(
        adapters: &[usize],
        workload: &Workload,
        group: &crate::core::runner::Group<'_>,
        data: Arc<crate::data::Dataset>,
        opts: &TrainOptions,
        emit: &mut dyn FnMut(usize, TrialEvent),
        done: &mut dyn FnMut(usize, TrialOutcome),
    ) -> anyhow::Result<()> {
        let spec = anyhow::Context::context(group.specs.first(), "an empty group")?;
        check(adapters, spec.precision).map_err(|e| anyhow::anyhow!(e))?;
        let devices = adapters
            .iter()
            .map(|&i| device(i))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow::anyhow!(e))?;
        let (specs, cancels, cut) = (group.specs, group.cancels, group.cut.clone());
        if fusion_off() {
            crate::train::trainer::run_group::<WgpuTrainUnfused>(
                devices, workload, specs, data, opts, cut, emit, cancels, done,
            )
        } else {
            crate::train::trainer::run_group::<WgpuTrain>(
                devices, workload, specs, data, opts, cut, emit, cancels, done,
            )
        }
    }
}

#[cfg(feature = "wgpu")]
pub use imp::{
    check, check_kernels, check_precision, device, probe, run_group, WgpuTrain, WgpuTrainUnfused,
};

#[cfg(not(feature = "wgpu"))]
mod imp {
    use super::*;

    const NOT_BUILT: &str =
        "this build has no wgpu support: rebuild with `cargo build --release --features wgpu`";

    pub fn probe() -> Result<Vec<Adapter>, String> {
        Err(NOT_BUILT.into())
    }

    pub fn check(_adapters: &[usize], _precision: Precision) -> Result<Vec<Adapter>, String> {
        Err(NOT_BUILT.into())
    }

    pub fn check_kernels(_index: usize) -> Result<Vec<Check>, String> {
        Err(NOT_BUILT.into())
    }

    pub fn run_group(
        _adapters: &[usize],
        _workload: &Workload,
        _group: &crate::core::runner::Group<'_>,
        _data: Arc<crate::data::Dataset>,
        _opts: &TrainOptions,
        _emit: &mut dyn FnMut(usize, TrialEvent),
        _done: &mut dyn FnMut(usize, TrialOutcome),
    ) -> anyhow::Result<()> {
        Err(anyhow::anyhow!(NOT_BUILT))
    }
}

#[cfg(not(feature = "wgpu"))]
pub use imp::{check, check_kernels, probe, run_group};

#[cfg(test)]
mod tests {
    use super::*;

    fn lavapipe() -> Adapter {
        Adapter {
            index: 0,
            name: "llvmpipe (LLVM 15.0.6, 256 bits)".into(),
            kind: "cpu",
            api: "Vulkan".into(),
            max_binding_bytes: 128 << 20,
        }
    }

    #[test]
    fn labels_name_the_adapter_and_say_when_replicas_share_it() {
        let found = vec![lavapipe()];
        assert_eq!(
            label(&[0], &found),
            "burn-wgpu (wgpu:0 llvmpipe (LLVM 15.0.6, 256 bits) [Vulkan, cpu])"
        );
        assert_eq!(
            label(&[0, 0], &found),
            "burn-wgpu (wgpu:0 llvmpipe (LLVM 15.0.6, 256 bits) [Vulkan, cpu]; 2 replicas sharing adapter 0)"
        );
        assert_eq!(label(&[1], &found), "burn-wgpu (wgpu:1)");
        assert_eq!(
            DeviceSpec::Wgpu {
                adapters: vec![0, 1, 1]
            }
            .sharing()
            .as_deref(),
            Some("1 replica on adapter 0, 2 replicas on adapter 1")
        );
        assert_eq!(
            DeviceSpec::Wgpu {
                adapters: vec![0, 1]
            }
            .sharing(),
            None
        );
    }

    #[test]
    fn a_missing_adapter_is_one_line_listing_what_exists() {
        let e = check_indices(&[0, 2], &[lavapipe()]).unwrap_err();
        assert_eq!(
            e,
            "wgpu:2 does not exist (1 wgpu adapter found: wgpu:0 llvmpipe (LLVM 15.0.6, 256 bits) [Vulkan, cpu])"
        );
        assert!(check_indices(&[0, 0], &[lavapipe()]).is_ok());
    }
}
