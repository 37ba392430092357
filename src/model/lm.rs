//! Character-level language models: LSTM, multiplicative LSTM (Puri et al.), pre-norm causal Transformer.
//! Every parameter has the leading member axis of `layers` ([K, …]); the input ids are [K·N, T]
//! (member-major rows) and the logits [K, N·T, vocab].

use burn::module::{Module, Param};
use burn::tensor::backend::Backend;
use burn::tensor::{activation, Bool, Device, Int, Tensor, TensorData};
use rand::rngs::StdRng;

use super::kernels;
use super::layers::{embed, normal, param, per_member_add, Ctx, Dense, Norm, Proj};

/// Step i of a sequence [K, N, T, d] → [K, N, d].
fn step_slice<B: Backend>(t: &Tensor<B, 4>, i: usize) -> Tensor<B, 3> {
    let [k, n, _, d] = t.dims();
    t.clone()
        .slice([0..k, 0..n, i..i + 1, 0..d])
        .reshape([k, n, d])
}

/// The LSTM cell from the 4·H gate pre-activations (i, f, o, u) and the previous cell state:
/// c = f·c_prev + i·u, h = o·tanh(c) with σ on i, f, o and tanh on u. On the CPU (fp32) one op of our
/// own with vectorised activations and a hand-written backward (`kernels::lstm_cell`), checked against
/// these generic ops.
pub fn lstm_cell<B: Backend>(
    gates: Tensor<B, 3>,
    c_prev: Tensor<B, 3>,
    c: &Ctx,
) -> (Tensor<B, 3>, Tensor<B, 3>) {
    if c.is_fp32() {
        if let Some(r) = kernels::lstm_cell::<B>(gates.clone(), c_prev.clone()) {
            return r;
        }
    }
    lstm_cell_ops(gates, c_prev)
}

/// The LSTM cell in Burn's generic ops (the reference, and the path off the CPU).
pub fn lstm_cell_ops<B: Backend>(
    gates: Tensor<B, 3>,
    c_prev: Tensor<B, 3>,
) -> (Tensor<B, 3>, Tensor<B, 3>) {
    let mut g = gates.chunk(4, 2).into_iter();
    let i = activation::sigmoid(g.next().unwrap());
    let f = activation::sigmoid(g.next().unwrap());
    let o = activation::sigmoid(g.next().unwrap());
    let u = g.next().unwrap().tanh();
    let cell = f * c_prev + i * u;
    let h = o * cell.clone().tanh();
    (h, cell)
}

#[derive(Module, Debug)]
pub struct CharLstm<B: Backend> {
    pub embed: Param<Tensor<B, 3>>,
    pub wx: Dense<B>,
    pub wh: Proj<B>,
    pub out: Dense<B>,
    pub hidden: usize,
}

impl<B: Backend> CharLstm<B> {
    pub fn new(rng: &mut StdRng, vocab: usize, e: usize, h: usize, device: &Device<B>) -> Self {
        CharLstm {
            embed: param(
                normal(rng, vocab * e, 1.0 / (e as f64).sqrt()),
                [1, vocab, e],
                device,
            ),
            wx: Dense::new(rng, e, 4 * h, device),
            wh: Proj::new(rng, h, 4 * h, device),
            out: Dense::new(rng, h, vocab, device),
            hidden: h,
        }
    }

    /// Logits [K, N·T, vocab] in fp32.
    pub fn forward(&self, x: Tensor<B, 2, Int>, c: &Ctx) -> Tensor<B, 3> {
        let [rows, t] = x.dims();
        let k = self.embed.dims()[0];
        let n = rows / k;
        let dev = x.device();
        let xg = self
            .wx
            .forward(embed(&self.embed, x, c), c)
            .reshape([k, n, t, 4 * self.hidden]);
        let hs = match c
            .is_fp32()
            .then(|| kernels::lstm_layer(xg.clone(), self.wh.w.val()))
            .flatten()
        {
            Some(hs) => hs.reshape([k, n * t, self.hidden]),
            None => unroll([k, n, t, self.hidden], &dev, c, |i, h| {
                step_slice(&xg, i) + self.wh.forward(h, c)
            }),
        };
        c.to_f32(self.out.forward(hs, c))
    }
}

