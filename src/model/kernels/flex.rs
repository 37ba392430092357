//! The one answer to "is this the CPU backend?" and the one set of helpers that move a
//! backend-generic tensor to Burn's Flex CPU tensor and back: the kernels, the fused optimizer
//! and the layers' choice of convolution all ask here.

use std::any::{Any, TypeId};

use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::{Autodiff, Flex};
use burn::tensor::backend::Backend;
use burn::tensor::{DType, Shape, Tensor, TensorPrimitive};
use burn_flex::{FlexTensor, Layout};

/// The CPU training backend the kernels serve (autodiff over Flex, no checkpointing).
pub(crate) type Ad = Autodiff<Flex, NoCheckpointing>;

/// `a` as a `T` when they are the same type (a backend-generic tensor as the concrete one).
pub(crate) fn same<A: 'static, T: 'static>(a: A) -> Result<T, A> {
    if TypeId::of::<A>() != TypeId::of::<T>() {
        return Err(a);
    }
    let b: Box<dyn Any> = Box::new(a);
    Ok(*b.downcast::<T>().expect("same type"))
}

/// Which of the two CPU backends `B` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cpu {
    Autodiff,
    Inner,
}

pub(crate) fn cpu<B: Backend>() -> Option<Cpu> {
    if TypeId::of::<B>() == TypeId::of::<Ad>() {
        Some(Cpu::Autodiff)
    } else if TypeId::of::<B>() == TypeId::of::<Flex>() {
        Some(Cpu::Inner)
    } else {
        None
    }
}

pub(crate) fn is_f32<B: Backend, const D: usize>(t: &Tensor<B, D>) -> bool {
    t.dtype() == DType::F32
}

/// The values of a Flex f32 tensor, contiguous and in row-major order (copied only if needed).
pub(crate) fn contiguous(t: &FlexTensor) -> FlexTensor {
    if t.is_contiguous() && t.layout().contiguous_offsets().is_some() {
        t.clone()
    } else {
        t.to_contiguous()
    }
}

/// The f32 slice of a tensor from [`contiguous`].
pub(crate) fn values(t: &FlexTensor) -> &[f32] {
    let (a, b) = t
        .layout()
        .contiguous_offsets()
        .expect("a contiguous tensor");
    &t.storage::<f32>()[a..b]
}

/// A Flex f32 tensor that owns `v` (no copy).
pub(crate) fn tensor_of(v: Vec<f32>, shape: &[usize]) -> FlexTensor {
    debug_assert_eq!(v.len(), shape.iter().product::<usize>());
    FlexTensor::new(
        burn::tensor::Bytes::from_elems(v),
        Layout::contiguous(Shape::from(shape.to_vec())),
        DType::F32,
    )
}

pub(crate) fn float_of<B: Backend, const D: usize>(t: Tensor<B, D>) -> B::FloatTensorPrimitive {
    t.into_primitive().tensor()
}

pub(crate) fn tensor_from<B: Backend, const D: usize>(p: B::FloatTensorPrimitive) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(p))
}

/// Whether `B` is the CPU backend the kernels serve (Flex, with or without autodiff).
pub fn is_cpu<B: Backend>() -> bool {
    cpu::<B>().is_some()
}

/// Registers each computed gradient (`Some`) with its parent when the parent is tracked: a
/// hand-written backward's last step, `register_grads!(grads, ops.parents, [dx, dw])`.
macro_rules! register_grads {
    ($grads:expr, $parents:expr, $gs:expr) => {
        for (node, g) in $parents.into_iter().zip($gs) {
            if let (Some(node), Some(g)) = (node, g) {
                $grads.register::<burn::backend::Flex>(node.id, g);
            }
        }
    };
}
pub(crate) use register_grads;
