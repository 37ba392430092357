//! The family registry against the networks themselves: parameter counts and FLOPs are taken
//! from the module a family builds, and must agree with the tensors a real build allocates and
//! with published figures.

use burn::backend::{Autodiff, Flex};
use burn::module::{ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Int, Tensor, TensorData};

use super::family::{Family, Input, ModelSpec};
use super::{char_lstm, cnn, mlp, mlstm, nqm, resnet, transformer, Batch, Ctx, InputShape, Net};

type Ad = Autodiff<Flex>;

/// One spec of every family (small), with the input shape it is built for.
pub(super) fn every_family() -> Vec<(ModelSpec, InputShape)> {
    let img = InputShape::images(1, 8, 8, 5);
    let txt = InputShape {
        channels: 0,
        height: 0,
        width: 0,
        classes: 11,
        vocab: 11,
        seq_len: 6,
    };
    let specs = vec![
        ModelSpec::Mlp(mlp::MlpSpec {
            hidden: vec![16, 8],
        }),
        ModelSpec::Cnn(cnn::CnnSpec {
            channels: [3, 4],
            dense: 6,
        }),
        ModelSpec::CharLstm(char_lstm::CharLstmSpec {
            embed: 5,
            hidden: 7,
        }),
        ModelSpec::Mlstm(mlstm::MlstmSpec {
            embed: 5,
            hidden: 6,
        }),
        ModelSpec::Transformer(transformer::TransformerSpec {
            d_model: 8,
            heads: 2,
            layers: 2,
            ff: 12,
        }),
        ModelSpec::Resnet(resnet::ResNetSpec {
            depth: 8,
            width: 3,
            batch_norm: super::conv_bn::BnMode::Ghost,
            ghost_batch: Some(2),
        }),
    ];
    specs
        .into_iter()
        .map(|s| {
            let shape = match s.family().input() {
                Input::Text => txt,
                _ => img,
            };
            (s, shape)
        })
        .collect()
}

/// A batch of `n` examples a member for `k` members, of the kind `shape` describes.
pub(super) fn batch_of(shape: InputShape, k: usize, n: usize, salt: usize) -> Batch<Ad> {
    let dev = Default::default();
    let f = |i: usize| (((i + salt * 131) * 37 % 101) as f32 / 50.0) - 1.0;
    let rows = k * n;
    if shape.vocab > 0 {
        let t = shape.seq_len;
        let x: Vec<i64> = (0..rows * t)
            .map(|i| ((i + salt) * 13 % shape.vocab) as i64)
            .collect();
        let y: Vec<i64> = (0..rows * t)
            .map(|i| ((i + salt) * 5 % shape.vocab) as i64)
            .collect();
        Batch::Text {
            x: Tensor::from_data(TensorData::new(x, [rows, t]), &dev),
            y: Tensor::from_data(TensorData::new(y, [rows, t]), &dev),
        }
    } else {
        let len = shape.channels * shape.height * shape.width;
        let x: Vec<f32> = (0..rows * len).map(f).collect();
        let y: Vec<i64> = (0..rows)
            .map(|i| ((i + salt) * 7 % shape.classes) as i64)
            .collect();
        Batch::Images {
            x: Tensor::from_data(
                TensorData::new(x, [rows, shape.channels, shape.height, shape.width]),
                &dev,
            ),
            y: Tensor::<Ad, 1, Int>::from_data(TensorData::new(y, [rows]), &dev),
        }
    }
}

