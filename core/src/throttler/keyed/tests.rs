//! Placement, eviction and overflow of the keyed throttler, on a manual timeline.

use core::time::Duration;

use super::*;
use crate::random::SeededRandom;
use crate::rejection::RejectReason;

extern crate std;

const FAIL: Verdict = Verdict::Transient;
const OK: Verdict = Verdict::Success;
const T0: Instant = Instant::from_secs(1);
/// The default window.
const WINDOW: Duration = Duration::from_secs(120);

/// Keys whose candidate entries are all the same single entry of a one-entry table.
const A: u64 = 1;
const B: u64 = 2;
const C: u64 = 3;

/// Sheds at the first failure (no low-traffic floor), at most half the calls.
const CONFIG: ThrottlerConfig = ThrottlerConfig {
    min_requests: 0,
    max_rejection_rate: 0.5,
    ..ThrottlerConfig::DEFAULT
};

fn call<const N: usize, const B: usize>(
    t: &KeyedThrottler<N, B>,
    key: u64,
    now: Instant,
    v: Verdict,
) -> bool {
    let mut rng = SeededRandom::new(key ^ now.as_nanos());
    let mut env = Env::new(now, &mut rng);
    match t.admit(key, &mut env) {
        Ok(p) => {
            p.settle(&v, &mut env);
            true
        }
        Err(r) => {
            assert_eq!(r.reason(), RejectReason::Throttled);
            false
        }
    }
}

#[test]
fn memory_per_key_is_one_throttler_and_a_tag() {
    use core::mem::size_of;
    assert_eq!(size_of::<Entry<20>>(), 264);
    assert_eq!(size_of::<Entry<4>>(), 136);
    // The tag, the throttler and nothing else (padding to the throttler's alignment).
    assert!(size_of::<Entry<20>>() < size_of::<Throttler<20>>() + size_of::<Tag>() + 8);
    // The table is its entries, the overflow throttler and the writer flag: nothing per key
    // but the entry, however many keys pass through.
    let overhead = size_of::<KeyedThrottler<64>>() - 64 * size_of::<Entry<20>>();
    assert!(overhead <= size_of::<Throttler>() + 8, "{overhead}");
}

#[test]
fn keys_get_their_own_throttlers() {
    let t: KeyedThrottler<8> = KeyedThrottler::new(CONFIG).unwrap();
    assert_eq!(t.capacity(), 8);
    assert!(t.is_empty());
    for _ in 0..20 {
        call(&t, A, T0, FAIL);
    }
    for _ in 0..20 {
        assert!(call(&t, B, T0, OK), "B's upstream answers: B never sheds");
    }
    assert!(!t.rejection_probability(A, T0).unwrap().is_zero());
    assert!(t.rejection_probability(B, T0).unwrap().is_zero());
    assert_eq!(t.counts(B, T0), Some((20, 20)));
    assert_eq!(t.counts(C, T0), None);
    assert_eq!(t.len(), 2);
    assert!(!t.is_empty());
    assert_eq!(t.overflow().counts(T0), (0, 0));
}

#[test]
fn only_empty_windows_are_evicted() {
    let t: KeyedThrottler<8> = KeyedThrottler::new(CONFIG).unwrap();
    call(&t, A, T0, OK);
    call(&t, B, T0 + WINDOW / 2, OK);
    assert_eq!(
        t.evict_idle(T0 + WINDOW / 2),
        0,
        "both counted within the window"
    );
    // A's window has emptied, B's has not.
    assert_eq!(t.evict_idle(T0 + WINDOW + Duration::from_secs(10)), 1);
    assert!(!t.placed(A) && t.placed(B));
    assert_eq!(t.evict_idle(T0 + WINDOW * 3), 1);
    assert!(t.is_empty());
}

#[test]
fn an_entry_whose_only_calls_were_refused_inward_is_idle() {
    // A call settled `Rejected` (refused further in) is neither a request nor an accept.
    let t: KeyedThrottler<8> = KeyedThrottler::new(CONFIG).unwrap();
    call(&t, A, T0, Verdict::Rejected(RejectReason::BulkheadFull));
    assert_eq!(t.counts(A, T0), Some((0, 0)));
    assert_eq!(t.evict_idle(T0), 1);
}

#[test]
fn a_call_in_flight_pins_its_entry() {
    let t: KeyedThrottler<1> = KeyedThrottler::new(CONFIG).unwrap();
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(T0, &mut rng);
    let p = t.admit(A, &mut env).unwrap();
    let cancelled = t.admit(A, &mut env).unwrap();
    assert!(!p.is_overflow());
    assert_eq!(t.evict_idle(T0), 0, "an empty window, but a call in flight");
    let b = t.admit(B, &mut env).unwrap();
    assert!(b.is_overflow(), "A's entry is pinned");
    p.settle(&FAIL, &mut env);
    // The failure landed in A's own throttler, which is therefore not idle.
    assert_eq!(t.counts(A, T0), Some((1, 0)));
    assert_eq!(t.evict_idle(T0), 0);
    b.settle(&OK, &mut env);
    assert_eq!(
        t.overflow().counts(T0),
        (1, 1),
        "B's outcome went to the overflow"
    );
    drop(cancelled);
    assert_eq!(
        t.counts(A, T0),
        Some((1, 0)),
        "a cancelled call counts nothing"
    );
}

