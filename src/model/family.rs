//! The model families' one registration: the list of families ([`FAMILIES`]: what Setup, the
//! command line and the suites iterate), the preset's `[workload.model]` (`ModelSpec`, one variant
//! per family, holding the spec type its file defines), the network it builds (`Net`, one variant
//! per family, holding the module its file defines), and the dispatches between them. Every match
//! here is exhaustive: a new family that is not registered in all of them does not compile, and
//! `family::tests` holds [`FAMILIES`] against the kinds `ModelSpec` reads.
//!
//! What each family knows lives in its own file under `src/model/` (see docs/layout.md, "adding a
//! family"): its [`Registration`] (kind, name, what it reads, its default and its smallest spec),
//! its spec fields, their validation and its size knobs ([`Family`]), the network it builds on the
//! member axis and how it runs ([`Network`]: its forward, its FLOPs, the state it does not train,
//! its probe encoder if it is a language model), its label in Setup and reports, its peer
//! description for `bench`. The parameter count and the FLOPs are computed from the module the
//! family builds ([`ModelSpec::param_count`], [`ModelSpec::forward_flops`]), never from a second
//! formula.

use std::collections::HashSet;

use burn::backend::Flex;
use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::tensor::backend::Backend;
use burn::tensor::{Device, Int, Tensor};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::encoder::Encoder;
use super::knob::{self, Knob};
use super::layers::{Ctx, Init};
use super::{char_lstm, cnn, mlp, mlstm, nqm, resnet, transformer, Batch, InputShape};

/// Every registered family, in the order Setup lists them (one per variant of [`ModelSpec`]: a
/// test holds this list against the kinds the preset reader accepts).
pub static FAMILIES: &[&Registration] = &[
    &mlp::FAMILY,
    &cnn::FAMILY,
    &resnet::FAMILY,
    &char_lstm::FAMILY,
    &mlstm::FAMILY,
    &transformer::FAMILY,
    &nqm::FAMILY,
];

/// The registered family of `kind` (a preset's `kind`, `--model`), or an error naming them all.
pub fn registration(kind: &str) -> Result<&'static Registration, String> {
    FAMILIES
        .iter()
        .copied()
        .find(|r| r.kind == kind)
        .ok_or_else(|| {
            let kinds: Vec<&str> = FAMILIES.iter().map(|r| r.kind).collect();
            format!("no model `{kind}`: the families are {}", kinds.join(", "))
        })
}

/// A family as the lab lists it: one `pub static FAMILY: Registration` in each family's file.
pub struct Registration {
    /// The preset's `kind` (also the short name in reports, and `--model`).
    pub kind: &'static str,
    /// Its name in Setup's Model list (a spec's own label, [`Family::label`], adds its sizes).
    pub label: &'static str,
    /// What it reads.
    pub input: Input,
    /// The spec a study starts from, sized for a 2-core CPU (what `--model KIND` and Setup's
    /// Model list give when no size is set).
    pub(super) default: fn() -> ModelSpec,
    /// Why data of a shape (its kind already matched) is too small for the family's layers.
    pub(super) fits: fn(&InputShape) -> Result<(), String>,
    /// The smallest spec that has every layer of the family, and the input it is built for.
    pub(super) tiny: fn() -> (ModelSpec, InputShape),
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("kind", &self.kind)
            .field("label", &self.label)
            .field("input", &self.input)
            .finish_non_exhaustive()
    }
}

impl Registration {
    /// The spec a study of this family starts from on a dataset that holds `data` of `shape`
    /// (images: channels, side and classes; text: vocabulary and window; without a dataset,
    /// `Input::None` and any shape), sized for a study on a 2-core CPU in minutes; or why the
    /// family cannot read that data (a language model on images, an image model on text, images
    /// too small for its layers).
    pub fn default_for(&self, data: Input, shape: &InputShape) -> Result<ModelSpec, String> {
        if data != self.input {
            let kind = self.kind;
            return Err(match (self.input, data) {
                (Input::None, _) => format!(
                    "model `{kind}` reads no dataset (it is computed in closed form): choose it without one"
                ),
                (wants, Input::None) => {
                    let n = wants.noun();
                    format!("model `{kind}` reads {n}: choose a dataset of {n}")
                }
                (wants, has) => format!(
                    "model `{kind}` reads {}, and this dataset holds {}",
                    wants.noun(),
                    has.noun()
                ),
            });
        }
        (self.fits)(shape)?;
        Ok((self.default)())
    }

    /// The spec a study of this family starts from, whatever its data (sized for a 2-core CPU;
    /// [`Registration::default_for`] also says whether the data suits the family).
    pub fn default_spec(&self) -> ModelSpec {
        (self.default)()
    }

