//! A table whose columns fit its panel: each column is as wide as its widest cell; where the
//! row is wider than the panel the columns marked droppable are left out (highest `drop` first —
//! the caller shows what they hold elsewhere, e.g. the selected row's details), and the one name
//! column takes the room that is left, its names shortened with "…". No cell is ever cut by the
//! panel's edge.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::fit;

/// One column: its header, one cell per row (text and style), its alignment.
#[derive(Clone, Debug, Default)]
pub struct Column {
    pub head: String,
    pub cells: Vec<(String, Style)>,
    pub right: bool,
    /// 0: always shown; otherwise left out when the table is too wide, highest first.
    pub drop: u8,
    /// The name column: (least, preferred) width. Columns are dropped while the row is too wide
    /// with the names at their preferred width; then the names take the room left, down to the
    /// least.
    pub flex: Option<(usize, usize)>,
}

impl Column {
    pub fn new(head: &str, right: bool, drop: u8) -> Self {
        Column {
            head: head.to_string(),
            right,
            drop,
            ..Default::default()
        }
    }

    /// The name column (left-aligned, never dropped): at least `min` wide, `pref` before any
    /// column is dropped.
    pub fn name(head: &str, min: usize, pref: usize) -> Self {
        Column {
            head: head.to_string(),
            flex: Some((min, pref)),
            ..Default::default()
        }
    }

    pub fn push(&mut self, text: impl Into<String>, style: Style) {
        self.cells.push((text.into(), style));
    }

    fn natural(&self) -> usize {
        self.cells
            .iter()
            .map(|(t, _)| t.chars().count())
            .chain([self.head.chars().count()])
            .max()
            .unwrap_or(0)
    }
}

/// The laid-out table: the header line, one line per row, and the headers of the columns left
/// out.
pub struct Laid {
    pub head: Line<'static>,
    pub rows: Vec<Line<'static>>,
    pub dropped: Vec<String>,
}

/// Lays `cols` out in `width` columns (one space between columns); `head_style` styles the header.
pub fn lay_out(cols: Vec<Column>, width: usize, head_style: Style) -> Laid {
    let n_rows = cols.iter().map(|c| c.cells.len()).max().unwrap_or(0);
    let mut kept: Vec<bool> = vec![true; cols.len()];
    let natural: Vec<usize> = cols.iter().map(Column::natural).collect();
    let total = |kept: &[bool], flex_w: usize| -> usize {
        let mut sum = 0usize;
        let mut n = 0usize;
        for (i, c) in cols.iter().enumerate() {
            if kept[i] {
                sum += if c.flex.is_some() { flex_w } else { natural[i] };
                n += 1;
            }
        }
        sum + n.saturating_sub(1)
    };
    let flex = cols
        .iter()
        .position(|c| c.flex.is_some())
        .map(|i| (i, cols[i].flex.unwrap_or_default()));
    let pref = flex.map_or(0, |(i, (_, p))| natural[i].min(p));
    // drop columns until the row fits with the names at their preferred width
    while total(&kept, pref) > width {
        let Some(i) = (0..cols.len())
            .filter(|&i| kept[i] && cols[i].drop > 0)
            .max_by_key(|&i| (cols[i].drop, i))
        else {
            break;
        };
        kept[i] = false;
    }
    // the name column takes what is left (at least its least width)
    let others = total(&kept, 0);
    let widths: Vec<usize> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| match c.flex {
            Some((m, _)) => natural[i]
                .min(width.saturating_sub(others))
                .max(m.min(natural[i])),
            None => natural[i],
        })
        .collect();
    let cell = |c: &Column, w: usize, text: &str| -> String {
        let text = if c.flex.is_some() {
            fit::name(text, w)
        } else {
            text.to_string()
        };
        if c.right {
            format!("{text:>w$}")
        } else {
            format!("{text:<w$}")
        }
    };
    let mut head = Vec::new();
    let mut rows: Vec<Vec<Span<'static>>> = vec![Vec::new(); n_rows];
    let mut first = true;
    for (i, c) in cols.iter().enumerate() {
        if !kept[i] {
            continue;
        }
        let sep = if first { "" } else { " " };
        head.push(Span::styled(
            format!("{sep}{}", cell(c, widths[i], &c.head)),
            head_style,
        ));
        for (r, row) in rows.iter_mut().enumerate() {
            let (text, style) = c.cells.get(r).cloned().unwrap_or_default();
            if !first {
                row.push(Span::raw(" "));
            }
            row.push(Span::styled(cell(c, widths[i], &text), style));
        }
        first = false;
    }
    Laid {
        head: Line::from(head),
        rows: rows.into_iter().map(Line::from).collect(),
        dropped: cols
            .iter()
            .enumerate()
            .filter(|(i, _)| !kept[*i])
            .map(|(_, c)| c.head.clone())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Vec<Column> {
        let mut name = Column::name("preset", 6, 19);
        let mut b = Column::new("B_crit [95%]", true, 0);
        let mut opt = Column::new("optimizer", false, 2);
        let mut took = Column::new("took", true, 1);
        for (n, v, o, t) in [
            (
                "digits-mlp-momentum",
                "66.0 [58.8–74.3]",
                "momentum",
                "4m 56s",
            ),
            ("nqm-sgd", "27.1 [24.8–30.0]", "sgd", "12s"),
        ] {
            name.push(n, Style::default());
            b.push(v, Style::default());
            opt.push(o, Style::default());
            took.push(t, Style::default());
        }
        vec![name, b, opt, took]
    }

    fn text(l: &Line<'_>) -> String {
        fit::line_text(l)
    }

    #[test]
    fn everything_shows_where_it_fits() {
        let t = lay_out(table(), 80, Style::default());
        assert!(t.dropped.is_empty());
        assert_eq!(
            text(&t.rows[0]),
            "digits-mlp-momentum 66.0 [58.8–74.3] momentum  4m 56s"
        );
        assert_eq!(
            text(&t.head).chars().count(),
            text(&t.rows[1]).chars().count()
        );
    }

    #[test]
    fn narrow_drops_the_highest_first_then_shortens_names() {
        // 19 + 16 + 6 + 2 separators = 43 with the optimizer dropped
        let t = lay_out(table(), 43, Style::default());
        assert_eq!(t.dropped, vec!["optimizer".to_string()]);
        assert_eq!(
            text(&t.rows[0]),
            "digits-mlp-momentum 66.0 [58.8–74.3] 4m 56s"
        );
        let t = lay_out(table(), 30, Style::default());
        assert_eq!(t.dropped.len(), 2);
        let row = text(&t.rows[0]);
        assert_eq!(row, "digits-mlp-m… 66.0 [58.8–74.3]");
        assert!(row.chars().count() <= 30);
        // the intervals are never dropped (drop 0): the name shrinks to its minimum and no more
        let t = lay_out(table(), 10, Style::default());
        assert!(text(&t.rows[0]).contains("66.0 [58.8–74.3]"));
    }
}
