//! The model families' one registration: the preset's `[workload.model]` (`ModelSpec`, one variant
//! per family, holding the spec type its file defines), the network it builds (`Net`, one variant per
//! family, holding the module its file defines), and the three dispatches between them. Every match
//! here is exhaustive: a new family that is not registered in all of them does not compile.
//!
//! What each family knows lives in its own file under `src/model/` (see docs/layout.md, "adding a
//! family"): its spec fields and their validation ([`Family`]), the network it builds on the member
//! axis and how it runs ([`Network`]), its label in Setup and reports, its peer description for
//! `bench`. The parameter count and the FLOPs are computed from the module the family builds
//! ([`ModelSpec::param_count`], [`ModelSpec::forward_flops`]), never from a second formula.

use burn::backend::Flex;
use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::backend::Backend;
use burn::tensor::{Device, Int, Tensor};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::layers::{Ctx, Init};
use super::{char_lstm, cnn, mlp, mlstm, nqm, resnet, transformer, Batch, InputShape};

/// What a family reads, which fixes the metric it reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// Images in classes (validation error).
    Images,
    /// Byte sequences (validation bits per byte).
    Text,
    /// No data (the noisy quadratic model).
    None,
}

/// What the rest of the lab needs to know about a family's spec (one implementation per family
/// file).
pub trait Family {
    /// The preset's `kind` (also the short name in reports).
    fn kind(&self) -> &'static str;
    fn input(&self) -> Input;
    /// Problems with the family's own fields: (the key under `[workload.model]`, message). The
    /// counts that allocate per item (layers, blocks) are capped here: a count is only taken of a
    /// spec without problems.
    fn problems(&self) -> Vec<(&'static str, String)>;
    /// The label in Setup and reports (`mlp 64`, `resnet-8 w16 ghost 32`).
    fn label(&self) -> String;
    /// The key a model-size problem (memory) points at.
    fn size_key(&self) -> &'static str;
    /// The model object the JAX peers read (`bench --sweep-peer`, benches/peers/sweep_protocol.py);
    /// `None`: no peer for this family.
    fn peer_model(&self) -> Option<serde_json::Value> {
        None
    }
    /// Why `per_replica` examples a member on one worker cannot be trained (a family whose
    /// normalisation needs whole sub-batches says so); `None` when they can.
    fn batch_problem(&self, per_replica: usize) -> Option<String> {
        let _ = per_replica;
        None
    }
}

/// The `[workload.model]` table of a preset: the family (`kind`) and its fields.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ModelSpec {
    /// Fully connected ReLU network.
    Mlp(mlp::MlpSpec),
    /// Shallue et al.'s "simple CNN": two 5×5 conv + 2×2 max-pool layers, then a dense layer.
    Cnn(cnn::CnnSpec),
    /// Character-level LSTM language model.
    CharLstm(char_lstm::CharLstmSpec),
    /// Character-level multiplicative LSTM (Krause et al.; Puri et al.).
    Mlstm(mlstm::MlstmSpec),
    /// Small pre-norm causal Transformer language model.
    Transformer(transformer::TransformerSpec),
    /// He et al.'s CIFAR ResNet (6n + 2 layers) with batch normalisation.
    Resnet(resnet::ResNetSpec),
    /// Noisy quadratic model (Zhang et al. 2019): d dimensions, curvature h_i = 1/i.
    Nqm(nqm::NqmSpec),
}

/// A family's network: every parameter with the leading member axis (K trials fused).
#[derive(Module, Debug)]
pub enum Net<B: Backend> {
    Mlp(mlp::Mlp<B>),
    Cnn(cnn::Cnn<B>),
    CharLstm(char_lstm::CharLstm<B>),
    Mlstm(mlstm::Mlstm<B>),
    Transformer(transformer::TransformerLm<B>),
    Resnet(resnet::ResNet<B>),
}

impl ModelSpec {
    /// The family's knowledge of its spec.
    pub fn family(&self) -> &dyn Family {
        match self {
            ModelSpec::Mlp(s) => s,
            ModelSpec::Cnn(s) => s,
            ModelSpec::CharLstm(s) => s,
            ModelSpec::Mlstm(s) => s,
            ModelSpec::Transformer(s) => s,
            ModelSpec::Resnet(s) => s,
            ModelSpec::Nqm(s) => s,
        }
    }

