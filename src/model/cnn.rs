//! The CNN family: Shallue et al.'s simple CNN, conv5×5-relu-maxpool ×2, dense-relu, dense.

use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::{activation, Tensor};
use serde::{Deserialize, Serialize};

use super::family::{Family, Forward, Input, Network};
use super::layers::{ConvPool, Ctx, Dense, Init};
use super::{Batch, InputShape};

/// `kind = "cnn"`: the two convolutions' channels and the dense layer's width.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CnnSpec {
    pub channels: [usize; 2],
    pub dense: usize,
}

impl Family for CnnSpec {
    fn kind(&self) -> &'static str {
        "cnn"
    }
    fn input(&self) -> Input {
        Input::Images
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
}
