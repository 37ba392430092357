//! Where presets come from: the bundled ones (embedded in the binary, or a presets directory)
//! and the user's own (a per-user presets directory), listed and found by name or path.

use std::path::{Path, PathBuf};

use super::load::{load_preset, parse_preset, PresetError};
use super::spec::Preset;

/// Environment variable naming a presets directory (when set, only it is used).
pub const PRESETS_DIR_ENV: &str = "SCALING_LAB_PRESETS_DIR";

/// The bundled presets, embedded at build time so that an installed binary lists and runs them
/// from anywhere: (name, TOML text). A test checks that every `presets/*.toml` is here.
pub const EMBEDDED_PRESETS: &[(&str, &str)] = &[
    (
        "cifar10-resnet8-adam",
        include_str!("../../presets/cifar10-resnet8-adam.toml"),
    ),
    (
        "cifar10-resnet8-momentum",
        include_str!("../../presets/cifar10-resnet8-momentum.toml"),
    ),
    (
        "cifar10-resnet8-sgd",
        include_str!("../../presets/cifar10-resnet8-sgd.toml"),
    ),
    (
        "digits-mlp-adam",
        include_str!("../../presets/digits-mlp-adam.toml"),
    ),
    (
        "digits-mlp-momentum",
        include_str!("../../presets/digits-mlp-momentum.toml"),
    ),
    (
        "digits-mlp-nesterov",
        include_str!("../../presets/digits-mlp-nesterov.toml"),
    ),
    (
        "digits-mlp-sgd",
        include_str!("../../presets/digits-mlp-sgd.toml"),
    ),
    (
        "fashion-cnn-adam",
        include_str!("../../presets/fashion-cnn-adam.toml"),
    ),
    (
        "fashion-cnn-momentum",
        include_str!("../../presets/fashion-cnn-momentum.toml"),
    ),
    (
        "fashion-cnn-paper-adam",
        include_str!("../../presets/fashion-cnn-paper-adam.toml"),
    ),
    (
        "fashion-cnn-paper-momentum",
        include_str!("../../presets/fashion-cnn-paper-momentum.toml"),
    ),
    (
        "fashion-cnn-paper-sgd",
        include_str!("../../presets/fashion-cnn-paper-sgd.toml"),
    ),
    (
        "fashion-cnn-sgd",
        include_str!("../../presets/fashion-cnn-sgd.toml"),
    ),
    (
        "mnist-cnn-adam",
        include_str!("../../presets/mnist-cnn-adam.toml"),
    ),
    (
        "mnist-cnn-momentum",
        include_str!("../../presets/mnist-cnn-momentum.toml"),
    ),
    (
        "mnist-cnn-paper-adam",
        include_str!("../../presets/mnist-cnn-paper-adam.toml"),
    ),
    (
        "mnist-cnn-paper-momentum",
        include_str!("../../presets/mnist-cnn-paper-momentum.toml"),
    ),
    (
        "mnist-cnn-paper-sgd",
        include_str!("../../presets/mnist-cnn-paper-sgd.toml"),
    ),
    (
        "mnist-cnn-sgd",
        include_str!("../../presets/mnist-cnn-sgd.toml"),
    ),
    (
        "mnist-resnet-momentum",
        include_str!("../../presets/mnist-resnet-momentum.toml"),
    ),
    ("nqm-adam", include_str!("../../presets/nqm-adam.toml")),
    (
        "nqm-momentum",
        include_str!("../../presets/nqm-momentum.toml"),
    ),
    ("nqm-sgd", include_str!("../../presets/nqm-sgd.toml")),
    (
        "reviews-lstm-adam",
        include_str!("../../presets/reviews-lstm-adam.toml"),
    ),
    (
        "reviews-mlstm-paper-adam",
        include_str!("../../presets/reviews-mlstm-paper-adam.toml"),
    ),
    (
        "shakespeare-lstm-adam",
        include_str!("../../presets/shakespeare-lstm-adam.toml"),
    ),
    (
        "shakespeare-mlstm-adam",
        include_str!("../../presets/shakespeare-mlstm-adam.toml"),
    ),
    (
        "shakespeare-mlstm-paper-adam",
        include_str!("../../presets/shakespeare-mlstm-paper-adam.toml"),
    ),
    (
        "shakespeare-transformer-adam",
        include_str!("../../presets/shakespeare-transformer-adam.toml"),
    ),
];

