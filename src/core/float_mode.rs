//! The float mode every computing thread runs in: subnormal floats flushed to zero (FTZ: results;
//! DAZ: inputs, x86-64's MXCSR bits 15 and 6), unless `SCALING_LAB_KEEP_SUBNORMALS` is set (any
//! value: IEEE subnormals).
//!
//! Why: Adam's moments of weights whose input is zero on most batches decay into the subnormal
//! range, where each multiply takes a microcode assist (~3× the update's cost on a long
//! small-batch trial). TensorFlow's CPU thread pools flush too.
//!
//! A thread inherits the mode of the thread that creates it. The binary sets it first thing
//! (`ensure_process`); the engine sets it again where it starts computing (a sweep, a trial, a
//! replica's thread, every rayon pool it builds), so a trial run in-process — a test, a library
//! user — computes exactly as the shipped binary does.

use std::sync::Once;

/// Environment variable that keeps IEEE subnormals.
pub const KEEP_SUBNORMALS_ENV: &str = "SCALING_LAB_KEEP_SUBNORMALS";

/// Whether subnormals are flushed (the environment read once per process).
pub fn flushing() -> bool {
    static FLUSH: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FLUSH.get_or_init(|| std::env::var_os(KEEP_SUBNORMALS_ENV).is_none())
}

const FTZ_DAZ: u32 = (1 << 15) | (1 << 6);

/// Sets this thread's float mode (FTZ/DAZ on, unless subnormals are kept).
pub fn set_here() {
    if !flushing() {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: reads and writes this thread's MXCSR only (FTZ bit 15, DAZ bit 6).
    unsafe {
        let mut csr: u32 = 0;
        std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack));
        csr |= FTZ_DAZ;
        std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack));
    }
}

/// Whether this thread flushes subnormals now (false off x86-64).
pub fn flushes_here() -> bool {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: reads this thread's MXCSR only.
    unsafe {
        let mut csr: u32 = 0;
        std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack));
        csr & FTZ_DAZ == FTZ_DAZ
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// This thread's mode, and rayon's global pool built with it (once per process; when the pool
/// already exists, e.g. built by a test harness thread, its threads keep their mode and the
/// engine's own pools and threads still set theirs).
pub fn ensure_process() {
    static ONCE: Once = Once::new();
    set_here();
    ONCE.call_once(|| {
        let _ = rayon::ThreadPoolBuilder::new()
            .start_handler(|_| set_here())
            .build_global();
    });
}

/// A rayon pool of `threads` threads that run in the float mode (None if it cannot be built).
pub fn pool(threads: usize) -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .start_handler(|_| set_here())
        .build()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hint::black_box;

    /// The product of two normal floats that falls below f32's smallest normal.
    fn tiny_product() -> f32 {
        black_box(1e-30f32) * black_box(1e-10f32)
    }

    #[test]
    fn the_engine_threads_flush_subnormals_as_the_binary_does() {
        if !flushing() || !cfg!(target_arch = "x86_64") {
            return;
        }
        // a thread that never set its mode computes IEEE subnormals
        let plain = std::thread::spawn(|| (flushes_here(), tiny_product()))
            .join()
            .unwrap();
        assert!(!plain.0 && plain.1 > 0.0, "{plain:?}");
        // a thread that set it, a pool built by `pool` and threads it spawns flush
        let (here, spawned) = std::thread::spawn(|| {
            set_here();
            let spawned = std::thread::spawn(|| (flushes_here(), tiny_product()))
                .join()
                .unwrap();
            ((flushes_here(), tiny_product()), spawned)
        })
        .join()
        .unwrap();
        assert_eq!(here, (true, 0.0));
        assert_eq!(spawned, (true, 0.0), "a new thread inherits the mode");
        let in_pool = pool(2)
            .unwrap()
            .install(|| rayon::join(|| (flushes_here(), tiny_product()), flushes_here));
        assert_eq!(in_pool, ((true, 0.0), true));
    }
}
