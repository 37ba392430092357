//! The workloads' models. Every model is a Burn `Module` whose parameters are fp32 master weights;
//! the forward pass runs in the compute precision of `Ctx` and returns fp32 logits.
//!
//! **A model family is one file** (`mlp`, `cnn`, `char_lstm`, `mlstm`, `transformer`,
//! `resnet`, `nqm`): its registration (kind, name, what it reads, its default spec and its
//! smallest one), its spec fields, their validation and its size knobs, the network it builds on
//! the member axis, the state that network does not train, its probe encoder if it is a language
//! model, its label, its peer description and the specs `bench` times; `family` registers them
//! (the list `FAMILIES`, the preset's `ModelSpec` and the network `Net`) and counts parameters
//! and FLOPs on the module a family builds. Shared pieces: `layers` (dense, conv block, norms,
//! the parameter initialiser `Init`), `conv_bn` (the residual networks' convolution and batch
//! normalisation), `lm` (the LSTM cell, its unrolling, the recurrent families' probe
//! recurrence), `encoder` (what a transfer probe reads of a language model), `knob` (a size
//! knob and its text readers), `kernels` (the CPU's ops of our own).
//!
//! Layering: imports `data` only (the preset types in `workload` hold a `ModelSpec`).

pub mod char_lstm;
pub mod cnn;
pub mod conv_bn;
pub mod encoder;
pub mod family;
pub mod kernels;
pub mod knob;
pub mod layers;
mod lm;
pub mod mlp;
pub mod mlstm;
pub mod nqm;
pub mod resnet;
pub mod transformer;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::backend::Backend;
use burn::tensor::{activation, Device, Int, Tensor, TensorData};

pub use char_lstm::CharLstm;
pub use family::{Family, Forward, Input, ModelSpec, Net, Network, Registration, FAMILIES};
pub use layers::Ctx;
pub use lm::{lstm_cell, lstm_cell_ops};
pub use mlp::Mlp;
pub use mlstm::Mlstm;
pub use transformer::TransformerLm;

/// A batch already on the device.
#[derive(Clone, Debug)]
pub enum Batch<B: Backend> {
    /// x: [N, C, H, W] in fp32, y: [N] class ids.
    Images {
        x: Tensor<B, 4>,
        y: Tensor<B, 1, Int>,
    },
    /// x, y: [N, T] byte ids; y is x shifted by one.
    Text {
        x: Tensor<B, 2, Int>,
        y: Tensor<B, 2, Int>,
    },
}

