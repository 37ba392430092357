//! Optimizers with PyTorch semantics, built from Burn's where they match:
//! SGD; heavy-ball momentum and Nesterov with dampening 0 (Burn's default is 0.1); Adam with the
//! preset's ε (Burn's default is 1e-5, PyTorch's 1e-8). Burn's Adam update
//! m̂/(√v̂+ε) is algebraically PyTorch's (checked in tests against hand-computed updates).

use burn::module::AutodiffModule;
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{Adam, AdamConfig, GradientsParams, Optimizer, Sgd, SgdConfig};
use burn::tensor::backend::AutodiffBackend;

use crate::workload::spec::{Metaparams, OptimizerKind};

pub enum Opt<M: AutodiffModule<B>, B: AutodiffBackend> {
    Sgd(OptimizerAdaptor<Sgd<B::InnerBackend>, M, B>),
    Adam(OptimizerAdaptor<Adam, M, B>),
}

impl<M: AutodiffModule<B>, B: AutodiffBackend> Opt<M, B> {
    pub fn new(kind: OptimizerKind, mp: &Metaparams) -> Self {
        match kind {
            OptimizerKind::Sgd => Opt::Sgd(SgdConfig::new().init()),
            OptimizerKind::Momentum | OptimizerKind::Nesterov => Opt::Sgd(
                SgdConfig::new()
                    .with_momentum(Some(MomentumConfig {
                        momentum: mp.momentum,
                        dampening: 0.0,
                        nesterov: kind == OptimizerKind::Nesterov,
                    }))
                    .init(),
            ),
            OptimizerKind::Adam => Opt::Adam(
                AdamConfig::new()
                    .with_beta_1(mp.momentum as f32)
                    .with_beta_2(mp.beta2 as f32)
                    .with_epsilon(mp.epsilon as f32)
                    .init(),
            ),
        }
    }

    pub fn step(&mut self, lr: f64, module: M, grads: GradientsParams) -> M {
        match self {
            Opt::Sgd(o) => o.step(lr, module, grads),
            Opt::Adam(o) => o.step(lr, module, grads),
        }
    }
}
