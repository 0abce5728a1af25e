use core::time::Duration;

use super::*;
use crate::RejectReason;
use crate::permit::{Env, Permit, Policy};
use crate::random::SeededRandom;
use crate::time::Instant;
use crate::verdict::Verdict;

/// 2^20 ns per cell, configured.
const T: Duration = Duration::from_nanos(1 << 20);
/// As stored: 2 049 ticks of 512 ns (T's 2 048 ticks plus one). Every instant below is
/// a whole number of ticks, so the expectations are exact.
const S: Duration = Duration::from_nanos(2_049 * 512);

fn limiter(burst: u32) -> RateLimiter {
    RateLimiter::new(RateLimitConfig::new(Rate::one_every(T)).with_burst(burst)).unwrap()
}

/// Reconfigures `l` at `now`, with no observer.
fn reconfigure(
    l: &RateLimiter,
    config: RateLimitConfig,
    now: Instant,
) -> Result<(), ReconfigureError> {
    let mut rng = SeededRandom::new(0);
    l.reconfigure(config, &mut Env::new(now, &mut rng))
}

fn at(cells: u64) -> Instant {
    Instant::from_secs(1_000) + S * cells as u32
}

#[test]
fn exact_burst_then_exact_rate() {
    let l = limiter(5);
    assert_eq!(l.emission_interval(), S);
    let start = at(0);
    for _ in 0..5 {
        l.try_acquire(start).unwrap();
    }
    let refused = l.try_acquire(start).unwrap_err();
    assert_eq!(refused.reason(), RejectReason::RateLimited);
    assert_eq!(refused.retry_at(), Some(at(1)));
    assert!(l.try_acquire(at(1) - Duration::from_nanos(512)).is_err());
    for k in 1..=50 {
        l.try_acquire(at(k)).unwrap();
        assert!(l.try_acquire(at(k)).is_err(), "exactly one cell per T");
    }
}

#[test]
fn a_decimal_rate_is_held_to_its_stored_interval() {
    let l = RateLimiter::new(RateLimitConfig::new(Rate::per_second(10))).unwrap();
    let t = l.emission_interval();
    assert!(t >= Duration::from_millis(100) && t <= Duration::from_micros(100_100));
    let start = Instant::from_secs(50);
    let admitted = (0..1_000)
        .filter(|i| l.try_acquire(start + Duration::from_millis(*i)).is_ok())
        .count();
    // Burst 10 at once, then one more per T within the next second.
    assert_eq!(
        admitted,
        10 + (Duration::from_millis(999).as_nanos() / t.as_nanos()) as usize
    );
}

#[test]
fn n_cells_all_or_none() {
    let l = limiter(4);
    let now = at(0);
    assert_eq!(l.try_acquire_n(now, 0), Ok(()));
    assert_eq!(l.available(now), 4, "zero cells change nothing");
    assert_eq!(
        l.try_acquire_n(now, 5),
        Err(AcquireError::ExceedsBurst {
            requested: 5,
            burst: 4
        })
    );
    l.try_acquire_n(now, 3).unwrap();
    match l.try_acquire_n(now, 2) {
        Err(AcquireError::Limited(r)) => assert_eq!(r.retry_at(), Some(at(1))),
        other => panic!("{other:?}"),
    }
    assert_eq!(l.available(now), 1, "a refused acquisition takes nothing");
    assert_eq!(
        l.try_acquire_n(now, 4),
        Err(AcquireError::Limited(Rejection::until(
            RejectReason::RateLimited,
            at(3)
        )))
    );
}

#[test]
fn time_backwards_a_little_is_debt_a_lot_is_idle() {
    let l = limiter(2);
    let now = at(100);
    l.try_acquire_n(now, 2).unwrap();
    // A caller whose clock reads slightly earlier is an early arrival: refused.
    assert!(l.try_acquire(at(99)).is_err());
    assert!(l.try_acquire(now - Duration::from_millis(900)).is_err());
    // A step back of more than max(span, 1 s) reads as a long idle: full, never stuck.
    let far_back = now - Duration::from_secs(3);
    assert_eq!(l.available(far_back), 2);
    l.try_acquire_n(far_back, 2).unwrap();
    assert!(l.try_acquire(far_back).is_err());
}

