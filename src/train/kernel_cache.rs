//! CubeCL's on-disk caches for the GPU backends: compiled kernels (PTX on CUDA) and autotune
//! results, kept per user so that only the first process on a machine compiles.
//!
//! CubeCL leaves its kernel cache off unless a `cubecl.toml` turns it on, so every process
//! compiled all its kernels with NVRTC again. Measured on an H200 (docs/gpu.md): a 192-step
//! digits-MLP run took 7.7 s as a process without the cache and 0.8 s with it (1.6 ms a step),
//! and a whole two-trial sweep on cuda:0 took 3 s. Sweeps start processes often (the
//! device-memory fit probe, Slurm array tasks, `--resume`), so the cache is on by default here:
//!
//! * The caches live in `$XDG_CACHE_HOME/scaling-lab/kernels/<key>` (`~/.cache/…` on Linux), or
//!   under the directory named by `SCALING_LAB_KERNEL_CACHE`; `SCALING_LAB_KERNEL_CACHE=off` leaves
//!   CubeCL's own defaults. `<key>` is the device kind, e.g. `cuda-sm90`: PTX compiled for one GPU
//!   architecture is not loaded on another (CubeCL's cache key is the kernel alone), so a home
//!   directory shared by clusters with different GPUs keeps one cache per architecture.
//! * A `cubecl.toml` (or `burn.toml` with a `[cubecl]` section) in the working directory or
//!   above wins: its settings are kept, and only a kernel cache it leaves unset is filled in.
//! * A directory that cannot be written leaves the caches as CubeCL has them (CubeCL panics on a
//!   cache directory it cannot create).
//!
//! The configuration is global to the process and CubeCL reads it once, when the first device
//! starts; [`configure`] runs before that (the CUDA probe and wgpu's adapter enumeration call it).

use std::path::{Path, PathBuf};

/// Names the cache directory, or `off`.
pub const ENV: &str = "SCALING_LAB_KERNEL_CACHE";

/// The directory of the caches for device kind `key` (e.g. "cuda-sm90"): under `env`
/// (`SCALING_LAB_KERNEL_CACHE`) when it names a directory, none when it says `off` (or `0`,
/// `false`, `none`), else under the user's cache directory.
pub fn root(env: Option<&str>, user_cache: Option<&Path>, key: &str) -> Option<PathBuf> {
    let base = match env.map(str::trim) {
        Some(v)
            if matches!(
                v.to_ascii_lowercase().as_str(),
                "off" | "0" | "false" | "none"
            ) =>
        {
            return None
        }
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => user_cache?.join("scaling-lab").join("kernels"),
    };
    Some(base.join(key))
}

/// The CubeCL configuration file that applies in `dir`: the first of `cubecl.toml`,
/// `CubeCL.toml`, `burn.toml` or `Burn.toml` (the last two only with a `[cubecl]` section) in
/// `dir` or a parent — the search CubeCL itself makes.
pub fn user_config_file(dir: &Path) -> Option<PathBuf> {
    let mut d = Some(dir);
    while let Some(here) = d {
        for name in ["cubecl.toml", "CubeCL.toml"] {
            let p = here.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
        for name in ["burn.toml", "Burn.toml"] {
            let p = here.join(name);
            let has_section = std::fs::read_to_string(&p)
                .ok()
                .and_then(|s| s.parse::<toml::Table>().ok())
                .is_some_and(|t| t.contains_key("cubecl"));
            if has_section {
                return Some(p);
            }
        }
        d = here.parent();
    }
    None
}

/// Whether `dir` can hold the caches: created if missing, and a file can be written there.
#[cfg_attr(not(any(feature = "cuda", feature = "wgpu")), allow(dead_code))]
fn writable(dir: &Path) -> bool {
    if std::fs::create_dir_all(dir).is_err() {
        return false;
    }
    let probe = dir.join(format!(".write-test-{}", std::process::id()));
    let ok = std::fs::write(&probe, b"").is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// What [`configure`] did: the directory of the kernel cache, or why there is none.
pub type Configured = Result<PathBuf, String>;

static DONE: std::sync::OnceLock<Configured> = std::sync::OnceLock::new();

/// What [`configure`] did in this process, if a GPU backend has started (`devices` prints it).
pub fn configured() -> Option<&'static Configured> {
    DONE.get()
}

/// Turns CubeCL's kernel and autotune caches on for device kind `key` before the first device
/// starts (once per process; later calls return the first call's result). Never panics: a
/// configuration CubeCL has already read, or a malformed `cubecl.toml`, leaves CubeCL's own.
#[cfg(any(feature = "cuda", feature = "wgpu"))]
pub fn configure(key: &str) -> &'static Configured {
    DONE.get_or_init(|| configure_once(key))
}