/// Runs an LSTM-style recurrence for `t` steps from a zero state: `gates(i, h)` gives the 4·H
/// pre-activations [K, N, 4H] at step i from the previous hidden state [K, N, H]. Returns the hidden
/// states [K, N·T, H] (row n·T + i of a member is example n at step i).
fn unroll<B: Backend>(
    [k, n, t, hidden]: [usize; 4],
    dev: &Device<B>,
    c: &Ctx,
    mut gates: impl FnMut(usize, Tensor<B, 3>) -> Tensor<B, 3>,
) -> Tensor<B, 3> {
    let mut h = c.cast(Tensor::<B, 3>::zeros([k, n, hidden], dev));
    let mut cell = h.clone();
    let mut hs = Vec::with_capacity(t);
    for i in 0..t {
        let (h2, c2) = lstm_cell(gates(i, h), cell, c);
        h = h2;
        cell = c2;
        hs.push(h.clone());
    }
    Tensor::stack::<4>(hs, 2).reshape([k, n * t, hidden])
}

/// Multiplicative LSTM: m = (W_mx·x) ⊙ (W_mh·h); gates = W_x·x + W_m·m + b.
#[derive(Module, Debug)]
pub struct Mlstm<B: Backend> {
    pub embed: Param<Tensor<B, 3>>,
    pub wmx: Proj<B>,
    pub wmh: Proj<B>,
    pub wx: Dense<B>,
    pub wm: Proj<B>,
    pub out: Dense<B>,
    pub hidden: usize,
}

impl<B: Backend> Mlstm<B> {
    pub fn new(rng: &mut StdRng, vocab: usize, e: usize, h: usize, device: &Device<B>) -> Self {
        Mlstm {
            embed: param(
                normal(rng, vocab * e, 1.0 / (e as f64).sqrt()),
                [1, vocab, e],
                device,
            ),
            wmx: Proj::new(rng, e, h, device),
            wmh: Proj::new(rng, h, h, device),
            wx: Dense::new(rng, e, 4 * h, device),
            wm: Proj::new(rng, h, 4 * h, device),
            out: Dense::new(rng, h, vocab, device),
            hidden: h,
        }
    }

    pub fn forward(&self, x: Tensor<B, 2, Int>, c: &Ctx) -> Tensor<B, 3> {
        let [rows, t] = x.dims();
        let k = self.embed.dims()[0];
        let n = rows / k;
        let dev = x.device();
        let e = embed(&self.embed, x, c);
        let xm = self
            .wmx
            .forward(e.clone(), c)
            .reshape([k, n, t, self.hidden]);
        let xg = self.wx.forward(e, c).reshape([k, n, t, 4 * self.hidden]);
        let hs = unroll([k, n, t, self.hidden], &dev, c, |i, h| {
            let m = step_slice(&xm, i) * self.wmh.forward(h, c);
            step_slice(&xg, i) + self.wm.forward(m, c)
        });
        c.to_f32(self.out.forward(hs, c))
    }
}

#[derive(Module, Debug)]
pub struct Block<B: Backend> {
    pub ln1: Norm<B>,
    pub qkv: Dense<B>,
    pub proj: Dense<B>,
    pub ln2: Norm<B>,
    pub ff1: Dense<B>,
    pub ff2: Dense<B>,
}

/// Pre-norm causal Transformer LM with learned positions.
#[derive(Module, Debug)]
pub struct TransformerLm<B: Backend> {
    pub tok: Param<Tensor<B, 3>>,
    pub pos: Param<Tensor<B, 3>>,
    pub blocks: Vec<Block<B>>,
    pub ln_f: Norm<B>,
    pub head: Dense<B>,
    pub heads: usize,
}

