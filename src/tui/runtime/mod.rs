//! The UI task: one `tokio::select!` loop over terminal input (crossterm `EventStream`), engine
//! events (the scheduler's std channel, bridged by a forwarding thread in ≤ 15 batches a second),
//! a 1 Hz tick (clock, run-log tail) and a frame deadline that exists only while the state is
//! dirty (≤ 15 fps after a key or a resize, ≤ 7 fps when only engine progress changed it). Training
//! runs on the scheduler's own threads; the analysis on one worker thread (`AnalysisWorker`: the latest
//! request per Live state wins); file reads and joining a finished sweep on the blocking pool; this
//! loop only folds messages and draws. Nothing here polls: every thread blocks until it has work.
//! The runtime never writes UI state and decides no side effect: every IO result (a sweep started
//! or failed to, a log read, lines appended, an analysis) becomes a `Msg` that `update` applies,
//! and every side effect is a `Command` that `update` returns and the `Executor` runs.
//!
//! Rooms: `bridge` (engine events → coalesced messages), `analysis` (the analysis worker),
//! `tail` (following a log while it grows), `executor` (commands → effects → messages), and here
//! the select loop.

mod analysis;
mod bridge;
mod executor;
mod tail;

pub use analysis::AnalysisWorker;
pub use bridge::{Coalescer, COALESCE};
pub use executor::Executor;

use std::time::{Duration, Instant};

use crossterm::event::{Event, EventStream};
use futures::StreamExt;
use ratatui::backend::Backend;
use ratatui::Terminal;
use tokio::sync::mpsc::UnboundedReceiver;

use super::app::{update, App, Msg};
use super::key::{map_key, map_text_key};

/// Minimum time between two frames (15 fps) when a key or a resize changed the screen.
pub const FRAME: Duration = Duration::from_millis(1000 / 15);
/// Minimum time between two frames that only show engine progress (~7 fps): a running sweep
/// redraws this often, which is most of the TUI's own CPU time while a sweep runs (docs/tui.md:
/// the UI threads 1.7–1.8 % of a core on a sweep landing ~95 trials a second).
pub const PROGRESS_FRAME: Duration = Duration::from_millis(150);
/// Clock tick: ETA refresh and run-log tail polling.
pub const TICK: Duration = Duration::from_secs(1);
/// Longest the loop folds queued messages before it yields to input and drawing.
const DRAIN: Duration = Duration::from_millis(15);
/// The UI loop. Returns when the user quits (or on SIGTERM/SIGHUP).
pub async fn run_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    exec: &mut Executor,
    rx: &mut UnboundedReceiver<Msg>,
) -> anyhow::Result<()>
where
    B::Error: Send + Sync + 'static,
{
    let t0 = Instant::now();
    let mut input = EventStream::new();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    #[cfg(unix)]
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    #[cfg(unix)]
    let mut sighup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let mut last_draw: Option<Instant> = None;
    // a key or a resize changed the screen since the last frame: draw at FRAME, not PROGRESS_FRAME
    let mut urgent = false;
    if let Ok(sz) = terminal.size() {
        update(app, Msg::Resize(sz.width, sz.height));
    }
    loop {
        if app.quit {
            break;
        }
        // Draw when dirty, at most every FRAME (PROGRESS_FRAME for engine progress alone).
        let deadline = if app.dirty {
            let gap = if urgent { FRAME } else { PROGRESS_FRAME };
            Some(last_draw.map(|t| t + gap).unwrap_or_else(Instant::now))
        } else {
            None
        };
        #[cfg(unix)]
        let term_sig = async {
            tokio::select! {
                _ = sigterm.recv() => {},
                _ = sighup.recv() => {},
            }
        };
        #[cfg(not(unix))]
        let term_sig = std::future::pending::<()>();
        let msg: Option<Msg> = tokio::select! {
            // input first: a key is answered before queued engine messages
            biased;
            ev = input.next() => match ev {
                // an open text input takes letters as text (no vi keys)
                Some(Ok(Event::Key(k))) if app.typing() => map_text_key(&k).map(Msg::Key),
                Some(Ok(Event::Key(k))) => map_key(&k).map(Msg::Key),
                Some(Ok(Event::Resize(w, h))) => {
                    // ratatui resizes its buffers on the next draw
                    Some(Msg::Resize(w, h))
                }
                Some(Ok(_)) => None,
                Some(Err(e)) => return Err(anyhow::anyhow!("terminal input failed: {e}")),
                None => Some(Msg::Terminate),
            },
            _ = term_sig => Some(Msg::Terminate),
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending::<()>().await,
                }
            } => {
                handle(app, exec, Msg::Frame);
                terminal.draw(|f| super::screens::draw(f, app)).map_err(|e| anyhow::anyhow!("{e}"))?;
                app.dirty = false;
                urgent = false;
                last_draw = Some(Instant::now());
                None
            }
            m = rx.recv() => m,
            _ = tick.tick() => Some(Msg::Tick(t0.elapsed().as_secs_f64())),
        };
        if let Some(m) = msg {
            urgent |= matches!(m, Msg::Key(_) | Msg::Resize(..));
            handle(app, exec, m);
            // fold whatever else is queued (for a bounded time) before drawing again
            let t = Instant::now();
            while t.elapsed() < DRAIN {
                match rx.try_recv() {
                    Ok(m) => handle(app, exec, m),
                    Err(_) => break,
                }
            }
        }
    }
    Ok(())
}

/// One message: `update` folds it and returns the side effects, which the executor runs.
fn handle(app: &mut App, exec: &mut Executor, m: Msg) {
    let cmds = update(app, m);
    exec.execute(cmds);
}