/// Environment variable naming the user's presets directory (default: the platform's config
/// directory, `~/.config/scaling-lab/presets` on Linux).
pub const USER_PRESETS_DIR_ENV: &str = "SCALING_LAB_USER_PRESETS_DIR";

/// The user's presets directory: `SCALING_LAB_USER_PRESETS_DIR`, else
/// `<config dir>/scaling-lab/presets`; None when the platform has no config directory. Its
/// presets are listed beside the bundled ones (marked as the user's); a user preset may not take
/// a bundled preset's name (an error naming both files, never a silent choice).
pub fn user_presets_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os(USER_PRESETS_DIR_ENV) {
        if !d.is_empty() {
            return Some(PathBuf::from(d));
        }
    }
    dirs::config_dir().map(|c| c.join("scaling-lab").join("presets"))
}

/// A preset listed by [`list_all_presets`].
#[derive(Clone, Debug)]
pub struct Listed {
    pub path: PathBuf,
    pub preset: Result<Preset, PresetError>,
    /// From the user's presets directory.
    pub user: bool,
}

/// The bundled presets of `dir` ([`list_presets`]) then the user's presets of `user_dir` (a
/// missing user directory lists none; an unreadable one is one error entry). A user preset whose
/// file name is a bundled preset's is an error entry: names select presets, and one name must
/// not mean two files.
pub fn list_all_presets(dir: &Path, user_dir: Option<&Path>) -> Vec<Listed> {
    let bundled = list_presets(dir);
    let names: Vec<String> = bundled.iter().filter_map(|(p, _)| stem(p)).collect();
    let mut out: Vec<Listed> = bundled
        .into_iter()
        .map(|(path, preset)| Listed {
            path,
            preset,
            user: false,
        })
        .collect();
    let Some(user_dir) = user_dir.filter(|d| d.symlink_metadata().is_ok()) else {
        return out;
    };
    for (path, preset) in read_preset_dir(user_dir) {
        let preset = match stem(&path).filter(|s| names.contains(s)) {
            Some(name) => Err(shadow_error(&path, &name, dir)),
            None => preset,
        };
        out.push(Listed {
            path,
            preset,
            user: true,
        });
    }
    out
}

fn stem(p: &Path) -> Option<String> {
    p.file_stem().map(|s| s.to_string_lossy().into_owned())
}

fn shadow_error(path: &Path, name: &str, dir: &Path) -> PresetError {
    let bundled = if use_embedded(dir) {
        format!("{EMBEDDED_PREFIX}/{name}.toml")
    } else {
        dir.join(format!("{name}.toml")).display().to_string()
    };
    PresetError {
        path: path.to_path_buf(),
        line: 0,
        col: 0,
        message: format!(
            "this user preset has the name of the bundled preset {bundled}: rename the file \
             (a name selects one preset)"
        ),
    }
}

/// The name under which embedded presets are shown (`<bundled>/NAME.toml`).
pub const EMBEDDED_PREFIX: &str = "<bundled>";

/// The presets directory: `SCALING_LAB_PRESETS_DIR`, else `<crate>/presets` if it exists, else
/// `./presets`. When no such directory exists the embedded presets are used ([`list_presets`],
/// [`find_preset`]).
pub fn presets_dir() -> PathBuf {
    if let Some(d) = std::env::var_os(PRESETS_DIR_ENV) {
        if !d.is_empty() {
            return PathBuf::from(d);
        }
    }
    let bundled = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/presets"));
    if bundled.is_dir() {
        return bundled;
    }
    PathBuf::from("./presets")
}

