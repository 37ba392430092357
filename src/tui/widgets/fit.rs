//! Text that fits its panel: a sentence wraps at word boundaries (continuation lines indented), a
//! name too long for its column is shortened with "…" (never a sentence), and a long row of a
//! scrolling view (the report) scrolls sideways. Every screen draws its text through these, so
//! nothing is cut by the panel's edge.
//!
//! **The record.** While a test runs [`recording`], everything drawn through this module is noted
//! (each line with the width it had, each panel title, each shortened name): `tests/tui/fit.rs`
//! renders every screen state and checks that no noted line was wider than its room and that every
//! word the rendered screen shows against a panel's edge is the whole last word of a noted text —
//! a word cut by the edge is a fragment of no text. Outside a recording nothing is kept.

use std::cell::RefCell;

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

/// What a noted text is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A line drawn in a panel (or the header, the footer) `room` columns wide.
    Line,
    /// A panel's title.
    Title,
    /// A name shortened (or not) to its column: it may end in "…".
    Name,
    /// A chart's legend entry or axis label.
    Label,
    /// A view that scrolls sideways (`area`): its rows may run past its edge.
    Scrolling(Rect),
}

/// One noted text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Noted {
    pub text: String,
    /// The columns it had (`usize::MAX`: not known).
    pub room: usize,
    pub kind: Kind,
}

thread_local! {
    static RECORD: RefCell<Option<Vec<Noted>>> = const { RefCell::new(None) };
}

/// Runs `f` (a render) and returns what it drew through this module.
pub fn recording<R>(f: impl FnOnce() -> R) -> (R, Vec<Noted>) {
    RECORD.with(|r| *r.borrow_mut() = Some(Vec::new()));
    let out = f();
    let noted = RECORD.with(|r| r.borrow_mut().take()).unwrap_or_default();
    (out, noted)
}

/// Notes `text` (only while recording).
pub fn note(text: &str, room: usize, kind: Kind) {
    RECORD.with(|r| {
        if let Some(v) = r.borrow_mut().as_mut() {
            v.push(Noted {
                text: text.to_string(),
                room,
                kind,
            });
        }
    });
}

/// The text of a line (its spans' contents).
pub fn line_text(l: &Line<'_>) -> String {
    l.spans.iter().map(|s| s.content.as_ref()).collect()
}

/// Draws `lines` in `area` (each noted with the area's width).
pub fn paragraph(frame: &mut Frame, area: Rect, lines: Vec<Line<'_>>) {
    for l in &lines {
        note(&line_text(l), area.width as usize, Kind::Line);
    }
    frame.render_widget(Paragraph::new(lines), area);
}

/// Notes a line drawn straight into a buffer (the header, the footer).
pub fn note_line(l: &Line<'_>, room: u16) {
    note(&line_text(l), room as usize, Kind::Line);
}

/// A name (a run, a preset, a path) in at most `w` columns, "…" where it is cut.
pub fn name(s: &str, w: usize) -> String {
    let out = if s.chars().count() <= w {
        s.to_string()
    } else if w == 0 {
        String::new()
    } else {
        let mut out: String = s.chars().take(w - 1).collect();
        out.push('…');
        out
    };
    note(&out, w, Kind::Name);
    out
}