impl<B: Backend> TransformerLm<B> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        rng: &mut StdRng,
        vocab: usize,
        max_len: usize,
        d: usize,
        heads: usize,
        layers: usize,
        ff: usize,
        device: &Device<B>,
    ) -> Self {
        let blocks = (0..layers)
            .map(|_| Block {
                ln1: Norm::new(d, device),
                qkv: Dense::new(rng, d, 3 * d, device),
                proj: Dense::new(rng, d, d, device),
                ln2: Norm::new(d, device),
                ff1: Dense::new(rng, d, ff, device),
                ff2: Dense::new(rng, ff, d, device),
            })
            .collect();
        TransformerLm {
            tok: param(normal(rng, vocab * d, 0.02), [1, vocab, d], device),
            pos: param(normal(rng, max_len * d, 0.02), [1, max_len, d], device),
            blocks,
            ln_f: Norm::new(d, device),
            head: Dense::new(rng, d, vocab, device),
            heads,
        }
    }

    pub fn forward(&self, x: Tensor<B, 2, Int>, c: &Ctx) -> Tensor<B, 3> {
        c.to_f32(self.head.forward(self.hidden(x, c), c))
    }

    /// The final layer norm's output [K, N·T, d] (what the head reads): each position's state
    /// sees only the positions before it.
    pub fn hidden(&self, x: Tensor<B, 2, Int>, c: &Ctx) -> Tensor<B, 3> {
        let [rows, t] = x.dims();
        let dev = x.device();
        let [k, max_len, d] = self.pos.dims();
        let n = rows / k;
        assert!(t <= max_len, "sequence longer than the model's context");
        // member k's positions [T, d] added to each of its N sequences
        let pos = c.w(&self.pos).slice([0..k, 0..t, 0..d]).reshape([k, t * d]);
        let tokens = embed(&self.tok, x, c).reshape([k, n, t * d]);
        let mut hdn = per_member_add(tokens, pos).reshape([k, n * t, d]);
        let mask: Vec<bool> = (0..t * t).map(|i| (i % t) > (i / t)).collect();
        let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(mask, [t, t]), &dev)
            .unsqueeze::<4>()
            .expand([rows, self.heads, t, t]);
        let dh = d / self.heads;
        for b in &self.blocks {
            let a = b.qkv.forward(b.ln1.forward(hdn.clone(), c), c);
            let mut qkv = a.chunk(3, 2).into_iter();
            let split = |z: Tensor<B, 3>| z.reshape([rows, t, self.heads, dh]).swap_dims(1, 2);
            let q = split(qkv.next().unwrap());
            let kk = split(qkv.next().unwrap());
            let v = split(qkv.next().unwrap());
            let scores = c.to_f32(q.matmul(kk.swap_dims(2, 3))) / (dh as f64).sqrt();
            let att = activation::softmax(scores.mask_fill(mask.clone(), -1e9), 3);
            let y = c.cast(att).matmul(v).swap_dims(1, 2).reshape([k, n * t, d]);
            hdn = hdn + b.proj.forward(y, c);
            let f = activation::gelu(b.ff1.forward(b.ln2.forward(hdn.clone(), c), c));
            hdn = hdn + b.ff2.forward(f, c);
        }
        self.ln_f.forward(hdn, c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::{Autodiff, Flex};
    use rand::SeedableRng;

    type Ad = Autodiff<Flex>;

    fn vals<const D: usize>(t: Tensor<Flex, D>) -> Vec<f32> {
        t.into_data().to_vec::<f32>().unwrap()
    }

    /// The CPU's LSTM cell equals the generic ops in values and in the gradients of the gate
    /// pre-activations and the previous cell state (saturated gates included).
    #[test]
    fn the_lstm_cell_kernel_matches_the_generic_ops() {
        let dev = Default::default();
        let mut rng = StdRng::seed_from_u64(5);
        for &(k, n, h) in &[(1, 3, 4), (3, 5, 16), (2, 1, 7)] {
            let g = super::super::layers::uniform(&mut rng, k * n * 4 * h, 6.0);
            let cp = super::super::layers::uniform(&mut rng, k * n * h, 2.0);
            let ph = super::super::layers::uniform(&mut rng, k * n * h, 1.0);
            let pc = super::super::layers::uniform(&mut rng, k * n * h, 1.0);
            let run = |fast: bool| {
                let gt =
                    Tensor::<Ad, 3>::from_data(TensorData::new(g.clone(), [k, n, 4 * h]), &dev)
                        .require_grad();
                let ct = Tensor::<Ad, 3>::from_data(TensorData::new(cp.clone(), [k, n, h]), &dev)
                    .require_grad();
                let (hh, cc) = if fast {
                    kernels::lstm_cell::<Ad>(gt.clone(), ct.clone()).expect("the CPU kernel")
                } else {
                    lstm_cell_ops(gt.clone(), ct.clone())
                };
                let probe_h =
                    Tensor::<Ad, 3>::from_data(TensorData::new(ph.clone(), [k, n, h]), &dev);
                let probe_c =
                    Tensor::<Ad, 3>::from_data(TensorData::new(pc.clone(), [k, n, h]), &dev);
                let loss = (hh.clone() * probe_h).sum() + (cc.clone() * probe_c).sum();
                let grads = loss.backward();
                (
                    vals(hh.inner()),
                    vals(cc.inner()),
                    vals(gt.grad(&grads).unwrap()),
                    vals(ct.grad(&grads).unwrap()),
                )
            };
            let a = run(true);
            let b = run(false);
            let close = |x: &[f32], y: &[f32], what: &str| {
                for (p, q) in x.iter().zip(y) {
                    assert!(
                        (p - q).abs() <= 2e-6 * (1.0 + q.abs()),
                        "{what}: {p} vs {q}"
                    );
                }
            };
            close(&a.0, &b.0, "h");
            close(&a.1, &b.1, "c");
            close(&a.2, &b.2, "d/dgates");
            close(&a.3, &b.3, "d/dc_prev");
        }
    }

    /// The CPU's whole-layer LSTM equals the step-by-step generic ops (each step's input slice
    /// plus h·W_h, the generic cell) in values and in the gradients of the input projections and
    /// W_h, per member.
    #[test]
    fn the_lstm_layer_kernel_matches_the_step_by_step_generic_ops() {
        let dev = Default::default();
        let mut rng = StdRng::seed_from_u64(9);
        // (2, 150, …): three tasks of at most 64 sequences per member, an uneven last one
        for &(k, n, t, h) in &[(1, 3, 5, 4), (3, 4, 7, 8), (2, 1, 1, 3), (2, 150, 3, 4)] {
            let xg = super::super::layers::uniform(&mut rng, k * n * t * 4 * h, 1.5);
            let wh = super::super::layers::uniform(&mut rng, k * h * 4 * h, 0.7);
            let probe = super::super::layers::uniform(&mut rng, k * n * t * h, 1.0);
            let run = |fast: bool| {
                let x =
                    Tensor::<Ad, 4>::from_data(TensorData::new(xg.clone(), [k, n, t, 4 * h]), &dev)
                        .require_grad();
                let w =
                    Tensor::<Ad, 3>::from_data(TensorData::new(wh.clone(), [k, h, 4 * h]), &dev)
                        .require_grad();
                let hs = if fast {
                    kernels::lstm_layer(x.clone(), w.clone()).expect("the CPU kernel")
                } else {
                    let mut hh = Tensor::<Ad, 3>::zeros([k, n, h], &dev);
                    let mut cc = hh.clone();
                    let mut out = Vec::new();
                    for i in 0..t {
                        let g = step_slice(&x, i) + hh.matmul(w.clone());
                        let (h2, c2) = lstm_cell_ops(g, cc);
                        hh = h2;
                        cc = c2;
                        out.push(hh.clone());
                    }
                    Tensor::stack::<4>(out, 2)
                };
                let p =
                    Tensor::<Ad, 4>::from_data(TensorData::new(probe.clone(), [k, n, t, h]), &dev);
                let g = (hs.clone() * p).sum().backward();
                (
                    vals(hs.inner()),
                    vals(x.grad(&g).unwrap()),
                    vals(w.grad(&g).unwrap()),
                )
            };
            let a = run(true);
            let b = run(false);
            for (what, x, y) in [
                ("h", &a.0, &b.0),
                ("d/dxg", &a.1, &b.1),
                ("d/dwh", &a.2, &b.2),
            ] {
                assert_eq!(x.len(), y.len());
                for (p, q) in x.iter().zip(y.iter()) {
                    assert!(
                        (p - q).abs() <= 1e-5 * (1.0 + q.abs()),
                        "{what} ({k},{n},{t},{h}): {p} vs {q}"
                    );
                }
            }
        }
    }
    /// The layer kernel's numbers do not depend on the threads or on the group: on 1 thread and on
    /// the default pool, and a member of a 2-member group against the same member alone, the
    /// hidden states and both gradients are bitwise equal (several tasks per member).
    #[test]
    fn the_lstm_layer_kernel_is_bitwise_the_same_on_any_threads_and_in_a_group() {
        let dev = Default::default();
        let mut rng = StdRng::seed_from_u64(21);
        let (n, t, h) = (150, 4, 8);
        let xg = super::super::layers::uniform(&mut rng, 2 * n * t * 4 * h, 1.5);
        let wh = super::super::layers::uniform(&mut rng, 2 * h * 4 * h, 0.7);
        let probe = super::super::layers::uniform(&mut rng, 2 * n * t * h, 1.0);
        let run = |k: usize| {
            let x = Tensor::<Ad, 4>::from_data(
                TensorData::new(xg[..k * n * t * 4 * h].to_vec(), [k, n, t, 4 * h]),
                &dev,
            )
            .require_grad();
            let w = Tensor::<Ad, 3>::from_data(
                TensorData::new(wh[..k * h * 4 * h].to_vec(), [k, h, 4 * h]),
                &dev,
            )
            .require_grad();
            let p = Tensor::<Ad, 4>::from_data(
                TensorData::new(probe[..k * n * t * h].to_vec(), [k, n, t, h]),
                &dev,
            );
            let hs = kernels::lstm_layer(x.clone(), w.clone()).expect("the CPU kernel");
            let g = (hs.clone() * p).sum().backward();
            (
                vals(hs.inner()),
                vals(x.grad(&g).unwrap()),
                vals(w.grad(&g).unwrap()),
            )
        };
        let alone = run(1);
        let one_thread = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| run(1));
        assert_eq!(alone, one_thread, "1 thread against the default pool");
        let both = run(2);
        let first = |v: &Vec<f32>| v[..v.len() / 2].to_vec();
        assert_eq!(alone.0, first(&both.0), "h");
        assert_eq!(alone.1, first(&both.1), "d/dxg");
        assert_eq!(alone.2, first(&both.2), "d/dwh");
    }
}
