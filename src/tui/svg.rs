//! Renders a ratatui `Buffer` (e.g. from `TestBackend`) to a standalone SVG: monospace text with
//! the cells' foreground/background colours, bold and reverse video. Used for the README pictures.

use std::fmt::Write;

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

const CELL_W: f64 = 8.4;
const CELL_H: f64 = 17.0;
const BG: &str = "#1d1f21";
const FG: &str = "#d7dae0";

/// A dark palette for the 16 named ANSI colours.
fn named(c: Color) -> Option<&'static str> {
    Some(match c {
        Color::Black => "#1d1f21",
        Color::Red => "#e06c75",
        Color::Green => "#98c379",
        Color::Yellow => "#e5c07b",
        Color::Blue => "#61afef",
        Color::Magenta => "#c678dd",
        Color::Cyan => "#56b6c2",
        Color::Gray => "#abb2bf",
        Color::DarkGray => "#7f848e",
        Color::LightRed => "#ff7b86",
        Color::LightGreen => "#b5e890",
        Color::LightYellow => "#ffd98e",
        Color::LightBlue => "#8cc8ff",
        Color::LightMagenta => "#de9bf0",
        Color::LightCyan => "#7fdbe6",
        Color::White => "#ffffff",
        _ => return None,
    })
}

fn hex(c: Color, default: &str) -> String {
    match c {
        Color::Reset => default.to_string(),
        Color::Rgb(r, g, b) => format!("#{r:02x}{g:02x}{b:02x}"),
        Color::Indexed(i) => {
            // xterm 256: only the 16 base colours are mapped exactly; others approximate grey
            let base = [
                Color::Black,
                Color::Red,
                Color::Green,
                Color::Yellow,
                Color::Blue,
                Color::Magenta,
                Color::Cyan,
                Color::Gray,
                Color::DarkGray,
                Color::LightRed,
                Color::LightGreen,
                Color::LightYellow,
                Color::LightBlue,
                Color::LightMagenta,
                Color::LightCyan,
                Color::White,
            ];
            if (i as usize) < base.len() {
                named(base[i as usize]).unwrap_or(default).to_string()
            } else {
                default.to_string()
            }
        }
        c => named(c).unwrap_or(default).to_string(),
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The SVG text of a buffer.
pub fn buffer_to_svg(buf: &Buffer) -> String {
    let area = buf.area;
    let w = f64::from(area.width) * CELL_W;
    let h = f64::from(area.height) * CELL_H;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.1} {h:.1}">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="{BG}"/>"#);
    let _ = writeln!(
        out,
        r#"<g font-family="'DejaVu Sans Mono','Menlo','Consolas',monospace" font-size="14px" xml:space="preserve">"#
    );
    for y in 0..area.height {
        // backgrounds: runs of equal colour
        let mut x = 0;
        while x < area.width {
            let (_, bg) = colors(buf, area.x + x, area.y + y);
            let start = x;
            while x < area.width && colors(buf, area.x + x, area.y + y).1 == bg {
                x += 1;
            }
            if bg != BG {
                let _ = writeln!(
                    out,
                    r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{CELL_H}" fill="{bg}"/>"#,
                    f64::from(start) * CELL_W,
                    f64::from(y) * CELL_H,
                    f64::from(x - start) * CELL_W
                );
            }
        }
        // text: runs of equal foreground/weight, stretched to the grid
        let mut x = 0;
        while x < area.width {
            let cell = &buf[(area.x + x, area.y + y)];
            let (fg, _) = colors(buf, area.x + x, area.y + y);
            let bold = cell.modifier.contains(Modifier::BOLD);
            let start = x;
            let mut text = String::new();
            let mut cells = 0u16;
            while x < area.width {
                let c = &buf[(area.x + x, area.y + y)];
                let (f2, _) = colors(buf, area.x + x, area.y + y);
                if f2 != fg || c.modifier.contains(Modifier::BOLD) != bold {
                    break;
                }
                text.push_str(c.symbol());
                cells += 1;
                x += 1;
            }
            if text.trim().is_empty() {
                continue;
            }
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{:.1}" fill="{fg}"{} textLength="{:.1}" lengthAdjust="spacingAndGlyphs">{}</text>"#,
                f64::from(start) * CELL_W,
                f64::from(y) * CELL_H + CELL_H * 0.78,
                if bold { r#" font-weight="bold""# } else { "" },
                f64::from(cells) * CELL_W,
                esc(&text)
            );
        }
    }
    out.push_str("</g>\n</svg>\n");
    out
}

fn colors(buf: &Buffer, x: u16, y: u16) -> (String, String) {
    let c = &buf[(x, y)];
    let fg = hex(c.fg, FG);
    let bg = hex(c.bg, BG);
    if c.modifier.contains(Modifier::REVERSED) {
        (
            if bg == BG { BG.to_string() } else { bg },
            if fg == FG { FG.to_string() } else { fg },
        )
    } else {
        (fg, bg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::layout::Rect;
    use ratatui::style::Style;

    #[test]
    fn svg_has_text_colours_and_escapes() {
        let mut b = Buffer::empty(Rect::new(0, 0, 10, 2));
        b.set_string(0, 0, "a<b", Style::default().fg(Color::Red));
        b.set_string(
            0,
            1,
            "ok",
            Style::default().add_modifier(Modifier::REVERSED),
        );
        let s = buffer_to_svg(&b);
        assert!(s.starts_with("<svg"));
        assert!(s.contains("a&lt;b"));
        assert!(s.contains("#e06c75"));
        // reverse video: a light background rectangle behind "ok"
        assert!(s.contains(&format!(r#"fill="{FG}"/>"#)));
        assert!(s.trim_end().ends_with("</svg>"));
    }
}
