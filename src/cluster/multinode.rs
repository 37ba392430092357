//! One trial data-parallel across N nodes (processes), G local workers each: the global batch is
//! split into N×G equal shards (node r takes shards r·G … r·G+G−1), gradients are all-reduced by
//! burn-collective's global mode (local reduce, then a ring across nodes through rank 0's
//! orchestrator), every replica applies the same update. Every node runs the same trial sequence
//! (same plan, same data order from the seed, same early-stopping caps because every node sees the
//! same evaluations); only rank 0 writes the run log.
//!
//! Ports: the orchestrator listens on the coordinator's PORT; node r serves tensors on PORT+1+r;
//! rank 0 listens for the liveness links on PORT+N+1.
//!
//! Liveness: every rank > 0 keeps one TCP link to rank 0 with a heartbeat each second. A link that
//! closes without a goodbye, or stays silent for `LIVENESS_TIMEOUT`, *loses the group* on the
//! surviving side (`lose`): the reason is kept, every pending and later global collective call of
//! the process returns an error at once (`burn_collective::abort_global_collective`, a vendored
//! patch), the registered hooks run (the sweep stops starting trials) and the other nodes are told
//! (`X` + the reason on their links; rank 0 passes it on). So the running trial fails on every node
//! with the reason, nothing waits forever, finished trials stay in the log and the process ends
//! with one error and the resume command. A node whose own trial fails loses the group the same
//! way (the peers would otherwise wait for its gradients). Without this, a dead peer leaves the
//! others blocked in an all-reduce.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::NodeArgs;
use crate::train::multinode::{add_link, for_each_link, lose, lost, ClusterSpec};
use anyhow::{bail, Context};

/// A silent or closed link to another node ends the trial after this long (≤ 30 s).
pub const LIVENESS_TIMEOUT: Duration = Duration::from_secs(10);
/// How long ranks wait for each other at start-up.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(120);

fn parse_num<T: std::str::FromStr>(what: &str, v: &str) -> anyhow::Result<T> {
    v.trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("{what}: `{v}` is not a number"))
}

/// The first host of a Slurm node list: `vm` → vm, `gpu[03-05,7],cpu1` → gpu03.
pub fn first_host(nodelist: &str) -> Option<String> {
    let s = nodelist.trim();
    if s.is_empty() {
        return None;
    }
    // the first entry ends at a comma outside brackets
    let mut depth = 0;
    let mut end = s.len();
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let first = &s[..end];
    match first.split_once('[') {
        None => Some(first.to_string()),
        Some((prefix, rest)) => {
            let inner = rest.trim_end_matches(']');
            let range = inner.split(',').next()?;
            let lo = range.split('-').next()?;
            Some(format!("{prefix}{lo}"))
        }
    }
}

