//! Optimizers with PyTorch semantics, per member of a fused group of trials:
//! SGD, heavy-ball momentum and Nesterov with dampening 0, and Adam with the preset's ε (Burn's Adam
//! arithmetic: its update m̂/(√v̂+ε) is algebraically PyTorch's; checked in tests against Burn's
//! `Adam` and against hand-computed updates).
//!
//! Every parameter has the member axis ([K, …], `model::layers`); member k has its own learning
//! rate, momentum γ (β1), β2, ε, gradient factor (1/loss scale × clipping) and step count, and a
//! member whose step is skipped (a non-finite gradient under loss scaling) keeps its weights and
//! state while the others update. On the CPU (Flex, f32) a parameter's update is one pass per member
//! over its slices of weights, state and gradient, in place; elsewhere the same formulas as tensor
//! ops with the per-member values broadcast along the member axis.

use std::collections::HashMap;

use burn::module::{AutodiffModule, ModuleMapper, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Bool, Tensor, TensorData};
use burn_flex::{Flex, FlexTensor};

use crate::model::kernels::flex::{cpu, float_of, is_f32, same, tensor_from, Cpu};
use crate::model::kernels::vmath::simd_dispatch;
use crate::workload::spec::{Metaparams, OptimizerKind};

/// The hyperparameters an optimizer applies to a member, read back from it (what a trial's record
/// must state: `workload::applied`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Applied {
    /// γ of the velocity (β1 for Adam); None = no momentum buffer.
    pub momentum: Option<f64>,
    pub nesterov: bool,
    /// Adam's β2 and ε; None = no second moment.
    pub beta2: Option<f64>,
    pub epsilon: Option<f64>,
}

/// One member's hyperparameters as the update uses them (f32, as Burn's optimizers store them).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Hyper {
    /// γ (SGD with momentum) or β1 (Adam), as given (f64) and as applied (f32).
    momentum: f64,
    beta1: f32,
    beta2: f32,
    epsilon: f32,
}

impl Hyper {
    fn of(mp: &Metaparams) -> Self {
        Hyper {
            momentum: mp.momentum,
            beta1: mp.momentum as f32,
            beta2: mp.beta2 as f32,
            epsilon: mp.epsilon as f32,
        }
    }
}

/// What a member's step does: the learning rate, the factor its gradient is multiplied by
/// (1/loss scale × the clipping factor) and whether it applies at all (a skipped step keeps the
/// member's weights and state).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemberStep {
    pub lr: f64,
    pub factor: f64,
    pub apply: bool,
}

impl MemberStep {
    pub fn plain(lr: f64) -> Self {
        MemberStep {
            lr,
            factor: 1.0,
            apply: true,
        }
    }

    /// The trainer's step of a member whose reduced gradient (scaled by `loss_scale`) has squared
    /// global norm `global_sq`: skipped when that is not finite (an fp16 overflow, a divergence);
    /// else the loss scale divided out and, with `clip`, the gradient scaled by min(1, clip / |g|)
    /// on the unscaled norm (global-norm clipping over all of the member's parameters).
    pub fn from_norm(lr: f64, loss_scale: f64, global_sq: f64, clip: Option<f64>) -> Self {
        let apply = global_sq.is_finite();
        let norm = global_sq.sqrt() / loss_scale;
        let clip_factor = match clip {
            Some(c) if apply && norm > c => c / norm,
            _ => 1.0,
        };
        MemberStep {
            lr,
            factor: clip_factor / loss_scale,
            apply,
        }
    }
}

/// The optimizer of a group of K members (K = 1: a lone trial).
pub struct Opt<B: AutodiffBackend> {
    kind: OptimizerKind,
    hyper: Vec<Hyper>,
    /// Applied steps per member (Adam's bias correction; the first step of a velocity).
    steps: Vec<u32>,
    /// Velocity (momentum) or first moment (Adam) per parameter, [K, …].
    first: HashMap<ParamId, Tensor<B::InnerBackend, 1>>,
    /// Adam's second moment per parameter.
    second: HashMap<ParamId, Tensor<B::InnerBackend, 1>>,
}

impl<B: AutodiffBackend> Opt<B> {
    /// A lone trial's optimizer.
    pub fn new(kind: OptimizerKind, mp: &Metaparams) -> Self {
        Self::group(kind, std::slice::from_ref(mp))
    }

