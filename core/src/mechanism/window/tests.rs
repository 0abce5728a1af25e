use super::*;

const SEC: Duration = Duration::from_secs(1);

#[test]
fn counts_accumulate_then_slide_out() {
    let w: TimeWindow<4, 2> = TimeWindow::new(Duration::from_secs(4));
    assert_eq!(w.bucket_length(), SEC);
    w.add(Instant::from_millis(100), [1, 0]);
    w.add(Instant::from_millis(1_100), [1, 1]);
    assert_eq!(w.totals(Instant::from_millis(1_200)), [2, 1]);
    // At t=4.5 s the buckets for periods 1..=4 are visible; period 0 has slid out.
    assert_eq!(w.totals(Instant::from_millis(4_500)), [1, 1]);
    assert_eq!(w.totals(Instant::from_millis(5_000)), [0, 0]);
}

#[test]
fn a_reused_bucket_is_zeroed_first() {
    let w: TimeWindow<2, 1> = TimeWindow::new(Duration::from_secs(2));
    w.add(Instant::from_secs(0), [5]);
    w.add(Instant::from_secs(2), [1]); // same slot, new period
    assert_eq!(w.totals(Instant::from_secs(2)), [1]);
}

#[test]
fn a_year_later_the_window_is_empty() {
    let w: TimeWindow<10, 1> = TimeWindow::new(Duration::from_secs(120));
    w.add(Instant::from_secs(5), [7]);
    let year = Instant::from_secs(5 + 365 * 86_400);
    assert_eq!(w.totals(year), [0]);
    w.add(year, [1]);
    assert_eq!(w.totals(year), [1]);
}

#[test]
fn a_bucket_whole_circles_old_is_not_current() {
    // 1 ms buckets: the 31-bit period word repeats every 2^31 ms (24.9 days), the old
    // 32-bit one every 2^32 ms (49.7 days). A count made at 0.5 ms must not reappear any
    // number of circles of either later, nor after the idle gap is broken by a write to
    // another bucket.
    let w: TimeWindow<10, 1> = TimeWindow::new(Duration::from_millis(10));
    w.add(Instant::from_micros(500), [7]);
    let mut seen_at = 0;
    for half_circles in 1..=6u64 {
        let later = Instant::from_micros(500 + half_circles * (1u64 << 31) * 1_000);
        assert!(later.as_nanos() > seen_at);
        assert_eq!(w.totals(later), [0], "{half_circles} × 2^31 periods later");
        w.add(later + Duration::from_millis(1), [1]);
        assert_eq!(w.totals(later + Duration::from_millis(1)), [1]);
        w.add(later + Duration::from_millis(20), [0]);
        assert_eq!(w.totals(later + Duration::from_millis(20)), [0]);
        seen_at = (later + Duration::from_millis(20)).as_nanos();
    }
    // The same slot one, two and three circles later is claimed and zeroed, not added to.
    for circles in 1..=3u64 {
        let w: TimeWindow<4, 1> = TimeWindow::new(Duration::from_millis(4));
        w.add(Instant::ZERO, [5]);
        let later = Instant::from_millis(circles << PERIOD_BITS);
        assert_eq!(w.totals(later), [0]);
        w.add(later, [1]);
        assert_eq!(w.totals(later), [1], "{circles} circles later");
    }
}

#[test]
fn a_bucket_being_claimed_is_not_read_and_old_counts_never_return() {
    let w: TimeWindow<4, 1> = TimeWindow::new(Duration::from_nanos(32)); // 8 ns buckets
    w.add(Instant::ZERO, [5]);
    // A claim of the same slot a circle later, stopped after its mark: readers skip it,
    // adders for that period add beside it.
    let later = Instant::from_nanos(8 << PERIOD_BITS);
    let bucket = &w.buckets[0];
    bucket.period.store(CLAIMING, Ordering::Release);
    assert_eq!(
        w.totals(later),
        [0],
        "old counts under the mark are not read"
    );
    assert_eq!(w.totals(Instant::ZERO), [0], "nor for the old period");
    w.add(later, [1]);
    assert_eq!(bucket.counts[0].load(Ordering::Relaxed), 6);
    // A late claimer that finds the published word of its own period (the era already
    // covers it) puts it back without zeroing.
    bucket
        .era
        .cover(bucket.era.read(), 1 << PERIOD_BITS, PERIOD_BITS);
    bucket.counts[0].store(2, Ordering::Relaxed);
    bucket.period.store(0, Ordering::Release);
    assert_eq!(w.totals(later), [2]);
    w.add(later, [1]);
    assert_eq!(w.totals(later), [3], "published: no second zeroing");
}

#[test]
fn time_backwards_hides_future_buckets_and_never_panics() {
    let w: TimeWindow<4, 1> = TimeWindow::new(Duration::from_secs(4));
    w.add(Instant::from_secs(10), [3]);
    assert_eq!(w.totals(Instant::from_secs(2)), [0]);
    w.add(Instant::from_secs(2), [1]);
    assert_eq!(w.totals(Instant::from_secs(2)), [1]);
    w.add(Instant::MAX, [1]);
    assert_eq!(w.totals(Instant::MAX), [1]);
    w.add(Instant::ZERO, [u32::MAX]);
    w.add(Instant::ZERO, [u32::MAX]);
    assert_eq!(w.totals(Instant::ZERO), [u32::MAX], "counts saturate");
}

#[test]
fn sums_near_the_ceiling_saturate_whichever_side_is_large() {
    // A large count plus a small delta, and a small count plus a large delta: either sum
    // passes u32::MAX, so neither may take the plain add (it would wrap to a small count).
    let w: TimeWindow<4, 2> = TimeWindow::new(Duration::from_secs(4));
    w.add(Instant::ZERO, [u32::MAX - 5, 10]);
    w.add(Instant::ZERO, [10, u32::MAX - 5]);
    assert_eq!(w.totals(Instant::ZERO), [u32::MAX, u32::MAX]);
    // Far from the ceiling the plain add is exact.
    w.add(Instant::from_secs(1), [(1 << 31) - 1, 1]);
    w.add(Instant::from_secs(1), [(1 << 31) - 1, (1 << 31) - 1]);
    assert_eq!(w.totals(Instant::from_secs(1)), [u32::MAX, u32::MAX]);
    assert_eq!(
        w.totals(Instant::from_millis(4_500)),
        [u32::MAX - 1, 1 << 31]
    );
}

#[test]
fn clear_forgets_every_count() {
    let w: TimeWindow<4, 2> = TimeWindow::new(Duration::from_secs(4));
    w.add(Instant::ZERO, [3, 1]);
    w.add(Instant::from_secs(2), [1, 4]);
    assert_eq!(w.totals(Instant::from_secs(2)), [4, 5]);
    w.clear();
    assert_eq!(w.totals(Instant::from_secs(2)), [0, 0]);
    w.add(Instant::from_secs(2), [1, 0]);
    assert_eq!(
        w.totals(Instant::from_secs(3)),
        [1, 0],
        "and counts again after"
    );
}

#[test]
fn tiny_windows_have_eight_nanosecond_buckets() {
    let w: TimeWindow<8, 1> = TimeWindow::new(Duration::ZERO);
    assert_eq!(w.bucket_length(), Duration::from_nanos(8));
    assert_eq!(bucket_nanos(Duration::from_nanos(64), 8), 8);
    assert_eq!(bucket_nanos(Duration::from_nanos(65), 8), 9, "rounded up");
    w.clear();
    assert_eq!(w.totals(Instant::ZERO), [0]);
}
