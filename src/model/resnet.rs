//! The ResNet family: the CIFAR-style residual network of He et al. (2016, §4.2), which Shallue et
//! al. (2019) train as "ResNet-8" on CIFAR-10. A 3×3 convolution of w channels, three stages of n
//! basic blocks (conv3×3 → BN → ReLU → conv3×3 → BN, plus the shortcut, → ReLU) at widths w, 2w,
//! 4w, stride 2 at the first block of stages 2 and 3, global average pooling and a dense layer:
//! 6n + 2 layers with weights (ResNet-8: n = 1; ResNet-20: n = 3; w = 16 in the paper).
//!
//! Shortcuts are He et al.'s option A, as in their CIFAR networks: the identity, and where a stage
//! halves the resolution and doubles the width, the input subsampled (every second row and
//! column) with zero channels appended — no parameters. Every convolution is followed by batch
//! normalisation (`conv_bn`: ghost or plain, as the preset states), so convolutions have no bias.

use burn::module::{Module, ParamId};
use burn::tensor::backend::Backend;
use burn::tensor::{activation, Int, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use super::conv_bn::{BatchNorm, BnMode, Conv};
use super::encoder::Encoder;
use super::family::{Family, Forward, Input, ModelSpec, Network, Registration, StatUpdate};
use super::knob::{self, Knob};
use super::layers::{Ctx, Dense, Init};
use super::{Batch, InputShape};

pub static FAMILY: Registration = Registration {
    kind: "resnet",
    label: "ResNet (He et al.'s CIFAR ResNet, batch norm)",
    input: Input::Images,
    default: small,
    fits: |_| Ok(()),
    tiny: || {
        let spec = ResNetSpec {
            depth: 8,
            width: 3,
            batch_norm: BnMode::Ghost,
            ghost_batch: Some(2),
        };
        (ModelSpec::Resnet(spec), InputShape::images(1, 8, 8, 5))
    },
};

/// Examples per ghost batch a spec switched to ghost batch normalisation starts with.
pub const DEFAULT_GHOST_BATCH: usize = 16;

/// ResNet-8 of width 4 with ghost batch normalisation over 16 examples (the
/// `mnist-resnet-momentum` preset's model on 14×14 images): a 2-core study's default and
/// `bench`'s fused ResNet step.
pub fn small() -> ModelSpec {
    ModelSpec::Resnet(ResNetSpec {
        depth: 8,
        width: 4,
        batch_norm: BnMode::Ghost,
        ghost_batch: Some(DEFAULT_GHOST_BATCH),
    })
}

/// Most blocks per stage a preset may ask for (ResNet-6002; each block is built).
pub const MAX_BLOCKS: usize = 1000;

/// `kind = "resnet"`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ResNetSpec {
    /// Layers with weights, 6n + 2 (8, 14, 20, 32, 44, 56, 110).
    pub depth: usize,
    /// Channels of the first stage (the others have 2w and 4w); 16 in the paper.
    pub width: usize,
    /// `"ghost"` (statistics over fixed-size ghost batches: the same normalisation at every batch
    /// size) or `"batch"` (over each worker's whole batch of a member). Required: the readout of a
    /// scaling study depends on it.
    pub batch_norm: BnMode,
    /// Examples per ghost batch (with `batch_norm = "ghost"` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ghost_batch: Option<usize>,
}

impl ResNetSpec {
    /// Blocks per stage (n of 6n + 2), when the depth is of that form.
    pub fn blocks_per_stage(&self) -> Option<usize> {
        (self.depth >= 8 && (self.depth - 2).is_multiple_of(6)).then(|| (self.depth - 2) / 6)
    }

    /// Examples per ghost batch; 0 = the whole batch (plain BN).
    pub fn ghost(&self) -> usize {
        match self.batch_norm {
            BnMode::Ghost => self.ghost_batch.unwrap_or(0),
            BnMode::Batch => 0,
        }
    }

