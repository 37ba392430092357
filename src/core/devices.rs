//! Which devices one trial of a sweep gets (a rule the scheduler, the plan and the run-log reader
//! share; the slots of running trials are `sweep::devices`).

use super::trial::DeviceSpec;

/// The devices of one trial of a sweep on `devices` (what the plan records and the batch split
/// uses): all of them, or one when trials get a device each.
pub fn trial_devices(devices: &DeviceSpec, trials_per_device: usize) -> DeviceSpec {
    match devices.gpu_ids() {
        Some(ids) if trials_per_device >= 1 && !ids.is_empty() => {
            devices.with_gpu_ids(vec![ids[0]])
        }
        _ => devices.clone(),
    }
}