    /// The optimizer of a group: member k with `mps[k]`.
    pub fn group(kind: OptimizerKind, mps: &[Metaparams]) -> Self {
        Opt {
            kind,
            hyper: mps.iter().map(Hyper::of).collect(),
            steps: vec![0; mps.len()],
            first: HashMap::new(),
            second: HashMap::new(),
        }
    }

    pub fn members(&self) -> usize {
        self.hyper.len()
    }

    /// A lone trial's step at learning rate `lr` (the gradients already scaled).
    pub fn step<M: AutodiffModule<B>>(&mut self, lr: f64, module: M, grads: GradientsParams) -> M {
        self.step_members(module, grads, &[MemberStep::plain(lr)])
    }

    /// One step of every member (`steps[k]` for member k).
    pub fn step_members<M: AutodiffModule<B>>(
        &mut self,
        module: M,
        mut grads: GradientsParams,
        steps: &[MemberStep],
    ) -> M {
        assert_eq!(steps.len(), self.members(), "one step per member");
        let out = module.map(&mut Mapper::<B> {
            opt: self,
            grads: &mut grads,
            steps,
        });
        for (n, s) in self.steps.iter_mut().zip(steps) {
            if s.apply {
                *n += 1;
            }
        }
        out
    }

    /// Keeps the members `keep` (in that order): the state of a module narrowed by
    /// `model::select_members` with the same list.
    pub fn select(&mut self, keep: &[usize]) {
        let k = self.members();
        let narrow = |t: Tensor<B::InnerBackend, 1>| {
            let len = t.dims()[0] / k;
            crate::model::select_rows(t.reshape([k, len]), keep).reshape([keep.len() * len])
        };
        for map in [&mut self.first, &mut self.second] {
            let ids: Vec<ParamId> = map.keys().copied().collect();
            for id in ids {
                let t = map.remove(&id).expect("listed");
                map.insert(id, narrow(t));
            }
        }
        self.hyper = keep.iter().map(|&i| self.hyper[i]).collect();
        self.steps = keep.iter().map(|&i| self.steps[i]).collect();
    }

    /// The hyperparameters this optimizer applies to member `k` (Adam's as f32, as Burn stores
    /// them; γ as given).
    pub fn applied_to(&self, k: usize) -> Applied {
        let h = self.hyper[k];
        match self.kind {
            OptimizerKind::Sgd => Applied {
                momentum: None,
                nesterov: false,
                beta2: None,
                epsilon: None,
            },
            OptimizerKind::Momentum | OptimizerKind::Nesterov => Applied {
                momentum: Some(h.momentum),
                nesterov: self.kind == OptimizerKind::Nesterov,
                beta2: None,
                epsilon: None,
            },
            OptimizerKind::Adam => Applied {
                momentum: Some(h.beta1 as f64),
                nesterov: false,
                beta2: Some(h.beta2 as f64),
                epsilon: Some(h.epsilon as f64),
            },
        }
    }

    /// A lone trial's hyperparameters ([`Self::applied_to`] member 0).
    pub fn applied(&self) -> Applied {
        self.applied_to(0)
    }
}

struct Mapper<'a, B: AutodiffBackend> {
    opt: &'a mut Opt<B>,
    grads: &'a mut GradientsParams,
    steps: &'a [MemberStep],
}

impl<B: AutodiffBackend> ModuleMapper<B> for Mapper<'_, B> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        let Some(grad) = self.grads.remove::<B::InnerBackend, D>(id) else {
            return Param::from_mapped_value(id, tensor, mapper);
        };
        let require_grad = tensor.is_require_grad();
        let w = tensor.inner();
        let dims = w.dims();
        let n: usize = dims.iter().product();
        let parts = Parts {
            w: w.reshape([n]),
            g: grad.reshape([n]),
            first: self.opt.first.remove(&id),
            second: self.opt.second.remove(&id),
        };
        let members = Members {
            kind: self.opt.kind,
            hyper: &self.opt.hyper,
            steps: &self.opt.steps,
            plan: self.steps,
        };
        let out = update::<B::InnerBackend>(parts, &members);
        if let Some(v) = out.first {
            self.opt.first.insert(id, v);
        }
        if let Some(v) = out.second {
            self.opt.second.insert(id, v);
        }
        let mut t = Tensor::<B, D>::from_inner(out.w.reshape(dims));
        if require_grad {
            t = t.require_grad();
        }
        Param::from_mapped_value(id, t, mapper)
    }
}