/// Whether `dir` is missing and not explicitly chosen, so the embedded presets stand in for it.
fn use_embedded(dir: &Path) -> bool {
    let explicit = std::env::var_os(PRESETS_DIR_ENV).is_some_and(|d| !d.is_empty());
    !explicit && dir.symlink_metadata().is_err()
}

/// The embedded presets, parsed (each must be valid: a test checks it).
pub fn embedded_presets() -> Vec<(PathBuf, Result<Preset, PresetError>)> {
    EMBEDDED_PRESETS
        .iter()
        .map(|(name, text)| {
            let path = PathBuf::from(format!("{EMBEDDED_PREFIX}/{name}.toml"));
            let r = parse_preset(&path, text);
            (path, r)
        })
        .collect()
}

/// Every `*.toml` in `dir`, loaded, sorted by file name. An unreadable directory gives one
/// entry with its error; a missing default directory (no `SCALING_LAB_PRESETS_DIR`) gives the
/// embedded presets.
pub fn list_presets(dir: &Path) -> Vec<(PathBuf, Result<Preset, PresetError>)> {
    if use_embedded(dir) {
        return embedded_presets();
    }
    read_preset_dir(dir)
}

/// Every `*.toml` in `dir`, loaded, sorted by file name (an unreadable directory: one entry with
/// its error).
fn read_preset_dir(dir: &Path) -> Vec<(PathBuf, Result<Preset, PresetError>)> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            return vec![(
                dir.to_path_buf(),
                Err(PresetError {
                    path: dir.to_path_buf(),
                    line: 0,
                    col: 0,
                    message: format!("cannot read presets directory: {e}"),
                }),
            )]
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    paths
        .into_iter()
        .map(|p| {
            let r = load_preset(&p);
            (p, r)
        })
        .collect()
}

/// Find a preset by name (`mnist-cnn-momentum`, looked up in [`presets_dir`], else among the
/// embedded presets) or by path (`presets/mnist-cnn-momentum.toml`, anything ending in `.toml` or
/// containing a `/`). A path is only ever that file: a missing path is an error, never the
/// bundled preset of the same name.
pub fn find_preset(name_or_path: &str) -> Result<(PathBuf, Preset), PresetError> {
    find_preset_in(&presets_dir(), name_or_path)
}

/// [`find_preset`] with an explicit presets directory.
pub fn find_preset_in(dir: &Path, name_or_path: &str) -> Result<(PathBuf, Preset), PresetError> {
    let as_path = Path::new(name_or_path);
    let looks_like_path = name_or_path.ends_with(".toml")
        || name_or_path.contains('/')
        || name_or_path.contains(std::path::MAIN_SEPARATOR);
    if looks_like_path {
        // Exactly this file (load_preset names a missing one, a FIFO, a directory…).
        return load_preset(as_path).map(|p| (as_path.to_path_buf(), p));
    }
    let user = user_presets_dir()
        .map(|d| d.join(format!("{name_or_path}.toml")))
        .filter(|c| c.symlink_metadata().is_ok());
    let bundled: Option<Result<(PathBuf, Preset), PresetError>> = if use_embedded(dir) {
        EMBEDDED_PRESETS
            .iter()
            .find(|(n, _)| *n == name_or_path)
            .map(|(_, text)| {
                let path = PathBuf::from(format!("{EMBEDDED_PREFIX}/{name_or_path}.toml"));
                parse_preset(&path, text).map(|p| (path, p))
            })
    } else {
        let candidate = dir.join(format!("{name_or_path}.toml"));
        (candidate.symlink_metadata().is_ok())
            .then(|| load_preset(&candidate).map(|p| (candidate, p)))
    };
    match (bundled, user) {
        (Some(_), Some(u)) => Err(shadow_error(&u, name_or_path, dir)),
        (Some(b), None) => b,
        (None, Some(u)) => load_preset(&u).map(|p| (u, p)),
        (None, None) => Err(not_found(dir, name_or_path)),
    }
}

