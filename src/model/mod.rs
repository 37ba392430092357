//! The workloads' models. Every model is a Burn `Module` whose parameters are fp32 master weights;
//! the forward pass runs in the compute precision of `Ctx` and returns fp32 logits.
//!
//! Layering: imports `data`, `workload` and `core`.

pub mod layers;
mod lm;

use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::{activation, Device, Int, Tensor};
use rand::rngs::StdRng;
use rand::SeedableRng;

pub use layers::Ctx;
use layers::{ConvPool, Dense};
pub use lm::{CharLstm, Mlstm, TransformerLm};

use crate::workload::spec::ModelSpec;

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

#[derive(Module, Debug)]
pub struct Mlp<B: Backend> {
    pub layers: Vec<Dense<B>>,
}

impl<B: Backend> Mlp<B> {
    pub fn forward(&self, x: Tensor<B, 4>, c: &Ctx) -> Tensor<B, 2> {
        let [n, ch, h, w] = x.dims();
        let mut y = c.cast(x.reshape([n, ch * h * w]));
        let last = self.layers.len() - 1;
        for (i, l) in self.layers.iter().enumerate() {
            y = l.forward2(y, c);
            if i < last {
                y = activation::relu(y);
            }
        }
        c.to_f32(y)
    }
}

/// Shallue et al.'s simple CNN: conv5×5-relu-maxpool ×2, dense-relu, dense.
#[derive(Module, Debug)]
pub struct Cnn<B: Backend> {
    pub conv1: ConvPool<B>,
    pub conv2: ConvPool<B>,
    pub fc: Dense<B>,
    pub out: Dense<B>,
}

impl<B: Backend> Cnn<B> {
    /// x: [N, C, H, W]; the convolutions run on NHWC activations (free for C = 1), and the dense layer
    /// reads the pooled features in (h, w, c) order.
    pub fn forward(&self, x: Tensor<B, 4>, c: &Ctx) -> Tensor<B, 2> {
        let x = if x.dims()[1] == 1 {
            let [n, _, h, w] = x.dims();
            x.reshape([n, h, w, 1])
        } else {
            x.permute([0, 2, 3, 1])
        };
        let y = self.conv1.forward(c.cast(x), c);
        let y = self.conv2.forward(y, c);
        let [n, h, w, ch] = y.dims();
        let y = activation::relu(self.fc.forward2(y.reshape([n, h * w * ch]), c));
        c.to_f32(self.out.forward2(y, c))
    }
}

#[derive(Module, Debug)]
pub enum Net<B: Backend> {
    Mlp(Mlp<B>),
    Cnn(Cnn<B>),
    CharLstm(CharLstm<B>),
    Mlstm(Mlstm<B>),
    Transformer(TransformerLm<B>),
}

/// Per-batch evaluation sums: summed negative log-likelihood (nats), misclassified count, predictions.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EvalSums {
    pub nll: f64,
    pub errors: f64,
    pub count: f64,
}

