//! Which devices each running trial gets (GPU-shaped scheduling, testable without a GPU).
//!
//! A sweep on G devices runs either
//! * **one trial on all G** (`trials_per_device = 0`, the default): data-parallel over the G
//!   devices, one trial at a time per `concurrency`; or
//! * **K trials per device** (`[sweep] trials_per_device = K` or `--trials-per-device K`, K ≥ 1):
//!   each trial on one device, K·G trials at once. K = 1 is "G trials on G devices"; K ≥ 2 packs
//!   small trials onto each device (a small model leaves most of a GPU idle).
//!
//! `SlotPool` hands a starting trial the free slot on the least-loaded device (spread before
//! packing) and takes it back when the trial ends. CPU sweeps have one slot per concurrent trial,
//! all on the one CPU device.

use crate::core::trial::DeviceSpec;

/// The devices of the trials running now.
#[derive(Clone, Debug, PartialEq)]
pub struct SlotPool {
    /// Per slot: the devices of a trial there, and the device index it loads (None: CPU).
    slots: Vec<(DeviceSpec, Option<usize>)>,
    owner: Vec<Option<u64>>,
}

impl SlotPool {
    /// The slots of a sweep on `devices` with `trials_per_device` (0: one trial spans all devices)
    /// and `concurrency` (what runs at once when trials span their devices).
    pub fn new(devices: &DeviceSpec, trials_per_device: usize, concurrency: usize) -> Self {
        // GPU trials get one device each: one slot per (distinct) device and packed trial.
        let slots: Vec<(DeviceSpec, Option<usize>)> = match distinct_gpus(devices) {
            Some(ids) if trials_per_device >= 1 && !ids.is_empty() => {
                let mut v = Vec::new();
                for _ in 0..trials_per_device {
                    for &d in &ids {
                        v.push((devices.with_gpu_ids(vec![d]), Some(d)));
                    }
                }
                v
            }
            _ => (0..concurrency.max(1))
                .map(|_| (devices.clone(), None))
                .collect(),
        };
        let n = slots.len();
        SlotPool {
            slots,
            owner: vec![None; n],
        }
    }

    /// Trials that can run at once.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    pub fn busy(&self) -> usize {
        self.owner.iter().filter(|o| o.is_some()).count()
    }

    /// Trials running now on device `d`.
    pub fn load(&self, d: usize) -> usize {
        self.slots
            .iter()
            .zip(&self.owner)
            .filter(|((_, dev), o)| *dev == Some(d) && o.is_some())
            .count()
    }

    /// A free slot for `trial`: on the device with the fewest running trials (ties: the lower
    /// slot). None when every slot is taken.
    pub fn acquire(&mut self, trial: u64) -> Option<DeviceSpec> {
        let i = (0..self.slots.len())
            .filter(|&i| self.owner[i].is_none())
            .min_by_key(|&i| (self.slots[i].1.map_or(0, |d| self.load(d)), i))?;
        self.owner[i] = Some(trial);
        Some(self.slots[i].0.clone())
    }

    /// Frees `trial`'s slot (a trial that holds none is ignored).
    pub fn release(&mut self, trial: u64) {
        for o in &mut self.owner {
            if *o == Some(trial) {
                *o = None;
            }
        }
    }
}