/// One parameter's flat tensors: weights, gradient, and the state (None before the first step).
pub struct Parts<IB: Backend> {
    pub w: Tensor<IB, 1>,
    pub g: Tensor<IB, 1>,
    pub first: Option<Tensor<IB, 1>>,
    pub second: Option<Tensor<IB, 1>>,
}

/// One parameter's update for a group of members with metaparameters `mps` (flat tensors, member
/// k's slice k of K equal ones), after `steps_before[k]` applied steps: the update the optimizer
/// makes, on any backend (the CPU's one pass on Flex f32, tensor ops elsewhere). Public for tests
/// that hold one backend against another.
pub fn update_param<IB: Backend>(
    parts: Parts<IB>,
    kind: OptimizerKind,
    mps: &[Metaparams],
    steps_before: &[u32],
    plan: &[MemberStep],
) -> Parts<IB> {
    let hyper: Vec<Hyper> = mps.iter().map(Hyper::of).collect();
    update(
        parts,
        &Members {
            kind,
            hyper: &hyper,
            steps: steps_before,
            plan,
        },
    )
}

/// Everything per member a parameter's update needs.
struct Members<'a> {
    kind: OptimizerKind,
    hyper: &'a [Hyper],
    /// Steps applied before this one.
    steps: &'a [u32],
    plan: &'a [MemberStep],
}

/// The update of one parameter: on Flex f32 one pass per member (`fused_flex`); elsewhere, or
/// where that declines, tensor ops (`update_ops`).
fn update<IB: Backend>(p: Parts<IB>, m: &Members<'_>) -> Parts<IB> {
    let p = if cpu::<IB>() == Some(Cpu::Inner) {
        match fused_flex::<IB>(p, m) {
            Ok(r) => return r,
            Err(p) => p,
        }
    } else {
        p
    };
    update_ops(p, m)
}

/// The SGD-family update of one member's slice, in place (PyTorch's SGD, dampening 0):
/// v ← γ·v + g (v ← g at the member's first step), d = v (Nesterov: d = g + γ·v), w ← w − η·d.
/// The f32 operations in the order of Burn's `Sgd` + `Momentum` tensor ops.
fn sgd_slice(w: &mut [f32], g: &[f32], v: Option<&mut [f32]>, s: SliceStep) {
    let lr = s.lr;
    let f = s.factor;
    match (s.momentum, v) {
        (None, _) => sgd_plain(w, g, lr, f),
        (Some((m, nesterov)), Some(v)) => {
            if s.first_step {
                sgd_first(w, g, v, m, nesterov, lr, f);
            } else if nesterov {
                sgd_nesterov(w, g, v, m, lr, f);
            } else {
                sgd_momentum(w, g, v, m, lr, f);
            }
        }
        (Some(_), None) => unreachable!("a momentum optimizer has a velocity"),
    }
}

// The SGD loops, compiled for AVX-512/AVX2 where the CPU has them (no FMA contraction: the same
// bits as the baseline loop).
simd_dispatch! {
    fn sgd_plain(w: &mut [f32], g: &[f32], lr: f32, f: f32) {
        for (w, g) in w.iter_mut().zip(g) {
            let g = *g * f;
            *w -= g * lr;
        }
    }
}

simd_dispatch! {
    fn sgd_first(w: &mut [f32], g: &[f32], v: &mut [f32], m: f32, nesterov: bool, lr: f32, f: f32) {
        // v = g; d = v (Nesterov: g·γ + g)
        for ((w, v), g) in w.iter_mut().zip(v.iter_mut()).zip(g) {
            let g = *g * f;
            *v = g;
            *w -= if nesterov { (g * m + g) * lr } else { g * lr };
        }
    }
}

simd_dispatch! {
    fn sgd_nesterov(w: &mut [f32], g: &[f32], v: &mut [f32], m: f32, lr: f32, f: f32) {
        for ((w, v), g) in w.iter_mut().zip(v.iter_mut()).zip(g) {
            let g = *g * f;
            *v = g * 1.0 + *v * m;
            *w -= (*v * m + g) * lr;
        }
    }
}

simd_dispatch! {
    fn sgd_momentum(w: &mut [f32], g: &[f32], v: &mut [f32], m: f32, lr: f32, f: f32) {
        for ((w, v), g) in w.iter_mut().zip(v.iter_mut()).zip(g) {
            let g = *g * f;
            *v = g * 1.0 + *v * m;
            *w -= *v * lr;
        }
    }
}