impl<B: Backend> Net<B> {
    /// Builds the model with weights drawn from `seed` (identical for equal seeds on any backend).
    pub fn init(
        spec: &ModelSpec,
        shape: InputShape,
        seed: u64,
        device: &Device<B>,
    ) -> anyhow::Result<Self> {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x5ca1_ab1e);
        Ok(match spec {
            ModelSpec::Mlp { hidden } => {
                let mut dims = vec![shape.channels * shape.height * shape.width];
                dims.extend(hidden.iter().copied());
                dims.push(shape.classes);
                let layers = dims
                    .windows(2)
                    .map(|w| Dense::new(&mut rng, w[0], w[1], device))
                    .collect();
                Net::Mlp(Mlp { layers })
            }
            ModelSpec::Cnn { channels, dense } => {
                let conv1 = ConvPool::new(&mut rng, shape.channels, channels[0], 5, device);
                let conv2 = ConvPool::new(&mut rng, channels[0], channels[1], 5, device);
                let (h, w) = (shape.height / 4, shape.width / 4);
                anyhow::ensure!(h > 0 && w > 0, "the CNN needs images of at least 4×4");
                let fc = Dense::new(&mut rng, channels[1] * h * w, *dense, device);
                let out = Dense::new(&mut rng, *dense, shape.classes, device);
                Net::Cnn(Cnn {
                    conv1,
                    conv2,
                    fc,
                    out,
                })
            }
            ModelSpec::CharLstm { embed, hidden } => Net::CharLstm(CharLstm::new(
                &mut rng,
                shape.vocab,
                *embed,
                *hidden,
                device,
            )),
            ModelSpec::Mlstm { embed, hidden } => {
                Net::Mlstm(Mlstm::new(&mut rng, shape.vocab, *embed, *hidden, device))
            }
            ModelSpec::Transformer {
                d_model,
                heads,
                layers,
                ff,
            } => {
                anyhow::ensure!(
                    *heads > 0 && d_model % heads == 0,
                    "transformer d_model ({d_model}) must be divisible by heads ({heads})"
                );
                Net::Transformer(TransformerLm::new(
                    &mut rng,
                    shape.vocab,
                    shape.seq_len,
                    *d_model,
                    *heads,
                    *layers,
                    *ff,
                    device,
                ))
            }
            ModelSpec::Nqm { .. } => {
                anyhow::bail!("the noisy quadratic model is not a neural network; it runs in nqm")
            }
        })
    }

    /// fp32 logits [N, classes] and targets [N] (text is flattened over time).
    pub fn logits(&self, batch: &Batch<B>, c: &Ctx) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
        match (self, batch) {
            (Net::Mlp(m), Batch::Images { x, y }) => (m.forward(x.clone(), c), y.clone()),
            (Net::Cnn(m), Batch::Images { x, y }) => (m.forward(x.clone(), c), y.clone()),
            (Net::CharLstm(m), Batch::Text { x, y }) => flat(m.forward(x.clone(), c), y),
            (Net::Mlstm(m), Batch::Text { x, y }) => flat(m.forward(x.clone(), c), y),
            (Net::Transformer(m), Batch::Text { x, y }) => flat(m.forward(x.clone(), c), y),
            _ => panic!("model and batch kinds do not match (validated when the preset loads)"),
        }
    }

    /// Mean cross-entropy (nats) of the batch, computed in fp32.
    pub fn loss(&self, batch: &Batch<B>, c: &Ctx) -> Tensor<B, 1> {
        let (logits, y) = self.logits(batch, c);
        cross_entropy(logits, y)
    }

    /// The batch's evaluation statistics on the device (fp32; counts are exact up to 2^24 examples
    /// a batch), for one read-back of many batches: `[Σ −log p(y), correct predictions]` with
    /// `with_nll`, else `[correct predictions]` (an error-rate metric needs no softmax). The
    /// prediction is the argmax of the logits either way, so the error count does not depend on
    /// `with_nll`. No gradient is needed: call on `model.valid()`.
    pub fn eval_stats(&self, batch: &Batch<B>, c: &Ctx, with_nll: bool) -> Tensor<B, 1> {
        let (logits, y) = self.logits(batch, c);
        let n = y.dims()[0];
        let pred = logits.clone().argmax(1).reshape([n]);
        let correct = pred.equal(y.clone()).int().sum().float();
        if !with_nll {
            return correct;
        }
        let logp = activation::log_softmax(logits, 1);
        let nll = logp.gather(1, y.reshape([n, 1])).sum().neg();
        Tensor::cat(vec![nll, correct], 0)
    }
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

fn flat<B: Backend>(
    logits: Tensor<B, 3>,
    y: &Tensor<B, 2, Int>,
) -> (Tensor<B, 2>, Tensor<B, 1, Int>) {
    let [n, t, v] = logits.dims();
    (logits.reshape([n * t, v]), y.clone().reshape([n * t]))
}

/// Mean softmax cross-entropy in fp32.
pub fn cross_entropy<B: Backend>(logits: Tensor<B, 2>, y: Tensor<B, 1, Int>) -> Tensor<B, 1> {
    let n = y.dims()[0];
    let logp = activation::log_softmax(logits, 1);
    logp.gather(1, y.reshape([n, 1])).mean().neg()
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
        let spec = ModelSpec::Mlp { hidden: vec![16] };
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
}