/// At most `w` columns of `s` ending at a word boundary, " …" where words were left out (a
/// preview whose whole text is shown elsewhere); "…" alone where not even its first word fits.
pub fn preview(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        return s.to_string();
    }
    let mut out = String::new();
    for word in s.split_whitespace() {
        let need = out.chars().count() + usize::from(!out.is_empty()) + word.chars().count();
        if need + 2 > w {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    if out.is_empty() {
        // not even its first word fits: only the mark that there is more
        let out = if w >= 1 {
            "…".to_string()
        } else {
            String::new()
        };
        note(&out, w, Kind::Name);
        return out;
    }
    out.push_str(" …");
    note(&out, w, Kind::Name);
    out
}

/// Greedy word wrap of plain text to `w` columns (a word longer than `w` is split).
pub fn wrap(text: &str, w: usize) -> Vec<String> {
    let w = w.max(8);
    let mut out = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let need = cur.chars().count() + usize::from(!cur.is_empty()) + word.chars().count();
        if need > w && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
        while cur.chars().count() > w {
            let head: String = cur.chars().take(w).collect();
            let tail: String = cur.chars().skip(w).collect();
            out.push(head);
            cur = tail;
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A styled line wrapped at word boundaries to `w` columns, each span keeping its style; the
/// continuation lines start with `indent` spaces. A line that fits is returned as it is.
pub fn wrap_line(line: Line<'static>, w: usize, indent: usize) -> Vec<Line<'static>> {
    if line.width() <= w || w <= indent + 8 {
        return vec![line];
    }
    let base = line.style;
    // the line's words, each with its span's style and the spaces before it (0: it continues
    // the word before, from another span)
    let mut words: Vec<(String, Style, usize)> = Vec::new();
    let mut gap = 0usize;
    for s in &line.spans {
        let mut cur = String::new();
        for ch in s.content.chars() {
            if ch == ' ' {
                if !cur.is_empty() {
                    words.push((std::mem::take(&mut cur), s.style, gap));
                    gap = 0;
                }
                gap += 1;
            } else {
                cur.push(ch);
            }
        }
        if !cur.is_empty() {
            words.push((cur, s.style, gap));
            gap = 0;
        }
    }
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut width = 0usize;
    let mut i = 0;
    while i < words.len() {
        // a run of words with no space between them is one word to wrap
        let mut j = i + 1;
        while j < words.len() && words[j].2 == 0 {
            j += 1;
        }
        let run_w: usize = words[i..j].iter().map(|x| x.0.chars().count()).sum();
        // the spaces before it as written (the line's own indentation first)
        let mut sep = words[i].2;
        if !spans.is_empty() && width + sep + run_w > w && width > indent {
            out.push(Line::from(std::mem::take(&mut spans)).style(base));
            spans.push(Span::raw(" ".repeat(indent)));
            width = indent;
            sep = 0;
        }
        if sep > 0 {
            spans.push(Span::raw(" ".repeat(sep)));
            width += sep;
        }
        for (text, style, _) in &words[i..j] {
            width += text.chars().count();
            spans.push(Span::styled(text.clone(), *style));
        }
        i = j;
    }
    if !spans.is_empty() {
        out.push(Line::from(spans).style(base));
    }
    out
}

/// Every line of `lines` wrapped to `w` columns ([`wrap_line`], continuation indent `indent`).
pub fn wrap_lines(lines: Vec<Line<'static>>, w: usize, indent: usize) -> Vec<Line<'static>> {
    lines
        .into_iter()
        .flat_map(|l| wrap_line(l, w, indent))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(l: &Line<'_>) -> String {
        line_text(l)
    }

    #[test]
    fn a_line_wraps_at_words_with_its_styles() {
        let bold = Style::default().add_modifier(ratatui::style::Modifier::BOLD);
        let l = Line::from(vec![
            Span::styled("B_simple ", Style::default()),
            Span::styled("median 150 (24.8–66.8 over best trials)", bold),
        ]);
        let out = wrap_line(l, 26, 2);
        let t: Vec<String> = out.iter().map(text).collect();
        assert_eq!(
            t,
            vec!["B_simple median 150", "  (24.8–66.8 over best", "  trials)"]
        );
        assert!(out.iter().all(|l| l.width() <= 26));
        // the words keep their span's style
        assert_eq!(out[1].spans.last().unwrap().style, bold);
    }

    #[test]
    fn a_line_that_fits_is_untouched_and_joined_words_stay_joined() {
        let l = Line::from(vec![Span::raw("ab"), Span::raw("cd ef")]);
        assert_eq!(wrap_line(l.clone(), 40, 2), vec![l]);
        let l = Line::from(vec![
            Span::raw("xxxxxxxxxx "),
            Span::raw("12"),
            Span::raw("34"),
        ]);
        let t: Vec<String> = wrap_line(l, 12, 1).iter().map(text).collect();
        assert_eq!(t, vec!["xxxxxxxxxx", " 1234"]);
        // the line's own indentation stays
        let l = Line::from(vec![
            Span::raw("  of the best "),
            Span::raw("trials: a b c"),
        ]);
        let t: Vec<String> = wrap_line(l, 16, 4).iter().map(text).collect();
        assert_eq!(t, vec!["  of the best", "    trials: a b", "    c"]);
    }

    #[test]
    fn names_shorten_with_an_ellipsis_previews_at_words() {
        assert_eq!(name("digits-mlp-momentum", 8), "digits-…");
        assert_eq!(name("abc", 8), "abc");
        assert_eq!(
            preview("press e to estimate (no earlier run)", 24),
            "press e to estimate …"
        );
        assert_eq!(preview("short", 24), "short");
        assert_eq!(preview("averyveryverylongword and", 8), "…");
    }

    #[test]
    fn the_record_is_kept_only_while_recording() {
        note("outside", 3, Kind::Line);
        let (_, noted) = recording(|| {
            note("inside", 10, Kind::Line);
            name("a-long-name", 4);
        });
        assert_eq!(noted.len(), 2);
        assert_eq!(noted[0].text, "inside");
        assert_eq!(noted[1].text, "a-l…");
        assert_eq!(noted[1].kind, Kind::Name);
        let (_, again) = recording(|| ());
        assert!(again.is_empty());
    }

    #[test]
    fn plain_wrap_splits_at_words() {
        assert_eq!(
            wrap("the fewest steps over those trials", 12),
            vec!["the fewest", "steps over", "those trials"]
        );
    }
}