    pub fn build<B: Backend>(
        &self,
        init: &mut Init<'_, B>,
        shape: InputShape,
    ) -> anyhow::Result<ResNet<B>> {
        let n = self
            .blocks_per_stage()
            .ok_or_else(|| anyhow::anyhow!("resnet depth {} is not 6n + 2", self.depth))?;
        let w = self.width;
        let stem = Conv::init(init, shape.channels, w, 3, 1);
        let stem_bn = BatchNorm::init(init, w);
        let mut blocks = Vec::with_capacity(3 * n);
        let mut cin = w;
        for stage in 0..3 {
            let cout = w << stage;
            for i in 0..n {
                let stride = if stage > 0 && i == 0 { 2 } else { 1 };
                blocks.push(Basic {
                    conv1: Conv::init(init, cin, cout, 3, stride),
                    bn1: BatchNorm::init(init, cout),
                    conv2: Conv::init(init, cout, cout, 3, 1),
                    bn2: BatchNorm::init(init, cout),
                });
                cin = cout;
            }
        }
        let head = Dense::init(init, cin, shape.classes);
        Ok(ResNet {
            stem,
            stem_bn,
            blocks,
            head,
            ghost: self.ghost(),
        })
    }
}

impl Family for ResNetSpec {
    fn registration(&self) -> &'static Registration {
        &FAMILY
    }
    fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        match self.blocks_per_stage() {
            None => out.push((
                "depth",
                format!(
                    "depth {} is not 6n + 2 with n ≥ 1 (8, 14, 20, 32, 44, 56, 110: n basic blocks in each of 3 stages)",
                    self.depth
                ),
            )),
            Some(n) if n > MAX_BLOCKS => out.push((
                "depth",
                format!(
                    "depth {} is absurd (at most {})",
                    self.depth,
                    6 * MAX_BLOCKS + 2
                ),
            )),
            Some(_) => {}
        }
        if self.width == 0 {
            out.push(("width", "width must be > 0".into()));
        }
        match (self.batch_norm, self.ghost_batch) {
            (BnMode::Ghost, None) => out.push((
                "batch_norm",
                "batch_norm = \"ghost\" needs ghost_batch = V (the examples each ghost batch normalises over, e.g. 32)"
                    .into(),
            )),
            (BnMode::Ghost, Some(0)) => {
                out.push(("ghost_batch", "ghost_batch must be > 0".into()))
            }
            (BnMode::Batch, Some(_)) => out.push((
                "ghost_batch",
                "ghost_batch has no effect with batch_norm = \"batch\" (each worker's whole batch is normalised): remove it, or set batch_norm = \"ghost\""
                    .into(),
            )),
            _ => {}
        }
        out
    }
    fn label(&self) -> String {
        let bn = match self.batch_norm {
            BnMode::Ghost => format!("ghost {}", self.ghost_batch.unwrap_or(0)),
            BnMode::Batch => "bn".into(),
        };
        format!("resnet-{} w{} {bn}", self.depth, self.width)
    }
    fn size_key(&self) -> &'static str {
        "width"
    }
    fn knobs(&self) -> Vec<Knob> {
        vec![
            Knob::new(
                "depth",
                "layers with weights, 6n + 2 (8, 14, 20, 32, …: n blocks in each of 3 stages)",
                self.depth.to_string(),
            ),
            Knob::new(
                "width",
                "the first stage's channels (the others have twice and four times as many)",
                self.width.to_string(),
            ),
            Knob::new(
                "batch_norm",
                "ghost (statistics over ghost_batch examples: the same at every B) or batch",
                bn_name(self.batch_norm),
            ),
            Knob::new(
                "ghost_batch",
                "examples each ghost batch normalises (none with batch_norm = batch)",
                knob::optional_text(self.ghost_batch),
            ),
        ]
    }
    /// Switching `batch_norm` to `batch` drops `ghost_batch`; to `ghost`, starts it at
    /// [`DEFAULT_GHOST_BATCH`] when there is none.
    fn set_knob(&mut self, key: &str, text: &str) -> Result<(), String> {
        match key {
            "depth" => self.depth = knob::count(key, text)?,
            "width" => self.width = knob::count(key, text)?,
            "batch_norm" => {
                let names = BN_MODES.map(|(_, name)| name);
                self.batch_norm = BN_MODES[knob::choice(key, text, &names)?].0;
                self.ghost_batch = match self.batch_norm {
                    BnMode::Ghost => Some(self.ghost_batch.unwrap_or(DEFAULT_GHOST_BATCH)),
                    BnMode::Batch => None,
                };
            }
            "ghost_batch" => self.ghost_batch = knob::optional_count(key, text)?,
            _ => return Err(knob::unknown(FAMILY.kind, key, &self.knobs())),
        }
        Ok(())
    }
    fn batch_problem(&self, per_replica: usize) -> Option<String> {
        let v = self.ghost();
        (v > 0 && per_replica > v && !per_replica.is_multiple_of(v)).then(|| {
            format!(
                "each worker's {per_replica} examples are not a whole number of ghost batches of {v} \
                 (ghost batch normalisation normalises every {v} examples on their own): use a \
                 multiple of {v} per worker, or at most {v}"
            )
        })
    }
}

