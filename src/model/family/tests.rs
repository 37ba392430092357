//! The family registry against the networks themselves: parameter counts and FLOPs are taken
//! from the module a family builds, and must agree with the tensors a real build allocates and
//! with published figures.

use std::collections::HashSet;

use burn::backend::autodiff::checkpoint::strategy::BalancedCheckpointing;
use burn::backend::{Autodiff, Flex};
use burn::module::{ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Int, Tensor, TensorData};

use super::{registration, Family, Input, ModelSpec, FAMILIES};
use crate::model::{char_lstm, cnn, mlp, nqm, resnet, Batch, Ctx, InputShape, Net};

type Ad = Autodiff<Flex>;

/// Every registered family with a network, at its smallest size, with the input shape it is
/// built for: what the suites below (and `model::tests`) iterate.
pub(crate) fn every_family() -> Vec<(ModelSpec, InputShape)> {
    FAMILIES
        .iter()
        .filter(|r| r.input != Input::None)
        .map(|r| r.tiny())
        .collect()
}

/// A batch of `n` examples a member for `k` members, of the kind `shape` describes.
pub(crate) fn batch_of(shape: InputShape, k: usize, n: usize, salt: usize) -> Batch<Ad> {
    batch_on::<Ad>(shape, k, n, salt)
}

/// [`batch_of`] on any backend.
fn batch_on<B: Backend>(shape: InputShape, k: usize, n: usize, salt: usize) -> Batch<B> {
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
            y: Tensor::<B, 1, Int>::from_data(TensorData::new(y, [rows]), &dev),
        }
    }
}

/// Elements (per member) of the parameters that receive a gradient from the loss, of those
/// that do not, and of those the network declares untrained, on a really built group of `k`
/// members.
fn elements_by_gradient(spec: &ModelSpec, shape: InputShape, k: usize) -> [f64; 3] {
    let dev = Default::default();
    let seeds: Vec<u64> = (0..k as u64).collect();
    let net = Net::<Ad>::init_group(spec, shape, &seeds, &dev).unwrap();
    let loss = net.loss(&batch_of(shape, k, 4, 1), &Ctx::fp32());
    let grads = GradientsParams::from_grads(loss.sum().backward(), &net);
    struct Split<'a> {
        grads: &'a GradientsParams,
        declared: HashSet<ParamId>,
        k: usize,
        sums: [f64; 3],
    }
    impl ModuleVisitor<Ad> for Split<'_> {
        fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<Ad, D>>) {
            let n = p.val().shape().num_elements() as f64 / self.k as f64;
            match self.grads.get::<Flex, D>(p.id) {
                Some(_) => self.sums[0] += n,
                None => self.sums[1] += n,
            }
            if self.declared.contains(&p.id) {
                self.sums[2] += n;
            }
        }
    }
    let mut v = Split {
        grads: &grads,
        declared: net.network().untrained().into_iter().collect(),
        k,
        sums: [0.0; 3],
    };
    burn::module::Module::visit(&net, &mut v);
    v.sums
}