/// Burn's Adam on one member's slice, in place: m ← β1·m + (1−β1)·g, v ← β2·v + (1−β2)·g²
/// (m = (1−β1)·g, v = (1−β2)·g² at the first step), then with t the member's step number
/// w ← w − η · (m·c) / (√v + ε·√(1−β2^t)), c = √(1−β2^t)/(1−β1^t).
fn adam_slice(w: &mut [f32], g: &[f32], m1: &mut [f32], m2: &mut [f32], s: SliceStep, h: Hyper) {
    let (b1, b2) = (h.beta1, h.beta2);
    let (f1, f2) = (1.0 - b1, 1.0 - b2);
    let t = s.step as i32;
    let bc2 = (1.0 - b2.powi(t)).sqrt();
    let cf = bc2 / (1.0 - b1.powi(t));
    let eps = h.epsilon * bc2;
    let (lr, f) = (s.lr, s.factor);
    let k = AdamStep {
        b1,
        b2,
        f1,
        f2,
        cf,
        eps,
        lr,
        f,
    };
    if s.first_step {
        adam_first(w, g, m1, m2, k);
    } else {
        adam_next(w, g, m1, m2, k);
    }
}

/// One member's Adam constants for a step (f32, in the order of Burn's `Adam`).
#[derive(Clone, Copy)]
pub struct AdamStep {
    b1: f32,
    b2: f32,
    f1: f32,
    f2: f32,
    cf: f32,
    eps: f32,
    lr: f32,
    f: f32,
}

// The loops, compiled for AVX-512/AVX2 where the CPU has them (sqrt and division are exact in
// every width, and nothing is contracted to an FMA: the same bits as the baseline loop).
simd_dispatch! {
    fn adam_first(w: &mut [f32], g: &[f32], m1: &mut [f32], m2: &mut [f32], k: AdamStep) {
        for (((w, g), m), v) in w.iter_mut().zip(g).zip(m1.iter_mut()).zip(m2.iter_mut()) {
            let g = *g * k.f;
            *m = g * k.f1;
            *v = (g * g) * k.f2;
            let u = (*m * k.cf) / (v.sqrt() + k.eps);
            *w -= u * k.lr;
        }
    }
}

simd_dispatch! {
    fn adam_next(w: &mut [f32], g: &[f32], m1: &mut [f32], m2: &mut [f32], k: AdamStep) {
        for (((w, g), m), v) in w.iter_mut().zip(g).zip(m1.iter_mut()).zip(m2.iter_mut()) {
            let g = *g * k.f;
            *m = *m * k.b1 + g * k.f1;
            *v = *v * k.b2 + (g * g) * k.f2;
            let u = (*m * k.cf) / (v.sqrt() + k.eps);
            *w -= u * k.lr;
        }
    }
}

/// One member's values for its slice update.
#[derive(Clone, Copy)]
struct SliceStep {
    lr: f32,
    factor: f32,
    /// This is the member's first applied step (no state yet).
    first_step: bool,
    /// The member's step number t (1-based) for Adam.
    step: u32,
    /// (γ, Nesterov) for the SGD family with momentum.
    momentum: Option<(f32, bool)>,
}

fn slice_step(m: &Members<'_>, k: usize) -> SliceStep {
    let s = m.plan[k];
    SliceStep {
        lr: s.lr as f32,
        factor: s.factor as f32,
        first_step: m.steps[k] == 0,
        step: m.steps[k] + 1,
        momentum: match m.kind {
            OptimizerKind::Momentum => Some((m.hyper[k].momentum as f32, false)),
            OptimizerKind::Nesterov => Some((m.hyper[k].momentum as f32, true)),
            _ => None,
        },
    }
}

/// A parameter's values as the Flex tensor they are (the caller checked that IB is Flex).
fn to_flex<IB: Backend>(t: Tensor<IB, 1>) -> FlexTensor {
    float_of(same::<_, Tensor<Flex, 1>>(t).expect("the caller checked that IB is Flex"))
}

fn from_flex<IB: Backend>(t: FlexTensor) -> Tensor<IB, 1> {
    same(tensor_from::<Flex, 1>(t)).expect("the caller checked that IB is Flex")
}

/// A state buffer of `n` zeros (written before it is read: every member's first step sets it).
fn zeros_flex(n: usize) -> FlexTensor {
    FlexTensor::from_data(TensorData::new(vec![0.0f32; n], [n]))
}