    /// The smallest spec that has every layer of the family and the input it is built for: the
    /// size the suites hold every family to its contracts at (a trial of it takes seconds).
    pub fn tiny(&self) -> (ModelSpec, InputShape) {
        (self.tiny)()
    }
}

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

impl Input {
    /// What is read, as a noun ("images", "text", "no data").
    pub fn noun(self) -> &'static str {
        match self {
            Input::Images => "images",
            Input::Text => "text",
            Input::None => "no data",
        }
    }
}

/// What the rest of the lab needs to know about a family's spec (one implementation per family
/// file).
pub trait Family {
    /// The family's registration (its file's `FAMILY`).
    fn registration(&self) -> &'static Registration;
    /// The preset's `kind` (also the short name in reports).
    fn kind(&self) -> &'static str {
        self.registration().kind
    }
    fn input(&self) -> Input {
        self.registration().input
    }
    /// Problems with the family's own fields: (the key under `[workload.model]`, message). The
    /// counts that allocate per item (layers, blocks) are capped here: a count is only taken of a
    /// spec without problems.
    fn problems(&self) -> Vec<(&'static str, String)>;
    /// The label in Setup and reports (`mlp 64`, `resnet-8 w16 ghost 32`).
    fn label(&self) -> String;
    /// The key a model-size problem (memory) points at.
    fn size_key(&self) -> &'static str;
    /// The size knobs Setup and the command line offer (every field of the family's table).
    fn knobs(&self) -> Vec<Knob>;
    /// Sets knob `key` from `text` (read with `model::knob`'s readers; the whole spec's problems
    /// are checked by [`ModelSpec::set_knob`] after). Only keys of [`Family::knobs`] reach here.
    fn set_knob(&mut self, key: &str, text: &str) -> Result<(), String>;
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

    /// The family's knowledge of its spec, to change it (the knobs).
    fn family_mut(&mut self) -> &mut dyn Family {
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

    /// The family's size knobs with their current values.
    pub fn knobs(&self) -> Vec<Knob> {
        self.family().knobs()
    }

    /// Sets knob `key` (the spec's TOML key) from `text`: read as the knob's type, then the whole
    /// spec checked with the family's problems (the checks a preset's table gets). On an error —
    /// one line naming the key or the rule broken — the spec is left as it was.
    pub fn set_knob(&mut self, key: &str, text: &str) -> Result<(), String> {
        let knobs = self.knobs();
        if !knobs.iter().any(|k| k.key == key) {
            return Err(knob::unknown(self.short_name(), key, &knobs));
        }
        let mut next = self.clone();
        next.family_mut().set_knob(key, text)?;
        let problems = next.family().problems();
        if !problems.is_empty() {
            let why: Vec<String> = problems.into_iter().map(|(_, m)| m).collect();
            return Err(why.join("; "));
        }
        *self = next;
        Ok(())
    }

    /// The model an imported study's log names (the import records no model: a linear
    /// classifier stands in, and the log's header says it was imported).
    pub fn placeholder() -> Self {
        ModelSpec::Mlp(mlp::MlpSpec { hidden: Vec::new() })
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
    /// The parameters that hold state the network keeps but does not train (batch
    /// normalisation's running averages: no gradient, moved by a training forward's
    /// [`Forward::stats`]); the parameter count leaves them out. Empty for a family without
    /// such state.
    fn untrained(&self) -> Vec<ParamId>;
    /// What a transfer probe reads of a language model's states (`None`: not a language model;
    /// every family that reads text has one, a test holds them to it).
    fn encoder(&self) -> Option<&dyn Encoder<B>>;
    /// The parameters of member 0 by the names its JAX peer model gives them
    /// (`benches/peers/check_models.py`, through `cargo bench --bench peer_models`); `None`: no
    /// peer model for this family.
    fn peer_params(&self) -> Option<serde_json::Value> {
        None
    }
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
    /// the state the family declares untrained, [`Network::untrained`], excluded). Works on lazy
    /// parameters.
    pub fn trained_params(&self) -> f64 {
        let untrained: HashSet<ParamId> = self.network().untrained().into_iter().collect();
        struct Count {
            untrained: HashSet<ParamId>,
            total: f64,
        }
        impl<B: Backend> ModuleVisitor<B> for Count {
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
                if !self.untrained.contains(&param.id) {
                    let dims = param.lazy_shape().dims::<D>();
                    self.total += dims[1..].iter().map(|&d| d as f64).product::<f64>();
                }
            }
        }
        let mut c = Count {
            untrained,
            total: 0.0,
        };
        self.visit(&mut c);
        c.total
    }
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

#[cfg(test)]
pub(crate) mod tests;