/// The count a family's spec gives (lazy parameters: nothing allocated) equals the elements of
/// the parameters that a real build allocates and the loss trains, for every family, alone and
/// in a group; the state a family declares untrained (the ResNet's running statistics) is
/// exactly what is allocated without a gradient, and is not counted.
#[test]
fn every_familys_parameter_count_is_its_trained_tensors_elements() {
    let mut with_state = 0;
    for (spec, shape) in every_family() {
        let counted = spec.param_count(shape).unwrap();
        for k in [1, 3] {
            let [trained, without_gradient, declared] = elements_by_gradient(&spec, shape, k);
            assert_eq!(counted, trained, "{spec:?} K = {k}");
            assert_eq!(
                without_gradient, declared,
                "{spec:?}: the state without a gradient is the state declared untrained"
            );
            with_state += usize::from(declared > 0.0);
        }
        assert!(spec.forward_flops(shape).unwrap().unwrap() > 0.0);
    }
    assert!(
        with_state > 0,
        "a family with untrained state is among them"
    );
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
        batch_norm: crate::model::conv_bn::BnMode::Batch,
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
            &mut crate::model::layers::Init::new(
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
            ("resnet-8 w3 ghost 2".to_string(), "resnet"),
            ("char-lstm 7".to_string(), "char-lstm"),
            ("mlstm 6".to_string(), "mlstm"),
            ("transformer 2×8".to_string(), "transformer"),
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
    use crate::model::conv_bn::BnMode::{Batch as Plain, Ghost};
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

/// The kinds the preset reader accepts for `[workload.model]` (serde's list of `ModelSpec`'s
/// variants, from its error for an unknown one).
fn kinds_the_reader_accepts() -> Vec<String> {
    let e = toml::from_str::<ModelSpec>("kind = \"?\"")
        .unwrap_err()
        .to_string();
    let list = e
        .split("expected one of")
        .nth(1)
        .unwrap_or_else(|| panic!("serde's error names the variants: {e}"));
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The registry is the whole list: every kind a preset may name is registered (a family added
/// to `ModelSpec` but not to `FAMILIES` fails here), once, and each registration's specs are
/// its own family's (the spec's kind, its `Family::registration`, what it reads).
#[test]
fn the_registry_lists_every_family_once_and_each_spec_points_back_to_it() {
    let mut kinds: Vec<String> = FAMILIES.iter().map(|r| r.kind.to_string()).collect();
    let mut accepted = kinds_the_reader_accepts();
    assert!(accepted.len() >= 7, "{accepted:?}");
    kinds.sort();
    accepted.sort();
    assert_eq!(kinds, accepted);
    let labels: HashSet<&str> = FAMILIES.iter().map(|r| r.label).collect();
    assert_eq!(labels.len(), FAMILIES.len(), "labels are distinct");
    for r in FAMILIES {
        assert!(std::ptr::eq(registration(r.kind).unwrap(), *r));
        let (tiny, shape) = r.tiny();
        let default = r.default_for(r.input, &shape).unwrap();
        for spec in [&tiny, &default] {
            assert!(std::ptr::eq(spec.family().registration(), *r), "{spec:?}");
            assert_eq!(spec.short_name(), r.kind);
            assert_eq!(spec.family().input(), r.input);
            let json = serde_json::to_value(spec).unwrap();
            assert_eq!(json["kind"], r.kind, "the serialised kind");
            assert!(spec.family().problems().is_empty(), "{spec:?}");
        }
    }
    let e = registration("vgg").map(|_| ()).unwrap_err();
    assert!(e.contains("no model `vgg`") && e.contains("resnet"), "{e}");
}

/// A family's default for a dataset: its preset-sized spec where the data suits it, and one line
/// saying why where it does not (a language model on images, an image model on text, data for
/// the closed-form model, images too small for the CNN's pooling).
#[test]
fn defaults_for_data_that_suits_the_family_and_why_not_for_data_that_does_not() {
    let mnist14 = InputShape::images(1, 14, 14, 10);
    let text = InputShape {
        channels: 0,
        height: 0,
        width: 0,
        classes: 256,
        vocab: 256,
        seq_len: 32,
    };
    let of = |kind: &str, data: Input, shape: &InputShape| {
        registration(kind).unwrap().default_for(data, shape)
    };
    assert_eq!(of("cnn", Input::Images, &mnist14), Ok(cnn::small()));
    assert_eq!(of("resnet", Input::Images, &mnist14), Ok(resnet::small()));
    assert_eq!(
        of("mlp", Input::Images, &mnist14),
        Ok(mlp::hidden(vec![64]))
    );
    assert_eq!(of("char-lstm", Input::Text, &text), Ok(char_lstm::small()));
    assert_eq!(
        of("nqm", Input::None, &mnist14),
        Ok(ModelSpec::Nqm(nqm::NqmSpec::new(1000)))
    );
    assert_eq!(
        of("char-lstm", Input::Images, &mnist14),
        Err("model `char-lstm` reads text, and this dataset holds images".into())
    );
    assert_eq!(
        of("resnet", Input::Text, &text),
        Err("model `resnet` reads images, and this dataset holds text".into())
    );
    assert!(of("nqm", Input::Images, &mnist14)
        .unwrap_err()
        .contains("reads no dataset"));
    assert_eq!(
        of("mlp", Input::None, &mnist14),
        Err("model `mlp` reads images: choose a dataset of images".into())
    );
    let tiny = InputShape::images(1, 3, 3, 10);
    assert!(of("cnn", Input::Images, &tiny)
        .unwrap_err()
        .contains("at least 4×4, and these are 3×3"));
    // every family's default on data of its kind is buildable and counted
    for r in FAMILIES.iter().filter(|r| r.input != Input::None) {
        let shape = if r.input == Input::Text {
            text
        } else {
            mnist14
        };
        let spec = r.default_for(r.input, &shape).unwrap();
        assert!(spec.param_count(shape).unwrap() > 0.0, "{}", r.kind);
    }
}

/// The knobs of every registered family: they are exactly the fields of its TOML table, each
/// value's text reads back to the same spec, bad text and values the family's checks refuse are
/// one-line errors that leave the spec as it was, and knob by knob the smallest spec becomes
/// the default one (the knobs reach every field).
#[test]
fn every_familys_knobs_are_its_fields_read_back_checked_and_reach_its_default() {
    for r in FAMILIES {
        let (tiny, shape) = r.tiny();
        let default = r.default_for(r.input, &shape).unwrap();
        let kind = r.kind;
        for spec in [&tiny, &default] {
            let table = toml::Value::try_from(spec).unwrap();
            let mut fields: Vec<&str> = table
                .as_table()
                .unwrap()
                .keys()
                .map(String::as_str)
                .filter(|k| *k != "kind")
                .collect();
            let knobs = spec.knobs();
            let mut keys: Vec<&str> = knobs.iter().map(|k| k.key).collect();
            fields.sort_unstable();
            keys.sort_unstable();
            assert_eq!(keys, fields, "{kind}: the knobs are the table's keys");
            assert!(knobs
                .iter()
                .all(|k| !k.about.is_empty() && !k.value.is_empty()));
        }
        let mut s = tiny.clone();
        for k in tiny.knobs() {
            s.set_knob(k.key, &k.value)
                .unwrap_or_else(|e| panic!("{kind}.{} = {}: {e}", k.key, k.value));
            assert_eq!(s, tiny, "{kind}.{} = {} reads back", k.key, k.value);
            let e = s.set_knob(k.key, "twelve").unwrap_err();
            assert!(e.starts_with(k.key) && !e.contains('\n'), "{kind}: {e}");
            assert_eq!(s, tiny);
            // zero: a count the family's checks refuse, or a value they accept
            match s.set_knob(k.key, "0") {
                Err(e) => {
                    assert!(!e.is_empty() && !e.contains('\n'), "{kind}: {e}");
                    assert_eq!(s, tiny, "{kind}.{} = 0 refused, spec unchanged", k.key);
                }
                Ok(()) => {
                    assert!(s.family().problems().is_empty());
                    s = tiny.clone();
                }
            }
        }
        let e = s.set_knob("colour", "red").unwrap_err();
        assert!(
            e.contains("no knob `colour`") && e.contains(tiny.knobs()[0].key),
            "{e}"
        );
        for k in default.knobs() {
            s.set_knob(k.key, &k.value)
                .unwrap_or_else(|e| panic!("{kind}.{} = {}: {e}", k.key, k.value));
        }
        assert_eq!(s, default, "{kind}: the knobs reach the default");
    }
}

/// The ResNet's batch-norm knobs move together: switching to plain batch normalisation drops the
/// ghost batch, switching back starts it at 16, and a ghost batch without ghost normalisation is
/// refused with the family's reason.
#[test]
fn the_resnets_batch_norm_knobs_move_together() {
    let mut s = resnet::small();
    s.set_knob("batch_norm", "batch").unwrap();
    assert_eq!(s.family().label(), "resnet-8 w4 bn");
    let e = s.set_knob("ghost_batch", "8").unwrap_err();
    assert!(e.contains("no effect with batch_norm = \"batch\""), "{e}");
    s.set_knob("batch_norm", "\"ghost\"").unwrap();
    assert_eq!(s, resnet::small());
    s.set_knob("depth", "20").unwrap();
    assert!(s
        .set_knob("depth", "21")
        .unwrap_err()
        .contains("not 6n + 2"));
    s.set_knob("width", "16").unwrap();
    assert_eq!(s.family().label(), "resnet-20 w16 ghost 16");
    let mut t = ModelSpec::Transformer(crate::model::transformer::TransformerSpec {
        d_model: 64,
        heads: 4,
        layers: 2,
        ff: 256,
    });
    assert_eq!(
        t.set_knob("d_model", "30"),
        Err("heads 4 must be > 0 and divide d_model 30".into())
    );
    let mut m = mlp::hidden(vec![64]);
    m.set_knob("hidden", "128, 64").unwrap();
    assert_eq!(m.family().label(), "mlp 128-64");
    m.set_knob("hidden", "none").unwrap();
    assert_eq!(m, mlp::hidden(vec![]));
}

/// Each member's loss and every trained parameter's gradient, flattened, of a group of
/// `seeds.len()` members on backend `B`.
fn loss_and_grads<B: AutodiffBackend>(
    spec: &ModelSpec,
    shape: InputShape,
    seeds: &[u64],
) -> (Vec<f32>, Vec<Vec<f32>>) {
    let dev = Default::default();
    let net = Net::<B>::init_group(spec, shape, seeds, &dev).unwrap();
    let batch = batch_on::<B>(shape, seeds.len(), 5, 2);
    let loss = net.loss(&batch, &Ctx::fp32());
    let values = loss.clone().inner().into_data().to_vec::<f32>().unwrap();
    let grads = loss.sum().backward();
    struct G<'a, B: AutodiffBackend>(&'a B::Gradients, Vec<Vec<f32>>);
    impl<B: AutodiffBackend> ModuleVisitor<B> for G<'_, B> {
        fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<B, D>>) {
            if let Some(g) = p.val().grad(self.0) {
                self.1.push(g.into_data().to_vec::<f32>().unwrap());
            }
        }
    }
    let mut v = G::<B>(&grads, Vec::new());
    burn::module::Module::visit(&net, &mut v);
    (values, v.1)
}

/// Burn's generic ops on the CPU: an autodiff backend the kernels do not serve (they serve
/// `Autodiff<Flex>` without checkpointing), so every op takes Burn's path.
type BurnOps = Autodiff<Flex, BalancedCheckpointing>;

/// The CPU kernels against Burn's ops through every family's network: the loss and every
/// gradient of a fused group (one member and two) agree, so a family built of kernels that were
/// each held to Burn's op also composes them as Burn's ops would.
#[test]
fn every_familys_loss_and_gradients_on_the_cpu_kernels_are_burns_ops() {
    use crate::model::kernels::flex::is_cpu;
    assert!(
        is_cpu::<Ad>() && !is_cpu::<BurnOps>(),
        "the two paths differ"
    );
    for (spec, shape) in every_family() {
        for seeds in [&[3u64][..], &[3, 4]] {
            let (la, ga) = loss_and_grads::<Ad>(&spec, shape, seeds);
            let (lb, gb) = loss_and_grads::<BurnOps>(&spec, shape, seeds);
            for (a, b) in la.iter().zip(&lb) {
                assert!(
                    (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
                    "{spec:?}: loss {a} vs {b}"
                );
            }
            assert_eq!(ga.len(), gb.len(), "{spec:?}: parameters with a gradient");
            for (p, (a, b)) in ga.iter().zip(&gb).enumerate() {
                let scale = b.iter().fold(1e-6f32, |m, v| m.max(v.abs()));
                for (x, y) in a.iter().zip(b) {
                    assert!(
                        (x - y).abs() <= 1e-4 * scale,
                        "{spec:?} K = {} parameter {p}: {x} vs {y}",
                        seeds.len()
                    );
                }
            }
        }
    }
}

/// A family's peer parameters (what its JAX peer model reads) are its network's: every trained
/// value of member 0, once.
#[test]
fn the_peer_parameters_are_every_trained_value_of_member_zero() {
    let dev = Default::default();
    let mut peers = 0;
    for (spec, shape) in every_family() {
        let net = Net::<Flex>::init_group(&spec, shape, &[1, 2], &dev).unwrap();
        let Some(params) = net.network().peer_params() else {
            continue;
        };
        peers += 1;
        let values: usize = params
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_array().unwrap().len())
            .sum();
        assert_eq!(values as f64, spec.param_count(shape).unwrap(), "{spec:?}");
    }
    assert!(peers >= 2, "the small CNN's and the char-LSTM's peers");
}