/// The one-pass update on Flex f32 tensors; gives the tensors back when a layout does not allow it.
fn fused_flex<IB: Backend>(p: Parts<IB>, m: &Members<'_>) -> Result<Parts<IB>, Parts<IB>> {
    let all_f32 = is_f32(&p.w)
        && is_f32(&p.g)
        && p.first.as_ref().is_none_or(is_f32)
        && p.second.as_ref().is_none_or(is_f32);
    if !all_f32 {
        return Err(p);
    }
    let n = p.w.dims()[0];
    let k = m.plan.len();
    let len = n / k.max(1);
    let mut wf = to_flex(p.w);
    let gf = to_flex(p.g);
    let uses_first = m.kind != OptimizerKind::Sgd;
    let uses_second = m.kind == OptimizerKind::Adam;
    let mut first = p.first.map(to_flex);
    let mut second = p.second.map(to_flex);
    if uses_first && first.is_none() {
        first = Some(zeros_flex(n));
    }
    if uses_second && second.is_none() {
        second = Some(zeros_flex(n));
    }
    let range = |t: &FlexTensor| t.layout().contiguous_offsets();
    let ok = range(&wf).is_some()
        && range(&gf).is_some()
        && first.as_ref().is_none_or(|t| range(t).is_some())
        && second.as_ref().is_none_or(|t| range(t).is_some());
    if !ok {
        return Err(Parts {
            w: from_flex(wf),
            g: from_flex(gf),
            first: first.map(from_flex),
            second: second.map(from_flex),
        });
    }
    {
        let (ga, _) = range(&gf).expect("checked");
        let gs = &gf.storage::<f32>()[ga..ga + n];
        let (wa, _) = range(&wf).expect("checked");
        let ws = &mut wf.storage_mut::<f32>()[wa..wa + n];
        let mut fs = first.as_mut().map(|t| {
            let (a, _) = t.layout().contiguous_offsets().expect("checked");
            &mut t.storage_mut::<f32>()[a..a + n]
        });
        let mut ss = second.as_mut().map(|t| {
            let (a, _) = t.layout().contiguous_offsets().expect("checked");
            &mut t.storage_mut::<f32>()[a..a + n]
        });
        for kk in 0..k {
            if !m.plan[kk].apply {
                continue;
            }
            let r = kk * len..(kk + 1) * len;
            let s = slice_step(m, kk);
            match m.kind {
                OptimizerKind::Adam => adam_slice(
                    &mut ws[r.clone()],
                    &gs[r.clone()],
                    &mut fs.as_mut().expect("first moment")[r.clone()],
                    &mut ss.as_mut().expect("second moment")[r],
                    s,
                    m.hyper[kk],
                ),
                _ => sgd_slice(
                    &mut ws[r.clone()],
                    &gs[r.clone()],
                    fs.as_mut().map(|f| &mut f[r]),
                    s,
                ),
            }
        }
    }
    Ok(Parts {
        w: from_flex(wf),
        g: from_flex(gf),
        first: first.map(from_flex),
        second: second.map(from_flex),
    })
}

/// Per-member f32 values as a [K·len] tensor (each member's value repeated over its slice), or a
/// scalar when every member has the same one.
enum PerMember<IB: Backend> {
    Same(f32),
    Each(Tensor<IB, 1>),
}

impl<IB: Backend> PerMember<IB> {
    fn new(values: &[f32], len: usize, device: &IB::Device) -> Self {
        if values.iter().all(|v| v.to_bits() == values[0].to_bits()) {
            return PerMember::Same(values[0]);
        }
        let k = values.len();
        let t = Tensor::<IB, 1>::from_data(TensorData::new(values.to_vec(), [k]), device);
        PerMember::Each(t.reshape([k, 1]).expand([k, len]).reshape([k * len]))
    }
    fn mul(&self, t: Tensor<IB, 1>) -> Tensor<IB, 1> {
        match self {
            PerMember::Same(v) => t.mul_scalar(*v),
            PerMember::Each(v) => t * v.clone(),
        }
    }
    fn add(&self, t: Tensor<IB, 1>) -> Tensor<IB, 1> {
        match self {
            PerMember::Same(v) => t.add_scalar(*v),
            PerMember::Each(v) => t + v.clone(),
        }
    }
}

