//! L1-penalised logistic regression, the probe of the reference implementation (sentiment-discovery,
//! scikit-learn's `LogisticRegression(penalty="l1", solver="liblinear")`):
//!
//! ```text
//! minimise over w, b:   Σ_i log(1 + exp(−s_i (w·x_i + b)))  +  (1/C) Σ_j |w_j|      (s_i = ±1)
//! ```
//!
//! The intercept b is not penalised; features are used as given (the reference does not standardise).
//! The solver is a proximal Newton method (newGLMNET, Yuan, Ho & Lin 2012 — what liblinear runs for
//! this objective): each outer iteration takes the second-order model of the loss at the current
//! point (weights p_i(1−p_i)), minimises it plus the L1 term by cyclic coordinate descent (soft
//! thresholding; an active set of the non-zero weights between full passes), then a backtracking
//! line search on the true objective. It stops when the largest violation of the optimality (KKT)
//! conditions — |∂L/∂w_j + sign(w_j)/C| for a non-zero weight, max(|∂L/∂w_j| − 1/C, 0) for a zero
//! one, |∂L/∂b| — is below `tol` × the number of examples. Everything is sequential and in f64
//! (features are f32): the same data gives the same weights bit for bit.

/// The design matrix by columns (compressed sparse columns): what coordinate descent walks.
#[derive(Clone, Debug)]
pub struct Design {
    n: usize,
    col_ptr: Vec<usize>,
    rows: Vec<u32>,
    vals: Vec<f32>,
}

/// Feature rows: dense (row-major `n × p`) or sparse (per row, (column, value) pairs with distinct
/// columns).
#[derive(Clone, Debug, PartialEq)]
pub enum Rows {
    Dense {
        p: usize,
        data: Vec<f32>,
    },
    Sparse {
        p: usize,
        rows: Vec<Vec<(u32, f32)>>,
    },
}

