//! What the trainer needs of a multi-node trial (`src/cluster` sets it up): one node's view of the
//! group (`ClusterSpec`: its rank, the coordinator, the ports), the collective configuration of
//! its local workers (burn-collective's global mode), and the group's loss — a node that died,
//! hung or failed its trial ends the trial on every node (`lose`, `trial_failed`; the liveness
//! links that detect it are `cluster::multinode::Liveness`). Parsing the flags and the Slurm
//! environment into a `ClusterSpec` is `cluster::multinode`.

use std::io::Write;
use std::net::TcpStream;
use std::ops::Range;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use burn_collective::CollectiveConfig;

/// One node's view of a multi-node set-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterSpec {
    pub nodes: usize,
    pub node_rank: usize,
    /// Rank 0's host (orchestrator, liveness).
    pub coordinator_host: String,
    /// The orchestrator's port.
    pub port: u16,
    /// The address other nodes reach this node at.
    pub node_host: String,
}

impl ClusterSpec {
    /// Every node on this machine (the coordinator and this node at a loopback address).
    pub fn is_loopback(&self) -> bool {
        let lo = |h: &str| h == "127.0.0.1" || h == "localhost" || h == "::1";
        lo(&self.coordinator_host) && lo(&self.node_host)
    }

    /// Replicas of one trial over all nodes.
    pub fn global_replicas(&self, local: usize) -> usize {
        self.nodes * local
    }

    /// The global batch split into N×G equal shards; this node's G of them.
    pub fn local_shards(&self, batch: usize, local: usize) -> anyhow::Result<Vec<Range<usize>>> {
        let all = crate::data::shard_ranges(batch, self.global_replicas(local))
            .map_err(|e| anyhow::anyhow!("{e} (over {} nodes)", self.nodes))?;
        Ok(all[self.node_rank * local..(self.node_rank + 1) * local].to_vec())
    }

    pub fn data_port(&self) -> u16 {
        self.port + 1 + self.node_rank as u16
    }

    pub fn liveness_port(&self) -> u16 {
        self.port + self.nodes as u16 + 1
    }

    /// The collective configuration of this node's `local` workers (global mode).
    pub fn collective_config(&self, local: usize) -> CollectiveConfig {
        let global: burn_communication::Address =
            format!("ws://{}:{}", self.coordinator_host, self.port)
                .parse()
                .expect("an address is any string");
        let node: burn_communication::Address =
            format!("ws://{}:{}", self.node_host, self.data_port())
                .parse()
                .expect("an address is any string");
        CollectiveConfig::default()
            .with_num_devices(local)
            .with_num_nodes(self.nodes as u32)
            .with_global_address(global)
            .with_node_address(node)
            .with_data_service_port(self.data_port())
    }

    pub fn label(&self) -> String {
        format!(
            "node {} of {} (coordinator {}:{})",
            self.node_rank, self.nodes, self.coordinator_host, self.port
        )
    }
}

/// The collective configuration of a trial's `local` workers: local only, or global with `cluster`.
pub fn collective_config(cluster: Option<&ClusterSpec>, local: usize) -> CollectiveConfig {
    match cluster {
        Some(c) => c.collective_config(local),
        None => CollectiveConfig::default().with_num_devices(local),
    }
}

static LOST: OnceLock<String> = OnceLock::new();
type Hook = Box<dyn Fn() + Send>;
static ON_LOSS: Mutex<Vec<Hook>> = Mutex::new(Vec::new());
/// This process's liveness links (to tell the other nodes that the group is lost).
static LINKS: Mutex<Vec<TcpStream>> = Mutex::new(Vec::new());

/// Keeps a liveness link of this process (`cluster::multinode::Liveness`): `lose` tells the other
/// node through it.
pub fn add_link(link: TcpStream) {
    lock(&LINKS).push(link);
}

/// Runs `f` on every liveness link of this process.
pub fn for_each_link(mut f: impl FnMut(&mut TcpStream)) {
    for s in lock(&LINKS).iter_mut() {
        f(s);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The group of this process is lost (a node died, hung, or failed its trial): keep the first
/// reason, abort every global collective call, run the hooks, tell the other nodes. Idempotent.
pub fn lose(reason: String) {
    let line = format!("X{}\n", reason.replace('\n', " "));
    if LOST.set(reason).is_err() {
        return;
    }
    burn_collective::abort_global_collective();
    for hook in lock(&ON_LOSS).iter() {
        hook();
    }
    for s in lock(&LINKS).iter_mut() {
        let _ = s.write_all(line.as_bytes());
        let _ = s.flush();
    }
}

/// Why the group of this process was lost, once it was.
pub fn lost() -> Option<String> {
    LOST.get().cloned()
}

/// Runs `hook` when the group is lost (at once if it already is).
pub fn on_loss(hook: impl Fn() + Send + 'static) {
    if LOST.get().is_some() {
        hook();
        return;
    }
    lock(&ON_LOSS).push(Box::new(hook));
}

/// A multi-node trial that failed with `err` on this node: the group is lost (the reason the
/// liveness links found, if one arrives within a moment, else this node's own error) and the
/// trial's error names it.
pub fn trial_failed(node_rank: usize, err: anyhow::Error) -> anyhow::Error {
    // A peer that died closes its sockets: the collective may see it a moment before the link.
    let t0 = Instant::now();
    while LOST.get().is_none() && t0.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
    if LOST.get().is_none() {
        lose(format!("node {node_rank}'s trial failed: {err:#}"));
    }
    anyhow::anyhow!(
        "multi-node trial failed: {}",
        lost().unwrap_or_else(|| format!("{err:#}"))
    )
}
