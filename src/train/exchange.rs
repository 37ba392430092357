//! The gradient exchange of one data-parallel step: all-reduce (mean) of every replica's gradients.
//!
//! Two paths with identical results:
//! * **bucketed** (default): the step's gradients are flattened, in the model's parameter order,
//!   into one or a few contiguous buffers of at most `bucket_bytes` each; each buffer is
//!   all-reduced with one burn-collective call and the result is cut back into per-parameter
//!   tensors. One collective call (one barrier) per bucket instead of one per parameter tensor —
//!   the per-call coordination, not bandwidth, is what the exchange costs between threads.
//! * **per tensor** (`bucket_bytes = 0`): Burn's `GradientsParams::all_reduce`, one call per
//!   parameter (the reference the bucketed path is tested against).
//!
//! Element by element both paths compute the same sum in the same order and divide by G, so the
//! reduced gradients are bitwise equal. The squared norms the noise-scale estimate needs (the
//! replica's shard gradient before, the mean gradient after the reduce) are taken on the flat
//! buffers the exchange holds anyway — no extra backward, no second pass over the parameter
//! tensors — and stay on the device: the trainer reads them with the step's loss in one transfer.

use anyhow::anyhow;
use burn::collective::{all_reduce, register, PeerId, ReduceOperation};
use burn::module::{AutodiffModule, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorPrimitive};

use super::grads;

/// Default bucket cap (bytes of fp32 gradient per collective call), chosen from `allreduce_bench`
/// on the in-process path (2-core machine, G = 2): up to 1 MiB a call costs ~10 µs + bytes/4 GB/s,
/// at 4 MiB 1.3 ms (3.3 GB/s), but at 16 MiB 16 ms (1.0 GB/s) and 64 MiB 153 ms — large buffers fall
/// out of cache. 4 MiB buckets keep the fast regime; every small model is one bucket.
pub const DEFAULT_BUCKET_BYTES: usize = 4 << 20;

/// The process-wide collective server serves one multi-replica group at a time: a trial with
/// several replicas, the all-reduce benchmark, or a caller that joins replicas itself holds this
/// guard from `reset_collective` to its last all-reduce.
pub fn collective_lock() -> std::sync::MutexGuard<'static, ()> {
    static COLLECTIVE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    COLLECTIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers replica `rank` of `world` (over all nodes) with the collective, on `device` of the
/// backend that reduces (the one place its config is built): local only, or global (multi-node)
/// with `cluster`. Every replica thread calls it before its first all-reduce.
pub fn join_collective<B: Backend>(
    rank: usize,
    world: usize,
    cluster: Option<&super::multinode::ClusterSpec>,
    device: &B::Device,
) -> Result<(), String> {
    let local = world / cluster.map_or(1, |c| c.nodes);
    let cfg = super::multinode::collective_config(cluster, local);
    register::<B>(PeerId::from(rank), device.clone(), cfg)
        .map_err(|e| format!("collective register failed: {e:?}"))
}

/// The bucket cap of `TrainOptions::default()`: `SCALING_LAB_BUCKET_BYTES` when set to a number
/// (0 = the per-tensor path; for A/B measurements with one binary), else `DEFAULT_BUCKET_BYTES`.
pub fn default_bucket_bytes() -> usize {
    std::env::var("SCALING_LAB_BUCKET_BYTES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_BUCKET_BYTES)
}

struct Slot {
    id: ParamId,
    shape: Vec<usize>,
    bucket: usize,
    offset: usize,
    len: usize,
}

/// Removes every gradient (in the model's visiting order) as a flat 1-D tensor, with its shape.
struct Take<'a, IB: Backend> {
    grads: &'a mut GradientsParams,
    out: Vec<(ParamId, Vec<usize>, Tensor<IB, 1>)>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Take<'_, B::InnerBackend> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if let Some(g) = self.grads.remove::<B::InnerBackend, D>(param.id) {
            let shape = g.dims().to_vec();
            let n: usize = shape.iter().product();
            self.out.push((param.id, shape, g.reshape([n])));
        }
    }
}