impl ClusterSpec {
    /// From the flags, then the Slurm environment (`SLURM_NTASKS`, `SLURM_PROCID`,
    /// `SLURM_JOB_NODELIST`, `SLURM_JOB_ID`) and `SCALING_LAB_COORDINATOR`/`SCALING_LAB_NODE_HOST`.
    /// `None` when there is one node.
    pub fn from_args_env(
        args: &NodeArgs,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Option<ClusterSpec>> {
        let nodes = match args.nodes {
            Some(n) => n,
            None => match (env("SLURM_NTASKS"), env("SLURM_PROCID")) {
                (Some(n), Some(_)) => parse_num("SLURM_NTASKS", &n)?,
                _ => 1,
            },
        };
        anyhow::ensure!(nodes >= 1, "--nodes must be at least 1");
        if nodes == 1 {
            return Ok(None);
        }
        let node_rank = match args.node_rank {
            Some(r) => r,
            None => match env("SLURM_PROCID") {
                Some(r) => parse_num("SLURM_PROCID", &r)?,
                None => bail!("--nodes {nodes} needs --node-rank R (or SLURM_PROCID under srun)"),
            },
        };
        anyhow::ensure!(
            node_rank < nodes,
            "--node-rank {node_rank} is not below --nodes {nodes}"
        );
        let coord = match args
            .coordinator
            .clone()
            .or_else(|| env("SCALING_LAB_COORDINATOR"))
        {
            Some(c) => c,
            None => {
                let list = env("SLURM_JOB_NODELIST").or_else(|| env("SLURM_NODELIST"));
                let host = list.as_deref().and_then(first_host).with_context(|| {
                    format!("--nodes {nodes} needs --coordinator HOST:PORT (or SLURM_JOB_NODELIST)")
                })?;
                let job: u64 = env("SLURM_JOB_ID")
                    .map(|j| parse_num("SLURM_JOB_ID", &j))
                    .transpose()?
                    .unwrap_or(0);
                format!("{host}:{}", 20000 + (job % 1000) * 40)
            }
        };
        let (host, port) = coord
            .rsplit_once(':')
            .with_context(|| format!("--coordinator `{coord}`: expected HOST:PORT"))?;
        let port: u16 = parse_num("--coordinator port", port)?;
        anyhow::ensure!(
            (port as usize) + nodes < 65535,
            "--coordinator port {port} leaves no room for {nodes} node ports above it"
        );
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let loopback = host == "127.0.0.1" || host == "localhost" || host == "::1";
        let node_host = match env("SCALING_LAB_NODE_HOST") {
            Some(h) => h,
            None if loopback => "127.0.0.1".into(),
            None => env("SLURMD_NODENAME").unwrap_or_else(short_hostname),
        };
        Ok(Some(ClusterSpec {
            nodes,
            node_rank,
            coordinator_host: host,
            port,
            node_host,
        }))
    }
}

fn short_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().split('.').next().unwrap_or("").to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Starts burn-collective's orchestrator on rank 0 (once per process; it lives until exit).
pub fn ensure_orchestrator(spec: &ClusterSpec) -> anyhow::Result<()> {
    static STARTED: OnceLock<u16> = OnceLock::new();
    if spec.node_rank != 0 || STARTED.get().is_some() {
        return Ok(());
    }
    // Fail early and clearly if the port is taken (the orchestrator would only log it).
    drop(
        TcpListener::bind(("0.0.0.0", spec.port))
            .with_context(|| format!("the orchestrator port {} is not free", spec.port))?,
    );
    let port = spec.port;
    let mut err = None;
    STARTED.get_or_init(|| {
        let r = std::thread::Builder::new()
            .name("collective-orchestrator".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .enable_all()
                    .build()
                    .expect("a tokio runtime for the orchestrator");
                rt.block_on(burn_collective::start_global_orchestrator(port));
            });
        if let Err(e) = r {
            err = Some(e);
        }
        port
    });
    if let Some(e) = err {
        bail!("cannot start the orchestrator thread: {e}");
    }
    Ok(())
}

/// What a start-up failure or a lost link does to this process.
fn fail(reason: String) {
    lose(reason);
}

/// Goodbyes received from the other nodes (they finished their part normally).
static GOODBYES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The liveness links of this process (see the module doc). Call `goodbye` at the normal end.
pub struct Liveness {
    done: Arc<AtomicBool>,
    /// Goodbyes rank 0 waits for before it ends (the orchestrator lives in its process and the
    /// others still need it to finish their collective sessions); 0 on the other ranks.
    expect_goodbyes: usize,
}

impl Liveness {
    /// Starts the links: rank 0 accepts N−1 links; every other rank connects to rank 0.
    /// Returns at once; a start-up failure loses the group after `STARTUP_TIMEOUT`.
    pub fn start(spec: &ClusterSpec) -> anyhow::Result<Liveness> {
        let done = Arc::new(AtomicBool::new(false));
        if spec.node_rank == 0 {
            let listener =
                TcpListener::bind(("0.0.0.0", spec.liveness_port())).with_context(|| {
                    format!(
                        "cannot listen for the other nodes on port {}",
                        spec.liveness_port()
                    )
                })?;
            listener.set_nonblocking(true)?;
            let (d, expected) = (done.clone(), spec.nodes - 1);
            std::thread::Builder::new()
                .name("liveness-accept".into())
                .spawn(move || {
                    let t0 = Instant::now();
                    let mut seen = 0;
                    while seen < expected {
                        match listener.accept() {
                            Ok((stream, addr)) => {
                                seen += 1;
                                let _ = stream.set_nonblocking(false);
                                watch(stream, format!("the node at {}", addr.ip()), &d);
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                                if t0.elapsed() > STARTUP_TIMEOUT && !d.load(Ordering::SeqCst) {
                                    return fail(format!(
                                        "only {seen} of {expected} other nodes connected within {} s",
                                        STARTUP_TIMEOUT.as_secs()
                                    ));
                                }
                                std::thread::sleep(Duration::from_millis(50));
                            }
                            Err(e) => return fail(format!("liveness listener: {e}")),
                        }
                    }
                })?;
        } else {
            let addr = format!("{}:{}", spec.coordinator_host, spec.liveness_port());
            let d = done.clone();
            std::thread::Builder::new()
                .name("liveness-connect".into())
                .spawn(move || {
                    let t0 = Instant::now();
                    loop {
                        let r = addr
                            .to_socket_addrs()
                            .ok()
                            .and_then(|mut a| a.next())
                            .map(|a| TcpStream::connect_timeout(&a, Duration::from_secs(2)));
                        match r {
                            Some(Ok(stream)) => {
                                watch(stream, format!("rank 0 ({addr})"), &d);
                                return;
                            }
                            _ if t0.elapsed() > STARTUP_TIMEOUT => {
                                return fail(format!(
                                    "cannot reach rank 0 at {addr} within {} s",
                                    STARTUP_TIMEOUT.as_secs()
                                ))
                            }
                            _ => std::thread::sleep(Duration::from_millis(200)),
                        }
                    }
                })?;
        }
        let expect_goodbyes = if spec.node_rank == 0 {
            spec.nodes - 1
        } else {
            0
        };
        Ok(Liveness {
            done,
            expect_goodbyes,
        })
    }