/// `batch_norm`'s modes and their TOML names.
const BN_MODES: [(BnMode, &str); 2] = [(BnMode::Ghost, "ghost"), (BnMode::Batch, "batch")];

fn bn_name(mode: BnMode) -> &'static str {
    match mode {
        BnMode::Ghost => "ghost",
        BnMode::Batch => "batch",
    }
}

/// A basic block: conv3×3 → BN → ReLU → conv3×3 → BN, plus the shortcut, → ReLU.
#[derive(Module, Debug)]
pub struct Basic<B: Backend> {
    pub conv1: Conv<B>,
    pub bn1: BatchNorm<B>,
    pub conv2: Conv<B>,
    pub bn2: BatchNorm<B>,
}

#[derive(Module, Debug)]
pub struct ResNet<B: Backend> {
    pub stem: Conv<B>,
    pub stem_bn: BatchNorm<B>,
    pub blocks: Vec<Basic<B>>,
    pub head: Dense<B>,
    /// Examples per ghost batch (0: each worker's whole batch).
    pub ghost: usize,
}

impl<B: Backend> Basic<B> {
    fn forward(
        &self,
        x: Tensor<B, 4>,
        ghost: usize,
        c: &Ctx,
        s: &mut Vec<StatUpdate<B>>,
    ) -> Tensor<B, 4> {
        let k = self.bn1.gamma.dims()[0];
        let y = activation::relu(
            self.bn1
                .forward(self.conv1.forward(x.clone(), c), ghost, c, s),
        );
        let y = self.bn2.forward(self.conv2.forward(y, c), ghost, c, s);
        activation::relu(y + shortcut(x, k, self.conv1.stride, self.bn2.gamma.dims()[1]))
    }
}

/// He et al.'s option A: the identity, or (stride 2, wider) every second row and column of each
/// member's channels with zero channels appended up to `cout`. x: [N, K·cin, H, W].
fn shortcut<B: Backend>(x: Tensor<B, 4>, k: usize, stride: usize, cout: usize) -> Tensor<B, 4> {
    let [n, kc, h, w] = x.dims();
    let cin = kc / k;
    if stride == 1 && cin == cout {
        return x;
    }
    let device = x.device();
    let pick = |len: usize| -> Tensor<B, 1, Int> {
        let idx: Vec<i64> = (0..len).step_by(stride).map(|i| i as i64).collect();
        let m = idx.len();
        Tensor::from_data(TensorData::new(idx, [m]), &device)
    };
    let (rows, cols) = (pick(h), pick(w));
    let (ho, wo) = (rows.dims()[0], cols.dims()[0]);
    let sub = x
        .select(2, rows)
        .select(3, cols)
        .reshape([n, k, cin, ho * wo]);
    let zeros = Tensor::zeros([n, k, cout - cin, ho * wo], &sub.device());
    Tensor::cat(vec![sub, zeros], 2).reshape([n, k * cout, ho, wo])
}

impl<B: Backend> ResNet<B> {
    /// Members (the leading axis of the head's weights).
    fn members(&self) -> usize {
        self.head.w.dims()[0]
    }

