pub(crate) mod node;
pub(crate) mod shared;
// scaling-lab patch: the abort of the global mode, and its error, are public.
pub use node::base::abort_global_collective;
pub use shared::GlobalCollectiveError;

#[cfg(feature = "orchestrator")]
pub mod orchestrator;
#[cfg(feature = "orchestrator")]
pub use orchestrator::*;

mod base;
pub use base::*;
