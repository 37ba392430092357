//! Recognising a device out-of-memory in a trial's error or panic message.
//!
//! A CUDA allocation that fails surfaces from cubecl 0.10 / cudarc 0.19 (the versions in
//! Cargo.lock) as one of these messages, which the trainer receives as an error string or a
//! panic payload (`catch_unwind` in the worker loop; cubecl unwraps most allocation results):
//! * `IoError::BufferTooBig`: "can't allocate buffer of size: {size}" (cubecl-runtime
//!   `server/base.rs`; raised by the memory pools and by `GpuStorage::alloc` on
//!   `CUDA_ERROR_OUT_OF_MEMORY`), typically inside "called `Result::unwrap()` on an `Err` value: …";
//! * `LaunchError::OutOfMemory`: "An out-of-memory error happened during launch";
//! * any other failed `cuMemAlloc`: "CUDA allocation error: DriverError(CUDA_ERROR_OUT_OF_MEMORY,
//!   \"out of memory\")" (`IoError::Unknown` with cudarc's `DriverError` Debug text).
//!
//!
//! On wgpu (cubecl-wgpu 0.10, wgpu 29) the same `BufferTooBig` is what an oversized batch meets
//! first: CubeCL's memory pools allocate at most one binding's worth
//! (`max_storage_buffer_binding_size`: 128 MiB on lavapipe, typically 128 MiB–4 GiB on GPUs)
//! per tensor. A device that runs out of memory itself reports wgpu's `OutOfMemory` error
//! ("Out of Memory"; wgpu-core's `DeviceError::OutOfMemory`: "Not enough memory left.").
//!
//! Such a trial becomes `Outcome::Oom { batch_size, step }` and the sweep goes on.

/// The fragments that identify an out-of-memory (matched case-insensitively).
pub const OOM_MARKERS: &[&str] = &[
    "can't allocate buffer of size",
    "out-of-memory error happened",
    "cuda_error_out_of_memory",
    "cudaerrormemoryallocation",
    "out of memory",
    "not enough memory left",
];

/// Whether an error or panic message says the device ran out of memory.
pub fn is_out_of_memory(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    OOM_MARKERS.iter().any(|k| m.contains(k))
}

/// How recently a device thread's panic counts as the reason for a worker's `CallError`.
const DEVICE_PANIC_WINDOW: std::time::Duration = std::time::Duration::from_secs(60);

/// When a device thread last panicked with an out-of-memory message (see [`watch_device_panics`]).
static DEVICE_OOM_AT: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);

/// Watches every panic of the process (once; the previous hook still runs) for an out-of-memory
/// message. On a JIT backend the allocation fails on CubeCL's device thread ("can't allocate buffer
/// of size: …", measured on lavapipe with a 4 GiB activation), which catches the panic, so the
/// trial's worker only sees `CallError` (the device thread's reply was dropped). With this watch
/// such a `CallError` within [`DEVICE_PANIC_WINDOW`] of a device out-of-memory panic is read as
/// out of memory ([`or_oom`]). Installed by the GPU runners before a trial starts.
pub fn watch_device_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let p = info.payload();
            let msg = p
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or("");
            if is_out_of_memory(msg) {
                note_device_oom();
            }
            prev(info)
        }));
    });
}

/// Records that a device ran out of memory now (the panic watch calls it).
pub fn note_device_oom() {
    *DEVICE_OOM_AT.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::time::Instant::now());
}

/// Whether a failure message means out of memory: its own text, or a `CallError` (a device
/// thread's task panicked) shortly after a device thread panicked out of memory.
pub fn failed_out_of_memory(message: &str) -> bool {
    if is_out_of_memory(message) {
        return true;
    }
    message.contains("CallError")
        && DEVICE_OOM_AT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|t| t.elapsed() <= DEVICE_PANIC_WINDOW)
}

