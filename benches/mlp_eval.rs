//! `cargo bench --bench mlp_eval`: a fused group's evaluation at digits' shape (10 MLPs of 64 hidden
//! units, 360 rows): the generic path (`Net::eval_stats` on the rows repeated per member) against
//! the shared-rows kernel (`Net::correct_shared`: each row read once for every member), best of 5
//! rounds of 200 evaluations each. Their counts are held equal by the lib's unit tests
//! (`model::kernels::mlp_eval_tests`); this is only their time.
use burn::backend::Flex;
use burn::tensor::{Tensor, TensorData};

use scaling_lab::model::{mlp, Batch, Ctx, InputShape, Net};

fn main() {
    let dev = Default::default();
    let spec = mlp::hidden(vec![64]);
    let shape = InputShape::images(1, 8, 8, 10);
    let (k, n) = (10, 360);
    let seeds: Vec<u64> = (0..k as u64).collect();
    let net = Net::<Flex>::init_group(&spec, shape, &seeds, &dev).expect("an MLP group");
    let x: Vec<f32> = (0..n * 64).map(|i| ((i * 31 % 17) as f32) / 16.0).collect();
    let y: Vec<i64> = (0..n).map(|i| (i % 10) as i64).collect();
    // the rows repeated once per member (the generic path's batch), and once
    let repeated = Batch::Images {
        x: Tensor::from_data(TensorData::new(x.repeat(k), [k * n, 1, 8, 8]), &dev),
        y: Tensor::from_data(TensorData::new(y.repeat(k), [k * n]), &dev),
    };
    let once = Batch::Images {
        x: Tensor::from_data(TensorData::new(x, [n, 1, 8, 8]), &dev),
        y: Tensor::from_data(TensorData::new(y, [n]), &dev),
    };
    let c = Ctx::fp32();
    let time = |f: &dyn Fn() -> f64| {
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let t = std::time::Instant::now();
            let mut s = 0.0;
            for _ in 0..200 {
                s += f();
            }
            best = best.min(t.elapsed().as_secs_f64() / 200.0);
            assert!(s >= 0.0);
        }
        best
    };
    let generic = time(&|| {
        let t = net.eval_stats(&repeated, &c, false);
        t.into_data().iter::<f64>().sum()
    });
    let shared = time(&|| {
        let t = net
            .correct_shared(&once, &c)
            .expect("the MLP's shared-rows path");
        t.into_data().iter::<f64>().sum()
    });
    println!(
        "eval of {k} members × {n} rows: generic {:.1} µs, shared rows {:.1} µs ({:.2}×)",
        generic * 1e6,
        shared * 1e6,
        generic / shared
    );
}