impl<B: Backend> Batch<B> {
    pub fn len(&self) -> usize {
        match self {
            Batch::Images { y, .. } => y.dims()[0],
            Batch::Text { y, .. } => y.dims()[0],
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Examples `start .. start + len` of every one of the `k` members (a batch of K·N rows,
    /// member-major → one of K·len rows).
    pub fn narrow_members(&self, k: usize, start: usize, len: usize) -> Batch<B> {
        if k == 1 {
            return self.narrow(start, len);
        }
        fn rows<B: Backend, const D: usize, K>(
            t: Tensor<B, D, K>,
            k: usize,
            start: usize,
            len: usize,
        ) -> Tensor<B, D, K>
        where
            K: burn::tensor::TensorKind<B> + burn::tensor::BasicOps<B>,
        {
            let dims = t.dims();
            let n = dims[0] / k;
            let rest: usize = dims[1..].iter().product();
            let mut out = dims;
            out[0] = k * len;
            t.reshape([k, n, rest]).narrow(1, start, len).reshape(out)
        }
        match self {
            Batch::Images { x, y } => Batch::Images {
                x: rows(x.clone(), k, start, len),
                y: rows(y.clone(), k, start, len),
            },
            Batch::Text { x, y } => Batch::Text {
                x: rows(x.clone(), k, start, len),
                y: rows(y.clone(), k, start, len),
            },
        }
    }
    /// An image batch's (x [K·N, C, H, W], y [K·N]). A text batch here is a bug: the loader
    /// rejects an image model on a text dataset.
    pub fn images(&self) -> (&Tensor<B, 4>, &Tensor<B, 1, Int>) {
        match self {
            Batch::Images { x, y } => (x, y),
            Batch::Text { .. } => {
                panic!("model and batch kinds do not match (validated when the preset loads)")
            }
        }
    }
    /// A text batch's (x, y) [K·N, T] (as [`Self::images`]).
    pub fn text(&self) -> (&Tensor<B, 2, Int>, &Tensor<B, 2, Int>) {
        match self {
            Batch::Text { x, y } => (x, y),
            Batch::Images { .. } => {
                panic!("model and batch kinds do not match (validated when the preset loads)")
            }
        }
    }
    /// Examples `start .. start + len` (along the batch dimension).
    pub fn narrow(&self, start: usize, len: usize) -> Batch<B> {
        match self {
            Batch::Images { x, y } => Batch::Images {
                x: x.clone().narrow(0, start, len),
                y: y.clone().narrow(0, start, len),
            },
            Batch::Text { x, y } => Batch::Text {
                x: x.clone().narrow(0, start, len),
                y: y.clone().narrow(0, start, len),
            },
        }
    }
}

/// Shape of the input a model is built for.
#[derive(Clone, Copy, Debug)]
pub struct InputShape {
    pub channels: usize,
    pub height: usize,
    pub width: usize,
    pub classes: usize,
    /// Text: vocabulary (256) and maximum sequence length.
    pub vocab: usize,
    pub seq_len: usize,
}

impl InputShape {
    /// Images of `channels` × `height` × `width` in `classes` classes (no text fields).
    pub fn images(channels: usize, height: usize, width: usize, classes: usize) -> Self {
        InputShape {
            channels,
            height,
            width,
            classes,
            vocab: 0,
            seq_len: 0,
        }
    }
}

/// Per-batch evaluation sums: summed negative log-likelihood (nats), misclassified count, predictions.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EvalSums {
    pub nll: f64,
    pub errors: f64,
    pub count: f64,
}

impl<B: Backend> Forward<B> {
    /// Logits [K, N, classes] of an image batch and its targets [K·N] (no running statistics).
    pub fn plain(logits: Tensor<B, 3>, y: Tensor<B, 1, Int>, k: usize) -> Self {
        let m = y.dims()[0] / k;
        Forward {
            logits,
            targets: y.reshape([k, m]),
            stats: Vec::new(),
        }
    }
    /// Logits [K, N·T, vocab] of a text batch and its targets [K·N, T].
    pub fn sequences(logits: Tensor<B, 3>, y: Tensor<B, 2, Int>, k: usize) -> Self {
        Self::plain(logits, flat_ids(y), k)
    }

    /// A language model of `k` members on a text batch: `logits` of its inputs, scored against
    /// the next bytes.
    pub fn of_text(
        batch: &Batch<B>,
        k: usize,
        logits: impl FnOnce(Tensor<B, 2, Int>) -> Tensor<B, 3>,
    ) -> Self {
        let (x, y) = batch.text();
        Self::sequences(logits(x.clone()), y.clone(), k)
    }
}

impl<B: Backend> Net<B> {
    /// Builds the model with weights drawn from `seed` (identical for equal seeds on any backend):
    /// one member.
    pub fn init(
        spec: &ModelSpec,
        shape: InputShape,
        seed: u64,
        device: &Device<B>,
    ) -> anyhow::Result<Self> {
        family::init_one(spec, shape, seed, device)
    }

    /// K members, member k initialised exactly as `init` with `seeds[k]` (a fused group of trials).
    pub fn init_group(
        spec: &ModelSpec,
        shape: InputShape,
        seeds: &[u64],
        device: &Device<B>,
    ) -> anyhow::Result<Self> {
        anyhow::ensure!(!seeds.is_empty(), "a group needs at least one member");
        let nets = seeds
            .iter()
            .map(|&s| Self::init(spec, shape, s, device))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(stack_members(nets))
    }

    /// Members (trials) the model holds: the leading axis of every parameter.
    pub fn members(&self) -> usize {
        members_of(self)
    }

    /// fp32 logits [K, M, classes] and targets [K, M] (M = N examples a member; text is flattened
    /// over time, M = N·T). The batch holds K·N rows, member-major.
    pub fn logits(&self, batch: &Batch<B>, c: &Ctx) -> (Tensor<B, 3>, Tensor<B, 2, Int>) {
        let f = self.network().forward(batch, c);
        (f.logits, f.targets)
    }

    /// Mean cross-entropy (nats) of each member's rows of the batch, computed in fp32: [K].
    pub fn loss(&self, batch: &Batch<B>, c: &Ctx) -> Tensor<B, 1> {
        self.loss_and_stats(batch, c).0
    }

    /// [`Self::loss`] and the running statistics this training forward moves (for
    /// [`Self::with_stats`] after the step; empty for families without them).
    pub fn loss_and_stats(
        &self,
        batch: &Batch<B>,
        c: &Ctx,
    ) -> (Tensor<B, 1>, Vec<family::StatUpdate<B>>) {
        let f = self.network().forward(batch, c);
        (cross_entropy(f.logits, f.targets), f.stats)
    }

    /// The model with the running statistics of a training forward ([`Self::loss_and_stats`])
    /// in place of the old ones: member k's rows where `keep[k]` (a member whose step was skipped
    /// keeps its old statistics), the parameter ids kept.
    pub fn with_stats(self, stats: Vec<family::StatUpdate<B>>, keep: &[bool]) -> Self {
        if stats.is_empty() || !keep.iter().any(|&k| k) {
            return self;
        }
        family::replace_stats(self, stats, keep)
    }

    /// Whether [`Self::correct_shared`] serves this model here (the MLP on the CPU in fp32): its
    /// evaluation then takes one copy of the validation rows, not one per member.
    pub fn shares_eval_rows(&self, c: &Ctx) -> bool {
        self.network().shares_eval_rows(c)
    }

    /// Each member's correct predictions [K] on a batch of rows that every member scores (one
    /// copy of them: `batch.len()` rows, not K·N): `eval_stats` without the NLL, where
    /// [`Self::shares_eval_rows`] (`kernels::mlp_correct`); `None` elsewhere.
    pub fn correct_shared(&self, batch: &Batch<B>, c: &Ctx) -> Option<Tensor<B, 1>> {
        self.network().correct_shared(batch, c)
    }
    /// Each member's evaluation statistics of the batch on the device (fp32; counts are exact up to
    /// 2^24 examples a batch), for one read-back of many batches: `[Σ −log p(y), correct
    /// predictions]` per member (K·2 values, member-major) with `with_nll`, else `[correct
    /// predictions]` per member (an error-rate metric needs no softmax). The prediction is the argmax
    /// of the logits either way, so the error count does not depend on `with_nll`. No gradient is
    /// needed: call on `model.valid()`.
    pub fn eval_stats(&self, batch: &Batch<B>, c: &Ctx, with_nll: bool) -> Tensor<B, 1> {
        let (logits, y) = self.logits(batch, c);
        let [k, m, _] = logits.dims();
        let pred = logits.clone().argmax(2).reshape([k, m]);
        let correct = pred.equal(y.clone()).int().sum_dim(1).float(); // [K, 1]
        if !with_nll {
            return correct.reshape([k]);
        }
        let logp = activation::log_softmax(logits, 2);
        let nll = logp
            .gather(2, y.reshape([k, m, 1]))
            .sum_dim(1)
            .reshape([k, 1])
            .neg();
        Tensor::cat(vec![nll, correct], 1).reshape([k * 2])
    }
}

/// The leading axis of a module's first float parameter.
fn members_of<B: Backend, M: Module<B>>(m: &M) -> usize {
    struct First(Option<usize>);
    impl<B: Backend> ModuleVisitor<B> for First {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            if self.0.is_none() {
                self.0 = Some(param.dims()[0]);
            }
        }
    }
    let mut v = First(None);
    m.visit(&mut v);
    v.0.unwrap_or(1)
}

/// Stacks modules of one architecture along the member axis: parameter p of the result is the
/// concatenation (dim 0) of every module's parameter p, in order; the first module's parameter ids
/// are kept.
pub fn stack_members<B: Backend, M: Module<B>>(mut modules: Vec<M>) -> M {
    use std::any::Any;
    struct Collect(Vec<Box<dyn Any>>);
    impl<B: Backend> ModuleVisitor<B> for Collect {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            self.0.push(Box::new(param.val()));
        }
    }
    struct Stack<'a> {
        others: &'a mut [std::vec::IntoIter<Box<dyn Any>>],
    }
    impl<B: Backend> ModuleMapper<B> for Stack<'_> {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
            let (id, tensor, mapper) = param.consume();
            let require_grad = tensor.is_require_grad();
            let mut parts = vec![tensor.detach()];
            for o in self.others.iter_mut() {
                let t = o
                    .next()
                    .and_then(|b| b.downcast::<Tensor<B, D>>().ok())
                    .expect("modules of one architecture");
                parts.push(t.detach());
            }
            // detached: a leaf again (the concatenation is not part of any graph)
            let mut t = Tensor::cat(parts, 0).detach();
            if require_grad {
                t = t.require_grad();
            }
            Param::from_mapped_value(id, t, mapper)
        }
    }
    if modules.len() == 1 {
        return modules.pop().expect("one");
    }
    let first = modules.remove(0);
    let mut others: Vec<std::vec::IntoIter<Box<dyn Any>>> = modules
        .iter()
        .map(|m| {
            let mut c = Collect(Vec::new());
            m.visit(&mut c);
            c.0.into_iter()
        })
        .collect();
    first.map(&mut Stack {
        others: &mut others,
    })
}

