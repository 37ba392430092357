//! `cargo bench`: examples/s of the peer's MLP 784-256-10 step at B = 32, 128, 1024 and of every
//! preset model at B = 128 (the same code as `scaling-lab bench`).
fn main() {
    scaling_lab::train::bench::print_report(200, scaling_lab::workload::spec::Precision::Fp32);
}
