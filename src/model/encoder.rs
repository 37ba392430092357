//! What a transfer probe reads of a language model (docs/transfer.md): the state a sentence's
//! feature is ([`TransferFeature`]), the one interface every language-model family implements in
//! its own file ([`Encoder`], reached through [`super::Network::encoder`]) and what it reads a
//! batch with ([`Rows`]); the recurrent families' shared recurrence is `lm::cells`. The probe itself — the sentences, their batching, the regression and
//! its controls — is `crate::transfer`.
//!
//! Every encoder reads a batch of sentences padded on the right, each row its own sequence from a
//! zero state, in fp32 (the master weights): the recurrence and causal attention never let a later
//! position reach an earlier state, so a feature does not depend on its padding or its batch
//! neighbours.

use burn::tensor::backend::Backend;
use burn::tensor::{Device, Int, Tensor};
use serde::{Deserialize, Serialize};

use super::layers::Ctx;

/// The state a sentence's feature is read from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "kebab-case")]
pub enum TransferFeature {
    /// The last layer's cell state c at the sentence's last byte (the reference's choice; a
    /// Transformer, which has none, gives its final hidden state there).
    #[default]
    Cell,
    /// The hidden state h at the last byte.
    Hidden,
    /// The hidden states averaged over the sentence's bytes.
    Mean,
}

impl TransferFeature {
    pub fn name(self) -> &'static str {
        match self {
            TransferFeature::Cell => "cell",
            TransferFeature::Hidden => "hidden",
            TransferFeature::Mean => "mean",
        }
    }
}

/// A language model's sentence features (one implementation per language-model family file).
pub trait Encoder<B: Backend> {
    /// Values in a feature: the width of the state it is read from.
    fn width(&self) -> usize;
    /// The longest input the model reads (a longer sentence is read as its last this many
    /// bytes); unbounded for a recurrence.
    fn context(&self) -> usize {
        usize::MAX
    }
    /// Values one sentence of `t` bytes holds, per member, in the largest activation of a
    /// forward pass (what bounds an encoding batch).
    fn sentence_cost(&self, t: usize) -> usize;
    /// One padded batch's features [K, N, width] of ids [K·N, T] (every member reads the same
    /// N rows).
    fn features(&self, ids: Tensor<B, 2, Int>, rows: &Rows<'_, B>) -> Tensor<B, 3>;
    /// The model's head on states [K, M, width]: its logits, were the states its own (a test
    /// holds the encoder's hidden states to the model's logits through it).
    fn head(&self, states: Tensor<B, 3>, c: &Ctx) -> Tensor<B, 3>;
}

/// What every encoder needs besides its network and the ids: each row's real length, the
/// feature to pick, the context and the device.
pub struct Rows<'a, B: Backend> {
    pub lens: &'a [usize],
    pub feature: TransferFeature,
    pub c: Ctx,
    pub device: &'a Device<B>,
}

impl<B: Backend> Rows<'_, B> {
    /// [K, N, T] of ids [K·N, T] for `k` members.
    pub fn shape(&self, ids: &Tensor<B, 2, Int>, k: usize) -> [usize; 3] {
        let [rows, t] = ids.dims();
        [k, rows / k, t]
    }
}
