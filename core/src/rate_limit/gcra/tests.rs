use super::*;
use crate::rate_limit::Rate;

fn gcra(rate: Rate, burst: u32) -> Gcra {
    Gcra::new(&RateLimitConfig::new(rate).with_burst(burst)).unwrap()
}

/// The era a writer at `now` leaves behind (what `Era::cover` stores).
fn era_at(now: Instant) -> EraSeen {
    EraSeen::of(era_count(now), TICK_BITS)
}

#[test]
fn a_retry_at_is_exact_up_to_the_last_whole_tick_then_saturates() {
    // 1 ms cells: ticks of 2^k ns with k > 0, so the last whole tick ends short of MAX.
    let g = gcra(Rate::one_every(Duration::from_millis(1)), 1);
    let shift = g.shift as u32;
    assert!(shift > 0);
    let last = u64::MAX >> shift;
    assert_eq!(g.instant_at(last), Instant::from_nanos(last << shift));
    assert!(g.instant_at(last) < Instant::MAX);
    assert_eq!(g.instant_at(last + 1), Instant::MAX);
}

#[test]
fn scale_keeps_the_interval_within_a_thousandth_and_rounds_up() {
    for (rate, burst) in [
        (Rate::per_second(10), 10),
        (Rate::per_second(3), 1),
        (Rate::per_hour(1), 1_000),
        (Rate::per_second(1_000_000), 1),
        (Rate::per_second(125_000), 1),
        (Rate::per_second(62_500), 1),
        (Rate::per_second(100_000), 100_000),
        (Rate::per_second(1_000), 500_000),
        (Rate::new(1, Duration::from_secs(86_400)), 100_000),
    ] {
        let g = gcra(rate, burst);
        let asked = rate.emission_interval().as_nanos();
        let stored = g.emission_interval().as_nanos();
        assert!(stored > asked, "{rate:?}: strictly longer");
        // 0.1%, or 1% on the finest (8 ns) ticks.
        let (num, den) = if g.shift as u32 == MIN_SHIFT {
            (101, 100)
        } else {
            (1_001, 1_000)
        };
        assert!(stored * den <= asked * num, "{rate:?}: {stored} vs {asked}");
        assert!((g.span as u64) < SPAN_LIMIT);
        assert!(g.limit <= SPAN_LIMIT as u32 && g.limit >= g.span);
        assert!(g.shift as u32 >= MIN_SHIFT, "8 ns ticks at the finest");
    }
}

#[test]
fn refused_configs() {
    let c = |rate, burst| Gcra::new(&RateLimitConfig::new(rate).with_burst(burst));
    assert_eq!(
        c(Rate::per_second(0), 1),
        Err(RateLimitConfigError::ZeroRate)
    );
    assert_eq!(
        c(Rate::new(1, Duration::ZERO), 1),
        Err(RateLimitConfigError::ZeroPeriod)
    );
    assert_eq!(
        c(Rate::per_second(1), 0),
        Err(RateLimitConfigError::ZeroBurst)
    );
    assert_eq!(
        c(Rate::per_second(2_000_000_000), 1),
        Err(RateLimitConfigError::RateBeyondResolution)
    );
    assert_eq!(
        c(Rate::per_second(2_000_000), 1),
        Err(RateLimitConfigError::RateBeyondResolution),
        "500 ns is 62.5 ticks of 8 ns, stored as 64: 2.4% off"
    );
    assert_eq!(
        c(Rate::per_second(999_999), 1),
        Err(RateLimitConfigError::RateBeyondResolution),
        "1 000.001 ns rounds up to 126 ticks of 8 ns, plus one: 1.6% off"
    );
    assert!(
        c(Rate::per_second(1_000_000), 1).is_ok(),
        "126 ticks of 8 ns for 1 µs: 0.8%"
    );
    assert_eq!(
        c(Rate::per_second(1), 1 << 30),
        Err(RateLimitConfigError::BurstTooLarge)
    );
}

#[test]
fn decide_burst_then_rate() {
    let g = gcra(Rate::one_every(Duration::from_nanos(1 << 20)), 3);
    let t = g.emission;
    assert_eq!(
        t, 2049,
        "2^20 ns in 512 ns ticks, plus the tick that pays for rounding"
    );
    let start = Instant::from_secs(1);
    let seen = era_at(start);
    let at = |ticks: u64| g.now(start + g.scale().duration_of(ticks as u32));
    let mut tat = g.full(at(0));
    for _ in 0..3 {
        match g.decide(tat, seen, at(0), 1) {
            Decision::Admit(next) => tat = next,
            Decision::Wait(_) => panic!("a full bucket admits its burst"),
        }
    }
    let f = at(0).tick;
    assert_eq!(g.decide(tat, seen, at(0), 1), Decision::Wait(f + t as u64));
    assert_eq!(
        g.decide(tat, seen, at(t as u64 - 1), 1),
        Decision::Wait(f + t as u64)
    );
    assert!(matches!(
        g.decide(tat, seen, at(t as u64), 1),
        Decision::Admit(_)
    ));
    assert_eq!(g.available(tat, seen, at(0)), 0);
    assert_eq!(g.available(tat, seen, at(2 * t as u64)), 2);
    assert_eq!(
        g.decide(tat, seen, at(0), 3),
        Decision::Wait(f + 3 * t as u64)
    );
}