    /// The normal end: tell the other nodes, stop watching. (A node that ends because its group
    /// was lost does not say goodbye: `lose` already told the others why.)
    pub fn goodbye(&self) {
        if lost().is_some() {
            return;
        }
        self.done.store(true, Ordering::SeqCst);
        for_each_link(|s| {
            let _ = s.write_all(b"B");
            let _ = s.flush();
        });
        // Rank 0 stays until every other node has said goodbye (bounded): they finish their
        // collective sessions with its orchestrator first.
        let t0 = Instant::now();
        while GOODBYES.load(Ordering::SeqCst) < self.expect_goodbyes
            && lost().is_none()
            && t0.elapsed() < LIVENESS_TIMEOUT
        {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// What one liveness link said.
#[derive(Debug, PartialEq)]
enum Heard {
    /// Heartbeats only, so far.
    Alive,
    /// `B`: the other node finished normally.
    Goodbye,
    /// `X<reason>\n`: the other node lost the group, for this reason.
    Lost(String),
}

/// Parses the bytes of one link; `pending` keeps a lost-reason that spans reads.
fn hear(bytes: &[u8], pending: &mut Option<Vec<u8>>) -> Heard {
    for &b in bytes {
        match pending {
            Some(reason) if b == b'\n' => {
                return Heard::Lost(String::from_utf8_lossy(reason).into_owned());
            }
            Some(reason) => reason.push(b),
            None if b == b'B' => return Heard::Goodbye,
            None if b == b'X' => *pending = Some(Vec::new()),
            None => {}
        }
    }
    Heard::Alive
}

/// Heartbeats out, and a reader that loses the group when the link dies without a goodbye.
fn watch(stream: TcpStream, who: String, done: &Arc<AtomicBool>) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(LIVENESS_TIMEOUT));
    if let Ok(w) = stream.try_clone() {
        add_link(w);
    }
    if let Ok(mut w) = stream.try_clone() {
        let d = done.clone();
        let _ = std::thread::Builder::new()
            .name("liveness-beat".into())
            .spawn(move || {
                while !d.load(Ordering::SeqCst) && lost().is_none() {
                    if w.write_all(b"H").is_err() {
                        return; // the reader reports it
                    }
                    std::thread::sleep(Duration::from_secs(1));
                }
            });
    }
    let d = done.clone();
    let _ = std::thread::Builder::new()
        .name("liveness-read".into())
        .spawn(move || {
            let mut r = stream;
            let mut buf = [0u8; 256];
            let mut pending: Option<Vec<u8>> = None;
            loop {
                match r.read(&mut buf) {
                    Ok(0) => {
                        if !d.load(Ordering::SeqCst) {
                            fail(match pending {
                                Some(reason) => format!(
                                    "{who} lost the group: {}",
                                    String::from_utf8_lossy(&reason)
                                ),
                                None => {
                                    format!("{who} closed its link without finishing (it died?)")
                                }
                            });
                        }
                        return;
                    }
                    Ok(n) => match hear(&buf[..n], &mut pending) {
                        Heard::Alive => {}
                        Heard::Goodbye => {
                            // it finished normally
                            GOODBYES.fetch_add(1, Ordering::SeqCst);
                            return;
                        }
                        Heard::Lost(reason) => {
                            return fail(format!("{who} lost the group: {reason}"));
                        }
                    },
                    Err(e) => {
                        if d.load(Ordering::SeqCst) || lost().is_some() {
                            return;
                        }
                        let what = if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) {
                            format!("no heartbeat for {} s", LIVENESS_TIMEOUT.as_secs())
                        } else {
                            e.to_string()
                        };
                        return fail(format!("lost {who}: {what}"));
                    }
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(map: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = map
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn first_host_of_nodelists() {
        assert_eq!(first_host("vm").as_deref(), Some("vm"));
        assert_eq!(first_host("gpu[03-05,7],cpu1").as_deref(), Some("gpu03"));
        assert_eq!(first_host("a1,b2").as_deref(), Some("a1"));
        assert_eq!(first_host("n[1]").as_deref(), Some("n1"));
        assert_eq!(first_host(""), None);
    }

    #[test]
    fn flags_and_slurm_environment() {
        let none = NodeArgs::default();
        // one node: nothing to do
        assert_eq!(ClusterSpec::from_args_env(&none, &env(&[])).unwrap(), None);
        // an array task: SLURM_NTASKS=1
        let e = env(&[("SLURM_NTASKS", "1"), ("SLURM_PROCID", "0")]);
        assert_eq!(ClusterSpec::from_args_env(&none, &e).unwrap(), None);
        // srun with 4 tasks
        let e = env(&[
            ("SLURM_NTASKS", "4"),
            ("SLURM_PROCID", "2"),
            ("SLURM_JOB_NODELIST", "gpu[07-10]"),
            ("SLURM_JOB_ID", "1234"),
            ("SLURMD_NODENAME", "gpu09"),
        ]);
        let s = ClusterSpec::from_args_env(&none, &e).unwrap().unwrap();
        assert_eq!(s.nodes, 4);
        assert_eq!(s.node_rank, 2);
        assert_eq!(s.coordinator_host, "gpu07");
        assert_eq!(s.port, 20000 + 234 * 40);
        assert_eq!(s.node_host, "gpu09");
        assert_eq!(s.data_port(), s.port + 3);
        assert_eq!(s.liveness_port(), s.port + 5);
        // flags win; loopback coordinator → loopback node address
        let a = NodeArgs {
            nodes: Some(2),
            node_rank: Some(1),
            coordinator: Some("127.0.0.1:29500".into()),
        };
        let s = ClusterSpec::from_args_env(&a, &e).unwrap().unwrap();
        assert_eq!((s.nodes, s.node_rank, s.port), (2, 1, 29500));
        assert_eq!(s.node_host, "127.0.0.1");
        // errors
        let bad = NodeArgs {
            nodes: Some(2),
            node_rank: Some(2),
            coordinator: Some("h:1".into()),
        };
        assert!(ClusterSpec::from_args_env(&bad, &env(&[])).is_err());
        let no_rank = NodeArgs {
            nodes: Some(2),
            ..Default::default()
        };
        assert!(ClusterSpec::from_args_env(&no_rank, &env(&[])).is_err());
        let no_port = NodeArgs {
            nodes: Some(2),
            node_rank: Some(0),
            coordinator: Some("h".into()),
        };
        assert!(ClusterSpec::from_args_env(&no_port, &env(&[])).is_err());
    }

    #[test]
    fn shards_split_the_global_batch_over_all_replicas() {
        let s = ClusterSpec {
            nodes: 2,
            node_rank: 1,
            coordinator_host: "127.0.0.1".into(),
            port: 1000,
            node_host: "127.0.0.1".into(),
        };
        assert_eq!(s.local_shards(64, 1).unwrap(), vec![32..64]);
        assert_eq!(s.local_shards(64, 2).unwrap(), vec![32..48, 48..64]);
        assert!(s.local_shards(6, 4).is_err());
    }

    #[test]
    fn liveness_messages_parse_across_reads() {
        let mut p = None;
        assert_eq!(hear(b"HHH", &mut p), Heard::Alive);
        assert_eq!(hear(b"HB", &mut p), Heard::Goodbye);
        let mut p = None;
        assert_eq!(hear(b"HXnode 1's tri", &mut p), Heard::Alive);
        assert_eq!(
            hear(b"al failed: boom\nH", &mut p),
            Heard::Lost("node 1's trial failed: boom".into())
        );
        // a `B` inside a reason is text, not a goodbye
        let mut p = None;
        assert_eq!(hear(b"XBad\n", &mut p), Heard::Lost("Bad".into()));
    }
}
