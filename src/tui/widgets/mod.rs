//! Chart widgets drawn by hand on a ratatui `Canvas` (Braille lines) with hand-written axes.

pub mod columns;
pub mod fit;
pub mod log_axis;
pub mod loss_chart;
pub mod progress;
pub mod scaling_chart;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use log_axis::{place_x_labels, place_y_labels, to_cell};

/// The plot rectangle of a chart and the data bounds it maps.
#[derive(Clone, Copy, Debug)]
pub struct PlotArea {
    pub rect: Rect,
    pub xb: [f64; 2],
    pub yb: [f64; 2],
}

impl PlotArea {
    /// Cell of a data point (None when outside the bounds).
    pub fn cell(&self, x: f64, y: f64) -> Option<(u16, u16)> {
        if !(x >= self.xb[0] && x <= self.xb[1] && y >= self.yb[0] && y <= self.yb[1]) {
            return None;
        }
        let c = self.rect.x + to_cell(x, self.xb, self.rect.width);
        let r = self.rect.y + self.rect.height - 1 - to_cell(y, self.yb, self.rect.height);
        Some((c, r))
    }
    /// Column of an x value clamped into the plot.
    pub fn col(&self, x: f64) -> u16 {
        self.rect.x + to_cell(x.clamp(self.xb[0], self.xb[1]), self.xb, self.rect.width)
    }
}

/// Draws the y labels, the axis lines with tick marks and the x labels around `area`,
/// and returns the remaining plot rectangle. None when the area is too small for a chart.
pub fn draw_axes(
    buf: &mut Buffer,
    area: Rect,
    xb: [f64; 2],
    yb: [f64; 2],
    xticks: &[(f64, String)],
    yticks: &[(f64, String)],
    style: Style,
) -> Option<PlotArea> {
    let ylw = yticks
        .iter()
        .map(|(_, l)| l.chars().count())
        .max()
        .unwrap_or(1) as u16;
    if area.width < ylw + 8 || area.height < 5 {
        return None;
    }
    let plot = Rect {
        x: area.x + ylw + 1,
        y: area.y,
        width: area.width - ylw - 1,
        height: area.height - 2,
    };
    // y axis
    let axis_x = plot.x - 1;
    for r in plot.y..plot.y + plot.height {
        buf[(axis_x, r)].set_symbol("│").set_style(style);
    }
    for (row, label) in place_y_labels(yticks, yb, plot.height) {
        fit::note(&label, label.chars().count(), fit::Kind::Label);
        let y = plot.y + row;
        buf[(axis_x, y)].set_symbol("┤").set_style(style);
        let x = axis_x - label.chars().count() as u16;
        buf.set_string(x, y, &label, style);
    }
    // x axis
    let base = plot.y + plot.height;
    buf[(axis_x, base)].set_symbol("└").set_style(style);
    for c in plot.x..plot.x + plot.width {
        buf[(c, base)].set_symbol("─").set_style(style);
    }
    for (v, _) in xticks {
        if *v >= xb[0] && *v <= xb[1] {
            let c = plot.x + to_cell(*v, xb, plot.width);
            buf[(c, base)].set_symbol("┬").set_style(style);
        }
    }
    for (col, label) in place_x_labels(xticks, xb, plot.width) {
        fit::note(&label, label.chars().count(), fit::Kind::Label);
        buf.set_string(plot.x + col, base + 1, &label, style);
    }
    Some(PlotArea { rect: plot, xb, yb })
}

/// Writes a message centred in `area` (used when a chart has nothing to show or no room).
pub fn centered_note(buf: &mut Buffer, area: Rect, text: &str, style: Style) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    fit::note(text, area.width as usize, fit::Kind::Line);
    let w = text.chars().count().min(area.width as usize) as u16;
    let x = area.x + (area.width - w) / 2;
    let y = area.y + area.height / 2;
    let s: String = text.chars().take(w as usize).collect();
    buf.set_string(x, y, s, style);
}