/// The stems of the `*.toml` files in `dir` (none when it cannot be read).
fn read_preset_dir_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let p = e.path();
                    (p.extension()? == "toml").then(|| stem(&p)).flatten()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Edit distance (insertions, deletions, substitutions, and a swap of two neighbouring
/// characters counted as one edit) between `a` and `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // d[i][j]: distance between a[..i] and b[..j]
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// The known name closest to `name` (the first in order on ties) when it is a likely typo: one
/// or two edits away (one for a name under 6 characters). Farther off ("mnist-cnn-lamb", 3 from
/// "mnist-cnn-adam") it is more likely another name than a typo: no suggestion.
pub fn did_you_mean<'a>(name: &str, known: &'a [String]) -> Option<&'a str> {
    let limit = if name.chars().count() < 6 { 1 } else { 2 };
    known
        .iter()
        .map(|k| (edit_distance(name, k), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.as_str())
}

fn not_found(dir: &Path, name: &str) -> PresetError {
    let mut known = read_preset_dir_names(dir);
    if use_embedded(dir) {
        known = EMBEDDED_PRESETS
            .iter()
            .map(|(n, _)| n.to_string())
            .collect();
    }
    if let Some(u) = user_presets_dir() {
        known.extend(read_preset_dir_names(&u));
    }
    known.sort();
    known.dedup();
    let hint = match (known.is_empty(), did_you_mean(name, &known)) {
        (true, _) => format!("no presets in {}", dir.display()),
        (false, Some(close)) => format!(
            "did you mean {close}? `scaling-lab presets` lists all {}",
            known.len()
        ),
        (false, None) => format!("known presets: {}", known.join(", ")),
    };
    PresetError {
        path: PathBuf::from(name),
        line: 0,
        col: 0,
        message: format!("no such preset ({hint})"),
    }
}

/// The text of a preset file holding `p` exactly (what `--save-preset` and Setup's save write):
/// `comment` as its header, every setting explicit — nothing left to a calibration stage — and
/// `concurrency` left out where the scheduler chose it. Loads back to the same study (checked).
pub fn preset_file_text(p: &Preset, comment: &str) -> Result<String, String> {
    let mut p = p.clone();
    let auto = p.sweep.auto_concurrency;
    p.calibrate = None;
    p.sweep.auto_concurrency = false;
    let mut table = toml::Table::try_from(&p).map_err(|e| e.to_string())?;
    // the settings this workload does not use (the loader refuses them in a file)
    for (keys, _) in super::load::unused_settings(&p) {
        let (last, tables) = keys.split_last().expect("a key path");
        let mut t = Some(&mut table);
        for k in tables {
            t = t.and_then(|t| t.get_mut(*k)).and_then(|v| v.as_table_mut());
        }
        if let Some(t) = t {
            t.remove(*last);
        }
    }
    if let Some(sw) = table.get_mut("sweep").and_then(|v| v.as_table_mut()) {
        if auto {
            sw.remove("concurrency");
        }
        // (left out, a file gets the default confirm stage)
        if p.sweep.confirm.is_none() {
            sw.insert("confirm".into(), toml::Value::String("off".into()));
        }
    }
    let body = toml::to_string(&table).map_err(|e| e.to_string())?;
    let head: String = comment
        .lines()
        .map(|l| format!("# {l}\n").replace("# \n", "#\n"))
        .collect();
    let text = format!("{head}\n{body}");
    let back = parse_preset(Path::new(&format!("{}.toml", p.name)), &text)
        .map_err(|e| format!("the saved preset would not load: {e}"))?;
    let mut want = p.clone();
    want.sweep.auto_concurrency = auto;
    if back != want {
        return Err(format!(
            "the saved preset would load as another study ({}; a bug: please report it)",
            first_difference(
                &serde_json::to_value(&back).unwrap_or_default(),
                &serde_json::to_value(&want).unwrap_or_default(),
                ""
            )
            .unwrap_or_default()
        ));
    }
    Ok(text)
}

