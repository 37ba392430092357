//! The mLSTM family: a byte-level multiplicative LSTM language model (Krause et al.; Puri et al.):
//! m = (W_mx·x) ⊙ (W_mh·h); gates = W_x·x + W_m·m + b.

use burn::module::{Module, Param};
use burn::tensor::backend::Backend;
use burn::tensor::{Device, Int, Tensor};
use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};

use super::family::{Family, Forward, Input, Network};
use super::layers::{embed, Ctx, Dense, Init, Proj};
use super::lm::{step_slice, unroll};
use super::{Batch, InputShape};

/// `kind = "mlstm"`: embedding and hidden widths.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MlstmSpec {
    pub embed: usize,
    pub hidden: usize,
}

super::char_lstm::recurrent_family!(MlstmSpec, "mlstm", Mlstm);

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
    /// One member from `init`: the embedding (Normal(0, 1/√e)), W_mx, W_mh, W_x, W_m, the readout.
    pub fn init(init: &mut Init<'_, B>, vocab: usize, e: usize, h: usize) -> Self {
        Mlstm {
            embed: init.normal([1, vocab, e], 1.0 / (e as f64).sqrt()),
            wmx: Proj::init(init, e, h),
            wmh: Proj::init(init, h, h),
            wx: Dense::init(init, e, 4 * h),
            wm: Proj::init(init, h, 4 * h),
            out: Dense::init(init, h, vocab),
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

impl<B: Backend> Network<B> for Mlstm<B> {
    fn forward(&self, batch: &Batch<B>, c: &Ctx) -> Forward<B> {
        Forward::of_text(batch, self.embed.dims()[0], |x| Mlstm::forward(self, x, c))
    }

    /// One sequence of `seq_len` bytes: every projection at every step.
    fn flops(&self, shape: InputShape) -> f64 {
        let t = shape.seq_len;
        [&self.wmx, &self.wmh, &self.wm]
            .iter()
            .map(|p| p.flops(t))
            .sum::<f64>()
            + self.wx.flops(t)
            + self.out.flops(t)
    }
}
