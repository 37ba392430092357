//! `SCALING_LAB_PEER_CHECK_DIR=DIR cargo bench --bench peer_models`: writes our small CNN's and
//! char-LSTM's initial parameters, a batch, our logits and our loss to DIR (small-cnn.json,
//! char-lstm.json) for `benches/peers/check_models.py`, which runs the JAX peers' models on the same
//! parameters and input and compares (docs/speed.md). Without the variable it says so and writes
//! nothing.
use burn::tensor::Tensor;

use scaling_lab::model::{Batch, Ctx, Net};
use scaling_lab::train::bench::StepCase;

fn main() {
    let Some(dir) = std::env::var_os("SCALING_LAB_PEER_CHECK_DIR") else {
        println!("peer_models: set SCALING_LAB_PEER_CHECK_DIR=DIR to write the models for benches/peers/check_models.py");
        return;
    };
    use burn::backend::Flex;
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dev = Default::default();
    // parameters carry the member axis ([1, …] here): flat in row-major order as before
    fn flat<const D: usize>(t: Tensor<Flex, D>) -> Vec<f32> {
        t.into_data().to_vec::<f32>().unwrap()
    }
    let v1 = |t: Tensor<Flex, 1>| flat(t);
    for (name, case) in [
        ("small-cnn", StepCase::small_cnn()),
        ("char-lstm", StepCase::char_lstm()),
    ] {
        let net = Net::<Flex>::init(&case.spec, case.shape, 7, &dev).unwrap();
        let batch = case.batches::<Flex>(5, &dev).swap_remove(0);
        let (logits, _) = net.logits(&batch, &Ctx::fp32());
        let loss = v1(net.loss(&batch, &Ctx::fp32()))[0];
        let params = net.network().peer_params().expect("a peer model");
        let (x, y) = match &batch {
            Batch::Images { x, y } => (
                serde_json::json!(x.clone().into_data().to_vec::<f32>().unwrap()),
                y.clone().into_data().iter::<i64>().collect::<Vec<_>>(),
            ),
            Batch::Text { x, y } => (
                serde_json::json!(x.clone().into_data().iter::<i64>().collect::<Vec<_>>()),
                y.clone().into_data().iter::<i64>().collect::<Vec<_>>(),
            ),
        };
        let out = serde_json::json!({
            "shape": [case.shape.channels, case.shape.height, case.shape.width],
            "seq_len": case.shape.seq_len,
            "params": params,
            "x": x,
            "y": y,
            "logits": flat(logits),
            "loss": loss,
        });
        std::fs::write(dir.join(format!("{name}.json")), out.to_string()).unwrap();
    }
    println!(
        "peer_models: wrote small-cnn.json and char-lstm.json to {}",
        dir.display()
    );
}
