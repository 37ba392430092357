//! `bench --peer`'s side: finding a python with JAX and running the peer scripts in `benches/peers`.

use std::path::PathBuf;

/// The python that runs the JAX peers: $SCALING_LAB_JAX_PYTHON, else the first `python3` on
/// `PATH` that imports jax.
pub fn peer_python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SCALING_LAB_JAX_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("python3"))
        .filter(|p| p.is_file())
        .find(|p| imports_jax(p))
}

fn imports_jax(python: &std::path::Path) -> bool {
    use std::process::{Command, Stdio};
    Command::new(python)
        .args(["-c", "import jax, optax"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What to do when no JAX python is found.
pub const PEER_PYTHON_HINT: &str = "no python with jax: set SCALING_LAB_JAX_PYTHON to one \
     (python3 -m venv ENV && ENV/bin/pip install jax optax) or put it first on PATH";

/// Directory of the peer scripts (`benches/peers`), from the crate root or the working directory.
pub fn peers_dir() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/peers");
    if built.exists() {
        built
    } else {
        PathBuf::from("benches/peers")
    }
}

/// Runs one peer script and parses its `examples_per_s=` figure.
pub fn run_peer(python: &std::path::Path, script: &str, args: &[String]) -> anyhow::Result<f64> {
    let out = std::process::Command::new(python)
        .arg(peers_dir().join(script))
        .args(args)
        .env("JAX_PLATFORMS", "cpu")
        .stdin(std::process::Stdio::null())
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    anyhow::ensure!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("")
    );
    parse_examples_per_s(&text)
        .ok_or_else(|| anyhow::anyhow!("{script}: no examples_per_s in {text:?}"))
}

pub fn parse_examples_per_s(line: &str) -> Option<f64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("examples_per_s="))
        .and_then(|v| v.parse().ok())
}