    /// x: [K·N, C, H, W] → logits [K, N, classes] and the running statistics a training forward
    /// moves.
    pub fn forward(&self, x: Tensor<B, 4>, c: &Ctx) -> (Tensor<B, 3>, Vec<StatUpdate<B>>) {
        let k = self.members();
        let [kn, ch, h, w] = x.dims();
        let n = kn / k;
        // member-major rows → members folded into the channels: [N, K·C, H, W]
        let x = if k == 1 {
            x
        } else {
            x.reshape([k, n, ch * h * w])
                .swap_dims(0, 1)
                .reshape([n, k * ch, h, w])
        };
        let mut stats = Vec::new();
        let s = &mut stats;
        let y = self.stem.forward(c.cast(x), c);
        let mut y = activation::relu(self.stem_bn.forward(y, self.ghost, c, s));
        for b in &self.blocks {
            y = b.forward(y, self.ghost, c, s);
        }
        // global average pooling → [K, N, C] → the dense head
        let [_, kc, ho, wo] = y.dims();
        let pooled = c
            .to_f32(y)
            .reshape([n, kc, ho * wo])
            .mean_dim(2)
            .reshape([n, k, kc / k])
            .swap_dims(0, 1);
        let logits = c.to_f32(self.head.forward(c.cast(pooled), c));
        (logits, stats)
    }
}

impl<B: Backend> Network<B> for ResNet<B> {
    fn forward(&self, batch: &Batch<B>, c: &Ctx) -> Forward<B> {
        let (x, y) = batch.images();
        let (logits, stats) = ResNet::forward(self, x.clone(), c);
        let mut f = Forward::plain(logits, y.clone(), self.members());
        f.stats = stats;
        f
    }

    /// Every convolution at its resolution and the head (normalisation, ReLU, the shortcuts and
    /// the pooling are not counted).
    fn flops(&self, shape: InputShape) -> f64 {
        let (mut f, (mut h, mut w)) = self.stem.flops(shape.height, shape.width);
        for b in &self.blocks {
            let (f1, hw) = b.conv1.flops(h, w);
            let (f2, hw) = b.conv2.flops(hw.0, hw.1);
            f += f1 + f2;
            (h, w) = hw;
        }
        f + self.head.flops(1)
    }

    /// Every batch normalisation's running averages.
    fn untrained(&self) -> Vec<ParamId> {
        std::iter::once(&self.stem_bn)
            .chain(self.blocks.iter().flat_map(|b| [&b.bn1, &b.bn2]))
            .flat_map(|bn| bn.running.ids())
            .collect()
    }

    fn encoder(&self) -> Option<&dyn Encoder<B>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::conv_bn::BnMode;
    use crate::model::family::tests::batch_of;
    use crate::model::family::ModelSpec;
    use crate::model::{select_members, Net};
    use burn::backend::{Autodiff, Flex};
    use burn::module::AutodiffModule;

    type Ad = Autodiff<Flex>;

    fn spec(mode: BnMode, ghost: Option<usize>) -> ModelSpec {
        ModelSpec::Resnet(ResNetSpec {
            depth: 8,
            width: 4,
            batch_norm: mode,
            ghost_batch: ghost,
        })
    }

    fn vals<const D: usize>(t: Tensor<Flex, D>) -> Vec<f32> {
        t.into_data().to_vec::<f32>().unwrap()
    }

    /// Every running statistic of a network, flattened, in the module's order.
    fn running(net: &Net<Ad>) -> Vec<Vec<f32>> {
        let Net::Resnet(r) = net else { unreachable!() };
        let mut bns = vec![&r.stem_bn];
        for b in &r.blocks {
            bns.push(&b.bn1);
            bns.push(&b.bn2);
        }
        bns.iter()
            .flat_map(|bn| [bn.running.mean.val(), bn.running.var.val()])
            .map(|t| vals(t.inner()))
            .collect()
    }

