//! Optimizers with PyTorch semantics:
//! SGD, heavy-ball momentum and Nesterov with dampening 0 (`FusedSgd`, ours: one pass per parameter
//! on the CPU) and Adam with the preset's ε (Burn's; its default ε is 1e-5, PyTorch's 1e-8). Burn's
//! Adam update m̂/(√v̂+ε) is algebraically PyTorch's (checked in tests against hand-computed updates).

use std::any::{Any, TypeId};
use std::collections::HashMap;

use burn::module::{AutodiffModule, ModuleMapper, Param, ParamId};
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::{Adam, AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorPrimitive};
use burn_flex::{Flex, FlexTensor};

use crate::workload::spec::{Metaparams, OptimizerKind};

pub enum Opt<M: AutodiffModule<B>, B: AutodiffBackend> {
    Sgd(FusedSgd<B>),
    /// Burn's Adam and the configuration it was built from (its fields are private; the
    /// configuration serialises them: `applied`).
    Adam(OptimizerAdaptor<Adam, M, B>, AdamConfig),
}

/// The hyperparameters an optimizer object applies, read back from it (what a trial's record
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

impl<M: AutodiffModule<B>, B: AutodiffBackend> Opt<M, B> {
    pub fn new(kind: OptimizerKind, mp: &Metaparams) -> Self {
        match kind {
            OptimizerKind::Sgd => Opt::Sgd(FusedSgd::new(None)),
            OptimizerKind::Momentum | OptimizerKind::Nesterov => Opt::Sgd(FusedSgd::new(Some((
                mp.momentum,
                kind == OptimizerKind::Nesterov,
            )))),
            OptimizerKind::Adam => {
                let config = AdamConfig::new()
                    .with_beta_1(mp.momentum as f32)
                    .with_beta_2(mp.beta2 as f32)
                    .with_epsilon(mp.epsilon as f32);
                Opt::Adam(config.init(), config)
            }
        }
    }

    pub fn step(&mut self, lr: f64, module: M, grads: GradientsParams) -> M {
        match self {
            Opt::Sgd(o) => o.step(lr, module, grads),
            Opt::Adam(o, _) => o.step(lr, module, grads),
        }
    }

    /// The hyperparameters this optimizer applies (Adam's as f32, as Burn stores them).
    pub fn applied(&self) -> Applied {
        match self {
            Opt::Sgd(o) => Applied {
                momentum: o.momentum.map(|(m, _)| m),
                nesterov: o.momentum.is_some_and(|(_, n)| n),
                beta2: None,
                epsilon: None,
            },
            Opt::Adam(_, c) => {
                let v = serde_json::to_value(c).unwrap_or_default();
                let f = |k: &str| v.get(k).and_then(|x| x.as_f64());
                Applied {
                    momentum: f("beta_1"),
                    nesterov: false,
                    beta2: f("beta_2"),
                    epsilon: f("epsilon"),
                }
            }
        }
    }
}

/// SGD with optional heavy-ball or Nesterov momentum, dampening 0 (PyTorch's `torch.optim.SGD`):
/// v ← γ·v + g (v ← g at the first step), d = v (Nesterov: d = g + γ·v), w ← w − η·d.
///
/// The same f32 operations in the same order as Burn's `Sgd` with `MomentumConfig { dampening: 0 }`
/// (so trajectories are bitwise those of Burn's optimizer), but on the Flex CPU backend the update
/// of a parameter is one pass over w, v and g in place, instead of four tensor ops with two fresh
/// buffers. Other backends (CUDA) take the same formula as tensor ops.
pub struct FusedSgd<B: AutodiffBackend> {
    /// (γ, nesterov); None = plain SGD.
    momentum: Option<(f64, bool)>,
    /// Velocity per parameter, flattened.
    velocity: HashMap<ParamId, Tensor<B::InnerBackend, 1>>,
}

impl<B: AutodiffBackend> FusedSgd<B> {
    pub fn new(momentum: Option<(f64, bool)>) -> Self {
        FusedSgd {
            momentum,
            velocity: HashMap::new(),
        }
    }

    pub fn step<M: AutodiffModule<B>>(
        &mut self,
        lr: f64,
        module: M,
        mut grads: GradientsParams,
    ) -> M {
        module.map(&mut SgdMapper::<B> {
            lr,
            momentum: self.momentum,
            velocity: &mut self.velocity,
            grads: &mut grads,
        })
    }
}

struct SgdMapper<'a, B: AutodiffBackend> {
    lr: f64,
    momentum: Option<(f64, bool)>,
    velocity: &'a mut HashMap<ParamId, Tensor<B::InnerBackend, 1>>,
    grads: &'a mut GradientsParams,
}

