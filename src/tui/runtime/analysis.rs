//! The analysis worker: one thread that runs `Command::Analyze` / `Command::AnalyzeCompare` off
//! the UI task, the latest request per Live state, paced while trials keep landing.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use crate::tui::app::{AnalysisRequest, CompareRequest, LiveView, Msg};

/// Pacing of the analysis worker (see `AnalysisWorker`): after an analysis of a Live state that
/// took d, the next one of that state starts no sooner than `ANALYSIS_DUTY` × d later, and at
/// least `ANALYSIS_GAP` and at most `ANALYSIS_MAX_GAP` later.
const ANALYSIS_GAP: Duration = Duration::from_secs(3);
const ANALYSIS_MAX_GAP: Duration = Duration::from_secs(10);
const ANALYSIS_DUTY: u32 = 30;

/// The requests waiting for the analysis worker: the latest per Live state.
#[derive(Default)]
struct AnalysisQueue {
    pending: Vec<AnalysisRequest>,
    /// Compare's runs at one target (the latest; asked for by a key: never paced).
    compare: Option<CompareRequest>,
    closed: bool,
}

/// What the worker runs next.
enum Job {
    Live(Box<AnalysisRequest>),
    Compare(CompareRequest),
}

/// One thread that runs the analysis requests (`Command::Analyze`) and answers with
/// `Msg::Analyzed`. A request replaces a queued one for the same Live state (the latest data
/// wins). Paced per Live state: while trials keep landing, a state is re-analysed at most every
/// 3 s (and at most 1/30 of the time: 1.7 core-% for a 100 ms analysis) — the chart shows the new
/// trials' points at once, their intervals, fit and regimes when the analysis lands. An urgent
/// request (a state never analysed: a log just opened, a resumed sweep) is not paced.
pub struct AnalysisWorker {
    queue: Arc<(Mutex<AnalysisQueue>, Condvar)>,
}

impl AnalysisWorker {
    pub fn spawn(tx: UnboundedSender<Msg>) -> std::io::Result<Self> {
        let queue: Arc<(Mutex<AnalysisQueue>, Condvar)> = Arc::default();
        let q = Arc::clone(&queue);
        std::thread::Builder::new()
            .name("tui-analysis".into())
            .spawn(move || analysis_worker(&q, &tx))?;
        Ok(AnalysisWorker { queue })
    }

    /// Queues `r`, replacing a request for the same state that has not started.
    pub fn submit(&self, r: Box<AnalysisRequest>) {
        let (m, cv) = &*self.queue;
        let mut q = m.lock().unwrap_or_else(|e| e.into_inner());
        let view: LiveView = r.for_.view;
        q.pending.retain(|p| p.for_.view != view);
        q.pending.push(*r);
        cv.notify_one();
    }

    /// Queues Compare's reading at one target, replacing one that has not started.
    pub fn submit_compare(&self, r: CompareRequest) {
        let (m, cv) = &*self.queue;
        m.lock().unwrap_or_else(|e| e.into_inner()).compare = Some(r);
        cv.notify_one();
    }
}

impl Drop for AnalysisWorker {
    fn drop(&mut self) {
        let (m, cv) = &*self.queue;
        m.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        cv.notify_one();
    }
}

/// How long after an analysis that took `took` the next one of the same state may start.
fn analysis_gap(took: Duration) -> Duration {
    (took * ANALYSIS_DUTY).clamp(ANALYSIS_GAP, ANALYSIS_MAX_GAP)
}

/// Which of the pending requests (their state and urgency, in order) the worker may run now, or
/// how long to wait for one to become runnable (None: until one is submitted). `ready` says when
/// each state may be analysed again; an urgent request may run at once.
fn runnable(
    pending: &[(LiveView, bool)],
    ready: &[(LiveView, Instant)],
    now: Instant,
) -> Result<usize, Option<Duration>> {
    let ready_at = |&(view, urgent): &(LiveView, bool)| {
        ready
            .iter()
            .find(|(v, _)| *v == view && !urgent)
            .map_or(now, |(_, t)| *t)
    };
    if let Some(i) = pending.iter().position(|p| ready_at(p) <= now) {
        return Ok(i);
    }
    Err(pending.iter().map(|p| ready_at(p) - now).min())
}

fn analysis_worker(queue: &(Mutex<AnalysisQueue>, Condvar), tx: &UnboundedSender<Msg>) {
    let (m, cv) = queue;
    // when each Live state may be analysed again
    let mut ready: Vec<(LiveView, Instant)> = Vec::new();
    loop {
        // wait for a request that may run (blocking: no wake-ups while nothing is asked)
        let r = {
            let mut q = m.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if q.closed {
                    return;
                }
                if let Some(c) = q.compare.take() {
                    break Job::Compare(c);
                }
                let keys: Vec<_> = q.pending.iter().map(|r| (r.for_.view, r.urgent)).collect();
                match runnable(&keys, &ready, Instant::now()) {
                    Ok(i) => break Job::Live(Box::new(q.pending.remove(i))),
                    Err(None) => q = cv.wait(q).unwrap_or_else(|e| e.into_inner()),
                    Err(Some(d)) => {
                        q = cv.wait_timeout(q, d).unwrap_or_else(|e| e.into_inner()).0;
                    }
                }
            }
        };
        let r = match r {
            Job::Live(r) => *r,
            Job::Compare(c) => {
                let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.run()));
                let msg = match out {
                    Ok(a) => Msg::CompareAnalyzed(Box::new(a)),
                    Err(p) => Msg::Error(format!(
                        "the analysis failed: {}",
                        crate::core::runner::panic_message(&p)
                    )),
                };
                if tx.send(msg).is_err() {
                    return;
                }
                continue;
            }
        };
        let t0 = Instant::now();
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.run()));
        let next = Instant::now() + analysis_gap(t0.elapsed());
        ready.retain(|(v, _)| *v != r.for_.view);
        ready.push((r.for_.view, next));
        let msg = match out {
            Ok(a) => Msg::Analyzed(Box::new(a)),
            Err(p) => Msg::Error(format!(
                "the analysis failed: {}",
                crate::core::runner::panic_message(&p)
            )),
        };
        if tx.send(msg).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analyses_of_a_state_are_paced_and_urgent_ones_are_not() {
        let now = Instant::now();
        let s = Duration::from_secs(1);
        // nothing pending: wait for a submission
        assert_eq!(runnable(&[], &[], now), Err(None));
        // a state never analysed runs at once
        assert_eq!(runnable(&[(LiveView::Sweep, false)], &[], now), Ok(0));
        // a state analysed recently waits until it is ready; another state does not
        let ready = [(LiveView::Sweep, now + s)];
        assert_eq!(
            runnable(&[(LiveView::Sweep, false)], &ready, now),
            Err(Some(s))
        );
        assert_eq!(
            runnable(
                &[(LiveView::Sweep, false), (LiveView::Log, false)],
                &ready,
                now
            ),
            Ok(1)
        );
        assert_eq!(
            runnable(&[(LiveView::Sweep, false)], &ready, now + s),
            Ok(0)
        );
        // urgent: at once
        assert_eq!(runnable(&[(LiveView::Sweep, true)], &ready, now), Ok(0));
        // the gap: 30 × the analysis' time, within [3 s, 10 s]
        assert_eq!(analysis_gap(Duration::from_millis(10)), ANALYSIS_GAP);
        assert_eq!(
            analysis_gap(Duration::from_millis(200)),
            Duration::from_secs(6)
        );
        assert_eq!(analysis_gap(Duration::from_secs(3)), ANALYSIS_MAX_GAP);
    }
}
