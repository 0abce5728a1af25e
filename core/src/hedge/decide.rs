//! The hedge's decisions as pure arithmetic, apart from the atomics that store their inputs.
//!
//! Units: the delay in force is a whole number of microseconds in a `u32` (0 = none known
//! yet), so one tick of it is 1 µs and it holds up to 71 minutes; the local cap's balance is in
//! thousandths of a hedge, so a call earns exactly `max_extra_load_permille` of them.

use core::time::Duration;

use crate::time::Instant;

/// One hedge, in the local cap's units.
pub(crate) const ONE_HEDGE: u32 = 1000;

/// `d` in whole microseconds, rounded up (a delay is never shortened by its storage).
pub(crate) const fn micros_ceil(d: Duration) -> u64 {
    let whole = d.as_secs().saturating_mul(1_000_000);
    let part = (d.subsec_nanos() as u64).div_ceil(1000);
    whole.saturating_add(part)
}

/// The floor under every delay, in µs: the configured minimum, and at least one tick.
pub(crate) const fn floor_micros(min_delay: Duration) -> u32 {
    let us = micros_ceil(min_delay);
    if us == 0 {
        1
    } else if us > u32::MAX as u64 {
        u32::MAX
    } else {
        us as u32
    }
}

/// A quantile read from the histogram, raised by its error bound so that it is never below
/// the exact quantile: the histogram's estimate `e` of `x` has `|e − x| ≤ x/16`, so
/// `x ≤ 16e/15`. A delay a little long costs a little latency; a delay a little short sends
/// more copies than `max_extra_load` (a hedge demand above the local cap's supply, and so
/// refusals that fall on exactly the slow calls hedging is for: found by the simulator, where
/// the 6.25% midpoint error put demand at 5.5% against a 5% cap and refused one hedge in 15).
pub(crate) const fn never_below_exact(estimate: Duration) -> Duration {
    let ns = estimate.as_nanos();
    let raised = (ns * 16).div_ceil(15);
    if raised > u64::MAX as u128 {
        Duration::from_nanos(u64::MAX)
    } else {
        Duration::from_nanos(raised as u64)
    }
}

/// The stored delay for a measured (or fixed) delay: rounded up to a tick, at least the
/// floor, at most the word's largest value.
pub(crate) const fn delay_word(measured: Duration, floor: u32) -> u32 {
    let us = micros_ceil(measured);
    let us = if us > u32::MAX as u64 {
        u32::MAX
    } else {
        us as u32
    };
    if us < floor { floor } else { us }
}

/// The nearest rank of the quantile in a window of `window` samples, `⌈window·q⌉` with
/// `q = quantile_permille / 1000`, computed in integers.
pub(crate) const fn quantile_rank(window: u32, quantile_permille: u32) -> u64 {
    let r = (window as u64 * quantile_permille as u64).div_ceil(1000);
    if r == 0 { 1 } else { r }
}

/// The `q` to ask the histogram for so that its nearest rank over `window` samples is `rank`:
/// the middle of the rank's step, `(rank − ½) / window`, so that no float rounding in the
/// histogram's `⌈q·n⌉` can move it to a neighbour.
pub(crate) fn histogram_q(rank: u64, window: u32) -> f64 {
    (rank as f64 - 0.5) / window as f64
}

/// The balance after a call earns `earn`, or `None` when the cap is already full (so a full
/// cap costs a load, never a write).
pub(crate) const fn deposit(balance: u32, earn: u32, cap: u32) -> Option<u32> {
    if balance >= cap {
        return None;
    }
    let next = balance.saturating_add(earn);
    Some(if next > cap { cap } else { next })
}

/// The balance after paying for one hedge, or `None` when less than one hedge is left.
pub(crate) const fn take(balance: u32) -> Option<u32> {
    balance.checked_sub(ONE_HEDGE)
}

/// The balance after a hedge taken from the local cap is given back because the shared budget
/// refused it: never above the cap (a deposit that raced it keeps the cap full).
pub(crate) const fn refund(balance: u32, cap: u32) -> u32 {
    let next = balance.saturating_add(ONE_HEDGE);
    if next > cap { cap } else { next }
}