impl Rows {
    /// Examples.
    pub fn len(&self) -> usize {
        match self {
            Rows::Dense { p, data } => data.len().checked_div(*p).unwrap_or(0),
            Rows::Sparse { rows, .. } => rows.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Features.
    pub fn width(&self) -> usize {
        match self {
            Rows::Dense { p, .. } | Rows::Sparse { p, .. } => *p,
        }
    }
    /// w·x_i + b.
    pub fn margin(&self, i: usize, w: &[f64], b: f64) -> f64 {
        match self {
            Rows::Dense { p, data } => {
                let x = &data[i * p..(i + 1) * p];
                b + x.iter().zip(w).map(|(&x, &w)| x as f64 * w).sum::<f64>()
            }
            Rows::Sparse { rows, .. } => {
                b + rows[i]
                    .iter()
                    .map(|&(j, v)| v as f64 * w[j as usize])
                    .sum::<f64>()
            }
        }
    }
    /// Only column `j` (a one-feature problem: the best single unit refit alone).
    pub fn column(&self, j: usize) -> Rows {
        let values: Vec<f32> = match self {
            Rows::Dense { p, data } => (0..self.len()).map(|i| data[i * p + j]).collect(),
            Rows::Sparse { rows, .. } => rows
                .iter()
                .map(|r| r.iter().find(|e| e.0 as usize == j).map_or(0.0, |e| e.1))
                .collect(),
        };
        Rows::Dense { p: 1, data: values }
    }
    /// Whether every value is finite (a diverged network's features are not).
    pub fn all_finite(&self) -> bool {
        match self {
            Rows::Dense { data, .. } => data.iter().all(|v| v.is_finite()),
            Rows::Sparse { rows, .. } => rows.iter().flatten().all(|e| e.1.is_finite()),
        }
    }
}

impl Design {
    /// The columns of `rows` (exact zeros left out).
    pub fn of(rows: &Rows) -> Design {
        let n = rows.len();
        let p = rows.width();
        let mut count = vec![0usize; p + 1];
        let each = |f: &mut dyn FnMut(usize, usize, f32)| match rows {
            Rows::Dense { p, data } => {
                for i in 0..n {
                    for j in 0..*p {
                        let v = data[i * p + j];
                        if v != 0.0 {
                            f(i, j, v);
                        }
                    }
                }
            }
            Rows::Sparse { rows, .. } => {
                for (i, r) in rows.iter().enumerate() {
                    for &(j, v) in r {
                        if v != 0.0 {
                            f(i, j as usize, v);
                        }
                    }
                }
            }
        };
        each(&mut |_, j, _| count[j + 1] += 1);
        for j in 0..p {
            count[j + 1] += count[j];
        }
        let nnz = count[p];
        let mut next = count.clone();
        let mut rws = vec![0u32; nnz];
        let mut vals = vec![0f32; nnz];
        each(&mut |i, j, v| {
            rws[next[j]] = i as u32;
            vals[next[j]] = v;
            next[j] += 1;
        });
        Design {
            n,
            col_ptr: count,
            rows: rws,
            vals,
        }
    }
    pub fn examples(&self) -> usize {
        self.n
    }
    pub fn features(&self) -> usize {
        self.col_ptr.len() - 1
    }
    fn col(&self, j: usize) -> (&[u32], &[f32]) {
        let r = self.col_ptr[j]..self.col_ptr[j + 1];
        (&self.rows[r.clone()], &self.vals[r])
    }
}

/// A fitted probe: weights, intercept and how the fit went.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub w: Vec<f64>,
    pub b: f64,
    /// Outer (Newton) iterations.
    pub iterations: usize,
    /// The KKT violation fell below the tolerance (else the iteration cap stopped it).
    pub converged: bool,
}

impl Model {
    pub fn zeros(p: usize) -> Model {
        Model {
            w: vec![0.0; p],
            b: 0.0,
            iterations: 0,
            converged: false,
        }
    }
    /// Non-zero weights.
    pub fn nonzero(&self) -> usize {
        self.w.iter().filter(|w| **w != 0.0).count()
    }
    /// Predicted labels (1: positive, margin > 0).
    pub fn predict(&self, rows: &Rows) -> Vec<u8> {
        (0..rows.len())
            .map(|i| u8::from(rows.margin(i, &self.w, self.b) > 0.0))
            .collect()
    }
}

/// Solver settings.
#[derive(Clone, Copy, Debug)]
pub struct Solver {
    /// Stop when the largest KKT violation is below `tol` × examples.
    pub tol: f64,
    pub max_outer: usize,
    /// Coordinate-descent passes per outer iteration, at most.
    pub max_inner: usize,
}

impl Default for Solver {
    fn default() -> Self {
        Solver {
            tol: 1e-4,
            max_outer: 100,
            max_inner: 100,
        }
    }
}

/// log(1 + exp(−m)), stable for any m.
fn softplus_neg(m: f64) -> f64 {
    (-m).max(0.0) + (-m.abs()).exp().ln_1p()
}

fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// The objective at margins `z` and weights `w` (λ = 1/C).
pub fn objective(z: &[f64], y: &[u8], w: &[f64], lambda: f64) -> f64 {
    let loss: f64 = z
        .iter()
        .zip(y)
        .map(|(&z, &y)| softplus_neg(if y == 1 { z } else { -z }))
        .sum();
    loss + lambda * w.iter().map(|w| w.abs()).sum::<f64>()
}

/// Margins w·x_i + b of every example.
fn margins(d: &Design, w: &[f64], b: f64) -> Vec<f64> {
    let mut z = vec![b; d.n];
    for (j, &wj) in w.iter().enumerate() {
        if wj != 0.0 {
            let (r, v) = d.col(j);
            for (&i, &x) in r.iter().zip(v) {
                z[i as usize] += wj * x as f64;
            }
        }
    }
    z
}

/// The loss's gradient: per feature Σ_i x_ij (p_i − y_i), and the intercept's Σ_i (p_i − y_i).
fn gradient(d: &Design, resid: &[f64]) -> (Vec<f64>, f64) {
    let g = (0..d.features())
        .map(|j| {
            let (r, v) = d.col(j);
            r.iter()
                .zip(v)
                .map(|(&i, &x)| x as f64 * resid[i as usize])
                .sum()
        })
        .collect();
    (g, resid.iter().sum())
}

/// The largest violation of the optimality conditions at (w, ∇).
pub fn kkt_violation(w: &[f64], g: &[f64], g_b: f64, lambda: f64) -> f64 {
    let per = w.iter().zip(g).map(|(&w, &g)| {
        if w > 0.0 {
            (g + lambda).abs()
        } else if w < 0.0 {
            (g - lambda).abs()
        } else {
            (g.abs() - lambda).max(0.0)
        }
    });
    per.fold(g_b.abs(), f64::max)
}

/// The KKT violation of `m` on (d, y) at C (for tests and checks).
pub fn violation_of(d: &Design, y: &[u8], m: &Model, c: f64) -> f64 {
    let z = margins(d, &m.w, m.b);
    let resid: Vec<f64> = z
        .iter()
        .zip(y)
        .map(|(&z, &y)| sigmoid(z) - y as f64)
        .collect();
    let (g, gb) = gradient(d, &resid);
    kkt_violation(&m.w, &g, gb, 1.0 / c)
}

/// Soft thresholding: argmin_v ½h(v − a)² + λ|v|  (a = the unpenalised Newton point).
fn soft(a: f64, t: f64) -> f64 {
    if a > t {
        a - t
    } else if a < -t {
        a + t
    } else {
        0.0
    }
}

/// Fits the L1-penalised logistic regression at C, from `start` (a warm start along a C path)
/// or from zero.
pub fn fit(d: &Design, y: &[u8], c: f64, start: Option<&Model>, s: &Solver) -> Model {
    assert_eq!(d.n, y.len(), "one label per example");
    assert!(c > 0.0, "C must be positive");
    let p = d.features();
    let lambda = 1.0 / c;
    let mut m = start.cloned().unwrap_or_else(|| Model::zeros(p));
    m.iterations = 0;
    m.converged = false;
    if d.n == 0 {
        m.converged = true;
        return m;
    }
    let mut z = margins(d, &m.w, m.b);
    let yf: Vec<f64> = y.iter().map(|&y| y as f64).collect();
    let tol = s.tol * d.n as f64;
    for outer in 0..s.max_outer {
        m.iterations = outer + 1;
        let prob: Vec<f64> = z.iter().map(|&z| sigmoid(z)).collect();
        let resid: Vec<f64> = prob.iter().zip(&yf).map(|(p, y)| p - y).collect();
        let (g, g_b) = gradient(d, &resid);
        if kkt_violation(&m.w, &g, g_b, lambda) <= tol {
            m.converged = true;
            break;
        }
        // the Hessian's weights, floored so a separable direction keeps a finite step
        let wt: Vec<f64> = prob.iter().map(|p| (p * (1.0 - p)).max(1e-10)).collect();
        let dir = newton_direction(d, &m, &resid, &wt, lambda, s.max_inner);
        let f0 = objective(&z, y, &m.w, lambda);
        // the model's predicted decrease (a descent direction makes it negative)
        let l1 = |w: &[f64]| w.iter().map(|w| w.abs()).sum::<f64>();
        let new_w: Vec<f64> = m.w.iter().zip(&dir.w).map(|(a, b)| a + b).collect();
        let grad_dot: f64 = g.iter().zip(&dir.w).map(|(a, b)| a * b).sum::<f64>() + g_b * dir.b;
        let delta = grad_dot + lambda * (l1(&new_w) - l1(&m.w));
        if delta >= 0.0 {
            // no descent left at this precision (the violation was checked above)
            break;
        }
        let mut alpha = 1.0;
        let mut accepted = false;
        for _ in 0..30 {
            let wa: Vec<f64> = m.w.iter().zip(&dir.w).map(|(a, b)| a + alpha * b).collect();
            let za: Vec<f64> = z.iter().zip(&dir.u).map(|(z, u)| z + alpha * u).collect();
            if objective(&za, y, &wa, lambda) <= f0 + 0.01 * alpha * delta {
                m.w = wa;
                m.b += alpha * dir.b;
                z = za;
                accepted = true;
                break;
            }
            alpha *= 0.5;
        }
        if !accepted {
            break;
        }
    }
    m
}

/// A Newton step: the change of the weights, of the intercept, and of every margin.
struct Direction {
    w: Vec<f64>,
    b: f64,
    u: Vec<f64>,
}

/// Coordinate descent on the quadratic model of the loss plus the L1 term: the step d that
/// minimises Σ_i [r_i (d·x_i + d_b) + ½ h_i (d·x_i + d_b)²] + λ‖w + d‖₁.
fn newton_direction(
    d: &Design,
    m: &Model,
    resid: &[f64],
    wt: &[f64],
    lambda: f64,
    max_inner: usize,
) -> Direction {
    let p = d.features();
    // H_j = Σ_i h_i x_ij² (fixed within the outer iteration)
    let hess: Vec<f64> = (0..p)
        .map(|j| {
            let (r, v) = d.col(j);
            r.iter()
                .zip(v)
                .map(|(&i, &x)| wt[i as usize] * (x as f64) * (x as f64))
                .sum::<f64>()
                + 1e-12
        })
        .collect();
    let h_b: f64 = wt.iter().sum::<f64>() + 1e-12;
    let mut dw = vec![0.0; p];
    let mut db = 0.0;
    let mut u = vec![0.0; d.n];
    let mut active: Vec<usize> = (0..p).collect();
    let mut full = true;
    for _ in 0..max_inner {
        let mut biggest = 0.0f64;
        for &j in &active {
            let (r, v) = d.col(j);
            let gj: f64 = r
                .iter()
                .zip(v)
                .map(|(&i, &x)| x as f64 * (resid[i as usize] + wt[i as usize] * u[i as usize]))
                .sum();
            let cur = m.w[j] + dw[j];
            let new = soft(cur - gj / hess[j], lambda / hess[j]);
            let step = new - cur;
            if step != 0.0 {
                dw[j] += step;
                for (&i, &x) in r.iter().zip(v) {
                    u[i as usize] += step * x as f64;
                }
                biggest = biggest.max(step.abs() * hess[j].sqrt());
            }
        }
        // the intercept (unpenalised)
        let gb: f64 = (0..d.n).map(|i| resid[i] + wt[i] * u[i]).sum();
        let step = -gb / h_b;
        db += step;
        for ui in u.iter_mut() {
            *ui += step;
        }
        biggest = biggest.max(step.abs() * h_b.sqrt());
        let small = biggest <= 1e-6 * (d.n as f64).sqrt();
        if small && full {
            break;
        }
        // after a full pass, iterate on the non-zero weights; after they settle, a full pass again
        if small {
            active = (0..p).collect();
            full = true;
        } else if full {
            active = (0..p).filter(|&j| m.w[j] + dw[j] != 0.0).collect();
            full = false;
        }
    }
    Direction { w: dw, b: db, u }
}

/// The regularisation grid of the reference: C = 2^-8, 2^-7, …, 2^0.
pub fn c_grid() -> Vec<f64> {
    (-8..=0).map(|k| 2f64.powi(k)).collect()
}

/// Fraction of `pred` equal to `y` (0 when empty).
pub fn accuracy(pred: &[u8], y: &[u8]) -> f64 {
    if y.is_empty() {
        return 0.0;
    }
    pred.iter().zip(y).filter(|(a, b)| a == b).count() as f64 / y.len() as f64
}

/// The model selection of the reference: fit on train at every C of `grid` (ascending, warm
/// started), keep the C with the best validation accuracy (the smallest C among ties: the
/// sparsest), and return it with its model (fitted on train).
pub fn select_c(
    train: &Rows,
    y_train: &[u8],
    val: &Rows,
    y_val: &[u8],
    grid: &[f64],
    s: &Solver,
) -> (f64, Model, f64) {
    let d = Design::of(train);
    let mut best: Option<(f64, Model, f64)> = None;
    let mut warm: Option<Model> = None;
    for &c in grid {
        let m = fit(&d, y_train, c, warm.as_ref(), s);
        let acc = accuracy(&m.predict(val), y_val);
        if best.as_ref().is_none_or(|b| acc > b.2) {
            best = Some((c, m.clone(), acc));
        }
        warm = Some(m);
    }
    best.unwrap_or_else(|| (1.0, Model::zeros(train.width()), 0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::SplitMix64;

    fn uniform(r: &mut SplitMix64) -> f64 {
        (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A random problem: n examples, p features, labels from a planted weight vector.
    fn problem(n: usize, p: usize, seed: u64) -> (Rows, Vec<u8>) {
        let mut r = SplitMix64::new(seed);
        let truth: Vec<f64> = (0..p).map(|j| if j < 2 { 1.5 } else { 0.0 }).collect();
        let mut data = Vec::with_capacity(n * p);
        let mut y = Vec::with_capacity(n);
        for _ in 0..n {
            let x: Vec<f32> = (0..p)
                .map(|_| (uniform(&mut r) * 2.0 - 1.0) as f32)
                .collect();
            let z: f64 = x.iter().zip(&truth).map(|(&a, b)| a as f64 * b).sum();
            y.push(u8::from(uniform(&mut r) < sigmoid(2.0 * z)));
            data.extend(x);
        }
        (Rows::Dense { p, data }, y)
    }

    /// One binary feature, no penalty to speak of: the maximum-likelihood fit is the closed form
    /// b = logit(P(y|x=0)), w = logit(P(y|x=1)) − b.
    #[test]
    fn a_binary_feature_matches_the_closed_form() {
        // x = 0: 30 positives of 100; x = 1: 80 of 100
        let mut data = Vec::new();
        let mut y = Vec::new();
        for i in 0..200 {
            let x = u8::from(i >= 100);
            data.push(x as f32);
            let k = i % 100;
            y.push(u8::from(if x == 0 { k < 30 } else { k < 80 }));
        }
        let rows = Rows::Dense { p: 1, data };
        let d = Design::of(&rows);
        let solver = Solver {
            tol: 1e-8,
            ..Solver::default()
        };
        let m = fit(&d, &y, 1e12, None, &solver);
        let logit = |p: f64| (p / (1.0 - p)).ln();
        assert!(m.converged);
        assert!((m.b - logit(0.3)).abs() < 1e-5, "b {}", m.b);
        assert!(
            (m.w[0] - (logit(0.8) - logit(0.3))).abs() < 1e-5,
            "w {}",
            m.w[0]
        );
        // a strong penalty: λ = 1/C exceeds |∂L/∂w| at w = 0, so w = 0 exactly and b is the
        // log-odds of the labels
        let g0: f64 = 100.0 * (0.55 - 0.8); // Σ x (p − y) at w = 0, p = 0.55
        let m = fit(&d, &y, 0.99 / g0.abs(), None, &solver);
        assert_eq!(m.w[0], 0.0);
        assert!((m.b - logit(0.55)).abs() < 1e-5);
        // …and just below it, w leaves zero
        let m = fit(&d, &y, 1.01 / g0.abs(), None, &solver);
        assert!(m.w[0] > 0.0);
    }

    /// On random problems at every C of the grid the fit satisfies the optimality conditions, and
    /// no point of a brute-force grid around it has a lower objective.
    #[test]
    fn the_fit_meets_the_kkt_conditions_and_beats_a_brute_force_search() {
        let (rows, y) = problem(120, 2, 7);
        let d = Design::of(&rows);
        let solver = Solver {
            tol: 1e-9,
            max_outer: 200,
            max_inner: 200,
        };
        for &c in &c_grid() {
            let m = fit(&d, &y, c, None, &solver);
            assert!(m.converged, "C {c}");
            assert!(violation_of(&d, &y, &m, c) <= 1e-9 * 120.0, "C {c}");
            let lambda = 1.0 / c;
            let f = objective(&margins(&d, &m.w, m.b), &y, &m.w, lambda);
            let mut best = f64::INFINITY;
            for a in -20..=20 {
                for bb in -20..=20 {
                    for cc in -10..=10 {
                        let w = [m.w[0] + a as f64 * 0.01, m.w[1] + bb as f64 * 0.01];
                        let b = m.b + cc as f64 * 0.01;
                        best = best.min(objective(&margins(&d, &w, b), &y, &w, lambda));
                    }
                }
            }
            assert!(f <= best + 1e-9, "C {c}: fit {f} vs grid {best}");
        }
    }

    /// Sparse and dense rows of one matrix give the same fit; a warm start ends where a cold one
    /// does (within the tolerance's reach).
    #[test]
    fn sparse_dense_and_warm_starts_agree() {
        let (rows, y) = problem(200, 6, 3);
        let Rows::Dense { p, data } = &rows else {
            unreachable!()
        };
        let sparse = Rows::Sparse {
            p: *p,
            rows: data
                .chunks(*p)
                .map(|r| {
                    r.iter()
                        .enumerate()
                        .filter(|(_, v)| v.abs() > 0.3)
                        .map(|(j, &v)| (j as u32, v))
                        .collect()
                })
                .collect(),
        };
        let dense: Vec<f32> = data
            .iter()
            .map(|&v| if v.abs() > 0.3 { v } else { 0.0 })
            .collect();
        let dense = Rows::Dense { p: *p, data: dense };
        let s = Solver {
            tol: 1e-10,
            ..Solver::default()
        };
        let a = fit(&Design::of(&sparse), &y, 0.25, None, &s);
        let b = fit(&Design::of(&dense), &y, 0.25, None, &s);
        assert_eq!(a, b);
        let cold = fit(&Design::of(&dense), &y, 1.0, None, &s);
        let warm = fit(&Design::of(&dense), &y, 1.0, Some(&b), &s);
        for (x, z) in cold.w.iter().zip(&warm.w) {
            assert!((x - z).abs() < 1e-6, "{x} vs {z}");
        }
        assert_eq!(
            a.predict(&sparse),
            (0..200)
                .map(|i| u8::from(dense.margin(i, &a.w, a.b) > 0.0))
                .collect::<Vec<_>>()
        );
    }
}