impl<B: AutodiffBackend> ModuleMapper<B> for SgdMapper<'_, B> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, tensor, mapper) = param.consume();
        let Some(grad) = self.grads.remove::<B::InnerBackend, D>(id) else {
            return Param::from_mapped_value(id, tensor, mapper);
        };
        let require_grad = tensor.is_require_grad();
        let w = tensor.inner();
        let dims = w.dims();
        let n: usize = dims.iter().product();
        let v = self.velocity.remove(&id);
        let (w, v) = sgd_update::<B::InnerBackend>(
            w.reshape([n]),
            grad.reshape([n]),
            v,
            self.lr,
            self.momentum,
        );
        if let Some(v) = v {
            self.velocity.insert(id, v);
        }
        let mut t = Tensor::<B, D>::from_inner(w.reshape(dims));
        if require_grad {
            t = t.require_grad();
        }
        Param::from_mapped_value(id, t, mapper)
    }
}

/// One parameter's update (flat tensors): the new weights and, with momentum, the new velocity.
/// On Flex one fused pass over the buffers (`fused_flex`); elsewhere, or where that declines,
/// tensor ops (`sgd_ops`).
pub fn sgd_update<IB: Backend>(
    w: Tensor<IB, 1>,
    g: Tensor<IB, 1>,
    v: Option<Tensor<IB, 1>>,
    lr: f64,
    momentum: Option<(f64, bool)>,
) -> Updated<IB> {
    let parts = if TypeId::of::<IB>() == TypeId::of::<Flex>() {
        match fused_flex::<IB>((w, g, v), lr, momentum) {
            Ok(r) => return r,
            Err(parts) => parts,
        }
    } else {
        (w, g, v)
    };
    sgd_ops(parts, lr, momentum)
}

/// The update of (weights, gradient, velocity) as tensor ops, exactly Burn's `Sgd` + `Momentum`
/// (dampening 0) operation order.
fn sgd_ops<IB: Backend>(
    (w, g, v): Parts<IB>,
    lr: f64,
    momentum: Option<(f64, bool)>,
) -> Updated<IB> {
    match momentum {
        None => (w - g.mul_scalar(lr), None),
        Some((m, nesterov)) => {
            let m = m as f32;
            let v = match v {
                Some(v) => g.clone().mul_scalar(1.0f32).add(v.mul_scalar(m)),
                None => g.clone(),
            };
            let d = if nesterov {
                v.clone().mul_scalar(m).add(g)
            } else {
                v.clone()
            };
            (w - d.mul_scalar(lr), Some(v))
        }
    }
}

type Parts<IB> = (Tensor<IB, 1>, Tensor<IB, 1>, Option<Tensor<IB, 1>>);
/// The updated weights and velocity.
type Updated<IB> = (Tensor<IB, 1>, Option<Tensor<IB, 1>>);

fn to_flex<IB: Backend>(t: Tensor<IB, 1>) -> FlexTensor {
    let p: Box<dyn Any> = Box::new(t.into_primitive().tensor());
    *p.downcast::<FlexTensor>()
        .expect("the caller checked that IB is Flex")
}

fn from_flex<IB: Backend>(t: FlexTensor) -> Tensor<IB, 1> {
    let p: Box<dyn Any> = Box::new(t);
    let p = *p
        .downcast::<IB::FloatTensorPrimitive>()
        .expect("the caller checked that IB is Flex");
    Tensor::from_primitive(TensorPrimitive::Float(p))
}

fn is_f32<IB: Backend>(t: &Tensor<IB, 1>) -> bool {
    t.dtype() == burn::tensor::DType::F32
}

