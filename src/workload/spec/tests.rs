use super::*;

fn workload(every: u64, growth: f64, budget: u64, max_examples: Option<u64>) -> Workload {
    let mut p = crate::core::plan::tests::preset();
    p.workload.eval_every = every;
    p.workload.eval_growth = growth;
    p.workload.step_budget = budget;
    p.workload.max_examples = max_examples;
    p.workload
}

#[test]
fn evaluation_grid_is_linear_then_geometric() {
    let w = workload(10, 0.0, 1000, None);
    assert_eq!(w.next_eval(0), 10);
    assert_eq!(w.next_eval(990), 1000);
    let w = workload(10, 0.1, 100_000, None);
    let mut grid = vec![];
    let mut at = 0;
    while at < 1000 {
        at = w.next_eval(at);
        grid.push(at);
    }
    // Every 10 steps up to 100, then ≥ 10% apart, always on multiples of 10.
    assert_eq!(&grid[..10], &[10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    assert_eq!(&grid[10..14], &[110, 130, 150, 170]);
    for pair in grid.windows(2) {
        assert_eq!(pair[1] % 10, 0);
        assert!(pair[1] as f64 >= pair[0] as f64 * 1.1 - 1e-6 || pair[1] - pair[0] == 10);
        // …and never coarser than 10% plus one grid step.
        assert!((pair[1] - pair[0]) as f64 <= pair[0] as f64 * 0.1 + 10.0);
    }
    assert!(grid.len() < 40, "{} evaluations up to 1000", grid.len());
}

#[test]
fn example_budget_caps_large_batches() {
    let w = workload(10, 0.0, 3000, Some(100_000));
    assert_eq!(w.budget_for(16), 3000);
    assert_eq!(w.budget_for(1000), 100);
    assert_eq!(w.budget_for(1024), 98);
    // Never below one evaluation interval.
    assert_eq!(w.budget_for(1 << 20), 10);
    assert_eq!(workload(10, 0.0, 3000, None).budget_for(1 << 20), 3000);
}
