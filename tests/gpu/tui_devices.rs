//! The TUI's device field with wgpu adapters (state only: no terminal, no GPU): the adapters the
//! binary found become device choices (1..n adapters, and two replicas sharing adapter 0 when
//! there is one), bf16 on wgpu blocks the launch with the reason, GPU sweeps run one trial at a
//! time, and the launched sweep carries the wgpu devices.

use std::path::PathBuf;

use scaling_lab::core::trial::DeviceSpec;
use scaling_lab::tui::app::{update, Command, Field, Msg};
use scaling_lab::tui::key::Key;
use scaling_lab::workload::presets::presets_dir;
use scaling_lab::workload::spec::Precision;

fn app_with(wgpu: &[&str]) -> scaling_lab::tui::App {
    let mut o = scaling_lab::tui::TuiOptions::new(PathBuf::from("runs"), presets_dir());
    o.wgpu_labels = wgpu.iter().map(|s| s.to_string()).collect();
    scaling_lab::tui::initial_app(&o, Default::default())
}

fn select(a: &mut scaling_lab::tui::App, d: &DeviceSpec) {
    a.setup.device_idx = a.setup.devices.iter().position(|x| x == d).unwrap();
}

#[test]
fn one_adapter_offers_one_replica_and_two_sharing_it() {
    let a = app_with(&["wgpu:0 llvmpipe (LLVM 15.0.6, 256 bits) [Vulkan, cpu]"]);
    let wgpu: Vec<_> = a
        .setup
        .devices
        .iter()
        .filter(|d| matches!(d, DeviceSpec::Wgpu { .. }))
        .cloned()
        .collect();
    assert_eq!(
        wgpu,
        vec![
            DeviceSpec::Wgpu { adapters: vec![0] },
            DeviceSpec::Wgpu {
                adapters: vec![0, 0]
            }
        ]
    );
    let two = app_with(&["wgpu:0 a", "wgpu:1 b"]);
    assert!(two.setup.devices.contains(&DeviceSpec::Wgpu {
        adapters: vec![0, 1]
    }));
    assert!(!two.setup.devices.contains(&DeviceSpec::Wgpu {
        adapters: vec![0, 0]
    }));
    assert_eq!(
        app_with(&[]).setup.devices.len(),
        8,
        "no adapter: CPU workers only"
    );
}

#[test]
fn bf16_on_wgpu_blocks_the_launch_and_gpu_sweeps_run_one_trial_at_a_time() {
    let mut a = app_with(&["wgpu:0 llvmpipe [Vulkan, cpu]"]);
    select(
        &mut a,
        &DeviceSpec::Wgpu {
            adapters: vec![0, 0],
        },
    );
    a.setup.precision = Precision::Bf16;
    let p = a.setup.problems();
    let bf16 = p
        .iter()
        .find(|p| p.blocking && Field::of(p) == Some(Field::Precision))
        .unwrap_or_else(|| panic!("{p:?}"));
    assert!(bf16.message.contains("no bf16"), "{}", bf16.message);
    a.setup.precision = Precision::Fp16;
    assert!(
        a.setup.problems().iter().all(|p| !p.blocking),
        "{:?}",
        a.setup.problems()
    );
    a.setup.concurrency = 3;
    assert_eq!(a.setup.effective_concurrency(), 1);
}

#[test]
fn the_launched_sweep_runs_on_the_chosen_adapters() {
    let mut a = app_with(&["wgpu:0 llvmpipe [Vulkan, cpu]"]);
    select(
        &mut a,
        &DeviceSpec::Wgpu {
            adapters: vec![0, 0],
        },
    );
    a.setup.focus = scaling_lab::tui::app::SetupFocus::Fields;
    // (Enter on the Model or Dataset field edits it: launch from the Devices field)
    a.setup.field = scaling_lab::tui::app::FIELDS
        .iter()
        .position(|f| *f == Field::Devices)
        .unwrap();
    let cmds = update(&mut a, Msg::Key(Key::Enter));
    let cfg = cmds
        .iter()
        .find_map(|c| match c {
            Command::Launch(cfg) => Some(cfg.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no sweep launched: {:?}", a.setup.problems()));
    assert_eq!(
        cfg.devices,
        DeviceSpec::Wgpu {
            adapters: vec![0, 0]
        }
    );
    assert!(cfg.batch_sizes.iter().all(|b| b % 2 == 0));
}