#[test]
fn an_idle_bucket_restarts_from_the_tick_below() {
    let g = gcra(Rate::one_every(Duration::from_nanos(1 << 20)), 1);
    let on_tick = Instant::from_secs(1);
    let seen = era_at(on_tick);
    for now in [on_tick, on_tick + Duration::from_nanos(1)] {
        let at = g.now(now);
        let Decision::Admit(tat) = g.decide(g.full(at), seen, at, 1) else {
            panic!()
        };
        let expected = (at.tick + g.emission as u64) & TICK_MASK as u64;
        assert_eq!(tat as u64, expected, "from the tick below");
    }
}

#[test]
fn a_lagging_caller_is_refused_and_a_long_idle_refills() {
    let g = gcra(Rate::one_every(Duration::from_nanos(1 << 20)), 2);
    let unit = g.scale().resolution();
    let now = Instant::from_secs(3);
    let seen = era_at(now);
    // Empty bucket: TAT = now + span.
    let tat = (g.now(now).tick as u32 + g.span) & TICK_MASK;
    let back = |ticks: u32| g.now(now - unit * ticks);
    let early = g.limit - g.span;
    assert!(matches!(
        g.decide(tat, seen, back(10), 1),
        Decision::Wait(_)
    ));
    assert!(matches!(
        g.decide(tat, seen, back(early), 1),
        Decision::Wait(_)
    ));
    assert!(matches!(
        g.decide(tat, seen, back(early + 1), 1),
        Decision::Admit(_)
    ));
    assert!(g.is_full(tat, seen, g.now(now + unit * g.span)));
}

#[test]
fn any_number_of_circles_later_the_bucket_is_full() {
    // 10 a second: 32.768 µs ticks, a circle of 2^31 ticks is 19.55 h.
    let g = gcra(Rate::per_second(10), 10);
    let circle = g.scale().duration_of(1 << 30) * 2;
    let start = Instant::from_secs(100);
    let seen = era_at(start);
    let tat = (g.now(start).tick as u32 + g.span) & TICK_MASK; // drained
    for k in 1..=4u32 {
        for off in [
            Duration::ZERO,
            Duration::from_millis(500),
            Duration::from_secs(1),
        ] {
            let later = g.now(start + circle * k - off);
            assert_eq!(g.available(tat, seen, later), 10, "{k} circles − {off:?}");
        }
    }
}

#[test]
fn the_fast_path_agrees_with_widening() {
    let g = gcra(Rate::per_second(100_000), 100);
    for start in [1u64, 3, 4, 5, 1 << 20] {
        let start = Instant::from_secs(start);
        let seen = era_at(start);
        for used in [0u32, 1, 50, 100] {
            let tat = (g.now(start).tick as u32 + used * g.emission) & TICK_MASK;
            for dt in [
                0u64,
                1,
                999,
                10_000,
                1_000_000,
                2_000_000_000,
                4_294_967_295,
            ] {
                let now = g.now(start + Duration::from_nanos(dt));
                let fast = g.debt(tat, seen, now);
                // The same word read from an era that differs from `now`'s: widened.
                let wide = match widened_ahead(tat, seen, g.shift, g.span, now.tick) {
                    d if d <= g.limit => d,
                    _ => 0,
                };
                assert_eq!(fast, wide, "start {start:?} used {used} dt {dt}");
            }
        }
    }
}

#[test]
fn carry_over_keeps_cells_and_caps_at_the_new_burst() {
    let slow = gcra(Rate::one_every(Duration::from_nanos(1 << 20)), 4);
    let fast = gcra(Rate::one_every(Duration::from_nanos(1 << 19)), 10);
    let now = Instant::from_secs(2);
    let seen = era_at(now);
    // Two of four cells used.
    let tat = slow.full(slow.now(now)) + 2 * slow.emission;
    assert_eq!(slow.available(tat, seen, slow.now(now)), 2);
    let moved = slow.carry_over(tat, seen, now, &fast);
    assert_eq!(
        fast.available(moved, seen, fast.now(now)),
        2,
        "cells carry over"
    );
    // A full bucket stays full, capped at the smaller burst.
    let small = gcra(Rate::one_every(Duration::from_nanos(1 << 20)), 1);
    let full = fast.full(fast.now(now));
    let moved = fast.carry_over(full, seen, now, &small);
    assert_eq!(small.available(moved, seen, small.now(now)), 1);
}

#[test]
fn mul_div_is_exact_without_overflow() {
    assert_eq!(mul_div_floor(7, 5, 3, u128::MAX), 11);
    assert_eq!(
        mul_div_floor((1 << 100) + 5, 3 * (1 << 20) + 1, (1 << 20) + 7, u128::MAX),
        3802927622329703845037372032123
    );
    let big = 1u128 << 100;
    assert_eq!(mul_div_floor(big, big, big, u128::MAX), big);
    assert_eq!(mul_div_floor(big, big, 1, 12), 12, "capped");
    assert_eq!(mul_div_floor(0, big, 5, 9), 0);
}
