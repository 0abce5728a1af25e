//! For arbitrary durations, every quantile is within the stated relative error of the exact
//! nearest-rank quantile, the count is exact, and min ≤ quantile ≤ max.
#![cfg(not(loom))]

use std::time::Duration;

use proptest::prelude::*;
use resilix::observe::DurationHistogram;
use resilix::observe::histogram::bucket_count;

/// The nearest-rank quantile the docs define: the `max(1, ⌈q·n⌉)`-th smallest.
fn exact(sorted: &[u64], q: f64) -> u64 {
    let r = ((q * sorted.len() as f64).ceil() as usize).max(1);
    sorted[r - 1]
}

/// Values from every scale: tiny, around powers of two, typical latencies, anything.
fn nanos() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..64,
        (0u32..64, -2i64..=2).prop_map(|(e, d)| (1u64 << e).saturating_add_signed(d)),
        1_000u64..10_000_000_000,
        any::<u64>(),
    ]
}

fn check<const P: u32, const B: usize>(values: &[u64], qs: &[f64]) -> Result<(), TestCaseError> {
    let h = DurationHistogram::<P, B>::with_precision();
    for &v in values {
        h.record(Duration::from_nanos(v));
    }
    prop_assert_eq!(h.count(), values.len() as u64);
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    if sorted.is_empty() {
        prop_assert_eq!(h.quantile(0.5), None);
        return Ok(());
    }
    let (min, max) = (h.min().unwrap(), h.max().unwrap());
    prop_assert!(min.as_nanos() <= sorted[0] as u128);
    prop_assert!(max.as_nanos() >= *sorted.last().unwrap() as u128);
    for &q in qs.iter().chain(&[0.0, 0.5, 0.99, 1.0]) {
        let want = exact(&sorted, q);
        let got = h.quantile(q).unwrap();
        let err = (got.as_nanos() as u64).abs_diff(want) as u128;
        prop_assert!(
            err << (P + 1) <= want as u128,
            "P={} q={}: got {:?}, exact {} ns",
            P,
            q,
            got,
            want
        );
        prop_assert!(min <= got && got <= max);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn quantiles_within_the_bound(
        values in prop::collection::vec(nanos(), 0..300),
        qs in prop::collection::vec(0.0f64..=1.0, 1..8),
    ) {
        check::<3, 496>(&values, &qs)?;
        check::<0, { bucket_count(0) }>(&values, &qs)?;
        check::<2, { bucket_count(2) }>(&values, &qs)?;
        check::<6, { bucket_count(6) }>(&values, &qs)?;
    }

    #[test]
    fn merging_equals_recording_into_one(
        a in prop::collection::vec(nanos(), 0..100),
        b in prop::collection::vec(nanos(), 0..100),
        q in 0.0f64..=1.0,
    ) {
        let (ha, hb, both) = (DurationHistogram::new(), DurationHistogram::new(), DurationHistogram::new());
        for &v in &a { ha.record(Duration::from_nanos(v)); both.record(Duration::from_nanos(v)); }
        for &v in &b { hb.record(Duration::from_nanos(v)); both.record(Duration::from_nanos(v)); }
        ha.merge_from(&hb);
        prop_assert_eq!(ha.count(), both.count());
        prop_assert_eq!((ha.min(), ha.max()), (both.min(), both.max()));
        prop_assert_eq!(ha.quantile(q), both.quantile(q));
        prop_assert_eq!(ha.mean(), both.mean());
    }

    #[test]
    fn mean_within_the_bound(values in prop::collection::vec(nanos(), 1..200)) {
        let h = DurationHistogram::new();
        for &v in &values { h.record(Duration::from_nanos(v)); }
        let exact = values.iter().map(|&v| v as u128).sum::<u128>() / values.len() as u128;
        let got = h.mean().unwrap().as_nanos();
        // Both means are rounded down: one nanosecond of slack on top of the bound.
        prop_assert!(got.abs_diff(exact).saturating_sub(1) * 16 <= exact + 1, "got {} exact {}", got, exact);
    }

    #[test]
    fn out_of_range_q_is_refused(
        values in prop::collection::vec(nanos(), 1..20),
        q in prop_oneof![Just(f64::NAN), -1e300f64..-1e-300, 1.0000001f64..1e300],
    ) {
        let h = DurationHistogram::new();
        for &v in &values { h.record(Duration::from_nanos(v)); }
        prop_assert_eq!(h.quantile(q), None);
    }
}