/// The one-pass update on Flex f32 tensors; gives the tensors back when a layout does not allow it.
fn fused_flex<IB: Backend>(
    (w, g, v): Parts<IB>,
    lr: f64,
    momentum: Option<(f64, bool)>,
) -> Result<Updated<IB>, Parts<IB>> {
    let all_f32 = is_f32(&w) && is_f32(&g) && v.as_ref().is_none_or(is_f32);
    if !all_f32 {
        return Err((w, g, v));
    }
    let mut wf = to_flex(w);
    let gf = to_flex(g);
    let mut vf = v.map(to_flex);
    let range = |t: &FlexTensor| t.layout().contiguous_offsets();
    let (Some(wr), Some(gr)) = (range(&wf), range(&gf)) else {
        return Err((from_flex(wf), from_flex(gf), vf.map(from_flex)));
    };
    let vr = match &vf {
        Some(t) => match range(t) {
            Some(r) => Some(r),
            None => return Err((from_flex(wf), from_flex(gf), vf.map(from_flex))),
        },
        None => None,
    };
    let lr = lr as f32;
    {
        let gs = &gf.storage::<f32>()[gr.0..gr.1];
        match (momentum, vf.as_mut(), vr) {
            (None, _, _) => {
                let ws = &mut wf.storage_mut::<f32>()[wr.0..wr.1];
                for (w, g) in ws.iter_mut().zip(gs) {
                    *w -= *g * lr;
                }
            }
            (Some((_, nesterov)), None, _) => {
                // first step: v = g (shared with g below), d = v (Nesterov: g + γ·v)
                let m = momentum.map_or(0.0, |(m, _)| m as f32);
                let ws = &mut wf.storage_mut::<f32>()[wr.0..wr.1];
                if nesterov {
                    for (w, g) in ws.iter_mut().zip(gs) {
                        *w -= (*g * m + *g) * lr;
                    }
                } else {
                    for (w, g) in ws.iter_mut().zip(gs) {
                        *w -= *g * lr;
                    }
                }
            }
            (Some((m, nesterov)), Some(vt), Some(vr)) => {
                let m = m as f32;
                let ws = &mut wf.storage_mut::<f32>()[wr.0..wr.1];
                let vs = &mut vt.storage_mut::<f32>()[vr.0..vr.1];
                if nesterov {
                    for ((w, v), g) in ws.iter_mut().zip(vs.iter_mut()).zip(gs) {
                        *v = *g * 1.0 + *v * m;
                        *w -= (*v * m + *g) * lr;
                    }
                } else {
                    for ((w, v), g) in ws.iter_mut().zip(vs.iter_mut()).zip(gs) {
                        *v = *g * 1.0 + *v * m;
                        *w -= *v * lr;
                    }
                }
            }
            (Some(_), Some(_), None) => unreachable!("a velocity has a range"),
        }
    }
    let v_new = match (momentum, vf) {
        (None, _) => None,
        (Some(_), Some(v)) => Some(from_flex(v)),
        // the first velocity is the gradient itself
        (Some(_), None) => Some(from_flex(gf)),
    };
    Ok((from_flex(wf), v_new))
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::TensorData;

    fn t<IB: Backend>(v: &[f32]) -> Tensor<IB, 1> {
        Tensor::from_data(TensorData::new(v.to_vec(), [v.len()]), &Default::default())
    }
    fn vals<IB: Backend>(t: Tensor<IB, 1>) -> Vec<f32> {
        t.into_data().to_vec::<f32>().unwrap()
    }

    /// The one-pass Flex update is bitwise Burn's tensor-op order, for every variant, over steps
    /// (first step without a velocity, then with one), with a shared weight buffer (copy-on-write)
    /// and a gradient that is a view at an offset into a larger buffer.
    #[test]
    fn fused_flex_update_is_bitwise_the_tensor_op_update() {
        let n = 1000;
        let w0: Vec<f32> = (0..n)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
            .collect();
        let gs: Vec<Vec<f32>> = (0..3)
            .map(|s| {
                (0..n)
                    .map(|i| ((i * 13 + s * 7) % 97) as f32 / 31.0 - 1.5)
                    .collect()
            })
            .collect();
        for momentum in [None, Some((0.9, false)), Some((0.95, true))] {
            let (mut wa, mut va) = (t::<Flex>(&w0), None);
            let (mut wb, mut vb) = (t::<Flex>(&w0), None);
            for (s, g) in gs.iter().enumerate() {
                let keep = wa.clone(); // shared: the fused path must not write through it
                let lr = 0.05 + 0.01 * s as f64;
                let (w, v) = sgd_update(wa, t::<Flex>(g), va, lr, momentum);
                assert_eq!(
                    vals(keep),
                    if s == 0 { w0.clone() } else { vals(wb.clone()) }
                );
                let (w2, v2) = sgd_ops((wb, t::<Flex>(g), vb), lr, momentum);
                assert_eq!(vals(w.clone()), vals(w2.clone()), "{momentum:?} step {s}");
                assert_eq!(v.is_some(), v2.is_some());
                if let (Some(a), Some(b)) = (&v, &v2) {
                    assert_eq!(vals(a.clone()), vals(b.clone()));
                }
                assert_ne!(vals(w.clone()), w0, "the update moved nothing");
                (wa, va, wb, vb) = (w, v, w2, v2);
            }
        }
        // a gradient that is a view at an offset into a larger buffer
        let big: Vec<f32> = (0..2 * n).map(|i| i as f32 / 100.0).collect();
        let g = t::<Flex>(&big).narrow(0, 5, n);
        let (w, _) = sgd_update(t::<Flex>(&w0), g.clone(), None, 0.1, None);
        let (w2, _) = sgd_ops((t::<Flex>(&w0), g, None), 0.1, None);
        assert_eq!(vals(w), vals(w2));
    }
}