/// Writes `p` as the user's preset `name` (`<user presets dir>/NAME.toml`): refused where a
/// bundled preset or an existing file has that name. Returns the path.
pub fn save_user_preset(name: &str, p: &Preset, comment: &str) -> Result<PathBuf, String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        || name.starts_with('.')
    {
        return Err(format!(
            "`{name}` is not a preset name: use letters, digits, '-', '_' and '.'"
        ));
    }
    if EMBEDDED_PRESETS.iter().any(|(n, _)| *n == name) {
        return Err(format!(
            "`{name}` is a bundled preset's name: choose another"
        ));
    }
    let dir = user_presets_dir()
        .ok_or("this platform has no config directory: set SCALING_LAB_USER_PRESETS_DIR")?;
    let path = dir.join(format!("{name}.toml"));
    if path.symlink_metadata().is_ok() {
        return Err(format!(
            "{} exists already: choose another name, or delete it first",
            path.display()
        ));
    }
    let mut p = p.clone();
    p.name = name.to_string();
    let text = preset_file_text(&p, comment)?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // written whole or not at all
    let tmp = dir.join(format!(".{name}.toml.{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// The first path at which two JSON values differ, with both values.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: &str) -> Option<String> {
    use serde_json::Value as V;
    match (a, b) {
        (V::Object(x), V::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let (u, v) = (x.get(k).unwrap_or(&V::Null), y.get(k).unwrap_or(&V::Null));
                if let Some(d) = first_difference(u, v, &format!("{at}.{k}")) {
                    return Some(d);
                }
            }
            None
        }
        _ if a == b => None,
        _ => Some(format!("{at}: {a} loaded, {b} saved")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_one_edit_per_typo() {
        assert_eq!(edit_distance("digits-mlp-sgd", "digits-mlp-sgd"), 0);
        // a swap of neighbours is one edit
        assert_eq!(edit_distance("digits-mlp-sdg", "digits-mlp-sgd"), 1);
        assert_eq!(edit_distance("nqm-sg", "nqm-sgd"), 1);
        assert_eq!(edit_distance("nqm-sgdd", "nqm-sgd"), 1);
        assert_eq!(edit_distance("nqm-adam", "nqm-sgd"), 4);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn did_you_mean_names_a_close_preset_only() {
        let known: Vec<String> = EMBEDDED_PRESETS
            .iter()
            .map(|(n, _)| n.to_string())
            .collect();
        assert_eq!(
            did_you_mean("digits-mlp-sdg", &known),
            Some("digits-mlp-sgd")
        );
        assert_eq!(
            did_you_mean("mnist-cnn-momentun", &known),
            Some("mnist-cnn-momentum")
        );
        assert_eq!(did_you_mean("resnet", &known), None);
        // three edits from mnist-cnn-adam: another name, not a typo
        assert_eq!(did_you_mean("mnist-cnn-lamb", &known), None);
        assert_eq!(did_you_mean("nqm-sdg", &known), Some("nqm-sgd"));
        assert_eq!(did_you_mean("x", &known), None);
    }

    #[test]
    fn a_typo_of_a_bundled_preset_is_named_in_the_error() {
        let e = find_preset_in(Path::new("/nonexistent-presets-dir"), "digits-mlp-sdg")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains("did you mean digits-mlp-sgd?"), "{e}");
        assert!(!e.contains("cifar10"), "no list of every preset: {e}");
        let e = find_preset_in(Path::new("/nonexistent-presets-dir"), "zzzz")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("known presets: ") && e.contains("digits-mlp-sgd"),
            "{e}"
        );
    }
}
