//! The MLP family: a fully connected ReLU network on the flattened image.

use burn::module::{Module, ParamId};
use burn::tensor::backend::Backend;
use burn::tensor::{activation, Tensor};
use serde::{Deserialize, Serialize};

use super::encoder::Encoder;
use super::family::{Family, Forward, Input, ModelSpec, Network, Registration};
use super::knob::{self, Knob};
use super::layers::{Ctx, Dense, Init};
use super::{kernels, Batch, InputShape};

pub static FAMILY: Registration = Registration {
    kind: "mlp",
    label: "MLP (fully connected, ReLU)",
    input: Input::Images,
    default: || hidden(vec![64]),
    fits: |_| Ok(()),
    tiny: || (hidden(vec![16, 8]), InputShape::images(1, 8, 8, 5)),
};

/// An MLP of these hidden widths: one hidden layer of 64 is a 2-core study's default (the
/// `digits-mlp-*` presets' model); `bench` times 784-256-10, the JAX peer's step.
pub fn hidden(widths: Vec<usize>) -> ModelSpec {
    ModelSpec::Mlp(MlpSpec { hidden: widths })
}

/// `kind = "mlp"`: the hidden layers' widths (none: a linear classifier).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MlpSpec {
    pub hidden: Vec<usize>,
}

impl Family for MlpSpec {
    fn registration(&self) -> &'static Registration {
        &FAMILY
    }
    fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.hidden.contains(&0) {
            out.push(("hidden", "hidden layer widths must be > 0".into()));
        }
        out
    }
    fn label(&self) -> String {
        format!(
            "mlp {}",
            self.hidden
                .iter()
                .map(|h| h.to_string())
                .collect::<Vec<_>>()
                .join("-")
        )
    }
    fn size_key(&self) -> &'static str {
        "hidden"
    }
    fn knobs(&self) -> Vec<Knob> {
        vec![Knob::new(
            "hidden",
            "the hidden layers' widths, first to last (none: a linear classifier)",
            knob::counts_text(&self.hidden),
        )]
    }
    fn set_knob(&mut self, key: &str, text: &str) -> Result<(), String> {
        match key {
            "hidden" => self.hidden = knob::counts(key, text)?,
            _ => return Err(knob::unknown(FAMILY.kind, key, &self.knobs())),
        }
        Ok(())
    }
    fn peer_model(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({ "kind": "mlp", "hidden": self.hidden }))
    }
}

impl MlpSpec {
    pub fn build<B: Backend>(
        &self,
        init: &mut Init<'_, B>,
        shape: InputShape,
    ) -> anyhow::Result<Mlp<B>> {
        let mut dims = vec![shape.channels * shape.height * shape.width];
        dims.extend(self.hidden.iter().copied());
        dims.push(shape.classes);
        let layers = dims
            .windows(2)
            .map(|w| Dense::init(init, w[0], w[1]))
            .collect();
        Ok(Mlp { layers })
    }
}

#[derive(Module, Debug)]
pub struct Mlp<B: Backend> {
    pub layers: Vec<Dense<B>>,
}

impl<B: Backend> Mlp<B> {
    /// x: [K·N, C, H, W] → logits [K, N, classes].
    pub fn forward(&self, x: Tensor<B, 4>, c: &Ctx) -> Tensor<B, 3> {
        let k = self.layers[0].w.dims()[0];
        let [kn, ch, h, w] = x.dims();
        let mut y = c.cast(x.reshape([k, kn / k, ch * h * w]));
        let last = self.layers.len() - 1;
        for (i, l) in self.layers.iter().enumerate() {
            y = l.forward(y, c);
            if i < last {
                y = activation::relu(y);
            }
        }
        c.to_f32(y)
    }
}

impl<B: Backend> Network<B> for Mlp<B> {
    fn forward(&self, batch: &Batch<B>, c: &Ctx) -> Forward<B> {
        let (x, y) = batch.images();
        Forward::plain(
            Mlp::forward(self, x.clone(), c),
            y.clone(),
            self.layers[0].w.dims()[0],
        )
    }

    fn flops(&self, _shape: InputShape) -> f64 {
        self.layers.iter().map(|l| l.flops(1)).sum()
    }

    fn untrained(&self) -> Vec<ParamId> {
        Vec::new()
    }

    fn encoder(&self) -> Option<&dyn Encoder<B>> {
        None
    }

    /// The MLP on the CPU in fp32: its evaluation takes one copy of the validation rows, not one
    /// per member (`kernels::mlp_correct`).
    fn shares_eval_rows(&self, c: &Ctx) -> bool {
        c.is_fp32() && kernels::serves_inference::<B>()
    }

    fn correct_shared(&self, batch: &Batch<B>, c: &Ctx) -> Option<Tensor<B, 1>> {
        let Batch::Images { x, y } = batch else {
            return None;
        };
        if !c.is_fp32() {
            return None;
        }
        let [n, ch, h, w] = x.dims();
        let x = x.clone().reshape([n, ch * h * w]);
        let layers = self.layers.iter().map(|l| (l.w.val(), l.b.val())).collect();
        let labels: Vec<i64> = y.clone().into_data().iter::<i64>().collect();
        kernels::mlp_correct(x, layers, &labels)
    }
}
