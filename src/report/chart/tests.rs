//! The exported chart as a reader sees it: every text box of the SVG (estimated from its font
//! size × character count, placed by its anchor as the SVG renderer places it) inside the canvas
//! and clear of every other; the labels in the plot inside it; the legend below the plot, with
//! every marker the plot draws.

use super::*;
use crate::analysis::tests::rec;
use crate::core::analysis::Study;
use crate::core::trial::Outcome;
use crate::workload::spec::{Metric, OptimizerKind, Target};

/// One `<text>` of an SVG: its box on the canvas and its words.
#[derive(Debug)]
struct SvgText {
    text: String,
    bbox: TextBox,
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let i = tag.find(&key)? + key.len();
    let j = tag[i..].find('"')? + i;
    Some(tag[i..j].to_string())
}

/// Every `<text>` of `svg` with its box: width = characters × font size × `CHAR_WIDTH`, height =
/// the font size; x by `text-anchor` (start, middle, end), y by `dy` (0.76em: y is the top,
/// 0.5ex: the middle, -0.5ex: the bottom); a `rotate(270, x, y)` turns the box about (x, y).
fn texts(svg: &str) -> Vec<SvgText> {
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find("<text") {
        let tag_end = rest[i..].find('>').unwrap() + i;
        let tag = &rest[i..tag_end];
        let close = rest[tag_end..].find("</text>").unwrap() + tag_end;
        let text = rest[tag_end + 1..close]
            .trim()
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
            .replace("&quot;", "\"");
        rest = &rest[close..];
        if text.is_empty() {
            continue;
        }
        let num = |n: &str| attr(tag, n).unwrap().parse::<f64>().unwrap();
        let (x, y, fs) = (num("x"), num("y"), num("font-size"));
        let w = text.chars().count() as f64 * fs * CHAR_WIDTH;
        let ax0 = match attr(tag, "text-anchor").as_deref() {
            Some("middle") => -w / 2.0,
            Some("end") => -w,
            _ => 0.0,
        };
        let ay0 = match attr(tag, "dy").as_deref() {
            Some("0.76em") | None => 0.0,
            Some("0.5ex") => -fs / 2.0,
            Some("-0.5ex") => -fs,
            Some(other) => panic!("unexpected dy {other}"),
        };
        let (ax1, ay1) = (ax0 + w, ay0 + fs);
        let bbox = if attr(tag, "transform").is_some_and(|t| t.starts_with("rotate(270")) {
            // (u, v) → (v, −u) about (x, y)
            TextBox {
                x0: x + ay0,
                y0: y - ax1,
                x1: x + ay1,
                y1: y - ax0,
            }
        } else {
            TextBox {
                x0: x + ax0,
                y0: y + ay0,
                x1: x + ax1,
                y1: y + ay1,
            }
        };
        out.push(SvgText { text, bbox });
    }
    out
}

fn canvas(svg: &str) -> TextBox {
    let tag = &svg[..svg.find('>').unwrap()];
    let n = |k: &str| attr(tag, k).unwrap().parse::<f64>().unwrap();
    TextBox {
        x0: 0.0,
        y0: 0.0,
        x1: n("width"),
        y1: n("height"),
    }
}

/// Six search trials per B over 16 … 4096 on a curve with all three regimes (B_crit 128: S =
/// 100·(1 + 128/B) up to B = 1024) and nothing reached above it (as on mnist-cnn-momentum):
/// failed trials at every B, best trials at the search-space edge at the two smallest B.
fn whole_range_analysis() -> Analysis {
    let mut t = Vec::new();
    let mut id = 0;
    for i in 4..=12 {
        let b = 1usize << i;
        for j in 0..6u64 {
            let o = if b > 1024 || j >= 4 {
                Outcome::NotReached {
                    budget: 1000,
                    early_stopped: false,
                }
            } else {
                let s = 100.0 * (1.0 + 128.0 / b as f64) * (1.0 + 0.1 * j as f64);
                Outcome::Reached {
                    step: s.round() as u64,
                }
            };
            t.push(rec(id, b, 0.1, o, None));
            id += 1;
        }
    }
    let study = Study::bare(
        Target {
            metric: Metric::ValError,
            value: 0.1,
        },
        OptimizerKind::Momentum,
    );
    let mut a = crate::analysis::analyze(&study, &t);
    for p in a.per_batch.iter_mut().take(2) {
        p.at_search_edge = true;
    }
    a
}

#[test]
fn no_text_box_overlaps_another_or_leaves_the_frame() {
    let a = whole_range_analysis();
    let regimes: Vec<_> = a.regimes.iter().map(|r| r.regime).collect();
    assert_eq!(
        regimes,
        [
            crate::core::analysis::Regime::Perfect,
            crate::core::analysis::Regime::Diminishing,
            crate::core::analysis::Regime::Maximal
        ],
        "{:?}",
        a.regimes
    );
    let svg = svg_chart(
        "mnist-cnn-momentum — S(B): steps to val_error <= 0.01 vs batch size B",
        &[ChartSeries {
            label: "momentum".into(),
            analysis: &a,
        }],
    )
    .unwrap();
    let frame = canvas(&svg);
    let ts = texts(&svg);
    let words: Vec<&str> = ts.iter().map(|t| t.text.as_str()).collect();
    // every label and every marker's meaning is there
    for want in [
        "perfect",
        "diminishing",
        "maximal",
        "none reached, 6 n/r",
        "search-space edge",
        "no trial reached",
        "95 % interval (grey band)",
        "fit S = S_min",
    ] {
        assert!(
            words.iter().any(|w| w.contains(want)),
            "{want:?} missing from {words:?}"
        );
    }
    for t in &ts {
        assert!(t.bbox.inside(&frame), "{:?} leaves the frame {frame:?}", t);
    }
    for (i, t) in ts.iter().enumerate() {
        for u in &ts[i + 1..] {
            assert!(!t.bbox.overlaps(&u.bbox), "{t:?} overlaps {u:?}");
        }
    }
    // the legend lies below the plot: below every label of the plot (the x axis's name last)
    let axis = ts.iter().find(|t| t.text == "batch size B").unwrap();
    let legend: Vec<&SvgText> = ts
        .iter()
        .filter(|t| t.text.starts_with("momentum:") || t.text.contains("search-space edge"))
        .collect();
    assert!(legend.len() >= 3, "{words:?}");
    assert!(
        legend.iter().all(|t| t.bbox.y0 >= axis.bbox.y1),
        "{legend:?}"
    );
}

/// The box estimate agrees with the chart's own placement: a label placed inside the plot has
/// the box the test reads back from the SVG.
#[test]
fn placed_labels_are_read_back_with_their_boxes() {
    let mut p = Placer {
        area: TextBox {
            x0: 0.0,
            y0: 0.0,
            x1: 200.0,
            y1: 100.0,
        },
        taken: Vec::new(),
    };
    let a = p.place("maximal", 13.0, 195.0, true, 4.0).unwrap();
    let b = p.place("maximal", 13.0, 195.0, true, 4.0).unwrap();
    // kept inside on the right, the second one a row below the first
    assert!(p.taken[0].x1 <= 198.0 && p.taken[0].inside(&p.area));
    assert_eq!(a.0, b.0);
    assert!(b.1 as f64 >= p.taken[0].y1, "{a:?} {b:?}");
}
