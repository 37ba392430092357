//! The headless CLI: one module per subcommand, plus what they share — the error policy (every
//! error is one line naming the flag; exit 2 for usage, 1 for runtime, 130 after ctrl-c, never a
//! panic), stdout writes that never hold the lock and treat a closed pipe as a normal end, the
//! read-a-log-and-print-its-warnings step, and the ctrl-c/SIGTERM policy.
//!
//! Layering: the top, beside `tui` (the binary's module); imports the library, never prints
//! anything the library did not render (`report` renders, `cli` writes).

pub mod args;
pub mod checks;
pub mod devices;
pub mod export;
pub mod misc;
pub mod report;
pub mod sweep;
pub mod sweep_peer;
pub mod train;
pub mod train_schedule;

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use scaling_lab::runlog::{self, RunLog};
use scaling_lab::sweep::overrides::Problem;

/// What a subcommand ends with.
pub type CmdResult = anyhow::Result<ExitCode>;

/// A usage error (a bad flag or flag combination): exit code 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// A usage error as an `anyhow::Error`.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Usage(msg.into()))
}

/// Fails with the first blocking problem (a usage error naming its flag); prints the others as
/// warnings.
pub fn check_problems(problems: &[Problem]) -> anyhow::Result<()> {
    for p in problems.iter().filter(|p| !p.blocking) {
        eprintln!("warning: {p}");
    }
    match problems.iter().find(|p| p.blocking) {
        Some(p) => Err(usage(p.to_string())),
        None => Ok(()),
    }
}

/// One line: newlines of a multi-line message joined with "; ".
fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// A clap parse error: `--help`/`--version` print in full (exit 0); a usage error prints its first
/// line (it names the flag) with clap's tips ("a similar argument exists") and exits 2.
pub fn clap_error(e: clap::Error) -> ExitCode {
    if !e.use_stderr() {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    let text = e.to_string();
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("error: bad arguments");
    let mut line = first.trim_end().to_string();
    // "the following required arguments were not provided:" lists them on the next lines: name
    // them on this one.
    if e.kind() == clap::error::ErrorKind::MissingRequiredArgument {
        if let Some(clap::error::ContextValue::Strings(args)) =
            e.get(clap::error::ContextKind::InvalidArg)
        {
            line = format!("{line} {}", args.join(", "));
        }
    }
    // clap's "tip: a similar argument exists: '--trials'" (and the subcommand's) on the same line
    for tip in text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("tip:"))
    {
        line = format!("{line}; {tip}");
    }
    eprintln!("{line}");
    ExitCode::from(2)
}

/// The command line with a flag's value that starts with a hyphen attached to it
/// (`--until -inf` → `--until=-inf`, `--confirm -1x5` → `--confirm=-1x5`): clap would read such
/// a value as an unknown flag ("unexpected argument '-i' found") where the value's own error names
/// the flag. A value starting with `--` stays a flag (`--until --json`: the value is missing).
pub fn hyphen_values(
    cmd: &clap::Command,
    args: Vec<std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut current = cmd.clone();
    let mut it = args.into_iter();
    if let Some(bin) = it.next() {
        out.push(bin);
    }
    let takes_value = |c: &clap::Command, name: &str| {
        c.get_arguments()
            .chain(cmd.get_arguments().filter(|a| a.is_global_set()))
            .any(|a| a.get_long() == Some(name) && a.get_action().takes_values())
    };
    while let Some(arg) = it.next() {
        let text = arg.to_string_lossy().into_owned();
        if text == "--" {
            out.push(arg);
            out.extend(it);
            break;
        }
        if let Some(name) = text.strip_prefix("--").filter(|n| !n.contains('=')) {
            if takes_value(&current, name) {
                let next = it
                    .as_slice()
                    .first()
                    .map(|n| n.to_string_lossy().into_owned());
                match next {
                    Some(v) if v.starts_with('-') && v.len() > 1 && !v.starts_with("--") => {
                        it.next();
                        out.push(format!("--{name}={v}").into());
                    }
                    // the value as it is (never taken for a subcommand's name)
                    Some(v) if !v.starts_with('-') => {
                        out.push(arg);
                        out.extend(it.next());
                    }
                    _ => out.push(arg),
                }
                continue;
            }
        } else if !text.starts_with('-') {
            if let Some(sub) = current.find_subcommand(&text) {
                current = sub.clone();
            }
        }
        out.push(arg);
    }
    out
}

/// The exit code of a subcommand's result; an error is printed as one line.
pub fn finish(result: CmdResult) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) => {
            let code = if e.downcast_ref::<Usage>().is_some() {
                2
            } else {
                1
            };
            eprintln!("error: {}", one_line(&format!("{e:#}")));
            ExitCode::from(code)
        }
    }
}

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// True once a write to stdout found the reader gone (`| head`): callers stop producing output.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::SeqCst)
}

