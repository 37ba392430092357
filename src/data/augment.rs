//! Data augmentation of training images as Shallue et al. used it for CIFAR-10 (after He et al.
//! 2016): a random crop of the image zero-padded by `crop` pixels on every side (a shift of up
//! to ±`crop` pixels in each direction, the uncovered border black) and a horizontal flip of half
//! the images, drawn per row of each training batch.
//!
//! The draws of a step come from the trial's seed and the step number alone, so a trial's
//! batches are the same whether it trains alone or in a fused group, on one worker or several
//! (the global batch's rows are drawn before it is split into shards), and when it is re-run on
//! resume. Validation images are never augmented.

use super::spec::Augment;
use super::split::{SplitMix64, STREAM_AUGMENT};

/// The transform of one row: the crop's shift and a flip.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Aug {
    /// Output pixel (y, x) reads input pixel (y + dy, x + dx) of the padded image (0 outside
    /// the image), before the flip.
    pub dy: i32,
    pub dx: i32,
    /// Mirror left-right after the crop.
    pub flip: bool,
}

/// The generator of step `step`'s draws of the trial seeded `seed`.
fn rng(seed: u64, step: u64) -> SplitMix64 {
    let mut key = SplitMix64::with_stream(seed, STREAM_AUGMENT);
    let k = key.next_u64();
    SplitMix64::with_stream(k ^ step.wrapping_mul(0x9E37_79B9_7F4A_7C15), STREAM_AUGMENT)
}

/// The transforms of the `rows` rows of step `step`'s global batch.
pub fn draw(a: &Augment, seed: u64, step: u64, rows: usize) -> Vec<Aug> {
    let mut r = rng(seed, step);
    let p = a.crop as u64;
    (0..rows)
        .map(|_| {
            let (dy, dx) = if p > 0 {
                let dy = r.below(2 * p + 1) as i32 - p as i32;
                let dx = r.below(2 * p + 1) as i32 - p as i32;
                (dy, dx)
            } else {
                (0, 0)
            };
            let flip = a.flip && r.next_u64() >> 63 == 1;
            Aug { dy, dx, flip }
        })
        .collect()
}

/// Appends `img` (channels × h × w) transformed by `t` to `out`.
pub fn apply(img: &[f32], channels: usize, h: usize, w: usize, t: Aug, out: &mut Vec<f32>) {
    let plane = h * w;
    for c in 0..channels {
        let src = &img[c * plane..(c + 1) * plane];
        for y in 0..h {
            let sy = y as i64 + t.dy as i64;
            if sy < 0 || sy >= h as i64 {
                out.extend(std::iter::repeat_n(0.0, w));
                continue;
            }
            let row = &src[sy as usize * w..(sy as usize + 1) * w];
            for x in 0..w {
                let xc = if t.flip { w - 1 - x } else { x };
                let sx = xc as i64 + t.dx as i64;
                out.push(if sx < 0 || sx >= w as i64 {
                    0.0
                } else {
                    row[sx as usize]
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2-channel 3×4 image whose value names its position: c·100 + y·10 + x + 1.
    fn img() -> Vec<f32> {
        let mut v = vec![];
        for c in 0..2 {
            for y in 0..3 {
                for x in 0..4 {
                    v.push((c * 100 + y * 10 + x + 1) as f32);
                }
            }
        }
        v
    }

    fn at(v: &[f32], c: usize, y: usize, x: usize) -> f32 {
        v[c * 12 + y * 4 + x]
    }

    fn run(t: Aug) -> Vec<f32> {
        let mut out = vec![];
        apply(&img(), 2, 3, 4, t, &mut out);
        assert_eq!(out.len(), 24);
        out
    }

    #[test]
    fn identity_flip_and_crop_move_the_right_pixels() {
        assert_eq!(run(Aug::default()), img());
        // a flip is a flip: columns reversed, twice is the identity
        let f = run(Aug {
            flip: true,
            ..Aug::default()
        });
        for c in 0..2 {
            for y in 0..3 {
                for x in 0..4 {
                    assert_eq!(at(&f, c, y, x), at(&img(), c, y, 3 - x));
                }
            }
        }
        let mut twice = vec![];
        apply(
            &f,
            2,
            3,
            4,
            Aug {
                flip: true,
                ..Aug::default()
            },
            &mut twice,
        );
        assert_eq!(twice, img());
        // a crop keeps the window shifted by (dy, dx), zeros where it leaves the image
        let s = run(Aug {
            dy: 1,
            dx: -2,
            flip: false,
        });
        for c in 0..2 {
            for y in 0..3 {
                for x in 0..4 {
                    let (sy, sx) = (y as i32 + 1, x as i32 - 2);
                    let want = if sy < 3 && sx >= 0 {
                        at(&img(), c, sy as usize, sx as usize)
                    } else {
                        0.0
                    };
                    assert_eq!(at(&s, c, y, x), want, "({c},{y},{x})");
                }
            }
        }
        // crop then flip: the flip mirrors the cropped window
        let cf = run(Aug {
            dy: 0,
            dx: 1,
            flip: true,
        });
        assert_eq!(at(&cf, 0, 0, 0), 0.0); // x=0 → cropped column 3 → source column 4: outside
        assert_eq!(at(&cf, 0, 0, 1), at(&img(), 0, 0, 3));
        assert_eq!(at(&cf, 1, 2, 3), at(&img(), 1, 2, 1));
    }

    #[test]
    fn draws_are_seeded_by_trial_and_step_and_cover_the_range() {
        let a = Augment {
            crop: 4,
            flip: true,
        };
        let d = draw(&a, 7, 3, 2000);
        assert_eq!(d, draw(&a, 7, 3, 2000), "the same seed and step reproduce");
        assert_ne!(d, draw(&a, 8, 3, 2000), "another trial differs");
        assert_ne!(d, draw(&a, 7, 4, 2000), "another step differs");
        // a shorter batch is a prefix (rows are drawn in order)
        assert_eq!(draw(&a, 7, 3, 10), d[..10]);
        for k in -4..=4 {
            assert!(
                d.iter().any(|t| t.dy == k) && d.iter().any(|t| t.dx == k),
                "{k}"
            );
        }
        assert!(d.iter().all(|t| t.dy.abs() <= 4 && t.dx.abs() <= 4));
        let flips = d.iter().filter(|t| t.flip).count();
        assert!((850..1150).contains(&flips), "{flips} of 2000 flipped");
        // flip only / crop only
        let f = draw(
            &Augment {
                crop: 0,
                flip: true,
            },
            7,
            3,
            100,
        );
        assert!(f.iter().all(|t| t.dy == 0 && t.dx == 0) && f.iter().any(|t| t.flip));
        let c = draw(
            &Augment {
                crop: 2,
                flip: false,
            },
            7,
            3,
            100,
        );
        assert!(c.iter().all(|t| !t.flip && t.dy.abs() <= 2));
    }
}