#[test]
fn a_re_placed_key_starts_clean() {
    let t: KeyedThrottler<1> = KeyedThrottler::new(CONFIG).unwrap();
    for _ in 0..10 {
        call(&t, A, T0, FAIL);
    }
    let later = T0 + WINDOW * 2;
    assert!(
        call(&t, B, later, OK),
        "A's window is empty: B takes its entry"
    );
    assert!(t.placed(B) && !t.placed(A));
    let much_later = later + WINDOW * 2;
    assert!(call(&t, A, much_later, OK));
    assert_eq!(t.counts(A, much_later), Some((1, 1)));
    assert!(t.rejection_probability(A, much_later).unwrap().is_zero());
}

#[test]
fn a_renewed_entry_shows_nothing_of_the_old_key_even_to_a_late_clock() {
    // Placed a window after A's last call, B reads nothing of A at its own `now`: A's calls
    // have slid out. A reader whose `now` lags a few seconds behind (another thread's clock
    // read) looks at periods A's calls were in; the renewal must have forgotten them.
    let t: KeyedThrottler<1> = KeyedThrottler::new(CONFIG).unwrap();
    for _ in 0..10 {
        call(&t, A, T0, FAIL);
    }
    let placed = T0 + WINDOW + Duration::from_secs(1);
    assert!(call(&t, B, placed, OK));
    assert!(t.placed(B) && !t.placed(A));
    let lagging = placed - Duration::from_secs(5);
    let (requests, _) = t.counts(B, lagging).unwrap();
    assert!(requests <= 1, "A's ten requests read by B: {requests}");
}

#[test]
fn a_full_table_shares_the_overflow_throttler() {
    let t: KeyedThrottler<1> = KeyedThrottler::new(CONFIG).unwrap();
    call(&t, A, T0, OK);
    // B and C have no entry: their failures add up in the one overflow throttler.
    for _ in 0..10 {
        call(&t, B, T0, FAIL);
        call(&t, C, T0, FAIL);
    }
    let (requests, accepts) = t.overflow().counts(T0);
    assert!(requests >= 12 && accepts == 0, "{requests}");
    assert!(!t.overflow().rejection_probability(T0).is_zero());
    assert!(t.rejection_probability(A, T0).unwrap().is_zero());
    assert!(call(&t, A, T0, OK), "the placed key is unaffected");
}

#[test]
fn probes_cover_eight_entries_from_home() {
    let t: KeyedThrottler<64, 4> = KeyedThrottler::with_buckets(CONFIG).unwrap();
    // Every key counts one success, so none is idle: at most 64 are placed.
    for k in 0..200 {
        call(&t, k, T0, OK);
    }
    let placed = (0..200).filter(|&k| t.placed(k)).count();
    assert_eq!(placed, t.len());
    assert!((8..=64).contains(&placed), "{placed}");
    assert_eq!(t.overflow().counts(T0).0 as usize, 200 - placed);
}

#[test]
fn reset_forgets_one_key_only() {
    let t: KeyedThrottler<8> = KeyedThrottler::new(CONFIG).unwrap();
    for _ in 0..5 {
        call(&t, A, T0, FAIL);
        call(&t, B, T0, FAIL);
    }
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(T0, &mut rng);
    assert!(t.reset(A, &mut env));
    assert_eq!(t.counts(A, T0), Some((0, 0)));
    assert_ne!(t.counts(B, T0), Some((0, 0)));
    assert!(!t.reset(C, &mut env));
    assert!(!t.placed(C), "reset places nothing");
}

#[test]
fn bad_configs_are_refused_as_the_throttler_refuses_them() {
    let bad = ThrottlerConfig {
        accepts_multiplier: 0.5,
        ..CONFIG
    };
    assert_eq!(
        KeyedThrottler::<4>::new(bad).unwrap_err(),
        Throttler::new(bad).unwrap_err()
    );
    let short = ThrottlerConfig {
        window: Duration::from_nanos(1),
        ..CONFIG
    };
    assert!(KeyedThrottler::<4, 4>::with_buckets(short).is_err());
}

#[test]
fn for_key_is_a_policy() {
    let t: KeyedThrottler<4> = KeyedThrottler::new(CONFIG).unwrap();
    let p = t.for_key(9);
    assert_eq!(p.key(), 9);
    let mut rng = SeededRandom::new(1);
    let mut env = Env::new(T0, &mut rng);
    let permit = Policy::admit(&p, &mut env).unwrap();
    permit.settle(&FAIL, &mut env);
    assert_eq!(t.counts(9, T0), Some((1, 0)));
}