/// Writes `text` to stdout without holding the lock beyond this call. A closed pipe (EPIPE) is not
/// an error: it is remembered (`stdout_closed`) and later output is dropped. Returns false then.
pub fn out(text: &str) -> bool {
    if stdout_closed() {
        return false;
    }
    let mut o = std::io::stdout();
    let r = o.write_all(text.as_bytes()).and_then(|_| o.flush());
    match r {
        Ok(()) => true,
        Err(_) => {
            // EPIPE or any other failure to write: the reader is gone.
            STDOUT_CLOSED.store(true, Ordering::SeqCst);
            false
        }
    }
}

/// [`out`] with a newline.
pub fn outln(text: &str) -> bool {
    out(&format!("{text}\n"))
}

/// Reads a run log (only a regular file) and prints its reader warnings on stderr.
pub fn read_log(path: &Path) -> anyhow::Result<RunLog> {
    let log = read_log_quietly(path)?;
    print_log_warnings(&log);
    Ok(log)
}

/// Reads a run log or a sweep directory (only a regular file) without printing its warnings.
pub fn read_log_quietly(path: &Path) -> anyhow::Result<RunLog> {
    Ok(if path.is_dir() {
        // A sweep directory (Slurm array shards): merged into one log.
        scaling_lab::cluster::open_log_or_dir(path)?
    } else {
        check_regular_file(path, "run log")?;
        runlog::reader::read_run_log(path)?
    })
}

/// The run-log validator's warnings, one `warning: file:line: …` line each.
pub fn print_log_warnings(log: &RunLog) {
    for w in &log.warnings {
        eprintln!("warning: {w}");
    }
}

/// Refuses anything that is not a regular file (a FIFO would block forever).
pub fn check_regular_file(path: &Path, what: &str) -> anyhow::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => anyhow::bail!("{}: not a regular file ({what})", path.display()),
        Err(e) => anyhow::bail!("{}: {e}", path.display()),
    }
}

static SIGNALS: AtomicUsize = AtomicUsize::new(0);

/// How long a stop may wait for the step in progress before the process quits by itself. A stop
/// is taken between steps; on a GPU the first step of a process compiles and autotunes its
/// kernels for minutes (161–173 s measured for the paper CNN on an H200, docs/gpu.md), and a
/// single SIGTERM (`timeout`, a scheduler) must not wait on that. Env `SCALING_LAB_STOP_GRACE_S`.
pub const STOP_GRACE: Duration = Duration::from_secs(30);

/// The longest grace `SCALING_LAB_STOP_GRACE_S` may ask for: a day (longer than any step; a value
/// past it would not fit a timer, and a stop must always end the process).
pub const MAX_STOP_GRACE_S: f64 = 86_400.0;

/// The stop grace: `SCALING_LAB_STOP_GRACE_S` seconds (0 to a day), `STOP_GRACE` when unset. Read
/// once, before anything runs: a value that is not a number of seconds in range is one usage
/// error naming the variable (never a panic later, in the signal handler's thread, that would
/// leave every further ctrl-c unheard).
pub fn stop_grace() -> anyhow::Result<Duration> {
    let Some(raw) = std::env::var_os("SCALING_LAB_STOP_GRACE_S") else {
        return Ok(STOP_GRACE);
    };
    let text = raw.to_string_lossy();
    let bad = |why: &str| {
        usage(format!(
            "SCALING_LAB_STOP_GRACE_S={text:?}: {why}: it is how long a stop may wait for the step \
             in progress, in seconds from 0 to {MAX_STOP_GRACE_S} (unset: {} s)",
            STOP_GRACE.as_secs()
        ))
    };
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| bad("not a number of seconds"))?;
    if v.is_nan() {
        return Err(bad("not a number of seconds"));
    }
    if !(0.0..=MAX_STOP_GRACE_S).contains(&v) {
        return Err(bad("out of range"));
    }
    Duration::try_from_secs_f64(v).map_err(|_| bad("out of range"))
}

/// Installs the ctrl-c/SIGTERM policy: the first signal calls `on_first` (cancel, keep what is
/// saved), a second one ends the process at once with exit code 130, and so does a stop still
/// waiting on a step after `grace` (`stop_grace`; finished trials are in the run log already).
/// Nothing in the handler can panic: its thread must hear every later signal.
pub fn on_interrupt(grace: Duration, on_first: impl Fn() + Send + 'static) {
    let _ = ctrlc::set_handler(move || {
        if SIGNALS.fetch_add(1, Ordering::SeqCst) == 0 {
            let _ = writeln!(
                std::io::stderr(),
                "\ninterrupted: stopping (press ctrl-c again to quit at once)"
            );
            let timer = std::thread::Builder::new().spawn(move || {
                std::thread::sleep(grace);
                let _ = writeln!(
                    std::io::stderr(),
                    "interrupted: still stopping after {} s (a step in progress; on a GPU, maybe its \
                     kernels compiling): quitting now; finished trials are in the run log",
                    grace.as_secs_f64()
                );
                std::process::exit(130);
            });
            if timer.is_err() {
                // no thread for the timer: stop now rather than maybe never
                std::process::exit(130);
            }
            on_first();
        } else {
            std::process::exit(130);
        }
    });
}

/// True once a ctrl-c/SIGTERM arrived.
pub fn interrupted() -> bool {
    SIGNALS.load(Ordering::SeqCst) > 0
}