/// A step or evaluation result with out-of-memory split off: `Ok(Err(outcome))` when the device
/// ran out of memory at batch size `b` after `step` applied steps (the trial's outcome), other
/// errors unchanged.
pub fn or_oom<T>(
    r: anyhow::Result<T>,
    b: usize,
    step: u64,
) -> anyhow::Result<Result<T, crate::core::trial::Outcome>> {
    match r {
        Ok(v) => Ok(Ok(v)),
        Err(e) if failed_out_of_memory(&format!("{e:#}")) => {
            Ok(Err(crate::core::trial::Outcome::Oom {
                batch_size: b,
                step,
            }))
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact texts cubecl-runtime 0.10 and cudarc 0.19.10 format (copied from their
    /// `#[error]` attributes and `Debug` impls), as the trainer sees them.
    #[test]
    fn cubecl_and_cudarc_out_of_memory_texts_are_recognised() {
        let buffer_too_big = "called `Result::unwrap()` on an `Err` value: can't allocate buffer of size: 17179869184\n<backtrace disabled>";
        let launch = "An out-of-memory error happened during launch\nCaused by:\n  allocation of 2147483648 bytes failed\nBacktrace\n";
        let driver = "worker 0 failed: Unknown error happened during execution\nCUDA allocation error: DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\")";
        let wrapped = "An error happened during execution\nCaused by:\n  Can't perform the IO operation because of a runtime error: An execution error happened during profiling\nCaused by:\n  can't allocate buffer of size: 4096";
        // wgpu 29: `Error::OutOfMemory`'s Display and wgpu-core's `DeviceError::OutOfMemory`
        let wgpu_oom = "wgpu error: Out of Memory";
        let wgpu_core = "Validation Error\n\nCaused by:\n  In Device::create_buffer\n    Not enough memory left.";
        for m in [buffer_too_big, launch, driver, wrapped, wgpu_oom, wgpu_core] {
            assert!(is_out_of_memory(m), "not recognised: {m}");
        }
    }

    /// The failure a worker sees on wgpu when CubeCL's device thread cannot allocate (lavapipe,
    /// a 4 GiB activation): the device thread panics with BufferTooBig and the worker gets
    /// `CallError`. Only after such a panic is that `CallError` out of memory.
    #[test]
    fn a_call_error_after_a_device_thread_oom_panic_is_out_of_memory() {
        let call_error = "worker 0 failed: called `Result::unwrap()` on an `Err` value: CallError";
        let r: anyhow::Result<()> = Err(anyhow::anyhow!(call_error));
        if DEVICE_OOM_AT.lock().unwrap().is_none() {
            assert!(
                or_oom(r, 1024, 0).is_err(),
                "a CallError alone is not out of memory"
            );
        }
        watch_device_panics();
        let device = std::thread::Builder::new()
            .name("DSD-test".into())
            .spawn(|| {
                // the text CubeCL's device thread panics with (cubecl-wgpu server.rs unwraps it)
                panic!("called `Result::unwrap()` on an `Err` value: can't allocate buffer of size: 4294967296");
            })
            .unwrap();
        assert!(device.join().is_err());
        let r: anyhow::Result<()> = Err(anyhow::anyhow!(call_error));
        match or_oom(r, 1024, 3) {
            Ok(Err(crate::core::trial::Outcome::Oom {
                batch_size: 1024,
                step: 3,
            })) => {}
            other => panic!("not read as out of memory: {other:?}"),
        }
    }

    #[test]
    fn other_failures_are_not_out_of_memory() {
        for m in [
            "A compilation error happened during launch\nCaused by:\n  bad kernel",
            "Too much shared memory requested.\nRequested 100000 bytes, maximum 49152 bytes available.",
            "couldn't find resource for that handle: freed",
            "worker 1 failed: all-reduce failed on worker 1: Timeout",
            "no usable CUDA device: the CUDA driver (libcuda) or a GPU was not found",
            "the loss is NaN",
        ] {
            assert!(!is_out_of_memory(m), "misread as out of memory: {m}");
        }
    }
}
