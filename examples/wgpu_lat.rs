use scaling_lab::core::{CancelToken, DeviceSpec, TrialEvent, TrialRunner, TrialSpec};
use scaling_lab::train::{BurnRunner, TrainOptions};
use std::time::Instant;
fn main() {
    let (_p, preset) = scaling_lab::workload::load::find_preset(&std::env::args().nth(1).unwrap_or("digits-mlp-momentum".into())).unwrap();
    let mut w = preset.workload.clone();
    w.step_budget = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(300);
    w.target.value = 0.0001;
    let noise = std::env::var("NOISE").map(|v| v == "1").unwrap_or(true);
    let dev = match std::env::var("DEV").as_deref() { Ok("cpu") => DeviceSpec::Cpu { workers: 1 }, _ => DeviceSpec::Wgpu { adapters: vec![0] } };
    let spec = TrialSpec { devices: dev, seed: 0, ..TrialSpec::cpu(64, w.defaults.clone()) };
    let r = BurnRunner::new(TrainOptions { noise_scale: noise, step_event_interval: std::time::Duration::ZERO, ..Default::default() });
    let t0 = Instant::now();
    let mut last = t0;
    let mut n = 0u64;
    let out = r.run(&w, &spec, &mut |e| {
        match e {
            TrialEvent::Step(s) => { n += 1; if s.step % 25 == 0 { let now = Instant::now(); println!("step {:4} at {:7.2}s  last 25: {:6.1} ms/step", s.step, (now-t0).as_secs_f64(), (now-last).as_secs_f64()*1e3/25.0); last = now; } }
            _ => {}
        }
    }, &CancelToken::new()).unwrap();
    println!("{:?} {} steps {:.1}s", out.outcome, out.steps, t0.elapsed().as_secs_f64());
}
