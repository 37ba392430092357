//! The precision → compute dtype mapping (one place: the trainer and `bench` use it).

use burn::tensor::FloatDType;

use crate::workload::spec::Precision;

/// The dtype forward and backward passes run in (None: fp32, no casts).
pub fn compute_dtype(p: Precision) -> Option<FloatDType> {
    match p {
        Precision::Fp32 => None,
        Precision::Bf16 => Some(FloatDType::BF16),
        Precision::Fp16 => Some(FloatDType::F16),
    }
}
