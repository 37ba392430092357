//! Colours and styles. Only the 8 named ANSI colours (the terminal's palette decides their exact
//! shade, so they stay readable on dark and light backgrounds); text uses the terminal's default
//! foreground. With `NO_COLOR` set (https://no-color.org) every style is colourless and emphasis
//! comes from bold / reverse video / symbols alone.

use ratatui::style::{Color, Modifier, Style};

use crate::core::analysis::Regime;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
}

impl Default for Theme {
    fn default() -> Self {
        Theme { color: true }
    }
}

/// Distinct colours for series (batch sizes in the loss chart, sweeps in Compare).
const SERIES: [Color; 6] = [
    Color::Cyan,
    Color::Magenta,
    Color::Green,
    Color::Yellow,
    Color::Blue,
    Color::Red,
];

/// Distinct point markers for series (Compare), so series differ without colour too.
pub const MARKERS: [&str; 6] = ["●", "■", "◆", "▲", "★", "✚"];

impl Theme {
    /// Colour unless the `NO_COLOR` environment variable is set to a non-empty value.
    pub fn from_env() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Theme { color: !no_color }
    }
    pub fn monochrome() -> Self {
        Theme { color: false }
    }

    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }
    /// Raw colour for canvas shapes (Reset = terminal default when monochrome).
    pub fn color(&self, c: Color) -> Color {
        if self.color {
            c
        } else {
            Color::Reset
        }
    }

    pub fn text(&self) -> Style {
        Style::default()
    }
    pub fn title(&self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }
    pub fn accent(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    pub fn dim(&self) -> Style {
        if self.color {
            Style::default().fg(Color::DarkGray)
        } else {
            Style::default()
        }
    }
    pub fn key(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    pub fn good(&self) -> Style {
        self.fg(Color::Green)
    }
    pub fn warn(&self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }
    pub fn error(&self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }
    pub fn selected(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }
    pub fn border(&self, focused: bool) -> Style {
        if focused {
            self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        }
    }
    pub fn regime_color(&self, r: Regime) -> Color {
        self.color(match r {
            Regime::Perfect => Color::Green,
            Regime::Diminishing => Color::Yellow,
            Regime::Maximal => Color::Red,
        })
    }
    pub fn regime(&self, r: Regime) -> Style {
        self.fg(match r {
            Regime::Perfect => Color::Green,
            Regime::Diminishing => Color::Yellow,
            Regime::Maximal => Color::Red,
        })
        .add_modifier(Modifier::BOLD)
    }
    pub fn series_color(&self, i: usize) -> Color {
        self.color(SERIES[i % SERIES.len()])
    }
    pub fn series(&self, i: usize) -> Style {
        self.fg(SERIES[i % SERIES.len()])
    }
    /// The perfect-scaling reference line.
    pub fn reference_color(&self) -> Color {
        self.color(Color::DarkGray)
    }
    /// The fitted S_min·(1 + B_crit/B) curve.
    pub fn fit_color(&self) -> Color {
        self.color(Color::Blue)
    }
    pub fn fit(&self) -> Style {
        self.fg(Color::Blue)
    }
}
