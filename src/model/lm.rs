//! What the recurrent language-model families (`char_lstm`, `mlstm`) share: the LSTM cell, its
//! unrolling over time, the same recurrence read for a transfer probe's features (`cells`), and
//! the problems of their two widths. Every tensor has the leading member axis ([K, …]); the input ids are
//! [K·N, T] (member-major rows) and the logits [K, N·T, vocab].

use burn::tensor::backend::Backend;
use burn::tensor::{activation, Bool, Device, Tensor, TensorData};

use super::encoder::{Rows, TransferFeature};
use super::kernels;
use super::knob::{self, Knob};
use super::layers::Ctx;
use super::InputShape;

/// The input the language models' smallest specs are built for: 11 symbols, windows of 6.
pub(super) fn tiny_text() -> InputShape {
    InputShape {
        channels: 0,
        height: 0,
        width: 0,
        classes: 11,
        vocab: 11,
        seq_len: 6,
    }
}

/// The embedding and hidden widths of a recurrent LM must be > 0.
pub(super) fn width_problems(embed: usize, hidden: usize) -> Vec<(&'static str, String)> {
    [("embed", embed), ("hidden", hidden)]
        .into_iter()
        .filter(|(_, v)| *v == 0)
        .map(|(k, _)| (k, format!("{k} must be > 0")))
        .collect()
}

/// A recurrent LM's two knobs.
pub(super) fn width_knobs(embed: usize, hidden: usize) -> Vec<Knob> {
    vec![
        Knob::new("embed", "the byte embedding's width", embed.to_string()),
        Knob::new(
            "hidden",
            "the recurrent state's width (the probe's feature width)",
            hidden.to_string(),
        ),
    ]
}

/// Sets one of a recurrent LM's two knobs.
pub(super) fn set_width(
    key: &str,
    text: &str,
    embed: &mut usize,
    hidden: &mut usize,
) -> Result<(), String> {
    match key {
        "embed" => *embed = knob::count(key, text)?,
        "hidden" => *hidden = knob::count(key, text)?,
        _ => return Err(format!("no knob `{key}` (embed, hidden)")),
    }
    Ok(())
}

/// Step i of a sequence [K, N, T, d] → [K, N, d].
pub(super) fn step_slice<B: Backend>(t: &Tensor<B, 4>, i: usize) -> Tensor<B, 3> {
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

/// Runs an LSTM-style recurrence for `t` steps from a zero state: `gates(i, h)` gives the 4·H
/// pre-activations [K, N, 4H] at step i from the previous hidden state [K, N, H]. Returns the hidden
/// states [K, N·T, H] (row n·T + i of a member is example n at step i).
pub(super) fn unroll<B: Backend>(
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

/// The recurrence of an LSTM cell over `t` steps from zero states, the feature picked at each
/// sentence's last byte: `gates(i, h)` gives step i's gate pre-activations from h_{i−1}.
pub(super) fn cells<B: Backend>(
    r: &Rows<'_, B>,
    [k, n, t, hd]: [usize; 4],
    gates: impl Fn(usize, Tensor<B, 3>) -> Tensor<B, 3>,
) -> Tensor<B, 3> {
    let mut h = Tensor::<B, 3>::zeros([k, n, hd], r.device);
    let mut cell = h.clone();
    let mut pick = Pick::new(r.feature, r.lens, [k, n, hd], r.device);
    for i in 0..t {
        let (h2, c2) = lstm_cell(gates(i, h), cell, &r.c);
        h = h2;
        cell = c2;
        pick.step(i, &h, &cell);
    }
    pick.finish()
}

/// What a recurrence keeps of its states: the state at each row's last byte, or the sum of h over
/// its bytes.
struct Pick<B: Backend> {
    feature: TransferFeature,
    lens: Vec<usize>,
    acc: Tensor<B, 3>,
    device: Device<B>,
}

impl<B: Backend> Pick<B> {
    fn new(feature: TransferFeature, lens: &[usize], dims: [usize; 3], device: &Device<B>) -> Self {
        Pick {
            feature,
            lens: lens.to_vec(),
            acc: Tensor::zeros(dims, device),
            device: device.clone(),
        }
    }

    /// Rows where `f(len)` holds, as a mask broadcast to [K, N, d].
    fn rows(&self, f: impl Fn(usize) -> bool) -> Tensor<B, 3, Bool> {
        let [k, n, d] = self.acc.dims();
        let m: Vec<bool> = self.lens.iter().map(|&l| f(l)).collect();
        Tensor::<B, 3, Bool>::from_data(TensorData::new(m, [1, n, 1]), &self.device)
            .expand([k, n, d])
    }

    /// Books step i's hidden and cell states.
    fn step(&mut self, i: usize, h: &Tensor<B, 3>, cell: &Tensor<B, 3>) {
        match self.feature {
            TransferFeature::Cell | TransferFeature::Hidden => {
                let last = self.rows(|l| l == i + 1);
                let s = if self.feature == TransferFeature::Cell {
                    cell
                } else {
                    h
                };
                self.acc = self.acc.clone().mask_where(last, s.clone());
            }
            TransferFeature::Mean => {
                let pad = self.rows(|l| l <= i);
                self.acc = self.acc.clone() + h.clone().mask_fill(pad, 0.0);
            }
        }
    }

    fn finish(self) -> Tensor<B, 3> {
        match self.feature {
            TransferFeature::Mean => {
                let n = self.lens.len();
                let inv: Vec<f32> = self.lens.iter().map(|&l| 1.0 / l as f32).collect();
                self.acc * Tensor::<B, 3>::from_data(TensorData::new(inv, [1, n, 1]), &self.device)
            }
            TransferFeature::Cell | TransferFeature::Hidden => self.acc,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::{Autodiff, Flex};
    use burn::tensor::TensorData;
    use rand::rngs::StdRng;
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
