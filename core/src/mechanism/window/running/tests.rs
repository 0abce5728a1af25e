use super::*;
use crate::random::{Random, SeededRandom};
use crate::window::TimeWindow;

extern crate std;

const SEC: Duration = Duration::from_secs(1);

#[test]
fn counts_accumulate_then_slide_out() {
    let w: RunningWindow<4, 2> = RunningWindow::new(Duration::from_secs(4));
    assert_eq!(w.bucket_length(), SEC);
    w.add(Instant::from_millis(100), [1, 0]);
    w.add(Instant::from_millis(1_100), [1, 1]);
    assert_eq!(w.totals(Instant::from_millis(1_200)), [2, 1]);
    // At t=4.5 s the periods 1..=4 are in the window; period 0 has slid out.
    assert_eq!(w.totals(Instant::from_millis(4_500)), [1, 1]);
    assert_eq!(w.totals(Instant::from_millis(5_000)), [0, 0]);
    // Reads never moved the window: an add there starts period 5 afresh.
    w.add(Instant::from_millis(5_000), [3, 2]);
    assert_eq!(w.totals(Instant::from_millis(5_000)), [3, 2]);
    assert_eq!(w.totals(Instant::from_millis(8_999)), [3, 2]);
    assert_eq!(w.totals(Instant::from_millis(9_000)), [0, 0]);
}

#[test]
fn one_bucket_counts_its_own_period_only() {
    let w: RunningWindow<1, 1> = RunningWindow::new(SEC);
    w.add(Instant::from_millis(10), [2]);
    assert_eq!(w.totals(Instant::from_millis(999)), [2]);
    assert_eq!(w.totals(Instant::from_millis(1_000)), [0]);
    w.add(Instant::from_millis(1_500), [1]);
    assert_eq!(w.totals(Instant::from_millis(1_999)), [1]);
}

/// The bucket sum (`TimeWindow`) and the running totals fed the same calls on a forward
/// timeline whose gaps run from 1 ns to years: single-threaded both are exact, so they
/// agree at every step, whatever the bucket count.
fn agrees_with_the_bucket_sum<const B: usize>(seed: u64) {
    let mut rng = SeededRandom::new(seed);
    let window = Duration::from_nanos(8 * B as u64 + rng.below(1 << (10 + seed % 30)));
    let running: RunningWindow<B, 2> = RunningWindow::new(window);
    let buckets: TimeWindow<B, 2> = TimeWindow::new(window);
    let mut now = Instant::from_nanos(rng.below(1 << 62));
    for step in 0..3_000 {
        let gap = match rng.below(8) {
            0 => 0,
            1..=4 => rng.below(window.as_nanos() as u64 / B as u64 + 2),
            5 | 6 => rng.below(window.as_nanos() as u64 * 2 + 2),
            _ => 1u64 << rng.below(59), // up to 18 years
        };
        now = now.saturating_add(Duration::from_nanos(gap));
        if rng.below(3) > 0 {
            let deltas = [1 + rng.below(3) as u32, rng.below(2) as u32];
            running.add(now, deltas);
            buckets.add(now, deltas);
        }
        assert_eq!(
            running.totals(now),
            buckets.totals(now),
            "seed {seed} step {step} at {now:?}, window {window:?}"
        );
    }
}

#[test]
fn agrees_with_the_bucket_sum_for_every_bucket_count() {
    for seed in 0..40 {
        agrees_with_the_bucket_sum::<1>(seed);
        agrees_with_the_bucket_sum::<2>(seed);
        agrees_with_the_bucket_sum::<3>(seed);
        agrees_with_the_bucket_sum::<7>(seed);
        agrees_with_the_bucket_sum::<20>(seed);
    }
}

#[test]
fn a_head_whole_circles_old_is_not_current() {
    // 1 ms buckets: the 31-bit head word repeats every 2^31 ms (24.9 days). A count made
    // at 0.5 ms must not reappear any number of circles later.
    for circles in 1..=3u64 {
        let w: RunningWindow<4, 1> = RunningWindow::new(Duration::from_millis(4));
        w.add(Instant::from_micros(500), [5]);
        let later = Instant::from_micros(500 + (circles << PERIOD_BITS) * 1_000);
        assert_eq!(w.totals(later), [0], "{circles} circles later");
        w.add(later, [1]);
        assert_eq!(w.totals(later), [1], "{circles} circles later");
    }
}

#[test]
fn time_backwards_counts_at_the_head_or_restarts_the_window() {
    let w: RunningWindow<4, 1> = RunningWindow::new(Duration::from_secs(4));
    w.add(Instant::from_secs(10), [3]);
    // Two periods back: read as at the head, and counted there.
    assert_eq!(w.totals(Instant::from_secs(8)), [3]);
    w.add(Instant::from_secs(8), [1]);
    assert_eq!(w.totals(Instant::from_secs(10)), [4]);
    assert_eq!(
        w.totals(Instant::from_secs(14)),
        [0],
        "both slide out at the head"
    );
    // A window or more back: the window restarts there, empty.
    assert_eq!(w.totals(Instant::from_secs(2)), [0]);
    w.add(Instant::from_secs(2), [1]);
    assert_eq!(w.totals(Instant::from_secs(2)), [1]);
    assert_eq!(w.totals(Instant::from_secs(5)), [1]);
    assert_eq!(w.totals(Instant::from_secs(6)), [0]);
    // The ends of the timeline, both ways.
    w.add(Instant::MAX, [1]);
    assert_eq!(w.totals(Instant::MAX), [1]);
    w.add(Instant::ZERO, [2]);
    assert_eq!(w.totals(Instant::ZERO), [2]);
    assert_eq!(w.totals(Instant::MAX), [0]);
}

