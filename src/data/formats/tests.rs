//! Every registered format held to the same contracts: its sample loads through the one loader,
//! its keys are the ones it says it takes, its row of docs/datasets.md's table is the registry's,
//! and it brings hostile inputs. A format added to the registration is tested by these without a
//! test of its own (the binary-level corpus is `tests/inputs/corpus_data.rs`).

use super::*;
use crate::data::spec::DatasetSpec;

/// The `[workload.dataset]` table `table` (paths relative to `dir`) as the preset loader resolves it.
fn spec_of(table: &str, dir: &Path) -> DatasetSpec {
    let mut spec: DatasetSpec = toml::from_str(table).unwrap_or_else(|e| panic!("{table}: {e}"));
    spec.resolve_paths(dir).unwrap();
    spec
}

#[test]
fn every_format_is_registered_once_by_its_name() {
    let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
    for f in Format::ALL {
        assert_eq!(Format::named(f.name()), Some(*f));
        assert_eq!(names.iter().filter(|n| **n == f.name()).count(), 1);
        // the name a preset gives is the name serde reads and writes
        let json = serde_json::to_string(f).unwrap();
        assert_eq!(json, format!("\"{}\"", f.name()));
        assert_eq!(serde_json::from_str::<Format>(&json).unwrap(), *f);
    }
    let e = serde_json::from_str::<Format>("\"idxx\"")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unknown variant `idxx`, expected one of `idx`"),
        "{e}"
    );
}

#[test]
fn every_format_sample_loads_through_the_one_loader() {
    for f in Format::ALL {
        let dir = tempfile::tempdir().unwrap();
        let sample = (f.def().sample)();
        sample.write(dir.path()).unwrap();
        let spec = spec_of(&sample.table, dir.path());
        assert_eq!(spec.format, Some(*f), "{}", f.name());
        let d = crate::data::load(&spec).unwrap_or_else(|e| panic!("{}: {e}", f.name()));
        let n = match &d {
            crate::data::Dataset::Images(im) => im.n_train() + im.n_val(),
            crate::data::Dataset::Text(t) => t.train.len() + t.val.len(),
        };
        assert!(n >= 20, "{}: {n} examples", f.name());
        assert!(
            !d.files().is_empty(),
            "{}: its files are recorded",
            f.name()
        );
    }
}

#[test]
fn every_format_takes_the_keys_it_says_and_no_other() {
    for f in Format::ALL {
        let def = f.def();
        let dir = tempfile::tempdir().unwrap();
        let sample = (def.sample)();
        let spec = spec_of(&sample.table, dir.path());
        assert!(spec.source().is_ok(), "{}", def.name);
        // each key the format does not take is refused at the key
        let others = [
            ("classes", "classes = 10"),
            ("label", "label = \"fine\""),
            ("layout", "layout = \"nhw\""),
            ("image_size", "image_size = [2, 2]"),
            ("channels", "channels = 1"),
            ("dtype", "dtype = \"u16\""),
            ("vocab", "vocab = 10"),
        ];
        for (key, line) in others {
            let given = sample
                .table
                .lines()
                .any(|l| l.starts_with(&format!("{key} =")));
            if given {
                assert!(
                    def.keys.contains(&key),
                    "{}: its sample sets {key}",
                    def.name
                );
                continue;
            }
            let with = spec_of(&format!("{}\n{line}", sample.table), dir.path());
            match def.keys.contains(&key) {
                false => {
                    let p = with.source().unwrap_err();
                    assert_eq!(p.key, [key], "{}: {p:?}", def.name);
                    assert!(p.message.contains("has no effect on format"), "{p:?}");
                }
                true => assert!(with.source().is_ok(), "{}: {key}", def.name),
            }
        }
        // `train` of another shape is refused at `train`, saying the shape it takes
        let other = match def.part {
            PartShape::Pair | PartShape::Archive => "train = \"x.bin\"",
            PartShape::Folder | PartShape::Files => "train = { images = \"x\", labels = \"y\" }",
        };
        let table: String = sample
            .table
            .lines()
            .map(|l| if l.starts_with("train =") { other } else { l })
            .collect::<Vec<_>>()
            .join("\n");
        let p = spec_of(&table, dir.path()).source().unwrap_err();
        assert_eq!(p.key, ["train"], "{}: {p:?}", def.name);
        assert!(p.message.contains(def.train), "{}: {p:?}", def.name);
    }
}

#[test]
fn every_format_brings_hostile_inputs() {
    for f in Format::ALL {
        let cases = (f.def().hostile)();
        assert!(!cases.is_empty(), "{} brings no hostile inputs", f.name());
        for c in cases {
            assert!(!c.says.is_empty(), "{}: {}: says nothing", f.name(), c.name);
        }
    }
}

/// The formats' table of docs/datasets.md, as the registry writes it.
fn docs_table() -> String {
    let mut out = vec![
        "| format | `train` / `val` | other keys | notes |".to_string(),
        "|---|---|---|---|".to_string(),
    ];
    for f in Format::ALL {
        let d = f.def();
        out.push(format!(
            "| `{}` | `{}` | {} | {} |",
            d.name, d.train, d.keys_doc, d.notes
        ));
    }
    out.join("\n")
}

#[test]
fn the_docs_list_every_format_as_the_registry_defines_it() {
    let docs = include_str!("../../../docs/datasets.md");
    let table = docs_table();
    assert!(
        docs.contains(&table),
        "docs/datasets.md's formats table is not the registry's; it should read:\n\n{table}\n"
    );
    let line = format!("# your files: {}", Format::names());
    assert!(docs.contains(&line), "docs/datasets.md should say `{line}`");
}