/// Elements (per member) of the parameters that receive a gradient from the loss, and of those
/// that do not, on a really built group of `k` members.
fn elements_with_and_without_gradient(spec: &ModelSpec, shape: InputShape, k: usize) -> (f64, f64) {
    let dev = Default::default();
    let seeds: Vec<u64> = (0..k as u64).collect();
    let net = Net::<Ad>::init_group(spec, shape, &seeds, &dev).unwrap();
    let loss = net.loss(&batch_of(shape, k, 4, 1), &Ctx::fp32());
    let grads = GradientsParams::from_grads(loss.sum().backward(), &net);
    struct Split<'a> {
        grads: &'a GradientsParams,
        k: usize,
        with: f64,
        without: f64,
    }
    impl ModuleVisitor<Ad> for Split<'_> {
        fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<Ad, D>>) {
            let n = p.val().shape().num_elements() as f64 / self.k as f64;
            match self.grads.get::<Flex, D>(p.id) {
                Some(_) => self.with += n,
                None => self.without += n,
            }
        }
    }
    let mut v = Split {
        grads: &grads,
        k,
        with: 0.0,
        without: 0.0,
    };
    burn::module::Module::visit(&net, &mut v);
    (v.with, v.without)
}

/// The count a family's spec gives (lazy parameters: nothing allocated) equals the elements of
/// the parameters that a real build allocates and the loss trains, for every family, alone and
/// in a group; the ResNet's running statistics are allocated but neither counted nor trained.
#[test]
fn every_familys_parameter_count_is_its_trained_tensors_elements() {
    for (spec, shape) in every_family() {
        let counted = spec.param_count(shape).unwrap();
        for k in [1, 3] {
            let (trained, untrained) = elements_with_and_without_gradient(&spec, shape, k);
            assert_eq!(counted, trained, "{spec:?} K = {k}");
            let bn = matches!(spec, ModelSpec::Resnet(_));
            assert_eq!(untrained > 0.0, bn, "{spec:?}: state without gradient");
        }
        assert!(spec.forward_flops(shape).unwrap().unwrap() > 0.0);
    }
}

/// Published figures: He et al.'s ResNet-20 for CIFAR-10 (32×32×3, option A shortcuts) has
/// 0.27M parameters (269,722 counted exactly: the convolutions, 19 batch norms' γ and β, the
/// dense head) and 40.55M multiply-adds a forward pass; the LSTM gate weights are 4·(e + h + 1)·h
/// (not 8·…, as a hand-written formula once had it); the small CNN's products as written out.
#[test]
fn counts_match_published_and_hand_computed_figures() {
    let cifar = InputShape::images(3, 32, 32, 10);
    let r20 = ModelSpec::Resnet(resnet::ResNetSpec {
        depth: 20,
        width: 16,
        batch_norm: super::conv_bn::BnMode::Batch,
        ghost_batch: None,
    });
    assert_eq!(r20.param_count(cifar).unwrap(), 269_722.0);
    let macs = r20.forward_flops(cifar).unwrap().unwrap() / 2.0;
    assert!((macs / 40.55e6 - 1.0).abs() < 1e-3, "{macs}");
    let lstm = ModelSpec::CharLstm(char_lstm::CharLstmSpec {
        embed: 32,
        hidden: 64,
    });
    let text = InputShape {
        channels: 0,
        height: 0,
        width: 0,
        classes: 256,
        vocab: 256,
        seq_len: 32,
    };
    let (v, e, h) = (256.0, 32.0, 64.0);
    assert_eq!(
        lstm.param_count(text).unwrap(),
        v * e + 4.0 * (e + h + 1.0) * h + (h + 1.0) * v
    );
    let small_cnn = ModelSpec::Cnn(cnn::CnnSpec {
        channels: [8, 16],
        dense: 32,
    });
    let mnist14 = InputShape::images(1, 14, 14, 10);
    let want = 2.0 * (14 * 14 * 25 * 8 + 7 * 7 * 8 * 25 * 16 + 3 * 3 * 16 * 32 + 32 * 10) as f64;
    assert_eq!(small_cnn.forward_flops(mnist14).unwrap(), Some(want));
    assert_eq!(small_cnn.train_flops(mnist14).unwrap(), Some(3.0 * want));
    let nqm = ModelSpec::Nqm(nqm::NqmSpec::new(10));
    assert_eq!(nqm.forward_flops(mnist14).unwrap(), None);
    assert!(nqm
        .build::<Flex>(
            &mut super::layers::Init::new(
                &mut <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(0),
                &Default::default()
            ),
            mnist14
        )
        .is_err());
}