/// Registers per-parameter views of flat buffers.
struct Put<'a, IB: Backend> {
    grads: &'a mut GradientsParams,
    slots: std::slice::Iter<'a, Slot>,
    buckets: &'a [Tensor<IB, 1>],
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Put<'_, B::InnerBackend> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let Some(slot) = self.slots.as_slice().first() else {
            return;
        };
        if slot.id != param.id {
            return;
        }
        let slot = self.slots.next().expect("peeked");
        let shape: [usize; D] = slot.shape.clone().try_into().expect("rank of the gradient");
        let t = self.buckets[slot.bucket]
            .clone()
            .narrow(0, slot.offset, slot.len)
            .reshape(shape);
        self.grads.register(param.id, t);
    }
}

/// Each member's Σ of squares over the flat buffers: every parameter's slot holds its [K, …]
/// gradient (member-major), so member k's part of a slot is the k-th of K equal runs.
fn member_sq_sum<IB: Backend>(
    buckets: &[Tensor<IB, 1>],
    slots: &[Slot],
    members: usize,
) -> Option<Tensor<IB, 1>> {
    let mut acc: Option<Tensor<IB, 1>> = None;
    if members == 1 {
        // one member: one reduction per bucket
        for b in buckets {
            let s = b.clone().powi_scalar(2).sum();
            acc = Some(match acc {
                Some(a) => a + s,
                None => s,
            });
        }
        return acc;
    }
    for slot in slots {
        let part = buckets[slot.bucket]
            .clone()
            .narrow(0, slot.offset, slot.len)
            .reshape([members, slot.len / members]);
        let s = grads::member_sq(part);
        acc = Some(match acc {
            Some(a) => a + s,
            None => s,
        });
    }
    acc
}

/// All-reduces (mean over the `world` replicas) this replica's gradients of a model with
/// `members` members (one exchange carries every member's gradients). `local_norm`: also measure
/// each member's |g_replica|² (for the noise scale). `bucket_bytes = 0`: per-tensor reference path.
pub fn all_reduce_mean<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    mut g: GradientsParams,
    rank: usize,
    bucket_bytes: usize,
    local_norm: bool,
    members: usize,
) -> anyhow::Result<Reduced<B>> {
    let peer = PeerId::from(rank);
    if bucket_bytes == 0 {
        let local_sq = local_norm.then(|| grads::sq_norm(model, &g, members));
        let g = g
            .all_reduce::<B::InnerBackend>(peer, ReduceOperation::Mean)
            .map_err(|e| anyhow!("all-reduce failed on worker {rank}: {e:?}"))?;
        let global_sq = grads::sq_norm(model, &g, members);
        return Ok(Reduced {
            grads: g,
            local_sq,
            global_sq,
            flat: None,
        });
    }
    let mut take = Take::<B::InnerBackend> {
        grads: &mut g,
        out: Vec::new(),
    };
    model.visit(&mut take);
    let pieces = take.out;
    // Bucket assignment: consecutive parameters until the cap (a parameter larger than the cap
    // gets a bucket of its own).
    let cap_elems = (bucket_bytes / 4).max(1);
    let mut slots = Vec::with_capacity(pieces.len());
    let mut groups: Vec<Vec<Tensor<B::InnerBackend, 1>>> = Vec::new();
    let mut fill = 0;
    for (id, shape, piece) in pieces {
        let len = piece.dims()[0];
        if groups.is_empty() || (fill > 0 && fill + len > cap_elems) {
            groups.push(Vec::new());
            fill = 0;
        }
        slots.push(Slot {
            id,
            shape,
            bucket: groups.len() - 1,
            offset: fill,
            len,
        });
        fill += len;
        groups.last_mut().expect("a bucket").push(piece);
    }
    let buckets: Vec<Tensor<B::InnerBackend, 1>> = groups
        .into_iter()
        .map(|mut v| {
            if v.len() == 1 {
                v.pop().expect("one")
            } else {
                Tensor::cat(v, 0)
            }
        })
        .collect();
    let local_sq = if local_norm {
        member_sq_sum(&buckets, &slots, members)
    } else {
        None
    };
    let mut reduced = Vec::with_capacity(buckets.len());
    for b in buckets {
        let p =
            all_reduce::<B::InnerBackend>(peer, b.into_primitive().tensor(), ReduceOperation::Mean)
                .map_err(|e| anyhow!("all-reduce failed on worker {rank}: {e:?}"))?;
        reduced.push(Tensor::<B::InnerBackend, 1>::from_primitive(
            TensorPrimitive::Float(p),
        ));
    }
    let global_sq = member_sq_sum(&reduced, &slots, members)
        .unwrap_or_else(|| grads::sq_norm(model, &g, members));
    Ok(Reduced {
        grads: g,
        local_sq,
        global_sq,
        flat: Some(FlatOf {
            slots,
            buckets: reduced,
        }),
    })
}

