//! The split-gradient step: the gradient of a batch as the sum of its two halves' gradients, from
//! one forward and one backward, so that tr(Σ) for the noise scale comes with every step for free.
//!
//! Every dense layer and every convolution of the MLP and the CNN is a product of input rows and a
//! weight (y = rows·W, plus a bias). Its weight gradient is rowsᵀ·∂L/∂y, a sum over rows, and the
//! rows are example-major. So the gradient of the first h examples and that of the other n − h are
//! two products over row ranges whose sum is the whole batch's: the same arithmetic as the one
//! product (a different summation order), and both halves for nothing. The forward runs with the
//! weights detached and a zero probe added to each layer's output; the backward then yields
//! ∂L/∂y at each probe (and ∂L/∂x through the layers), and the weight gradients are formed here.
//! A bias added after the 2×2 max-pool gets the sum of ∂L/∂y over the pre-pool rows: the pool's
//! backward routes each pooled gradient to one of its rows, so the sums agree.
//!
//! With g₁, g₂ the two ranges' contributions (g = g₁ + g₂ is the batch-mean gradient), the first
//! half's own mean gradient is g_h = (n/h)·g₁, and |g − g_h|² = |g₂ − ((n−h)/h)·g₁|²: the
//! quantity `train::noise::trace_from_half` turns into tr(Σ) — the one-worker estimator that
//! otherwise needs a second, half-batch backward.