/// The members `keep` (in that order) of a module with the member axis: every parameter (and
/// nothing else) is narrowed; parameter ids are kept, so optimizer state keyed by them still
/// applies (after the same selection).
pub fn select_members<B: Backend, M: Module<B>>(module: M, keep: &[usize]) -> M {
    struct Select<'a>(&'a [usize]);
    impl<B: Backend> ModuleMapper<B> for Select<'_> {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
            let (id, tensor, mapper) = param.consume();
            let require_grad = tensor.is_require_grad();
            let mut t = select_rows(tensor.detach(), self.0).detach();
            if require_grad {
                t = t.require_grad();
            }
            Param::from_mapped_value(id, t, mapper)
        }
    }
    module.map(&mut Select(keep))
}

/// Rows `keep` of dim 0 (a contiguous run is a narrow, else a gather).
pub fn select_rows<B: Backend, const D: usize>(t: Tensor<B, D>, keep: &[usize]) -> Tensor<B, D> {
    let contiguous = keep.windows(2).all(|w| w[1] == w[0] + 1);
    if contiguous && !keep.is_empty() {
        if keep[0] == 0 && keep.len() == t.dims()[0] {
            return t;
        }
        return t.narrow(0, keep[0], keep.len());
    }
    let idx: Vec<i64> = keep.iter().map(|&i| i as i64).collect();
    let dev = t.device();
    t.select(
        0,
        Tensor::<B, 1, Int>::from_data(TensorData::new(idx, [keep.len()]), &dev),
    )
}