#[test]
fn a_year_later_and_instant_max() {
    let l = limiter(3);
    l.try_acquire_n(at(0), 3).unwrap();
    let year = at(0) + Duration::from_secs(365 * 86_400);
    assert_eq!(l.available(year), 3);
    l.try_acquire_n(year, 3).unwrap();
    assert!(l.try_acquire(year).is_err());
    assert_eq!(l.available(Instant::MAX), 3);
    l.try_acquire_n(Instant::MAX, 3).unwrap();
    let r = l.try_acquire(Instant::MAX).unwrap_err();
    assert_eq!(r.retry_at(), Some(Instant::MAX), "saturates");
    // From MAX back to ZERO is 2^64 ns, an exact multiple of the 2^31-tick circle: the era
    // tells them apart, and a step back that far reads as a long idle.
    assert_eq!(l.available(Instant::ZERO), 3);
    l.try_acquire(Instant::ZERO).unwrap();
}

#[test]
fn reconfiguration_carries_cells_over() {
    let l = limiter(10);
    let now = at(0);
    l.try_acquire_n(now, 4).unwrap();
    // Lower burst: six cells left, capped at three. Never a refill.
    reconfigure(
        &l,
        RateLimitConfig::new(Rate::one_every(T)).with_burst(3),
        now,
    )
    .unwrap();
    assert_eq!(l.burst(), 3);
    assert_eq!(l.available(now), 3);
    l.try_acquire_n(now, 3).unwrap();
    assert_eq!(l.available(now), 0);
    // Raise burst and slow the rate: zero cells stay zero, refill at the new rate.
    let slow = T * 4;
    reconfigure(
        &l,
        RateLimitConfig::new(Rate::one_every(slow)).with_burst(8),
        now,
    )
    .unwrap();
    assert_eq!(l.available(now), 0);
    let stored = l.emission_interval();
    assert!(stored > slow && stored < slow + slow / 1_000);
    assert_eq!(
        l.try_acquire(now).unwrap_err().retry_at(),
        Some(now + stored)
    );
    assert!(l.try_acquire(now + stored).is_ok());
    // An invalid config changes nothing.
    assert_eq!(
        reconfigure(&l, RateLimitConfig::new(Rate::per_second(0)), now),
        Err(ReconfigureError::Config(RateLimitConfigError::ZeroRate))
    );
    assert_eq!(l.burst(), 8);
}

#[test]
fn a_partial_cell_carries_over_too() {
    let l = limiter(1);
    let now = at(0);
    l.try_acquire(now).unwrap();
    let half = now + S / 2;
    reconfigure(
        &l,
        RateLimitConfig::new(Rate::one_every(T * 2)).with_burst(1),
        half,
    )
    .unwrap();
    // Half of a cell was earned; under T' = 2T the other half takes T'/2.
    let wait = l.try_acquire(half).unwrap_err().retry_at().unwrap() - half;
    let expected = l.emission_interval() / 2;
    assert!(
        wait.abs_diff(expected) <= Duration::from_micros(2),
        "{wait:?} vs {expected:?}"
    );
}

/// A slot's quarter circle on the 512 ns ticks of `T`: 2^29 ticks. Its last tick is the last
/// one of its eras (of 2^32 ns), so a call one tick later reads the TAT from an older era.
const QUARTER: u64 = 1 << 38;

#[test]
fn a_bucket_drained_in_the_last_tick_of_an_era_is_still_drained_one_tick_later() {
    // Drained, the TAT lies the whole span past the last tick of the era the reader loads:
    // only the widening slack tells it from a TAT one circle behind, a full bucket.
    let l = limiter(2);
    let boundary = Instant::from_nanos(5 * QUARTER);
    let last = boundary - Duration::from_nanos(512);
    l.try_acquire_n(last, 2).unwrap();
    assert_eq!(
        l.available(boundary),
        0,
        "read across the era: still drained"
    );
    assert_eq!(
        l.try_acquire(boundary).unwrap_err().retry_at(),
        Some(last + S),
        "the next cell one T after the drain"
    );
}