#[cfg(any(feature = "cuda", feature = "wgpu"))]
fn configure_once(key: &str) -> Configured {
    use burn::cubecl::config::{cache::CacheConfig, CubeClRuntimeConfig, RuntimeConfig};

    let env = std::env::var(ENV).ok();
    let Some(dir) = root(env.as_deref(), dirs::cache_dir().as_deref(), key) else {
        return Err(format!("off ({ENV}={})", env.unwrap_or_default()));
    };
    if CubeClRuntimeConfig::storage().lock().is_some() {
        return Err("CubeCL's configuration was already read".into());
    }
    if !writable(&dir) {
        return Err(format!("{} cannot be written", dir.display()));
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let file = user_config_file(&cwd);
    let mut config = match &file {
        // CubeCL panics on a malformed file: leave the configuration to it (its error then
        // surfaces where the device starts, under the trial's own error handling).
        Some(f) => match std::panic::catch_unwind(CubeClRuntimeConfig::from_current_dir) {
            Ok(c) => c,
            Err(_) => return Err(format!("{} could not be read", f.display())),
        },
        None => CubeClRuntimeConfig::default(),
    };
    config = config.override_from_env();
    if config.compilation.cache.is_none() {
        config.compilation.cache = Some(CacheConfig::File(dir.clone()));
    }
    if file.is_none() {
        config.autotune.cache = CacheConfig::File(dir.clone());
    }
    let mut slot = CubeClRuntimeConfig::storage().lock();
    if slot.is_some() {
        return Err("CubeCL's configuration was already read".into());
    }
    *slot = Some(std::sync::Arc::new(config));
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_is_per_user_and_per_device_kind_unless_the_variable_says_otherwise() {
        let home = Path::new("/home/u/.cache");
        assert_eq!(
            root(None, Some(home), "cuda-sm90"),
            Some(PathBuf::from(
                "/home/u/.cache/scaling-lab/kernels/cuda-sm90"
            ))
        );
        assert_eq!(
            root(Some("/scratch/k"), Some(home), "cuda-sm80"),
            Some(PathBuf::from("/scratch/k/cuda-sm80"))
        );
        for off in ["off", "OFF", "0", "false", " none "] {
            assert_eq!(root(Some(off), Some(home), "wgpu"), None, "{off}");
        }
        // an empty variable is unset; no user cache directory and no variable: no cache
        assert_eq!(
            root(Some(""), Some(home), "wgpu"),
            Some(home.join("scaling-lab/kernels/wgpu"))
        );
        assert_eq!(root(None, None, "wgpu"), None);
    }

    #[test]
    fn a_cubecl_toml_or_a_burn_toml_with_a_cubecl_section_above_the_directory_is_found() {
        let t = tempfile::tempdir().unwrap();
        let deep = t.path().join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(user_config_file(&deep), None);
        // a burn.toml without [cubecl] is not CubeCL's
        std::fs::write(t.path().join("a/burn.toml"), "[other]\nx = 1\n").unwrap();
        assert_eq!(user_config_file(&deep), None);
        std::fs::write(
            t.path().join("a/burn.toml"),
            "[cubecl.compilation]\ncache = \"local\"\n",
        )
        .unwrap();
        assert_eq!(user_config_file(&deep), Some(t.path().join("a/burn.toml")));
        // the nearest wins, and cubecl.toml before burn.toml in one directory
        std::fs::write(t.path().join("a/b/cubecl.toml"), "").unwrap();
        assert_eq!(user_config_file(&deep), Some(deep.join("cubecl.toml")));
    }

    #[test]
    fn a_directory_that_cannot_be_created_is_not_used() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("f");
        std::fs::write(&file, "").unwrap();
        assert!(!writable(&file.join("under-a-file")));
        assert!(writable(&t.path().join("new/dir")));
    }
}