/// The reduced gradients of one step and the squared norms measured on the way.
pub struct Reduced<B: AutodiffBackend> {
    grads: GradientsParams,
    /// Each member's |g_replica|² of this replica's shard gradient before the reduce (scaled by
    /// the loss scale²; None when not asked for), on the device: [K].
    pub local_sq: Option<Tensor<B::InnerBackend, 1>>,
    /// Each member's |mean g|² after the reduce (scaled), on the device: [K].
    pub global_sq: Tensor<B::InnerBackend, 1>,
    /// The flat reduced buffers (bucketed path).
    flat: Option<FlatOf<B::InnerBackend>>,
}

struct FlatOf<IB: Backend> {
    slots: Vec<Slot>,
    buckets: Vec<Tensor<IB, 1>>,
}

impl<B: AutodiffBackend> Reduced<B> {
    /// One replica: nothing to exchange; the norms are taken per parameter.
    pub fn single<M: AutodiffModule<B>>(model: &M, g: GradientsParams, members: usize) -> Self {
        let global_sq = grads::sq_norm(model, &g, members);
        Reduced {
            grads: g,
            local_sq: None,
            global_sq,
            flat: None,
        }
    }

    /// The reduced gradients per parameter (still scaled: the optimizer applies each member's
    /// 1/loss scale × clipping factor in its update).
    pub fn into_grads<M: AutodiffModule<B>>(self, model: &M) -> GradientsParams {
        match self.flat {
            None => self.grads,
            Some(flat) => {
                let mut g = self.grads;
                model.visit(&mut Put::<B::InnerBackend> {
                    grads: &mut g,
                    slots: flat.slots.iter(),
                    buckets: &flat.buckets,
                });
                g
            }
        }
    }
}

/// `module` with every float parameter copied through the host onto `device`: the same values
/// and parameter ids, no tensor shared with `module` (a second replica on a device that holds
/// one already; `Module::fork` there shares the tensors themselves).
pub fn deep_copy<B: AutodiffBackend, M: burn::module::Module<B>>(
    module: M,
    device: &B::Device,
) -> M {
    struct Copy<'d, B: Backend> {
        device: &'d B::Device,
    }
    impl<B: AutodiffBackend> burn::module::ModuleMapper<B> for Copy<'_, B> {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
            let (id, tensor, mapper) = param.consume();
            let require_grad = tensor.is_require_grad();
            let copy = Tensor::<B, D>::from_data(tensor.into_data(), self.device);
            let copy = if require_grad {
                copy.require_grad()
            } else {
                copy
            };
            Param::from_mapped_value(id, copy, mapper)
        }
    }
    module.map(&mut Copy { device })
}