#[test]
fn a_carried_over_debt_one_tick_past_the_span_survives_the_next_era() {
    // Reconfigured in the last tick of an era, a drained bucket's carried debt is rounded up
    // to a whole tick: the TAT lies span + 1 past the writer's tick, one past what an
    // admission can store, and must still read as debt from the next era.
    let l = RateLimiter::new(RateLimitConfig::new(Rate::one_every(T / 2)).with_burst(2)).unwrap();
    let boundary = Instant::from_nanos(5 * QUARTER);
    // 156 ns into a 256 ns tick of T/2, 412 ns into the last 512 ns tick of T.
    let late = boundary - Duration::from_nanos(100);
    l.try_acquire_n(late, 2).unwrap();
    reconfigure(
        &l,
        RateLimitConfig::new(Rate::one_every(T)).with_burst(2),
        late,
    )
    .unwrap();
    // The 156 ns held are worth 312 ns at T; the rest of the span is owed from `late`, and
    // ends 100 ns into a tick: rounded up, the next cell is due one T after `boundary`
    // (not one T after the tick `late` lies in), read in `late`'s own era...
    assert_eq!(
        l.try_acquire(late).unwrap_err().retry_at(),
        Some(boundary + S)
    );
    // ...and the same from the next era, where the TAT is widened.
    assert_eq!(
        l.available(boundary),
        0,
        "read across the era: still drained"
    );
    assert_eq!(
        l.try_acquire(boundary).unwrap_err().retry_at(),
        Some(boundary + S)
    );
}

#[test]
fn a_reset_fills_the_bucket_of_the_config_in_force() {
    let mut rng = SeededRandom::new(0);
    let l = limiter(2);
    // Reconfigured once, the config in force lives in the second slot: a reset must keep it.
    reconfigure(
        &l,
        RateLimitConfig::new(Rate::one_every(T)).with_burst(5),
        at(0),
    )
    .unwrap();
    while l.try_acquire(at(0)).is_ok() {}
    assert_eq!(l.available(at(0)), 0);
    l.reset(&mut Env::new(at(0), &mut rng));
    assert_eq!(l.available(at(0)), 5, "the new burst, full");
    assert_eq!(l.burst(), 5, "the slot in force kept");
    l.try_acquire_n(at(0), 5).unwrap();
    assert!(l.try_acquire(at(0)).is_err(), "and only that burst");
    // A reset a year on (another era) fills it there too.
    let later = at(0) + Duration::from_secs(365 * 86_400);
    l.reset(&mut Env::new(later, &mut rng));
    assert_eq!(l.available(later), 5);
}

#[test]
fn a_peek_is_the_admission_decision_without_the_cell() {
    let l = limiter(1);
    reconfigure(
        &l,
        RateLimitConfig::new(Rate::one_every(T)).with_burst(2),
        at(0),
    )
    .unwrap();
    assert_eq!(l.peek(at(0)), Ok(()));
    assert_eq!(l.peek(at(0)), Ok(()), "a peek takes nothing");
    while l.try_acquire(at(0)).is_ok() {}
    let refused = l.peek(at(0)).unwrap_err();
    assert_eq!(refused.reason(), RejectReason::RateLimited);
    assert_eq!(refused.retry_at(), Some(at(0) + S));
    assert_eq!(
        refused.retry_at(),
        l.try_acquire(at(0)).unwrap_err().retry_at()
    );
    assert_eq!(l.peek(at(1)), Ok(()), "one cell later");
}

#[test]
fn a_concurrent_reconfiguration_is_refused_not_waited_on() {
    let l = limiter(1);
    l.reconfiguring_flag()
        .store(true, crate::sync::Ordering::Release);
    assert_eq!(
        reconfigure(&l, RateLimitConfig::new(Rate::one_every(T)), at(0)),
        Err(ReconfigureError::Busy)
    );
}

#[test]
fn a_dropped_permit_keeps_its_cell_spent() {
    let l = limiter(1);
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(at(0), &mut rng);
    // Admitted, then dropped at once without settling: cancelled.
    let _ = l.admit(&mut env).unwrap();
    assert!(
        l.admit(&mut env).is_err(),
        "cancelled calls still consumed their cell"
    );
    env.now = at(1);
    l.admit(&mut env)
        .unwrap()
        .settle(&Verdict::Transient, &mut env);
    assert!(
        l.admit(&mut env).is_err(),
        "settling refunds nothing either"
    );
}

fn table<const N: usize>(burst: u32) -> KeyedRateLimiter<N> {
    KeyedRateLimiter::new(RateLimitConfig::new(Rate::one_every(T)).with_burst(burst)).unwrap()
}

#[test]
fn each_key_has_its_own_bucket() {
    let t: KeyedRateLimiter<16> = table(2);
    let now = at(0);
    for key in 0..10u64 {
        t.try_acquire_n(key, now, 2).unwrap();
        assert!(t.try_acquire(key, now).is_err());
    }
    assert_eq!(t.len(), 10);
    assert_eq!(
        t.try_acquire(3, now).unwrap_err().retry_at(),
        Some(at(1)),
        "the refusal says when"
    );
    assert_eq!(t.available(3, at(2)), 2);
    assert_eq!(
        t.try_acquire_n(1, now, 3),
        Err(AcquireError::ExceedsBurst {
            requested: 3,
            burst: 2
        })
    );
}

