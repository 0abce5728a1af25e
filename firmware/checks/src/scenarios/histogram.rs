//! The duration histogram: bucket arithmetic and f64 quantiles on cores without an FPU, checked
//! against an exact sort of the same samples on the device.

use core::time::Duration;

use resilix::observe::DurationHistogram;
use resilix::random::{Random, SeededRandom};

use super::{ensure, nanos};
use crate::Trace;

const SAMPLES: usize = 200;

pub(crate) fn quantiles(t: &mut Trace) -> Result<(), &'static str> {
    let histogram = DurationHistogram::new();
    let mut rng = SeededRandom::new(7);
    let mut exact = [0u64; SAMPLES];
    for slot in exact.iter_mut() {
        // Log-uniform-ish: 1 µs to ~1 s, so many octaves are used.
        let shift = rng.below(20) as u32;
        *slot = 1_000 + (rng.below(1_000) << shift);
        histogram.record(Duration::from_nanos(*slot));
    }
    exact.sort_unstable();
    ensure(
        histogram.count() == SAMPLES as u64,
        "count differs from the samples recorded",
    )?;
    ensure(
        histogram.min() == Some(Duration::from_nanos(exact[0])),
        "min is not exact below 134 ms",
    )?;
    t.push(histogram.count());
    t.push_opt(histogram.min().map(nanos));
    t.push_opt(histogram.max().map(nanos));
    for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
        let got = nanos(histogram.quantile(q).ok_or("no quantile")?);
        // The documented definition: the nearest-rank value, r = max(1, ceil(q * n)), and the
        // documented bound: within exact / 2^(P+1) = exact / 16 for the default P = 3.
        let rank = ceil(q * SAMPLES as f64).clamp(1, SAMPLES);
        let want = exact[rank - 1];
        ensure(
            got.abs_diff(want) <= want / 16,
            "quantile outside the documented error",
        )?;
        t.push(got);
    }
    t.push_opt(histogram.mean().map(nanos));
    histogram.reset();
    ensure(histogram.count() == 0, "reset left counts behind")?;
    Ok(())
}

/// `f64::ceil` is not in `core`; this is enough for the small positive ranks used here.
fn ceil(x: f64) -> usize {
    let floor = x as usize;
    if (floor as f64) < x { floor + 1 } else { floor }
}
