//! Every preset shipped in presets/ loads and validates, names itself after its file, and is
//! consistent with the data loader (its dataset settings split without error).

use std::path::Path;

use scaling_lab::model::Input;
use scaling_lab::workload::presets::{find_preset_in, list_presets, presets_dir};

fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("presets")
}

#[test]
fn every_bundled_preset_loads() {
    let all = list_presets(&dir());
    let names: Vec<String> = all
        .iter()
        .map(|(p, _)| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    let expected = [
        "digits-mlp-adam",
        "digits-mlp-momentum",
        "digits-mlp-nesterov",
        "digits-mlp-sgd",
        "fashion-cnn-adam",
        "fashion-cnn-momentum",
        "fashion-cnn-sgd",
        "mnist-cnn-adam",
        "mnist-cnn-momentum",
        "mnist-cnn-sgd",
        "nqm-adam",
        "nqm-momentum",
        "nqm-sgd",
        "shakespeare-lstm-adam",
        "shakespeare-mlstm-adam",
        "shakespeare-transformer-adam",
    ];
    for e in expected {
        assert!(names.iter().any(|n| n == e), "missing preset {e}");
    }
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "list_presets is sorted by name");
    for (path, r) in &all {
        let p = r.as_ref().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            p.name,
            path.file_stem().unwrap().to_string_lossy(),
            "{}: name differs from the file name",
            path.display()
        );
        let opt_in_name = format!("-{}", p.workload.optimizer.name());
        assert!(
            p.name.ends_with(&opt_in_name),
            "{}: optimizer {opt_in_name}",
            p.name
        );
        // a family that reads no data (the noisy quadratic model) has no dataset, and only it
        assert_eq!(
            p.workload.model.family().input() == Input::None,
            p.workload.dataset.is_none(),
            "{}: model and dataset",
            p.name
        );
        // The data loader accepts the dataset settings (split only; files are verified elsewhere).
        if let Some(ds) = &p.workload.dataset {
            let d = match scaling_lab::data::load_cached(ds) {
                Ok(d) => d,
                // a dataset the user brings (CIFAR-10) that is not on this machine: the message
                // says which files and where they come from
                Err(scaling_lab::data::DataError::NotFound(m)) => {
                    let entry = ds.source().unwrap().entry.unwrap();
                    assert!(
                        !entry.is_bundled() && m.contains(entry.file_names()[0]),
                        "{m}"
                    );
                    continue;
                }
                Err(e) => panic!("{}: {e}", p.name),
            };
            let info = d.split_info();
            assert!(
                info.n_train > 0 && info.n_val_used > 0,
                "{}: {info:?}",
                p.name
            );
        }
    }
}

#[test]
fn find_preset_by_name_and_path() {
    let d = dir();
    let (p1, a) = find_preset_in(&d, "mnist-cnn-momentum").unwrap();
    assert_eq!(a.name, "mnist-cnn-momentum");
    assert!(p1.ends_with("presets/mnist-cnn-momentum.toml"));
    let (_, b) = find_preset_in(&d, "presets/mnist-cnn-momentum.toml").unwrap();
    assert_eq!(a, b);
    let full = d.join("digits-mlp-sgd.toml");
    let (p3, c) = find_preset_in(&d, full.to_str().unwrap()).unwrap();
    assert_eq!((p3, c.name.as_str()), (full, "digits-mlp-sgd"));
    let e = find_preset_in(&d, "mnist-cnn-lamb").unwrap_err();
    let s = e.to_string();
    assert!(
        s.contains("no such preset") && s.contains("mnist-cnn-momentum"),
        "{s}"
    );
    // The default directory resolves to the bundled presets.
    assert!(presets_dir().join("digits-mlp-sgd.toml").is_file());
}