#[test]
fn the_window_total_saturates_and_what_was_cut_never_returns() {
    let w: RunningWindow<2, 1> = RunningWindow::new(Duration::from_secs(2));
    w.add(Instant::ZERO, [u32::MAX - 5]);
    w.add(Instant::from_secs(1), [u32::MAX]);
    assert_eq!(w.totals(Instant::from_secs(1)), [u32::MAX], "saturated");
    w.add(Instant::from_secs(1), [7]);
    assert_eq!(w.totals(Instant::from_secs(1)), [u32::MAX]);
    // Period 0 slides out: what remains is what period 1 could add (5), never a wrap.
    assert_eq!(w.totals(Instant::from_secs(2)), [5]);
    w.add(Instant::from_secs(2), [1 << 31]);
    assert_eq!(w.totals(Instant::from_secs(2)), [5 + (1 << 31)]);
    assert_eq!(w.totals(Instant::from_secs(4)), [0]);
}

#[test]
fn a_huge_delta_saturates_a_total_that_is_still_small() {
    // The plain add is only for a small total and a small delta: a delta of 2^31 or more
    // onto any count would wrap the sum, so it takes the saturating path however small
    // the total is.
    let w: RunningWindow<2, 1> = RunningWindow::new(Duration::from_secs(2));
    w.add(Instant::ZERO, [10]);
    w.add(Instant::ZERO, [u32::MAX]);
    assert_eq!(
        w.totals(Instant::ZERO),
        [u32::MAX],
        "saturated, not wrapped to 9"
    );
}

#[test]
fn a_caller_a_whole_window_behind_restarts_the_window_at_its_period() {
    // One second a period, four periods. A stale `now` less than a window behind the head
    // counts at the head; one a whole window or more behind restarts the window, empty,
    // at its own period (what it counted could not be in the head's window anyway).
    let w: RunningWindow<4, 1> = RunningWindow::new(Duration::from_secs(4));
    w.add(Instant::from_secs(10), [5]);
    w.add(Instant::from_secs(7), [1]);
    assert_eq!(
        w.totals(Instant::from_secs(10)),
        [6],
        "three behind: at the head"
    );
    w.add(Instant::from_secs(6), [2]);
    assert_eq!(
        w.totals(Instant::from_secs(6)),
        [2],
        "four behind: a new window at 6"
    );
    assert_eq!(w.totals(Instant::from_secs(9)), [2]);
    assert_eq!(w.totals(Instant::from_secs(10)), [0]);
}

#[test]
fn clear_forgets_everything_and_counting_resumes() {
    let w: RunningWindow<4, 2> = RunningWindow::new(Duration::from_secs(4));
    w.add(Instant::from_secs(1), [4, 2]);
    w.add(Instant::from_secs(2), [4, 2]);
    w.clear();
    for s in [2, 3, 4, 5, 9] {
        assert_eq!(w.totals(Instant::from_secs(s)), [0, 0], "{s} s");
    }
    w.add(Instant::from_secs(3), [1, 1]);
    assert_eq!(w.totals(Instant::from_secs(3)), [1, 1]);
    assert_eq!(w.totals(Instant::from_secs(6)), [1, 1]);
    assert_eq!(w.totals(Instant::from_secs(7)), [0, 0]);
}

#[test]
fn a_move_writes_only_the_periods_it_passes() {
    // The slot a move from h to h + 1 writes is the one of h − B, which no reader at
    // h − 1, h or h + 1 reads (that is why the ring has B + 1 slots).
    type W = RunningWindow<5, 1>;
    for h in 0..20u64 {
        let written = (h + 1) % W::RING;
        for t in [h.saturating_sub(1), h, h + 1] {
            if let View::Slot(i) = W::view(h, t) {
                assert_ne!(i as u64, written, "head {h}, reader at {t}");
            }
        }
    }
}

#[test]
fn a_bounded_add_checks_the_totals_as_they_stand_and_ages_out() {
    let w: RunningWindow<4, 2> = RunningWindow::new(Duration::from_secs(4));
    let at = Instant::from_millis(1_500);
    w.add(at, [3, 0]);
    // One more retry while retries < first attempts: three, then no more.
    let grant = |now| w.try_add_one(now, 1, |t: &[u32; 2]| t[1] < t[0]);
    assert_eq!((0..5).filter(|_| grant(at)).count(), 3);
    assert_eq!(w.totals(at), [3, 3]);
    // A later period inside the window still counts them; a window later they are gone.
    assert!(!grant(Instant::from_millis(3_500)));
    w.add(Instant::from_millis(6_500), [1, 0]);
    assert_eq!(w.totals(Instant::from_millis(6_500)), [1, 0]);
    assert!(grant(Instant::from_millis(6_500)));
    // The totals the check sees are the window's, counter `index` included.
    let seen = core::cell::Cell::new([0u32; 2]);
    assert!(!w.try_add_one(Instant::from_millis(6_500), 0, |t| {
        seen.set(*t);
        false
    }));
    assert_eq!(seen.get(), [1, 1]);
    // Nothing for a counter out of range, or a window of no buckets.
    assert!(!w.try_add_one(at, 2, |_| true));
    let none: RunningWindow<0, 1> = RunningWindow::new(Duration::from_secs(1));
    assert!(!none.try_add_one(at, 0, |_| true));
}

#[test]
fn a_bounded_add_never_takes_a_total_past_the_saturation_point() {
    let w: RunningWindow<2, 1> = RunningWindow::new(Duration::from_secs(2));
    w.add(Instant::ZERO, [u32::MAX]);
    assert_eq!(w.totals(Instant::ZERO), [u32::MAX]);
    assert!(
        !w.try_add_one(Instant::ZERO, 0, |_| true),
        "already saturated"
    );
    assert_eq!(w.totals(Instant::ZERO), [u32::MAX]);
}