    /// One member of the family's network, its parameters from `init` in the family's order.
    pub fn build<B: Backend>(
        &self,
        init: &mut Init<'_, B>,
        shape: InputShape,
    ) -> anyhow::Result<Net<B>> {
        Ok(match self {
            ModelSpec::Mlp(s) => Net::Mlp(s.build(init, shape)?),
            ModelSpec::Cnn(s) => Net::Cnn(s.build(init, shape)?),
            ModelSpec::CharLstm(s) => Net::CharLstm(s.build(init, shape)?),
            ModelSpec::Mlstm(s) => Net::Mlstm(s.build(init, shape)?),
            ModelSpec::Transformer(s) => Net::Transformer(s.build(init, shape)?),
            ModelSpec::Resnet(s) => Net::Resnet(s.build(init, shape)?),
            ModelSpec::Nqm(_) => {
                anyhow::bail!("the noisy quadratic model is not a neural network; it runs in nqm")
            }
        })
    }

    pub fn short_name(&self) -> &'static str {
        self.family().kind()
    }

    pub fn is_language_model(&self) -> bool {
        self.family().input() == Input::Text
    }

    /// The network's shapes alone (lazy parameters: nothing drawn, nothing allocated).
    fn shapes_only(&self, shape: InputShape) -> anyhow::Result<Net<Flex>> {
        let mut rng = StdRng::seed_from_u64(0);
        let device = Default::default();
        self.build(&mut Init::shapes(&mut rng, &device), shape)
    }

    /// The trained parameters of one member on inputs of `shape`, counted on the module the family
    /// builds (running statistics are not parameters); the NQM's are its 4·d state values. Call
    /// on a spec without [`Family::problems`].
    pub fn param_count(&self, shape: InputShape) -> anyhow::Result<f64> {
        if let ModelSpec::Nqm(s) = self {
            return Ok(s.state_values());
        }
        Ok(self.shapes_only(shape)?.trained_params())
    }

    /// Multiply-add FLOPs (2 a multiply-add) of one example's forward pass through the module
    /// the family builds: the dense, convolution and recurrent products (normalisation,
    /// activations and the loss are not counted). `None` for the NQM.
    pub fn forward_flops(&self, shape: InputShape) -> anyhow::Result<Option<f64>> {
        if matches!(self, ModelSpec::Nqm(_)) {
            return Ok(None);
        }
        Ok(Some(self.shapes_only(shape)?.network().flops(shape)))
    }

    /// One training example's FLOPs: the forward's products × 3 (the forward, and the backward's
    /// two products per layer). `None` for the NQM.
    pub fn train_flops(&self, shape: InputShape) -> anyhow::Result<Option<f64>> {
        Ok(self.forward_flops(shape)?.map(|f| 3.0 * f))
    }
}

/// A training forward's side effect: a running statistic's new value (the parameter id it
/// replaces, [K, C]).
pub type StatUpdate<B> = (burn::module::ParamId, Tensor<B, 2>);

/// What a forward pass returns.
pub struct Forward<B: Backend> {
    /// fp32 logits [K, M, classes].
    pub logits: Tensor<B, 3>,
    /// Targets [K, M].
    pub targets: Tensor<B, 2, Int>,
    /// The running statistics a training forward moves (empty for families without them, and in
    /// evaluation).
    pub stats: Vec<StatUpdate<B>>,
}

/// How a family's network runs (one implementation per family file).
pub trait Network<B: Backend> {
    /// Logits and targets of a batch of K·N rows, member-major. A batch of the other kind
    /// (text for an image model) is a bug: the loader rejects such a preset.
    fn forward(&self, batch: &Batch<B>, c: &Ctx) -> Forward<B>;
    /// Multiply-add FLOPs of one example's forward (of one member).
    fn flops(&self, shape: InputShape) -> f64;
    /// Whether [`Network::correct_shared`] serves here.
    fn shares_eval_rows(&self, c: &Ctx) -> bool {
        let _ = c;
        false
    }
    /// Each member's correct predictions on rows every member scores (one copy of them).
    fn correct_shared(&self, batch: &Batch<B>, c: &Ctx) -> Option<Tensor<B, 1>> {
        let _ = (batch, c);
        None
    }
}