impl EvalSums {
    /// The sums of a batch of `n` examples from its [`Net::eval_stats`] values.
    pub fn from_stats(n: usize, nll: f64, correct: f64) -> Self {
        EvalSums {
            nll,
            errors: n as f64 - correct,
            count: n as f64,
        }
    }
}

/// Targets [K·N, T] → [K·N·T] (row n·T + i is example n at step i, as the logits).
fn flat_ids<B: Backend>(y: Tensor<B, 2, Int>) -> Tensor<B, 1, Int> {
    let [n, t] = y.dims();
    y.reshape([n * t])
}

/// Mean softmax cross-entropy per member in fp32: logits [K, M, C], targets [K, M] → [K]. On the CPU
/// one op of our own (`kernels::cross_entropy`: a vectorised log-sum-exp per row and the backward
/// softmax − one-hot), checked against these generic ops.
pub fn cross_entropy<B: Backend>(logits: Tensor<B, 3>, y: Tensor<B, 2, Int>) -> Tensor<B, 1> {
    if let Some(l) = kernels::cross_entropy::<B>(logits.clone(), y.clone()) {
        return l;
    }
    cross_entropy_ops(logits, y)
}

/// [`cross_entropy`] in Burn's generic ops.
pub fn cross_entropy_ops<B: Backend>(logits: Tensor<B, 3>, y: Tensor<B, 2, Int>) -> Tensor<B, 1> {
    let [k, m, _] = logits.dims();
    let logp = activation::log_softmax(logits, 2);
    logp.gather(2, y.reshape([k, m, 1]))
        .mean_dim(1)
        .reshape([k])
        .neg()
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Flex;
    use burn::tensor::TensorData;

    /// An error-rate evaluation (no softmax) counts the same correct predictions as the one that
    /// also sums the negative log-likelihood, and that sum is the cross-entropy's.
    #[test]
    fn eval_stats_with_and_without_the_nll_agree() {
        let dev = Default::default();
        let spec = ModelSpec::Mlp(crate::model::mlp::MlpSpec { hidden: vec![16] });
        let shape = InputShape::images(1, 4, 4, 5);
        let net = Net::<Flex>::init(&spec, shape, 3, &dev).unwrap();
        let n = 64;
        let x: Vec<f32> = (0..n * 16)
            .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
            .collect();
        let y: Vec<i64> = (0..n).map(|i| (i * 7 % 5) as i64).collect();
        let batch = Batch::Images {
            x: Tensor::from_data(TensorData::new(x, [n, 1, 4, 4]), &dev),
            y: Tensor::from_data(TensorData::new(y, [n]), &dev),
        };
        let c = Ctx::fp32();
        let read = |t: Tensor<Flex, 1>| t.into_data().iter::<f64>().collect::<Vec<_>>();
        let both = read(net.eval_stats(&batch, &c, true));
        let errors_only = read(net.eval_stats(&batch, &c, false));
        assert_eq!(both.len(), 2);
        assert_eq!(errors_only, vec![both[1]]);
        assert!(
            both[1] > 0.0 && both[1] < n as f64,
            "a trivial case: {both:?}"
        );
        let mean_ce = read(net.loss(&batch, &c))[0];
        assert!(
            (both[0] / n as f64 - mean_ce).abs() < 1e-5,
            "{both:?} vs {mean_ce}"
        );
    }

    /// Every trained parameter's gradient, flattened, in the module's order (state without a
    /// gradient, the running statistics, is skipped).
    fn grads_of<M: burn::module::AutodiffModule<Ad>>(
        m: &M,
        g: &<Ad as burn::tensor::backend::AutodiffBackend>::Gradients,
    ) -> Vec<Vec<f32>> {
        struct G<'a>(
            &'a <Ad as burn::tensor::backend::AutodiffBackend>::Gradients,
            Vec<Vec<f32>>,
        );
        impl ModuleVisitor<Ad> for G<'_> {
            fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<Ad, D>>) {
                if let Some(g) = p.val().grad(self.0) {
                    self.1.push(g.into_data().to_vec::<f32>().unwrap());
                }
            }
        }
        let mut v = G(g, Vec::new());
        m.visit(&mut v);
        v.1
    }

    type Ad = burn::backend::Autodiff<Flex>;

    fn batch_for(spec: &ModelSpec, n: usize, salt: usize) -> Batch<Ad> {
        let shape = super::family::tests::every_family()
            .into_iter()
            .find(|(s, _)| s.family().input() == spec.family().input())
            .expect("a family of this input")
            .1;
        super::family::tests::batch_of(shape, 1, n, salt)
    }

    fn cat_batches(parts: Vec<Batch<Ad>>) -> Batch<Ad> {
        match &parts[0] {
            Batch::Images { .. } => {
                let (xs, ys): (Vec<_>, Vec<_>) = parts
                    .into_iter()
                    .map(|b| match b {
                        Batch::Images { x, y } => (x, y),
                        _ => unreachable!(),
                    })
                    .unzip();
                Batch::Images {
                    x: Tensor::cat(xs, 0),
                    y: Tensor::cat(ys, 0),
                }
            }
            Batch::Text { .. } => {
                let (xs, ys): (Vec<_>, Vec<_>) = parts
                    .into_iter()
                    .map(|b| match b {
                        Batch::Text { x, y } => (x, y),
                        _ => unreachable!(),
                    })
                    .unzip();
                Batch::Text {
                    x: Tensor::cat(xs, 0),
                    y: Tensor::cat(ys, 0),
                }
            }
        }
    }

    /// A group of K members computes, for each member, the loss and the gradients that member's
    /// model computes alone on its own rows — every model family (the members' weights and data
    /// differ).
    #[test]
    fn a_member_of_a_group_computes_what_it_computes_alone() {
        let dev = Default::default();
        let seeds = [3u64, 7, 11];
        for (spec, shape) in &super::family::tests::every_family() {
            let (spec, shape) = (spec, *shape);
            let n = 4;
            let group = Net::<Ad>::init_group(spec, shape, &seeds, &dev).unwrap();
            assert_eq!(group.members(), 3);
            let parts: Vec<Batch<Ad>> = (0..3).map(|k| batch_for(spec, n, k)).collect();
            let batch = cat_batches(parts.clone());
            let c = Ctx::fp32();
            let gl = group.loss(&batch, &c);
            let g_losses = gl.clone().inner().into_data().to_vec::<f32>().unwrap();
            let g_grads = grads_of(&group, &gl.sum().backward());
            for (k, &seed) in seeds.iter().enumerate() {
                let solo = Net::<Ad>::init(spec, shape, seed, &dev).unwrap();
                let l = solo.loss(&parts[k], &c);
                let sl = l.clone().inner().into_data().to_vec::<f32>().unwrap()[0];
                let rel = |a: f32, b: f32| (a - b).abs() / (1e-6 + b.abs());
                assert!(
                    rel(g_losses[k], sl) < 1e-6,
                    "{spec:?} member {k}: {} vs {sl}",
                    g_losses[k]
                );
                let s_grads = grads_of(&solo, &l.sum().backward());
                assert_eq!(s_grads.len(), g_grads.len());
                for (p, (gg, sg)) in g_grads.iter().zip(&s_grads).enumerate() {
                    let len = sg.len();
                    assert_eq!(gg.len(), 3 * len, "{spec:?} parameter {p}");
                    let slice = &gg[k * len..(k + 1) * len];
                    let scale = sg.iter().fold(1e-6f32, |a, v| a.max(v.abs()));
                    for (a, b) in slice.iter().zip(sg) {
                        assert!(
                            (a - b).abs() <= 1e-5 * scale,
                            "{spec:?} member {k} parameter {p}: {a} vs {b}"
                        );
                    }
                }
            }
            // compaction keeps members 2 and 0, in that order
            let kept = select_members(group, &[2, 0]);
            assert_eq!(kept.members(), 2);
            let batch = cat_batches(vec![parts[2].clone(), parts[0].clone()]);
            let l = kept
                .loss(&batch, &c)
                .inner()
                .into_data()
                .to_vec::<f32>()
                .unwrap();
            assert!((l[0] - g_losses[2]).abs() < 1e-6 && (l[1] - g_losses[0]).abs() < 1e-6);
        }
    }

    /// The CPU's cross-entropy equals Burn's generic ops in values and gradients (members with
    /// different scales of logits; several widths, odd ones included).
    #[test]
    fn the_cross_entropy_kernel_matches_the_generic_ops() {
        let dev = Default::default();
        for &(k, m, c) in &[(1, 5, 3), (3, 7, 10), (2, 33, 256)] {
            let x: Vec<f32> = (0..k * m * c)
                .map(|i| ((i * 53 % 97) as f32 / 9.0 - 5.0) * (1 + i / (m * c)) as f32)
                .collect();
            let y: Vec<i64> = (0..k * m).map(|i| (i * 7 % c) as i64).collect();
            let w: Vec<f32> = (0..k).map(|i| 0.5 + i as f32).collect();
            let run = |fast: bool| {
                let xt = Tensor::<Ad, 3>::from_data(TensorData::new(x.clone(), [k, m, c]), &dev)
                    .require_grad();
                let yt = Tensor::<Ad, 2, Int>::from_data(TensorData::new(y.clone(), [k, m]), &dev);
                let l = if fast {
                    kernels::cross_entropy(xt.clone(), yt).expect("the CPU kernel")
                } else {
                    cross_entropy_ops(xt.clone(), yt)
                };
                let wt = Tensor::<Ad, 1>::from_data(TensorData::new(w.clone(), [k]), &dev);
                let g = (l.clone() * wt).sum().backward();
                (
                    l.inner().into_data().to_vec::<f32>().unwrap(),
                    xt.grad(&g).unwrap().into_data().to_vec::<f32>().unwrap(),
                )
            };
            let (la, ga) = run(true);
            let (lb, gb) = run(false);
            for (a, b) in la.iter().zip(&lb) {
                assert!((a - b).abs() <= 2e-6 * (1.0 + b.abs()), "loss {a} vs {b}");
            }
            for (a, b) in ga.iter().zip(&gb) {
                assert!((a - b).abs() <= 1e-6, "gradient {a} vs {b}");
            }
        }
    }

    /// A NaN in one member's data (a diverged trial) never reaches another member's loss or
    /// gradients, through every model family's ops (the CPU kernels included).
    #[test]
    fn a_nan_in_one_member_never_reaches_another() {
        let dev = Default::default();
        for (spec, shape) in &super::family::tests::every_family() {
            let (spec, shape) = (spec, *shape);
            let group = Net::<Ad>::init_group(spec, shape, &[1, 2, 3], &dev).unwrap();
            // member 1's weights are NaN (as after a diverged step)
            let group = {
                struct Poison;
                impl ModuleMapper<Ad> for Poison {
                    fn map_float<const D: usize>(
                        &mut self,
                        param: Param<Tensor<Ad, D>>,
                    ) -> Param<Tensor<Ad, D>> {
                        let (id, t, mapper) = param.consume();
                        let t = t.detach();
                        let k = t.dims()[0];
                        let mut mask: Vec<f32> = vec![0.0; k];
                        mask[1] = f32::NAN;
                        let mut dims = [1usize; D];
                        dims[0] = k;
                        let m = Tensor::<Ad, 1>::from_data(TensorData::new(mask, [k]), &t.device())
                            .reshape(dims);
                        Param::from_mapped_value(id, (t + m).detach().require_grad(), mapper)
                    }
                }
                group.map(&mut Poison)
            };
            let parts: Vec<Batch<Ad>> = (0..3).map(|k| batch_for(spec, 4, k)).collect();
            let l = group.loss(&cat_batches(parts), &Ctx::fp32());
            let lv = l.clone().inner().into_data().to_vec::<f32>().unwrap();
            assert!(
                lv[1].is_nan() && lv[0].is_finite() && lv[2].is_finite(),
                "{spec:?}: {lv:?}"
            );
            let grads = grads_of(&group, &l.sum().backward());
            for (p, g) in grads.iter().enumerate() {
                let len = g.len() / 3;
                for k in [0, 2] {
                    assert!(
                        g[k * len..(k + 1) * len].iter().all(|v| v.is_finite()),
                        "{spec:?} parameter {p}: member {k} got a non-finite gradient"
                    );
                }
            }
        }
    }
}
