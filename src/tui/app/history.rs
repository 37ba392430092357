//! A bounded time series for the loss curves.

use super::HISTORY_CAP;

/// A bounded time series: at most `cap` points however long the run, at a resolution that halves
/// each time it fills up (so drawing cost never grows). The latest sample is always kept.
#[derive(Clone, Debug, PartialEq)]
pub struct History {
    pts: Vec<(f64, f64)>,
    cap: usize,
    stride: u64,
    seen: u64,
    last: Option<(f64, f64)>,
}

impl Default for History {
    fn default() -> Self {
        History::new(HISTORY_CAP)
    }
}

impl History {
    pub fn new(cap: usize) -> Self {
        History {
            pts: Vec::with_capacity(cap.max(2)),
            cap: cap.max(2),
            stride: 1,
            seen: 0,
            last: None,
        }
    }
    pub fn push(&mut self, x: f64, y: f64) {
        if self.seen.is_multiple_of(self.stride) {
            self.pts.push((x, y));
            if self.pts.len() >= self.cap {
                let kept: Vec<(f64, f64)> = self.pts.iter().step_by(2).copied().collect();
                self.pts = kept;
                self.stride *= 2;
            }
        }
        self.seen += 1;
        self.last = Some((x, y));
    }
    /// The retained points plus the latest sample.
    pub fn points(&self) -> Vec<(f64, f64)> {
        let mut v = self.pts.clone();
        if let Some(l) = self.last {
            if v.last() != Some(&l) {
                v.push(l);
            }
        }
        v
    }
    pub fn len(&self) -> usize {
        self.pts.len()
    }
    pub fn is_empty(&self) -> bool {
        self.pts.is_empty() && self.last.is_none()
    }
    pub fn stride(&self) -> u64 {
        self.stride
    }
    pub fn last(&self) -> Option<(f64, f64)> {
        self.last
    }
}
