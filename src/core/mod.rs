//! Types shared by the engine, the sweep machinery, the run log and both views.
//! Keep this module free of Burn and of any UI crate.

pub mod analysis;
pub mod events;
pub mod record;
pub mod trial;

pub use analysis::*;
pub use events::*;
pub use record::*;
pub use trial::*;
