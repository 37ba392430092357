//! Character-level language models: LSTM, multiplicative LSTM (Puri et al.), pre-norm causal Transformer.

use burn::module::{Module, Param};
use burn::tensor::backend::Backend;
use burn::tensor::module::embedding;
use burn::tensor::{activation, Bool, Device, Int, Tensor, TensorData};
use rand::rngs::StdRng;

use super::layers::{normal, param, Ctx, Dense, Norm, Proj};

fn embed<B: Backend>(table: &Param<Tensor<B, 2>>, x: Tensor<B, 2, Int>, c: &Ctx) -> Tensor<B, 3> {
    embedding(c.w(table), x)
}

fn step_slice<B: Backend>(t: &Tensor<B, 3>, i: usize) -> Tensor<B, 2> {
    let [b, _, d] = t.dims();
    t.clone().slice([0..b, i..i + 1, 0..d]).reshape([b, d])
}

fn lstm_cell<B: Backend>(
    gates: Tensor<B, 2>,
    c_prev: Tensor<B, 2>,
) -> (Tensor<B, 2>, Tensor<B, 2>) {
    let mut g = gates.chunk(4, 1).into_iter();
    let i = activation::sigmoid(g.next().unwrap());
    let f = activation::sigmoid(g.next().unwrap());
    let o = activation::sigmoid(g.next().unwrap());
    let u = g.next().unwrap().tanh();
    let c = f * c_prev + i * u;
    let h = o * c.clone().tanh();
    (h, c)
}

#[derive(Module, Debug)]
pub struct CharLstm<B: Backend> {
    pub embed: Param<Tensor<B, 2>>,
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
                [vocab, e],
                device,
            ),
            wx: Dense::new(rng, e, 4 * h, device),
            wh: Proj::new(rng, h, 4 * h, device),
            out: Dense::new(rng, h, vocab, device),
            hidden: h,
        }
    }

    /// Logits [N, T, vocab] in fp32.
    pub fn forward(&self, x: Tensor<B, 2, Int>, c: &Ctx) -> Tensor<B, 3> {
        let [n, t] = x.dims();
        let dev = x.device();
        let xg = self.wx.forward3(embed(&self.embed, x, c), c);
        let hs = unroll([n, t, self.hidden], &dev, c, |i, h| {
            step_slice(&xg, i) + self.wh.forward2(h, c)
        });
        c.to_f32(self.out.forward3(hs, c))
    }
}

/// Runs an LSTM-style recurrence for `t` steps from a zero state: `gates(i, h)` gives the 4·H
/// pre-activations at step i from the previous hidden state. Returns the hidden states [N, T, H].
fn unroll<B: Backend>(
    [n, t, hidden]: [usize; 3],
    dev: &Device<B>,
    c: &Ctx,
    mut gates: impl FnMut(usize, Tensor<B, 2>) -> Tensor<B, 2>,
) -> Tensor<B, 3> {
    let mut h = c.cast(Tensor::<B, 2>::zeros([n, hidden], dev));
    let mut cell = h.clone();
    let mut hs = Vec::with_capacity(t);
    for i in 0..t {
        let (h2, c2) = lstm_cell(gates(i, h), cell);
        h = h2;
        cell = c2;
        hs.push(h.clone());
    }
    Tensor::stack::<3>(hs, 1)
}

/// Multiplicative LSTM: m = (W_mx·x) ⊙ (W_mh·h); gates = W_x·x + W_m·m + b.
#[derive(Module, Debug)]
pub struct Mlstm<B: Backend> {
    pub embed: Param<Tensor<B, 2>>,
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
                [vocab, e],
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
        let [n, t] = x.dims();
        let dev = x.device();
        let e = embed(&self.embed, x, c);
        let [_, _, ed] = e.dims();
        let xm = c.w(&self.wmx.w);
        let xm = e
            .clone()
            .reshape([n * t, ed])
            .matmul(xm)
            .reshape([n, t, self.hidden]);
        let xg = self.wx.forward3(e, c);
        let hs = unroll([n, t, self.hidden], &dev, c, |i, h| {
            let m = step_slice(&xm, i) * self.wmh.forward2(h, c);
            step_slice(&xg, i) + self.wm.forward2(m, c)
        });
        c.to_f32(self.out.forward3(hs, c))
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
    pub tok: Param<Tensor<B, 2>>,
    pub pos: Param<Tensor<B, 2>>,
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
            tok: param(normal(rng, vocab * d, 0.02), [vocab, d], device),
            pos: param(normal(rng, max_len * d, 0.02), [max_len, d], device),
            blocks,
            ln_f: Norm::new(d, device),
            head: Dense::new(rng, d, vocab, device),
            heads,
        }
    }

    pub fn forward(&self, x: Tensor<B, 2, Int>, c: &Ctx) -> Tensor<B, 3> {
        let [n, t] = x.dims();
        let dev = x.device();
        let [max_len, d] = self.pos.dims();
        assert!(t <= max_len, "sequence longer than the model's context");
        let pos = c.w(&self.pos).slice([0..t, 0..d]).unsqueeze::<3>();
        let mut hdn = embed(&self.tok, x, c) + pos;
        let mask: Vec<bool> = (0..t * t).map(|k| (k % t) > (k / t)).collect();
        let mask = Tensor::<B, 2, Bool>::from_data(TensorData::new(mask, [t, t]), &dev)
            .unsqueeze::<4>()
            .expand([n, self.heads, t, t]);
        let dh = d / self.heads;
        for b in &self.blocks {
            let a = b.qkv.forward3(b.ln1.forward(hdn.clone(), c), c);
            let mut qkv = a.chunk(3, 2).into_iter();
            let split = |z: Tensor<B, 3>| z.reshape([n, t, self.heads, dh]).swap_dims(1, 2);
            let q = split(qkv.next().unwrap());
            let k = split(qkv.next().unwrap());
            let v = split(qkv.next().unwrap());
            let scores = c.to_f32(q.matmul(k.swap_dims(2, 3))) / (dh as f64).sqrt();
            let att = activation::softmax(scores.mask_fill(mask.clone(), -1e9), 3);
            let y = c.cast(att).matmul(v).swap_dims(1, 2).reshape([n, t, d]);
            hdn = hdn + b.proj.forward3(y, c);
            let f = activation::gelu(b.ff1.forward3(b.ln2.forward(hdn.clone(), c), c));
            hdn = hdn + b.ff2.forward3(f, c);
        }
        c.to_f32(self.head.forward3(self.ln_f.forward(hdn, c), c))
    }
}