/// A paper-size spec is counted without allocating it (a lazy build): a 10⁹-parameter MLP.
#[test]
fn a_huge_spec_is_counted_without_allocating_it() {
    let spec = ModelSpec::Mlp(mlp::MlpSpec {
        hidden: vec![1_000_000, 1_000],
    });
    let n = spec.param_count(InputShape::images(1, 28, 28, 10)).unwrap();
    assert_eq!(
        n,
        (784.0 + 1.0) * 1e6 + (1e6 + 1.0) * 1e3 + (1e3 + 1.0) * 10.0
    );
}

/// Labels and kinds as Setup and the reports show them, and the serialised form a run log's
/// header keeps (unchanged by moving the spec into the families).
#[test]
fn labels_kinds_and_the_serialised_form() {
    let labels: Vec<(String, &str)> = every_family()
        .iter()
        .map(|(s, _)| (s.family().label(), s.family().kind()))
        .collect();
    assert_eq!(
        labels,
        vec![
            ("mlp 16-8".to_string(), "mlp"),
            ("cnn 3-4-6".to_string(), "cnn"),
            ("char-lstm 7".to_string(), "char-lstm"),
            ("mlstm 6".to_string(), "mlstm"),
            ("transformer 2×8".to_string(), "transformer"),
            ("resnet-8 w3 ghost 2".to_string(), "resnet"),
        ]
    );
    let json = serde_json::to_string(&every_family()[0].0).unwrap();
    assert_eq!(json, r#"{"kind":"mlp","hidden":[16,8]}"#);
    let r: ModelSpec = toml::from_str(
        "kind = \"resnet\"\ndepth = 8\nwidth = 16\nbatch_norm = \"ghost\"\nghost_batch = 32\n",
    )
    .unwrap();
    assert_eq!(r.family().label(), "resnet-8 w16 ghost 32");
    let unknown = toml::from_str::<ModelSpec>("kind = \"mlp\"\nhidden = [4]\ndepth = 8\n");
    assert!(unknown
        .unwrap_err()
        .to_string()
        .contains("unknown field `depth`"));
}

/// A ResNet spec's own problems: the depth's form, the ghost batch with its mode, and a batch a
/// worker cannot cut into whole ghost batches.
#[test]
fn resnet_spec_problems() {
    let spec = |depth, ghost: Option<usize>, mode| resnet::ResNetSpec {
        depth,
        width: 4,
        batch_norm: mode,
        ghost_batch: ghost,
    };
    use super::conv_bn::BnMode::{Batch as Plain, Ghost};
    let keys = |s: resnet::ResNetSpec| s.problems().into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    assert!(keys(spec(8, Some(16), Ghost)).is_empty());
    assert!(keys(spec(20, None, Plain)).is_empty());
    assert_eq!(keys(spec(9, Some(16), Ghost)), ["depth"]);
    assert_eq!(keys(spec(2, Some(16), Ghost)), ["depth"]);
    assert_eq!(keys(spec(6 * 5000 + 2, Some(16), Ghost)), ["depth"]);
    assert_eq!(keys(spec(8, None, Ghost)), ["batch_norm"]);
    assert_eq!(keys(spec(8, Some(0), Ghost)), ["ghost_batch"]);
    assert_eq!(keys(spec(8, Some(16), Plain)), ["ghost_batch"]);
    let g = spec(8, Some(16), Ghost);
    assert_eq!(g.batch_problem(8), None);
    assert_eq!(g.batch_problem(48), None);
    assert!(g.batch_problem(40).unwrap().contains("ghost batches of 16"));
    assert_eq!(spec(8, None, Plain).batch_problem(40), None);
}