use burn::module::{AutodiffModule, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;

use super::layers::{gemm_conv, ConvPool, Dense};
use super::{cross_entropy, Batch, Ctx, Net};

/// One layer's product: its input rows (example-major, `rows/n` rows an example), the zero probe
/// added to its output rows, and the ids of its weight and bias.
struct Tap<B: AutodiffBackend> {
    rows: Tensor<B::InnerBackend, 2>,
    probe: Tensor<B, 2>,
    w: ParamId,
    b: ParamId,
}

/// A forward pass whose gradients can be split: the loss and the layers' taps.
pub struct SplitForward<B: AutodiffBackend> {
    /// The batch's mean loss (fp32).
    pub loss: Tensor<B, 1>,
    taps: Vec<Tap<B>>,
    n: usize,
}

/// The weight gradients of a split backward.
pub struct SplitGrads<B: AutodiffBackend> {
    /// The whole batch's gradient (of the loss the backward started from), per parameter.
    pub grads: GradientsParams,
    /// |g − g_h|² summed over parameters (on the device), when asked for: g the whole batch's
    /// gradient, g_h that of its first `half` examples.
    pub diff_sq: Option<Tensor<B::InnerBackend, 1>>,
    /// Examples in the first half.
    pub half: usize,
    /// Seconds the distance took (its extra operations; the halves themselves cost nothing).
    pub diff_s: f64,
}

impl<B: AutodiffBackend> Net<B> {
    /// Whether [`Net::split_forward`] applies: the MLP and the CNN, in fp32, on a backend that runs
    /// the convolution as im2col + gemm (the CPU).
    pub fn splits(&self, c: &Ctx) -> bool {
        c.dtype.is_none() && gemm_conv::<B>() && matches!(self, Net::Mlp(_) | Net::Cnn(_))
    }

    /// The forward pass of [`Net::loss`] with the weights detached and each layer's output probed
    /// (None where [`Net::splits`] does not hold, or for fewer than 2 examples).
    pub fn split_forward(&self, batch: &Batch<B>, c: &Ctx) -> Option<SplitForward<B>> {
        if !self.splits(c) || batch.len() < 2 {
            return None;
        }
        let Batch::Images { x, y } = batch else {
            return None;
        };
        let n = batch.len();
        let mut taps = Vec::new();
        let logits = match self {
            Net::Mlp(m) => {
                let [_, ch, h, w] = x.dims();
                let mut a = x.clone().reshape([n, ch * h * w]);
                let last = m.layers.len() - 1;
                for (i, l) in m.layers.iter().enumerate() {
                    a = dense(l, a, &mut taps);
                    if i < last {
                        a = burn::tensor::activation::relu(a);
                    }
                }
                a
            }
            Net::Cnn(m) => {
                let a = if x.dims()[1] == 1 {
                    let [_, _, h, w] = x.dims();
                    x.clone().reshape([n, h, w, 1])
                } else {
                    x.clone().permute([0, 2, 3, 1])
                };
                let a = conv(&m.conv1, a, &mut taps);
                let a = conv(&m.conv2, a, &mut taps);
                let [_, h, w, ch] = a.dims();
                let a = burn::tensor::activation::relu(dense(
                    &m.fc,
                    a.reshape([n, h * w * ch]),
                    &mut taps,
                ));
                dense(&m.out, a, &mut taps)
            }
            _ => return None,
        };
        Some(SplitForward {
            loss: cross_entropy(logits, y.clone()),
            taps,
            n,
        })
    }
}

fn probe<B: AutodiffBackend>(y: &Tensor<B, 2>) -> Tensor<B, 2> {
    Tensor::zeros(y.dims(), &y.device()).require_grad()
}

fn dense<B: AutodiffBackend>(
    l: &Dense<B>,
    x: Tensor<B, 2>,
    taps: &mut Vec<Tap<B>>,
) -> Tensor<B, 2> {
    l.forward2_with(x, l.w.val().detach(), l.b.val().detach(), |rows, y| {
        let p = probe(&y);
        taps.push(Tap {
            rows: rows.clone().inner(),
            probe: p.clone(),
            w: l.w.id,
            b: l.b.id,
        });
        y + p
    })
}

fn conv<B: AutodiffBackend>(
    l: &ConvPool<B>,
    x: Tensor<B, 4>,
    taps: &mut Vec<Tap<B>>,
) -> Tensor<B, 4> {
    l.forward_gemm_with(x, l.w.val().detach(), l.b.val().detach(), |rows, y| {
        let p = probe(&y);
        taps.push(Tap {
            rows: rows.clone().inner(),
            probe: p.clone(),
            w: l.w.id,
            b: l.b.id,
        });
        y + p
    })
}

impl<B: AutodiffBackend> SplitForward<B> {
    /// The parameters' gradients from the backward of (a multiple of) [`SplitForward::loss`],
    /// each formed as the sum of the two halves' products; with `diff`, also |g − g_h|² for the
    /// first ⌊n/2⌋ examples.
    pub fn grads(self, grads: &B::Gradients, diff: bool) -> SplitGrads<B> {
        let n = self.n;
        let h = n / 2;
        // |g − g_h|² = |g₂ − r·g₁|² (module docs)
        let r = (n - h) as f64 / h as f64;
        let mut out = GradientsParams::new();
        let mut diff_s = 0.0;
        let mut acc: Option<Tensor<B::InnerBackend, 1>> = None;
        let mut add = |t: Tensor<B::InnerBackend, 1>| {
            acc = Some(match acc.take() {
                Some(a) => a + t,
                None => t,
            })
        };
        for tap in self.taps {
            let gy = tap
                .probe
                .grad(grads)
                .unwrap_or_else(|| tap.probe.inner().zeros_like());
            let [rows, k] = tap.rows.dims();
            let dout = gy.dims()[1];
            let split = h * (rows / n);
            let (x1, x2) = (
                tap.rows.clone().narrow(0, 0, split),
                tap.rows.narrow(0, split, rows - split),
            );
            let (g1, g2) = (
                gy.clone().narrow(0, 0, split),
                gy.narrow(0, split, rows - split),
            );
            let w1 = x1.transpose().matmul(g1.clone());
            let w2 = x2.transpose().matmul(g2.clone());
            let b1 = g1.sum_dim(0).reshape([dout]);
            let b2 = g2.sum_dim(0).reshape([dout]);
            if diff {
                let t = std::time::Instant::now();
                let dw = if r == 1.0 {
                    w2.clone() - w1.clone()
                } else {
                    w2.clone() - w1.clone().mul_scalar(r)
                };
                let db = if r == 1.0 {
                    b2.clone() - b1.clone()
                } else {
                    b2.clone() - b1.clone().mul_scalar(r)
                };
                add(dw.reshape([k * dout]).powi_scalar(2).sum());
                add(db.powi_scalar(2).sum());
                diff_s += t.elapsed().as_secs_f64();
            }
            out.register::<B::InnerBackend, 2>(tap.w, w1 + w2);
            out.register::<B::InnerBackend, 1>(tap.b, b1 + b2);
        }
        SplitGrads {
            grads: out,
            diff_sq: if diff { acc } else { None },
            half: h,
            diff_s,
        }
    }
}

/// Whether the model has a parameter without a split gradient (never, for the MLP and the CNN:
/// every parameter is a tapped layer's weight or bias). For the tests.
pub fn covers_every_param<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    g: &GradientsParams,
) -> bool {
    struct Check<'a> {
        g: &'a GradientsParams,
        all: bool,
    }
    impl<B: AutodiffBackend> burn::module::ModuleVisitor<B> for Check<'_> {
        fn visit_float<const D: usize>(&mut self, p: &burn::module::Param<Tensor<B, D>>) {
            self.all &= self.g.get::<B::InnerBackend, D>(p.id).is_some();
        }
    }
    let mut c = Check { g, all: true };
    model.visit(&mut c);
    c.all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::InputShape;
    use crate::workload::spec::ModelSpec;
    use burn::backend::{Autodiff, Flex};
    use burn::tensor::TensorData;

    type B = Autodiff<Flex>;

    fn batch(n: usize, c: usize, hw: usize, classes: usize) -> Batch<B> {
        let dev = Default::default();
        let x: Vec<f32> = (0..n * c * hw * hw)
            .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
            .collect();
        let y: Vec<i64> = (0..n).map(|i| (i * 7 % classes) as i64).collect();
        Batch::Images {
            x: Tensor::from_data(TensorData::new(x, [n, c, hw, hw]), &dev),
            y: Tensor::from_data(TensorData::new(y, [n]), &dev),
        }
    }

    fn flat<const D: usize>(g: &GradientsParams, id: ParamId) -> Vec<f64> {
        g.get::<Flex, D>(id)
            .expect("a gradient")
            .into_data()
            .iter::<f64>()
            .collect()
    }

    /// Every parameter's split gradient equals autodiff's (up to the summation order), and
    /// |g − g_h|² equals the distance to a separate half-batch backward's gradient.
    fn check(spec: ModelSpec, shape: InputShape, n: usize) {
        let dev = Default::default();
        let net = Net::<B>::init(&spec, shape, 5, &dev).unwrap();
        let c = Ctx::fp32();
        let batch = batch(n, shape.channels, shape.height, shape.classes);
        let reference = GradientsParams::from_grads(net.loss(&batch, &c).backward(), &net);
        let h = n / 2;
        let half = GradientsParams::from_grads(net.loss(&batch.narrow(0, h), &c).backward(), &net);
        let f = net.split_forward(&batch, &c).expect("splits");
        let loss = f.loss.clone();
        assert_eq!(
            loss.clone().into_scalar(),
            net.loss(&batch, &c).into_scalar(),
            "the probes change the forward"
        );
        let s = f.grads(&loss.backward(), true);
        assert_eq!(s.half, h);
        assert!(covers_every_param::<B, _>(&net, &s.grads));
        let mut ids: Vec<(ParamId, usize)> = vec![];
        match &net {
            Net::Mlp(m) => m.layers.iter().for_each(|l| {
                ids.push((l.w.id, 2));
                ids.push((l.b.id, 1));
            }),
            Net::Cnn(m) => {
                for (w, b) in [
                    (m.conv1.w.id, m.conv1.b.id),
                    (m.conv2.w.id, m.conv2.b.id),
                    (m.fc.w.id, m.fc.b.id),
                    (m.out.w.id, m.out.b.id),
                ] {
                    ids.push((w, 2));
                    ids.push((b, 1));
                }
            }
            _ => unreachable!(),
        }
        let mut want = 0.0;
        for (id, d) in ids {
            let (a, b, hf) = if d == 2 {
                (
                    flat::<2>(&s.grads, id),
                    flat::<2>(&reference, id),
                    flat::<2>(&half, id),
                )
            } else {
                (
                    flat::<1>(&s.grads, id),
                    flat::<1>(&reference, id),
                    flat::<1>(&half, id),
                )
            };
            let scale = b.iter().map(|v| v.abs()).fold(1e-6, f64::max);
            for (x, y) in a.iter().zip(&b) {
                assert!((x - y).abs() <= 1e-5 * scale, "{x} vs {y} (scale {scale})");
            }
            want += b.iter().zip(&hf).map(|(x, y)| (x - y).powi(2)).sum::<f64>();
        }
        let got = s.diff_sq.unwrap().into_scalar() as f64;
        assert!(
            (got / want - 1.0).abs() < 1e-3,
            "|g − g_h|²: split {got} vs two backwards {want}"
        );
    }

    #[test]
    fn mlp_split_gradients_match_autodiff_and_the_half_batch_backward() {
        let spec = ModelSpec::Mlp {
            hidden: vec![16, 8],
        };
        check(spec.clone(), InputShape::images(1, 4, 4, 5), 12);
        check(spec, InputShape::images(1, 4, 4, 5), 7); // odd: halves of 3 and 4
    }

    #[test]
    fn cnn_split_gradients_match_autodiff_and_the_half_batch_backward() {
        let spec = ModelSpec::Cnn {
            channels: [3, 4],
            dense: 6,
        };
        check(spec.clone(), InputShape::images(1, 8, 8, 4), 6);
        check(spec, InputShape::images(2, 9, 9, 3), 5); // odd images (cropped pool), 2 channels
    }

    #[test]
    fn language_models_and_fp16_do_not_split() {
        let dev = Default::default();
        let net = Net::<B>::init(
            &ModelSpec::Mlp { hidden: vec![4] },
            InputShape::images(1, 4, 4, 3),
            0,
            &dev,
        )
        .unwrap();
        let fp16 = Ctx {
            dtype: Some(burn::tensor::FloatDType::F16),
        };
        assert!(net.splits(&Ctx::fp32()));
        assert!(!net.splits(&fp16));
        assert!(net
            .split_forward(&batch(1, 1, 4, 3), &Ctx::fp32())
            .is_none());
    }
}