impl<B: Backend> Net<B> {
    /// The family's network.
    pub fn network(&self) -> &dyn Network<B> {
        match self {
            Net::Mlp(m) => m,
            Net::Cnn(m) => m,
            Net::CharLstm(m) => m,
            Net::Mlstm(m) => m,
            Net::Transformer(m) => m,
            Net::Resnet(m) => m,
        }
    }

    /// Elements of the trained parameters of one member (the leading member axis excluded;
    /// running statistics, which are not trained, excluded). Works on lazy parameters.
    pub fn trained_params(&self) -> f64 {
        count_trained(self)
    }
}

/// The container type of state that is not trained (`resnet::RunningStats`): the parameter count
/// skips what is inside it.
pub const UNTRAINED: &str = "Struct:RunningStats";

/// Elements per member of every trained parameter (f64: a paper-size spec must not overflow).
fn count_trained<B: Backend, M: Module<B>>(m: &M) -> f64 {
    struct Count {
        depth_untrained: usize,
        total: f64,
    }
    impl<B: Backend> ModuleVisitor<B> for Count {
        fn enter_module(&mut self, _name: &str, container: &str) {
            if container == UNTRAINED || self.depth_untrained > 0 {
                self.depth_untrained += 1;
            }
        }
        fn exit_module(&mut self, _name: &str, _container: &str) {
            self.depth_untrained = self.depth_untrained.saturating_sub(1);
        }
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            if self.depth_untrained == 0 {
                let dims = param.lazy_shape().dims::<D>();
                self.total += dims[1..].iter().map(|&d| d as f64).product::<f64>();
            }
        }
    }
    let mut c = Count {
        depth_untrained: 0,
        total: 0.0,
    };
    m.visit(&mut c);
    c.total
}

/// One member on `device`, its weights drawn from `seed` (identical for equal seeds on any backend).
pub(super) fn init_one<B: Backend>(
    spec: &ModelSpec,
    shape: InputShape,
    seed: u64,
    device: &Device<B>,
) -> anyhow::Result<Net<B>> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5ca1_ab1e);
    spec.build(&mut Init::new(&mut rng, device), shape)
}

/// `net` with the running statistics of a training forward in place (member k's rows where
/// `keep[k]`); each updated parameter keeps its id and stays untrained.
pub(super) fn replace_stats<B: Backend>(
    net: Net<B>,
    stats: Vec<StatUpdate<B>>,
    keep: &[bool],
) -> Net<B> {
    use std::collections::HashMap;
    struct Replace<B: Backend> {
        stats: HashMap<burn::module::ParamId, Tensor<B, 2>>,
        mask: Option<Vec<f32>>,
    }
    impl<B: Backend> burn::module::ModuleMapper<B> for Replace<B> {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
            let Some(new) = self.stats.remove(&param.id) else {
                return param;
            };
            let (id, old, mapper) = param.consume();
            let old = old.detach();
            let new = new.detach().reshape(old.dims());
            let value = match &self.mask {
                None => new,
                Some(m) => {
                    // rows of members whose step was skipped keep their old values
                    let k = m.len();
                    let mut dims = [1usize; D];
                    dims[0] = k;
                    let dev = old.device();
                    let keep = Tensor::<B, 1>::from_data(
                        burn::tensor::TensorData::new(m.clone(), [k]),
                        &dev,
                    )
                    .reshape(dims)
                    .expand(old.dims());
                    let kept = keep.equal_elem(1.0);
                    old.mask_where(kept, new)
                }
            };
            Param::from_mapped_value(id, value, mapper)
        }
    }
    let mask = (!keep.iter().all(|&k| k))
        .then(|| keep.iter().map(|&k| if k { 1.0 } else { 0.0 }).collect());
    net.map(&mut Replace {
        stats: stats.into_iter().collect(),
        mask,
    })
}