/// When copy number `sent + 1` is due, `sent` copies having left: one delay after another,
/// from the start of the call.
pub(crate) const fn copy_due(started: Instant, delay: Duration, sent: u32) -> Instant {
    let gap = match delay.checked_mul(sent) {
        Some(g) => g,
        None => Duration::MAX,
    };
    started.saturating_add(gap)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn micros_round_up_and_saturate() {
        assert_eq!(micros_ceil(Duration::ZERO), 0);
        assert_eq!(micros_ceil(Duration::from_nanos(1)), 1);
        assert_eq!(micros_ceil(Duration::from_nanos(1000)), 1);
        assert_eq!(micros_ceil(Duration::from_nanos(1001)), 2);
        assert_eq!(micros_ceil(Duration::from_millis(10)), 10_000);
        assert_eq!(micros_ceil(Duration::MAX), u64::MAX);
    }

    #[test]
    fn the_floor_is_at_least_one_tick() {
        assert_eq!(floor_micros(Duration::ZERO), 1);
        assert_eq!(floor_micros(Duration::from_nanos(1)), 1);
        assert_eq!(floor_micros(Duration::from_millis(1)), 1000);
        assert_eq!(floor_micros(Duration::MAX), u32::MAX);
    }

    #[test]
    fn delay_words_honour_floor_and_ceiling() {
        assert_eq!(delay_word(Duration::ZERO, 1), 1, "never zero");
        assert_eq!(delay_word(Duration::from_micros(5), 1000), 1000);
        assert_eq!(delay_word(Duration::from_nanos(1_000_001), 1000), 1001);
        assert_eq!(delay_word(Duration::from_secs(10_000), 1), u32::MAX);
    }

    #[test]
    fn ranks_are_nearest_rank() {
        assert_eq!(quantile_rank(1000, 950), 950);
        assert_eq!(quantile_rank(20, 950), 19);
        assert_eq!(quantile_rank(21, 950), 20, "⌈19.95⌉");
        assert_eq!(quantile_rank(1, 1), 1, "never rank 0");
        assert_eq!(
            quantile_rank(u32::MAX, 999),
            4_290_672_328,
            "⌈4290672327.705⌉"
        );
    }

    #[test]
    fn histogram_q_lands_on_the_rank() {
        // The histogram's own rule: ⌈q·n⌉, clamped to 1..=n.
        for window in [1u32, 2, 3, 7, 20, 100, 999, 1000, 4096, 1_000_003] {
            for qp in [1u32, 500, 900, 950, 990, 999] {
                let rank = quantile_rank(window, qp);
                let x = histogram_q(rank, window) * window as f64;
                let ceil = if (x as u64 as f64) < x {
                    x as u64 + 1
                } else {
                    x as u64
                };
                assert_eq!(ceil.clamp(1, window as u64), rank, "{window} {qp}");
            }
        }
    }

    #[test]
    fn a_raised_estimate_covers_the_exact_value() {
        // The worst case of the histogram's bound: the estimate 1/16 below the exact value.
        for x in [16u64, 1_000, 1_048_576, 123_456_789, u64::MAX / 2] {
            let e = x - x / 16;
            assert!(never_below_exact(Duration::from_nanos(e)) >= Duration::from_nanos(x));
        }
        assert_eq!(
            never_below_exact(Duration::from_nanos(15)),
            Duration::from_nanos(16)
        );
        assert_eq!(never_below_exact(Duration::ZERO), Duration::ZERO);
        assert_eq!(
            never_below_exact(Duration::MAX),
            Duration::from_nanos(u64::MAX)
        );
    }

    #[test]
    fn credit_arithmetic() {
        assert_eq!(deposit(0, 50, 10_000), Some(50));
        assert_eq!(deposit(9_990, 50, 10_000), Some(10_000), "capped");
        assert_eq!(deposit(10_000, 50, 10_000), None, "full: no write");
        assert_eq!(deposit(u32::MAX - 1, 50, u32::MAX), Some(u32::MAX));
        assert_eq!(take(999), None);
        assert_eq!(take(1000), Some(0));
        assert_eq!(refund(0, 10_000), 1000);
        assert_eq!(refund(9_500, 10_000), 10_000);
    }

    #[test]
    fn copies_are_one_delay_apart_and_saturate() {
        let t = Instant::from_millis(5);
        let d = Duration::from_millis(3);
        assert_eq!(copy_due(t, d, 1), Instant::from_millis(8));
        assert_eq!(copy_due(t, d, 2), Instant::from_millis(11));
        assert_eq!(copy_due(Instant::MAX, d, 1), Instant::MAX);
        assert_eq!(copy_due(t, Duration::MAX, 2), Instant::MAX);
    }
}