#[test]
fn a_keys_gauges_read_what_it_holds() {
    let t: KeyedRateLimiter<4> = table(2);
    assert_eq!(t.capacity(), 4);
    assert!(t.is_empty());
    t.try_acquire_n(7, at(0), 2).unwrap();
    assert!(!t.is_empty());
    assert_eq!(t.available(7, at(0)), 0, "drained");
    assert_eq!(t.available(7, at(1)), 1, "one cell a T later");
    assert_eq!(
        t.available(8, at(0)),
        2,
        "a key with no entry reads the overflow bucket"
    );
}

#[test]
fn a_key_used_again_a_year_later_keeps_its_debt_in_the_new_era() {
    // The key's entry was placed in one era; a drain a year on must raise its era before the
    // TAT it stores, or the next reader widens that TAT from the old era and reads it as far
    // behind: a full bucket.
    let t: KeyedRateLimiter<4> = table(2);
    t.try_acquire(7, at(0)).unwrap();
    let later = at(0) + Duration::from_secs(365 * 86_400);
    t.try_acquire_n(7, later, 2).unwrap();
    assert_eq!(t.available(7, later), 0);
    assert!(t.try_acquire(7, later).is_err(), "still drained");
}

#[test]
fn idle_keys_are_evicted_explicitly_and_lazily() {
    let t: KeyedRateLimiter<8> = table(1);
    for key in 0..8u64 {
        t.try_acquire(key, at(0)).unwrap();
    }
    assert_eq!(t.len(), 8);
    assert_eq!(t.evict_idle(at(0)), 0, "every bucket is in use");
    // Key 100 finds no free entry and no idle one: the overflow bucket serves it.
    t.try_acquire(100, at(0)).unwrap();
    assert!(
        t.try_acquire(101, at(0)).is_err(),
        "overflow is one shared bucket"
    );
    assert_eq!(t.len(), 8, "never grows");
    // One T later every bucket is full again: a new key takes an idle entry.
    t.try_acquire(102, at(1)).unwrap();
    assert!(
        t.try_acquire(102, at(1)).is_err(),
        "102 has its own entry now"
    );
    assert_eq!(t.len(), 8);
    assert_eq!(t.evict_idle(at(5)), 8);
    assert!(t.is_empty());
}

#[test]
fn a_zero_capacity_table_is_refused() {
    let config = RateLimitConfig::new(Rate::one_every(T));
    let err = KeyedRateLimiter::<0>::new(config).unwrap_err();
    assert_eq!(err, RateLimitConfigError::ZeroCapacity);
    // (The Display text is checked in `KeyedRateLimiter::new`'s doc test.)
    // The smallest table is one entry (plus the overflow bucket), and it works.
    let one: KeyedRateLimiter<1> = table(1);
    one.try_acquire(1, at(0)).unwrap();
    assert!(one.try_acquire(1, at(0)).is_err());
    one.try_acquire(2, at(0)).unwrap(); // overflow
    assert!(one.try_acquire(3, at(0)).is_err(), "overflow spent");
    assert_eq!(one.capacity(), 1);
    assert_eq!(one.evict_idle(at(9)), 1);
}

#[test]
fn a_key_is_a_pipeline_policy() {
    use crate::pipeline::Pipeline;
    let t: KeyedRateLimiter<4> = table(1);
    let mut rng = SeededRandom::new(2);
    let mut env = Env::new(at(0), &mut rng);
    for tenant in [7u64, 8] {
        let pipeline = Pipeline::new().rate_limit(t.for_key(tenant));
        pipeline
            .admit(&mut env, None)
            .unwrap()
            .settle(&Verdict::Success, &mut env);
        let refused = pipeline.admit(&mut env, None).err().map(|r| r.reason());
        assert_eq!(refused, Some(RejectReason::RateLimited));
    }
}

#[test]
fn keyed_time_edges_never_panic() {
    let t: KeyedRateLimiter<4> = table(2);
    for now in [
        at(10),
        Instant::ZERO,
        Instant::MAX,
        at(10) + Duration::from_secs(31_536_000),
    ] {
        for key in [0, u64::MAX, 42] {
            let _ = t.try_acquire(key, now);
        }
        let _ = t.evict_idle(now);
    }
    assert!(t.len() <= 4);
}

/// An error's Display text (the lib tests have no `std`).
fn text(e: RateLimitConfigError) -> heapless::String<1024> {
    let mut s = heapless::String::new();
    core::fmt::write(&mut s, format_args!("{e}")).unwrap();
    s
}

