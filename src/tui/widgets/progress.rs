//! A one-line progress bar of a sweep: finished trials solid, running ones shaded.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::tui::theme::Theme;

/// `[█████▒▒░░░░░░] 12/64` in `width` cells (bar shrinks first; the count always shows).
pub fn progress_line(
    done: usize,
    running: usize,
    total: usize,
    width: u16,
    th: &Theme,
) -> Line<'static> {
    let count = format!(" {done}/{total}");
    let bar_w = (width as usize).saturating_sub(count.chars().count() + 2);
    if bar_w < 4 || total == 0 {
        return Line::from(Span::styled(count.trim_start().to_string(), th.text()));
    }
    let d = (done.min(total) * bar_w) / total;
    let r = (((done + running).min(total) * bar_w) / total).saturating_sub(d);
    let rest = bar_w - d - r;
    Line::from(vec![
        Span::styled("[", th.dim()),
        Span::styled("█".repeat(d), th.good()),
        Span::styled("▒".repeat(r), th.warn()),
        Span::styled("░".repeat(rest), th.dim()),
        Span::styled("]", th.dim()),
        Span::styled(count, Style::default()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_fits_width_and_counts() {
        let th = Theme::monochrome();
        let l = progress_line(3, 2, 10, 30, &th);
        assert_eq!(l.width(), 30);
        let s: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
        assert!(s.ends_with(" 3/10"), "{s}");
        assert_eq!(s.matches('█').count(), 6);
        assert_eq!(s.matches('▒').count(), 5);
        assert_eq!(progress_line(1, 0, 4, 5, &th).width(), 3);
    }
}
