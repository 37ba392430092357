//! The char-LSTM family: a byte-level LSTM language model (embedding, one LSTM layer, a dense
//! readout over the vocabulary).

use burn::module::{Module, Param};
use burn::tensor::backend::Backend;
use burn::tensor::{Device, Int, Tensor};
use rand::rngs::StdRng;
use serde::{Deserialize, Serialize};

use super::family::{Family, Forward, Input, Network};
use super::kernels;
use super::layers::{embed, Ctx, Dense, Init, Proj};
use super::lm::{step_slice, unroll};
use super::{Batch, InputShape};

/// `kind = "char-lstm"`: embedding and hidden widths.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CharLstmSpec {
    pub embed: usize,
    pub hidden: usize,
}

/// The embedding and hidden widths of a recurrent LM must be > 0 (shared with `mlstm`).
pub(super) fn recurrent_problems(embed: usize, hidden: usize) -> Vec<(&'static str, String)> {
    [("embed", embed), ("hidden", hidden)]
        .into_iter()
        .filter(|(_, v)| *v == 0)
        .map(|(k, _)| (k, format!("{k} must be > 0")))
        .collect()
}

/// A recurrent LM family's [`Family`] facts and its `build`, the same for every spec of an
/// embedding and a hidden width (`kind`: the preset's name; `net`: the module it builds).
macro_rules! recurrent_family {
    ($spec:ident, $kind:literal, $net:ident) => {
        impl Family for $spec {
            fn kind(&self) -> &'static str {
                $kind
            }
            fn input(&self) -> Input {
                Input::Text
            }
            fn problems(&self) -> Vec<(&'static str, String)> {
                super::char_lstm::recurrent_problems(self.embed, self.hidden)
            }
            fn label(&self) -> String {
                format!(concat!($kind, " {}"), self.hidden)
            }
            fn size_key(&self) -> &'static str {
                "hidden"
            }
        }

        impl<B: Backend> $net<B> {
            /// One member drawn from `rng` (vocabulary, embedding and hidden widths).
            pub fn new(
                rng: &mut StdRng,
                vocab: usize,
                e: usize,
                h: usize,
                device: &Device<B>,
            ) -> Self {
                Self::init(&mut Init::new(rng, device), vocab, e, h)
            }
        }

        impl $spec {
            pub fn build<B: Backend>(
                &self,
                init: &mut Init<'_, B>,
                shape: InputShape,
            ) -> anyhow::Result<$net<B>> {
                Ok($net::init(init, shape.vocab, self.embed, self.hidden))
            }
        }
    };
}
pub(super) use recurrent_family;

recurrent_family!(CharLstmSpec, "char-lstm", CharLstm);

#[derive(Module, Debug)]
pub struct CharLstm<B: Backend> {
    pub embed: Param<Tensor<B, 3>>,
    pub wx: Dense<B>,
    pub wh: Proj<B>,
    pub out: Dense<B>,
    pub hidden: usize,
}

impl<B: Backend> CharLstm<B> {
    /// One member from `init`: the embedding (Normal(0, 1/√e)), W_x, W_h, the readout.
    pub fn init(init: &mut Init<'_, B>, vocab: usize, e: usize, h: usize) -> Self {
        CharLstm {
            embed: init.normal([1, vocab, e], 1.0 / (e as f64).sqrt()),
            wx: Dense::init(init, e, 4 * h),
            wh: Proj::init(init, h, 4 * h),
            out: Dense::init(init, h, vocab),
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

impl<B: Backend> Network<B> for CharLstm<B> {
    fn forward(&self, batch: &Batch<B>, c: &Ctx) -> Forward<B> {
        Forward::of_text(batch, self.embed.dims()[0], |x| {
            CharLstm::forward(self, x, c)
        })
    }

    /// One sequence of `seq_len` bytes: the input projection, the recurrence and the readout at
    /// every step.
    fn flops(&self, shape: InputShape) -> f64 {
        let t = shape.seq_len;
        self.wx.flops(t) + self.wh.flops(t) + self.out.flops(t)
    }
}