/// The stored interval's excess over `period / count`, as a fraction.
fn excess(rate: Rate, burst: u32) -> Result<f64, RateLimitConfigError> {
    let l = RateLimiter::new(RateLimitConfig::new(rate).with_burst(burst))?;
    let asked = rate.period().as_nanos() as f64 / f64::from(rate.count());
    Ok(l.emission_interval().as_nanos() as f64 / asked - 1.0)
}

#[test]
fn the_supported_range_is_held_and_what_lies_outside_is_named() {
    let day = Rate::new(1, Duration::from_secs(86_400));
    for burst in [1, 1_000, 260_000] {
        let e = excess(day, burst).unwrap();
        assert!((0.0..=0.001).contains(&e), "1/day, burst {burst}: {e}");
    }
    // Every rate up to 61,000 a second to 0.1%, at the smallest and the largest promised burst.
    for count in (1..=61_000).step_by(97).chain([61_000]) {
        for burst in [1, 260_000] {
            let e = excess(Rate::per_second(count), burst).unwrap();
            assert!((0.0..=0.001).contains(&e), "{count}/s, burst {burst}: {e}");
        }
    }
    // Faster, to 1%: every rate up to 600,000 a second, and a million.
    for count in (61_000..=600_000).step_by(997).chain([600_000, 1_000_000]) {
        let e = excess(Rate::per_second(count), 1).unwrap();
        assert!((0.0..=0.01).contains(&e), "{count}/s: {e}");
    }
    assert!(excess(Rate::per_second(1_000_000), 8_000_000).is_ok());
    // Outside: refused, and the error names the range.
    let fast = excess(Rate::per_second(1_000_000_000), 1).unwrap_err();
    assert_eq!(fast, RateLimitConfigError::RateBeyondResolution);
    let named = text(fast);
    assert!(
        named.contains("1.6 µs") && named.contains("600,000 cells a second"),
        "{named}"
    );
    assert!(named.contains("260,000 cells at 0.1%"), "{named}");
    assert_eq!(
        excess(day, 600_000),
        Err(RateLimitConfigError::RateBeyondResolution),
        "a burst the 31-bit word cannot hold at 0.1%"
    );
    let huge = excess(Rate::per_second(1), u32::MAX).unwrap_err();
    assert_eq!(huge, RateLimitConfigError::BurstTooLarge);
    assert!(text(huge).contains("2^30"), "{huge}");
}

#[test]
fn a_reconfiguration_is_an_event_and_a_refused_one_is_not() {
    extern crate std;
    use crate::observe::{Event, Observer, PolicyKind};
    use core::cell::RefCell;
    struct Log(RefCell<std::vec::Vec<Event>>);
    impl Observer for Log {
        fn on_event(&self, e: &Event) {
            self.0.borrow_mut().push(*e);
        }
    }
    let l = limiter(2);
    let log = Log(RefCell::new(std::vec::Vec::new()));
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(at(3), &mut rng).with_observer(&log);
    l.reconfigure(
        RateLimitConfig::new(Rate::one_every(T)).with_burst(5),
        &mut env,
    )
    .unwrap();
    let refused = l.reconfigure(RateLimitConfig::new(Rate::per_second(0)), &mut env);
    assert_eq!(
        refused,
        Err(ReconfigureError::Config(RateLimitConfigError::ZeroRate))
    );
    l.reconfiguring_flag()
        .store(true, crate::sync::Ordering::Release);
    let busy = l.reconfigure(RateLimitConfig::new(Rate::one_every(T)), &mut env);
    assert_eq!(busy, Err(ReconfigureError::Busy));
    assert_eq!(
        log.0.into_inner(),
        [Event::PolicyReconfigured {
            policy: PolicyKind::RateLimiter,
            at: at(3)
        }]
    );
}

#[test]
fn an_acquire_error_amounts_to_a_rate_limited_refusal() {
    let later = Instant::from_secs(3);
    let limited = AcquireError::Limited(Rejection::until(RejectReason::RateLimited, later));
    assert_eq!(limited.rejection().reason(), RejectReason::RateLimited);
    assert_eq!(limited.rejection().retry_at(), Some(later));
    let never = AcquireError::ExceedsBurst {
        requested: 5,
        burst: 4,
    };
    assert_eq!(never.rejection().reason(), RejectReason::RateLimited);
    assert_eq!(
        never.rejection().retry_at(),
        None,
        "the bucket never holds 5"
    );
}