/// The same updates as tensor ops (GPUs; Burn's op order), with the per-member values broadcast
/// along the member axis and skipped members restored by a mask.
fn update_ops<IB: Backend>(p: Parts<IB>, m: &Members<'_>) -> Parts<IB> {
    let k = m.plan.len();
    let n = p.w.dims()[0];
    let len = n / k.max(1);
    let dev = p.w.device();
    let each = |f: &dyn Fn(usize) -> f32| {
        let v: Vec<f32> = (0..k).map(f).collect();
        PerMember::<IB>::new(&v, len, &dev)
    };
    let factor = each(&|i| m.plan[i].factor as f32);
    let lr = each(&|i| m.plan[i].lr as f32);
    let g = if m.plan.iter().all(|s| s.factor == 1.0) {
        p.g.clone()
    } else {
        factor.mul(p.g.clone())
    };
    // members at their first step take the "no state" branch: their state is replaced below
    let fresh: Vec<bool> = (0..k).map(|i| m.steps[i] == 0).collect();
    let (w_new, first, second) = match m.kind {
        OptimizerKind::Sgd => (p.w.clone() - lr.mul(g), None, None),
        OptimizerKind::Momentum | OptimizerKind::Nesterov => {
            let mom = each(&|i| m.hyper[i].momentum as f32);
            let v = match &p.first {
                Some(v) => {
                    let cont = g.clone().mul_scalar(1.0f32).add(mom.mul(v.clone()));
                    blend(cont, g.clone(), &fresh, len)
                }
                None => g.clone(),
            };
            let d = if m.kind == OptimizerKind::Nesterov {
                mom.mul(v.clone()).add(g)
            } else {
                v.clone()
            };
            (p.w.clone() - lr.mul(d), Some(v), None)
        }
        OptimizerKind::Adam => {
            let b1 = each(&|i| m.hyper[i].beta1);
            let b2 = each(&|i| m.hyper[i].beta2);
            let f1 = each(&|i| 1.0 - m.hyper[i].beta1);
            let f2 = each(&|i| 1.0 - m.hyper[i].beta2);
            let start1 = f1.mul(g.clone());
            let start2 = f2.mul(g.clone().square());
            let (m1, m2) = match (&p.first, &p.second) {
                (Some(a), Some(b)) => (
                    blend(
                        b1.mul(a.clone()).add(f1.mul(g.clone())),
                        start1,
                        &fresh,
                        len,
                    ),
                    blend(
                        b2.mul(b.clone()).add(f2.mul(g.clone().square())),
                        start2,
                        &fresh,
                        len,
                    ),
                ),
                _ => (start1, start2),
            };
            let bc2: Vec<f32> = (0..k)
                .map(|i| (1.0 - m.hyper[i].beta2.powi(m.steps[i] as i32 + 1)).sqrt())
                .collect();
            let cf = each(&|i| bc2[i] / (1.0 - m.hyper[i].beta1.powi(m.steps[i] as i32 + 1)));
            let eps = each(&|i| m.hyper[i].epsilon * bc2[i]);
            let u = cf.mul(m1.clone()).div(eps.add(m2.clone().sqrt()));
            (p.w.clone() - lr.mul(u), Some(m1), Some(m2))
        }
    };
    let skip: Vec<bool> = m.plan.iter().map(|s| !s.apply).collect();
    let keep_old = |new: Tensor<IB, 1>, old: Option<Tensor<IB, 1>>| match old {
        Some(old) if skip.iter().any(|s| *s) => {
            blend(old, new, &skip.iter().map(|s| !s).collect::<Vec<_>>(), len)
        }
        _ => new,
    };
    Parts {
        w: keep_old(w_new, Some(p.w)),
        g: p.g,
        first: first.map(|f| keep_old(f, p.first)),
        second: second.map(|s| keep_old(s, p.second)),
    }
}

/// `a` where `take_b[k]` is false, `b` where it is true (per member slice of `len`).
fn blend<IB: Backend>(
    a: Tensor<IB, 1>,
    b: Tensor<IB, 1>,
    take_b: &[bool],
    len: usize,
) -> Tensor<IB, 1> {
    if take_b.iter().all(|t| !t) {
        return a;
    }
    if take_b.iter().all(|t| *t) {
        return b;
    }
    let k = take_b.len();
    let mask = Tensor::<IB, 1, Bool>::from_data(TensorData::new(take_b.to_vec(), [k]), &a.device())
        .reshape([k, 1])
        .expand([k, len])
        .reshape([k * len]);
    a.mask_where(mask, b)
}

#[cfg(test)]
mod tests;
