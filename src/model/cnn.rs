//! The CNN family: Shallue et al.'s simple CNN, conv5×5-relu-maxpool ×2, dense-relu, dense.

use burn::module::{Module, ParamId};
use burn::tensor::backend::Backend;
use burn::tensor::{activation, Tensor};
use serde::{Deserialize, Serialize};

use super::encoder::Encoder;
use super::family::{Family, Forward, Input, ModelSpec, Network, Registration};
use super::knob::{self, Knob};
use super::layers::{self, ConvPool, Ctx, Dense, Init};
use super::{Batch, InputShape};

pub static FAMILY: Registration = Registration {
    kind: "cnn",
    label: "CNN (Shallue et al.'s simple CNN)",
    input: Input::Images,
    default: small,
    fits: |shape| {
        if shape.height < 4 || shape.width < 4 {
            return Err(format!(
                "the CNN pools twice by 2: it needs images of at least 4×4, and these are {}×{}",
                shape.height, shape.width
            ));
        }
        Ok(())
    },
    tiny: || {
        let spec = CnnSpec {
            channels: [3, 4],
            dense: 6,
        };
        (ModelSpec::Cnn(spec), InputShape::images(1, 8, 8, 5))
    },
};

/// The small CNN, convolutions of 8 and 16 channels and a dense layer of 32 (the
/// `mnist-cnn-*` and `fashion-cnn-*` presets' model on 14×14 images): a 2-core study's default
/// and `bench`'s small-CNN step.
pub fn small() -> ModelSpec {
    ModelSpec::Cnn(CnnSpec {
        channels: [8, 16],
        dense: 32,
    })
}

/// Shallue et al.'s paper-size MNIST CNN: 5×5 convolutions of 32 and 64 channels, a dense layer
/// of 1024 (the `*-cnn-paper-*` presets' model; `bench`'s paper-CNN step).
pub fn paper() -> ModelSpec {
    ModelSpec::Cnn(CnnSpec {
        channels: [32, 64],
        dense: 1024,
    })
}

/// `kind = "cnn"`: the two convolutions' channels and the dense layer's width.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CnnSpec {
    pub channels: [usize; 2],
    pub dense: usize,
}

impl Family for CnnSpec {
    fn registration(&self) -> &'static Registration {
        &FAMILY
    }
    fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.channels.contains(&0) {
            out.push(("channels", "conv channels must be > 0".into()));
        }
        if self.dense == 0 {
            out.push(("dense", "dense width must be > 0".into()));
        }
        out
    }
    fn label(&self) -> String {
        format!(
            "cnn {}-{}-{}",
            self.channels[0], self.channels[1], self.dense
        )
    }
    fn size_key(&self) -> &'static str {
        "channels"
    }
    fn knobs(&self) -> Vec<Knob> {
        vec![
            Knob::new(
                "channels",
                "the two 5×5 convolutions' output channels",
                knob::counts_text(&self.channels),
            ),
            Knob::new(
                "dense",
                "the dense layer's width (before the readout)",
                self.dense.to_string(),
            ),
        ]
    }
    fn set_knob(&mut self, key: &str, text: &str) -> Result<(), String> {
        match key {
            "channels" => self.channels = knob::counts_exactly(key, text)?,
            "dense" => self.dense = knob::count(key, text)?,
            _ => return Err(knob::unknown(FAMILY.kind, key, &self.knobs())),
        }
        Ok(())
    }
    fn peer_model(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({
            "kind": "cnn",
            "channels": self.channels,
            "dense": self.dense,
        }))
    }
}

impl CnnSpec {
    pub fn build<B: Backend>(
        &self,
        init: &mut Init<'_, B>,
        shape: InputShape,
    ) -> anyhow::Result<Cnn<B>> {
        let conv1 = ConvPool::init(init, shape.channels, self.channels[0], 5);
        let conv2 = ConvPool::init(init, self.channels[0], self.channels[1], 5);
        let (h, w) = (shape.height / 4, shape.width / 4);
        anyhow::ensure!(h > 0 && w > 0, "the CNN needs images of at least 4×4");
        let fc = Dense::init(init, self.channels[1] * h * w, self.dense);
        let out = Dense::init(init, self.dense, shape.classes);
        Ok(Cnn {
            conv1,
            conv2,
            fc,
            out,
        })
    }
}

#[derive(Module, Debug)]
pub struct Cnn<B: Backend> {
    pub conv1: ConvPool<B>,
    pub conv2: ConvPool<B>,
    pub fc: Dense<B>,
    pub out: Dense<B>,
}

impl<B: Backend> Cnn<B> {
    /// x: [K·N, C, H, W] → logits [K, N, classes]; the convolutions run on NHWC activations (free
    /// for C = 1), and the dense layer reads the pooled features in (h, w, c) order.
    pub fn forward(&self, x: Tensor<B, 4>, c: &Ctx) -> Tensor<B, 3> {
        let k = self.fc.w.dims()[0];
        let x = if x.dims()[1] == 1 {
            let [kn, _, h, w] = x.dims();
            x.reshape([kn, h, w, 1])
        } else {
            x.permute([0, 2, 3, 1])
        };
        let y = self.conv1.forward(c.cast(x), c);
        let y = self.conv2.forward(y, c);
        let [kn, h, w, ch] = y.dims();
        let y = activation::relu(self.fc.forward(y.reshape([k, kn / k, h * w * ch]), c));
        c.to_f32(self.out.forward(y, c))
    }
}

impl<B: Backend> Network<B> for Cnn<B> {
    fn forward(&self, batch: &Batch<B>, c: &Ctx) -> Forward<B> {
        let (x, y) = batch.images();
        Forward::plain(
            Cnn::forward(self, x.clone(), c),
            y.clone(),
            self.fc.w.dims()[0],
        )
    }

    fn flops(&self, shape: InputShape) -> f64 {
        let (f1, (h, w)) = self.conv1.flops(shape.height, shape.width);
        let (f2, _) = self.conv2.flops(h, w);
        f1 + f2 + self.fc.flops(1) + self.out.flops(1)
    }

    fn untrained(&self) -> Vec<ParamId> {
        Vec::new()
    }

    fn encoder(&self) -> Option<&dyn Encoder<B>> {
        None
    }

    /// `benches/peers/small_cnn.py`'s names.
    fn peer_params(&self) -> Option<serde_json::Value> {
        use layers::member0_values as v;
        Some(serde_json::json!({
            "c1": v(&self.conv1.w), "b1": v(&self.conv1.b),
            "c2": v(&self.conv2.w), "b2": v(&self.conv2.b),
            "w3": v(&self.fc.w), "b3": v(&self.fc.b),
            "w4": v(&self.out.w), "b4": v(&self.out.b),
        }))
    }
}
