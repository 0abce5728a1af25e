//! The experiments. Each builds real resilix policies, runs them in the engine, and returns a
//! [`Section`] with its checks (ours beside the published figure), tables and charts.

pub mod aws;
pub mod brooker;
pub mod brooker_clients;
pub mod e2e;
pub mod hedge;
pub mod inbound;
pub mod inbound_capacity;
pub mod little;
pub mod long_timeline;
pub mod quota;
pub mod rare_drops;
pub mod sre;
pub mod throttle;

use crate::report::Section;

/// What every experiment is given.
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    /// The CI profile: fewer seeds and shorter runs, every check still made.
    pub quick: bool,
    pub master: u64,
    /// Overrides the experiment's own number of seeds/runs when set.
    pub seeds: Option<u64>,
}

impl Ctx {
    pub fn seeds(&self, full: u64, quick: u64) -> u64 {
        self.seeds.unwrap_or(if self.quick { quick } else { full })
    }
}

pub type Experiment = fn(&Ctx) -> Section;

/// Every experiment, in the order of the issue.
pub const ALL: [(&str, Experiment); 13] = [
    ("aws", aws::run),
    ("sre", sre::run),
    ("throttle", throttle::run),
    ("brooker", brooker::run),
    ("brooker-clients", brooker_clients::run),
    ("quota", quota::run),
    ("e2e", e2e::run),
    ("little", little::run),
    ("long-timeline", long_timeline::run),
    ("rare-drops", rare_drops::run),
    ("inbound", inbound::run),
    ("inbound-capacity", inbound_capacity::run),
    ("hedge", hedge::run),
];

pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// Least-squares line y = a + b x, and its R².
pub fn linear_fit(xs: &[f64], ys: &[f64]) -> (f64, f64, f64) {
    let (mx, my) = (mean(xs), mean(ys));
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    let b = sxy / sxx;
    let a = my - b * mx;
    let ss_tot: f64 = ys.iter().map(|y| (y - my).powi(2)).sum();
    let ss_res: f64 = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| (y - a - b * x).powi(2))
        .sum();
    (a, b, 1.0 - ss_res / ss_tot)
}

/// Least-squares quadratic y = c0 + c1 x + c2 x²; returns (c0, c1, c2).
pub fn quadratic_fit(xs: &[f64], ys: &[f64]) -> (f64, f64, f64) {
    // Normal equations, 3×3, solved by Cramer's rule (well conditioned after centring x).
    let m = mean(xs);
    let s = |p: i32| xs.iter().map(|x| (x - m).powi(p)).sum::<f64>();
    let t = |p: i32| {
        xs.iter()
            .zip(ys)
            .map(|(x, y)| (x - m).powi(p) * y)
            .sum::<f64>()
    };
    let a = [[s(0), s(1), s(2)], [s(1), s(2), s(3)], [s(2), s(3), s(4)]];
    let b = [t(0), t(1), t(2)];
    let det = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(a);
    let mut c = [0.0; 3];
    for (i, ci) in c.iter_mut().enumerate() {
        let mut ai = a;
        for r in 0..3 {
            ai[r][i] = b[r];
        }
        *ci = det(ai) / d;
    }
    // Un-centre: y = c0 + c1 (x−m) + c2 (x−m)².
    (c[0] - c[1] * m + c[2] * m * m, c[1] - 2.0 * c[2] * m, c[2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_recover_exact_curves() {
        let xs: Vec<f64> = (1..=19).map(|i| 10.0 * i as f64).collect();
        let ys: Vec<f64> = xs.iter().map(|x| 3.0 + 2.0 * x).collect();
        let (a, b, r2) = linear_fit(&xs, &ys);
        assert!((a - 3.0).abs() < 1e-9 && (b - 2.0).abs() < 1e-9 && (r2 - 1.0).abs() < 1e-12);
        let ys: Vec<f64> = xs.iter().map(|x| 1.0 - 0.5 * x + 0.25 * x * x).collect();
        let (c0, c1, c2) = quadratic_fit(&xs, &ys);
        assert!((c0 - 1.0).abs() < 1e-6 && (c1 + 0.5).abs() < 1e-8 && (c2 - 0.25).abs() < 1e-10);
    }
}