/// The distinct GPU indices of a CUDA or wgpu spec, in order of first appearance (`wgpu:0,0`
/// is one adapter); None for CPU workers.
fn distinct_gpus(devices: &DeviceSpec) -> Option<Vec<usize>> {
    let mut out: Vec<usize> = Vec::new();
    for &d in devices.gpu_ids()? {
        if !out.contains(&d) {
            out.push(d);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::devices::trial_devices;

    fn cuda(ids: &[usize]) -> DeviceSpec {
        DeviceSpec::Cuda {
            devices: ids.to_vec(),
        }
    }

    #[test]
    fn one_trial_spans_all_devices_by_default() {
        let mut p = SlotPool::new(&cuda(&[0, 1, 2, 3]), 0, 1);
        assert_eq!(p.capacity(), 1);
        assert_eq!(p.acquire(7), Some(cuda(&[0, 1, 2, 3])));
        assert_eq!(p.acquire(8), None, "one trial at a time");
        p.release(7);
        assert_eq!(p.acquire(8), Some(cuda(&[0, 1, 2, 3])));
        assert_eq!(trial_devices(&cuda(&[0, 1, 2, 3]), 0), cuda(&[0, 1, 2, 3]));
    }

    #[test]
    fn g_trials_on_g_devices_one_each() {
        let mut p = SlotPool::new(&cuda(&[0, 1, 2]), 1, 1);
        assert_eq!(p.capacity(), 3);
        let got: Vec<_> = (0..3).map(|t| p.acquire(t).unwrap()).collect();
        assert_eq!(got, vec![cuda(&[0]), cuda(&[1]), cuda(&[2])]);
        assert_eq!(p.acquire(3), None);
        p.release(1);
        assert_eq!(p.acquire(3), Some(cuda(&[1])), "the freed device is reused");
        assert_eq!(trial_devices(&cuda(&[4, 5]), 1), cuda(&[4]));
    }

    #[test]
    fn packing_spreads_before_it_stacks() {
        let mut p = SlotPool::new(&cuda(&[0, 1]), 2, 1);
        assert_eq!(p.capacity(), 4);
        let got: Vec<_> = (0..4).map(|t| p.acquire(t).unwrap()).collect();
        assert_eq!(got, vec![cuda(&[0]), cuda(&[1]), cuda(&[0]), cuda(&[1])]);
        assert_eq!((p.load(0), p.load(1)), (2, 2));
        p.release(0);
        p.release(2);
        assert_eq!((p.load(0), p.load(1)), (0, 2));
        assert_eq!(p.acquire(9), Some(cuda(&[0])));
        assert_eq!(p.busy(), 3);
        p.release(12345); // not running: ignored
        assert_eq!(p.busy(), 3);
    }

    #[test]
    fn wgpu_adapters_take_slots_like_cuda_devices_and_a_shared_adapter_counts_once() {
        let wgpu = |ids: &[usize]| DeviceSpec::Wgpu {
            adapters: ids.to_vec(),
        };
        let mut p = SlotPool::new(&wgpu(&[0, 1]), 2, 1);
        assert_eq!(p.capacity(), 4);
        let got: Vec<_> = (0..4).map(|t| p.acquire(t).unwrap()).collect();
        assert_eq!(got, vec![wgpu(&[0]), wgpu(&[1]), wgpu(&[0]), wgpu(&[1])]);
        // two replicas sharing adapter 0, packed 2 per device: two one-replica slots on adapter 0
        let mut p = SlotPool::new(&wgpu(&[0, 0]), 2, 1);
        assert_eq!(p.capacity(), 2);
        assert_eq!(p.acquire(0), Some(wgpu(&[0])));
        assert_eq!(p.acquire(1), Some(wgpu(&[0])));
        assert_eq!(p.load(0), 2);
        assert_eq!(trial_devices(&wgpu(&[0, 0]), 2), wgpu(&[0]));
        // without packing a trial spans its replicas as listed
        assert_eq!(trial_devices(&wgpu(&[0, 0]), 0), wgpu(&[0, 0]));
        let mut p = SlotPool::new(&wgpu(&[0, 0]), 0, 1);
        assert_eq!(p.acquire(3), Some(wgpu(&[0, 0])));
    }

    #[test]
    fn cpu_sweeps_have_one_slot_per_concurrent_trial() {
        let cpu = DeviceSpec::Cpu { workers: 2 };
        let mut p = SlotPool::new(&cpu, 3, 2);
        assert_eq!(p.capacity(), 2, "trials_per_device is a GPU setting");
        assert_eq!(p.acquire(0), Some(cpu.clone()));
        assert_eq!(p.acquire(1), Some(cpu.clone()));
        assert_eq!(p.acquire(2), None);
        assert_eq!(trial_devices(&cpu, 3), cpu);
    }
}