    /// A fused group's training forward moves each member's running statistics exactly as the
    /// member alone does (its own rows of every [K, C] statistic), `with_stats` puts them in,
    /// and selecting members carries them with the weights.
    #[test]
    fn each_member_keeps_its_own_running_statistics() {
        let dev = Default::default();
        let shape = InputShape::images(1, 7, 7, 5);
        let s = spec(BnMode::Ghost, Some(3));
        let seeds = [4u64, 9];
        let group = Net::<Ad>::init_group(&s, shape, &seeds, &dev).unwrap();
        let batch = batch_of(shape, 2, 6, 2);
        let (_, stats) = group.loss_and_stats(&batch, &Ctx::fp32());
        assert_eq!(stats.len(), 2 * 7, "7 batch norms × (mean, var)");
        let group = group.with_stats(stats, &[true, true]);
        let after = running(&group);
        for (k, &seed) in seeds.iter().enumerate() {
            let solo = Net::<Ad>::init(&s, shape, seed, &dev).unwrap();
            let (_, st) = solo.loss_and_stats(&batch.narrow(k * 6, 6), &Ctx::fp32());
            let solo = solo.with_stats(st, &[true]);
            for (g, s) in after.iter().zip(running(&solo)) {
                let c = s.len();
                let rows = &g[k * c..(k + 1) * c];
                for (a, b) in rows.iter().zip(&s) {
                    assert!(
                        (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
                        "member {k}: {a} vs {b}"
                    );
                }
            }
        }
        let kept = select_members(group, &[1]);
        let one = running(&kept);
        for (g, s) in after.iter().zip(&one) {
            assert_eq!(&g[s.len()..], &s[..], "member 1's rows after selection");
        }
    }

    /// A skipped step (`keep` false for a member) leaves that member's running statistics as
    /// they were, while the other member's move.
    #[test]
    fn a_skipped_member_keeps_its_running_statistics() {
        let dev = Default::default();
        let shape = InputShape::images(1, 6, 6, 3);
        let group =
            Net::<Ad>::init_group(&spec(BnMode::Batch, None), shape, &[1, 2], &dev).unwrap();
        let before = running(&group);
        let (_, stats) = group.loss_and_stats(&batch_of(shape, 2, 4, 0), &Ctx::fp32());
        let after = running(&group.with_stats(stats, &[false, true]));
        let mut moved = false;
        for (b, a) in before.iter().zip(&after) {
            let c = b.len() / 2;
            assert_eq!(&a[..c], &b[..c], "member 0 skipped");
            moved |= a[c..] != b[c..];
        }
        assert!(moved, "member 1's statistics moved");
    }

    /// Evaluation uses the running statistics: an example's logits do not depend on the other
    /// examples of its batch (in training they do: the batch's statistics normalise it), and
    /// they follow the statistics a training step put in.
    #[test]
    fn evaluation_uses_running_statistics_not_the_batch() {
        let dev = Default::default();
        let shape = InputShape::images(1, 5, 5, 4);
        let net = Net::<Ad>::init(&spec(BnMode::Ghost, Some(4)), shape, 3, &dev).unwrap();
        let (_, stats) = net.loss_and_stats(&batch_of(shape, 1, 8, 1), &Ctx::fp32());
        let net = net.with_stats(stats, &[true]);
        let a = batch_of(shape, 1, 4, 5);
        let b = batch_of(shape, 1, 4, 6);
        // example 0 of `a` alone, with a's other rows, and with b's rows
        let first = |batch: &Batch<Ad>| batch.narrow(0, 1);
        let cat = |x: &Batch<Ad>, y: &Batch<Ad>| {
            let ((x1, y1), (x2, y2)) = (x.images(), y.images());
            Batch::Images {
                x: Tensor::cat(vec![x1.clone(), x2.clone()], 0),
                y: Tensor::cat(vec![y1.clone(), y2.clone()], 0),
            }
        };
        let eval = net.valid();
        let row0 = |net: &Net<Flex>, batch: &Batch<Ad>| {
            let (x, y) = batch.images();
            let inner = Batch::Images {
                x: x.clone().inner(),
                y: y.clone().inner(),
            };
            vals(net.logits(&inner, &Ctx::fp32()).0.narrow(1, 0, 1))
        };
        let near = |x: &[f32], y: &[f32]| x.iter().zip(y).all(|(p, q)| (p - q).abs() <= 1e-5);
        let alone = row0(&eval, &first(&a));
        assert!(near(&alone, &row0(&eval, &a)));
        assert!(near(&alone, &row0(&eval, &cat(&first(&a), &b))));
        let train =
            |batch: &Batch<Ad>| vals(net.logits(batch, &Ctx::fp32()).0.narrow(1, 0, 1).inner());
        assert!(
            !near(&train(&a), &train(&cat(&first(&a), &b))),
            "training normalises by the batch"
        );
        // the fresh network's running statistics (0, 1) give other logits
        let fresh = Net::<Ad>::init(&spec(BnMode::Ghost, Some(4)), shape, 3, &dev)
            .unwrap()
            .valid();
        assert!(!near(&alone, &row0(&fresh, &first(&a))));
    }
}
