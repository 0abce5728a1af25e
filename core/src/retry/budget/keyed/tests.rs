use core::time::Duration;

use super::*;
use crate::retry::budget::{Charge, TokenBucket, TokenBucketConfig, Tokens, Unlimited};
use crate::time::{Clock, ManualClock};

const T: VerdictKind = VerdictKind::Transient;

fn per_key(permille: u32, floor: u32, window: Duration) -> RatioBudgetConfig {
    RatioBudgetConfig {
        max_retry_permille: permille,
        min_retries_per_window: floor,
        window,
    }
}

fn spend_all<const N: usize, S: RetryBudget, const B: usize>(
    t: &KeyedBudget<N, S, B>,
    key: u64,
    now: Instant,
) -> usize {
    (0..10_000)
        .take_while(|_| t.for_key(key).try_spend(now, T))
        .count()
}

fn firsts<const N: usize, S: RetryBudget, const B: usize>(
    t: &KeyedBudget<N, S, B>,
    key: u64,
    now: Instant,
    n: u32,
) {
    for _ in 0..n {
        t.for_key(key).record_first_attempt(now);
    }
}

/// Keys whose homes are the same entry of a table of `n`, in order: a table of `n ≥ 8` then
/// needs 9 of them to be full.
fn colliding(n: usize, count: usize) -> [u64; 16] {
    let home = |k: u64| ((k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize) % n;
    let mut out = [0; 16];
    let mut found = 0;
    let mut k = 1u64;
    while found < count {
        if home(k) == home(1) {
            out[found] = k;
            found += 1;
        }
        k += 1;
    }
    out
}

#[test]
fn a_new_key_takes_an_entry_and_starts_from_the_floor() {
    let clock = ManualClock::new(Instant::from_secs(5));
    let t: KeyedBudget<8, Unlimited> = KeyedBudget::new(PER_KEY_DEFAULT, Unlimited).unwrap();
    assert!(t.is_empty());
    assert_eq!(t.capacity(), 8);
    assert_eq!(t.counts(7, clock.now()), None);
    // A retry before any first attempt places the key: the floor of one.
    assert!(t.for_key(7).try_spend(clock.now(), T));
    assert!(!t.for_key(7).try_spend(clock.now(), T));
    assert_eq!(t.counts(7, clock.now()), Some((0, 1)));
    assert!(t.placed(7) && !t.placed(8));
    assert_eq!(t.len(), 1);
    assert!(!t.is_empty());
    assert_eq!(t.for_key(7).key(), 7);
    // Another key starts fresh, with its own floor.
    assert!(t.for_key(8).try_spend(clock.now(), T));
    assert_eq!(t.len(), 2);
    assert_eq!(
        t.overflow().counts(clock.now()),
        (0, 0),
        "nothing overflowed"
    );
}

#[test]
fn a_hostile_key_exhausts_its_own_budget_while_others_still_retry() {
    let now = Instant::from_secs(3);
    let keys = 10u64;
    // Shared alone: 1,000 first attempts, 100 retries, all taken by the hostile key 0.
    let alone = RatioBudget::with_defaults();
    for _ in 0..keys * 100 {
        alone.record_first_attempt(now);
    }
    let hostile = (0..1_000).filter(|_| alone.try_spend(now, T)).count();
    assert_eq!(hostile, 100);
    assert!(!alone.try_spend(now, T), "every other key: no retries left");

    // Under the keyed budget the hostile key gets its own 10% and every other key keeps its own.
    let shared = RatioBudget::with_defaults();
    let t: KeyedBudget<64, &RatioBudget> = KeyedBudget::new(PER_KEY_DEFAULT, &shared).unwrap();
    for k in 0..keys {
        firsts(&t, k, now, 100);
    }
    assert_eq!(spend_all(&t, 0, now), 10, "the hostile key: 10% of its 100");
    for k in 1..keys {
        assert_eq!(spend_all(&t, k, now), 10, "key {k} still retries");
    }
    assert_eq!(
        shared.counts(now),
        (1_000, 100),
        "the shared budget paid for each"
    );
    assert_eq!(t.counts(0, now), Some((100, 10)));
}

#[test]
fn the_shared_budget_exhausted_refuses_every_key_and_refunds_them() {
    let now = Instant::from_secs(1);
    // Room for exactly three retries in the shared bucket.
    let shared = TokenBucket::new(TokenBucketConfig {
        capacity: Tokens::whole(15),
        initial: Tokens::whole(15),
        ..TokenBucketConfig::AWS_SDK_STANDARD
    })
    .unwrap();
    let generous = per_key(1000, 5, Duration::from_secs(10));
    let t: KeyedBudget<8, &TokenBucket> = KeyedBudget::new(generous, &shared).unwrap();
    for k in 0..4 {
        firsts(&t, k, now, 10);
    }
    assert!(t.for_key(0).try_spend(now, T) && t.for_key(0).try_spend(now, T));
    assert_eq!(spend_all(&t, 1, now), 1);
    assert_eq!(shared.balance(), Tokens::ZERO);
    for k in 0..4 {
        assert!(
            !t.for_key(k).try_spend(now, T),
            "key {k}: the shared budget is out"
        );
    }
    // The keys' books hold only the retries made: the refused reservations were given back.
    assert_eq!(t.counts(0, now), Some((10, 2)));
    assert_eq!(t.counts(1, now), Some((10, 1)));
    assert_eq!(t.counts(2, now), Some((10, 0)));
    assert_eq!(t.counts(3, now), Some((10, 0)));
    // When the shared budget recovers, the keys have their whole allowance left.
    for _ in 0..2 {
        t.for_key(2).record_success(now, Some(T)); // a retry's success refunds its 5 tokens
    }
    assert_eq!(spend_all(&t, 2, now), 2);
    assert_eq!(t.counts(2, now), Some((10, 2)));
}

#[test]
fn a_key_refusal_never_spends_the_shared_budget() {
    let now = Instant::from_secs(1);
    let shared = TokenBucket::aws_sdk_standard(); // 500 tokens, 5 a retry, refusals free
    let t: KeyedBudget<8, &TokenBucket> = KeyedBudget::new(PER_KEY_DEFAULT, &shared).unwrap();
    firsts(&t, 9, now, 50);
    // 5 granted (10% of 50), then 995 refused by the key: the shared bucket paid 5 × 5.
    let granted = (0..1_000)
        .filter(|_| t.for_key(9).try_spend(now, T))
        .count();
    assert_eq!(granted, 5);
    assert_eq!(shared.balance(), Tokens::whole(475));
    // A success and an unretried failure reach the shared budget as they would alone.
    t.for_key(9).record_success(now, Some(T));
    assert_eq!(
        shared.balance(),
        Tokens::whole(480),
        "the retry's cost refunded"
    );
    t.for_key(9).record_unretried_failure(now, T);
    assert_eq!(
        shared.balance(),
        Tokens::whole(480),
        "AWS charges no unretried failure"
    );
}

#[test]
fn a_key_refusal_is_charged_as_an_unretried_failure_where_the_shared_budget_charges_those() {
    let now = Instant::from_secs(1);
    // gRPC A6: every failure costs a token, retried or not.
    let shared =
        TokenBucket::new(TokenBucketConfig::grpc(Tokens::whole(100), Tokens::milli(100)).unwrap())
            .unwrap();
    assert_eq!(shared.config().charge, Charge::EveryFailure);
    let t: KeyedBudget<8, &TokenBucket> = KeyedBudget::new(PER_KEY_DEFAULT, &shared).unwrap();
    firsts(&t, 1, now, 10);
    assert!(t.for_key(1).try_spend(now, T), "the key's floor");
    assert!(!t.for_key(1).try_spend(now, T), "the key refuses");
    assert!(!t.for_key(1).try_spend(now, T));
    assert_eq!(
        shared.balance(),
        Tokens::whole(97),
        "three failures, three tokens"
    );
}

#[test]
fn a_full_table_counts_new_keys_in_the_overflow() {
    let now = Instant::from_secs(2);
    let shared = RatioBudget::with_defaults();
    let t: KeyedBudget<8, &RatioBudget> = KeyedBudget::new(PER_KEY_DEFAULT, &shared).unwrap();
    let keys = colliding(8, 10);
    for &k in &keys[..8] {
        firsts(&t, k, now, 10); // live: a first attempt in each window
    }
    assert_eq!(t.len(), 8);
    // The 9th and 10th keys with the same home find every entry live: the overflow serves both.
    firsts(&t, keys[8], now, 100);
    firsts(&t, keys[9], now, 100);
    assert!(!t.placed(keys[8]) && !t.placed(keys[9]));
    assert_eq!(t.counts(keys[8], now), None);
    assert_eq!(t.overflow().counts(now), (200, 0));
    // The unplaced keys share one sub-budget: the hostile 9th takes it all (10% of 200)...
    assert_eq!(spend_all(&t, keys[8], now), 20);
    assert!(
        !t.for_key(keys[9]).try_spend(now, T),
        "...from the other unplaced key"
    );
    // ...never a placed key's.
    assert_eq!(spend_all(&t, keys[0], now), 1, "the placed key's own floor");
    assert_eq!(t.len(), 8, "no placed key was evicted");
}

#[test]
fn only_idle_entries_are_evicted() {
    let clock = ManualClock::new(Instant::from_millis(1_000));
    let t: KeyedBudget<8, Unlimited> = KeyedBudget::new(PER_KEY_DEFAULT, Unlimited).unwrap();
    t.for_key(1).record_first_attempt(clock.now());
    clock.advance(Duration::from_secs(5));
    assert!(t.for_key(2).try_spend(clock.now(), T));
    // Ten one-second buckets: at 10.5 s key 1's bucket (1 s) is still in the window.
    clock.set(Instant::from_millis(10_500));
    assert_eq!(
        t.evict_idle(clock.now()),
        0,
        "both have counts in their windows"
    );
    clock.set(Instant::from_secs(11));
    assert_eq!(t.evict_idle(clock.now()), 1, "key 1's window is empty");
    assert!(!t.placed(1) && t.placed(2));
    clock.set(Instant::from_secs(16));
    assert_eq!(t.evict_idle(clock.now()), 1);
    assert!(t.is_empty());
    assert_eq!(t.evict_idle(clock.now()), 0);
}

#[test]
fn a_new_key_reuses_only_an_idle_entry() {
    let t: KeyedBudget<1, Unlimited> = KeyedBudget::new(PER_KEY_DEFAULT, Unlimited).unwrap();
    let at = Instant::from_secs(1);
    firsts(&t, 1, at, 30);
    assert_eq!(spend_all(&t, 1, at), 3);
    // Key 2, within key 1's window: the one entry is live, key 2 overflows.
    let soon = at + Duration::from_secs(5);
    t.for_key(2).record_first_attempt(soon);
    assert!(t.placed(1) && !t.placed(2));
    assert_eq!(t.overflow().counts(soon), (1, 0));
    // After key 1's window, key 2 takes the entry, and starts as new (not with key 1's books).
    let later = at + Duration::from_secs(10);
    t.for_key(2).record_first_attempt(later);
    assert!(t.placed(2) && !t.placed(1));
    assert_eq!(t.counts(2, later), Some((1, 0)));
}

/// Key 1 spends everything at `t0`; after `gap` key 2 arrives at a one-entry table. Answers
/// whether key 2 took the entry (key 1's window empty), and checks key 1's first retry after.
fn after_gap(window: Duration, t0: Instant, gap: Duration) -> bool {
    let config = per_key(100, 2, window);
    let t: KeyedBudget<1, Unlimited> = KeyedBudget::new(config, Unlimited).unwrap();
    firsts(&t, 1, t0, 50);
    assert_eq!(spend_all(&t, 1, t0), 5);
    let later = t0 + gap;
    t.for_key(2).record_first_attempt(later);
    let took = t.placed(2);
    assert_eq!(took, !t.placed(1));
    // Key 1's next retry: its own books if it kept its entry (nothing left), else the
    // overflow's floor (a fresh window).
    assert_eq!(t.for_key(1).try_spend(later, T), took, "gap {gap:?}");
    took
}

#[test]
fn idle_gaps_of_an_hour_and_a_year() {
    let t0 = Instant::from_secs(100);
    let hour = Duration::from_secs(3_600);
    let year = Duration::from_secs(365 * 86_400);
    // Default ten-second window: an hour and a year are both far beyond it.
    assert!(after_gap(PER_KEY_DEFAULT.window, t0, hour));
    assert!(after_gap(PER_KEY_DEFAULT.window, t0, year));
    // A two-hour window: an hour is within it; a year is not.
    assert!(!after_gap(2 * hour, t0, hour));
    assert!(after_gap(2 * hour, t0, year));
    // 1 ms buckets: the 31-bit period word circles every 24.9 days, so a year crosses it
    // fourteen times; whole circles and a year later, the old counts never read as current.
    let ms = Duration::from_millis(10);
    assert!(after_gap(ms, t0, year));
    for circles in 1..=3u32 {
        let circle = Duration::from_millis(1 << 31) * circles;
        assert!(after_gap(ms, t0, circle), "{circles} circles");
        assert!(
            after_gap(ms, t0, circle - Duration::from_millis(5)),
            "{circles} circles"
        );
    }
    assert!(
        !after_gap(ms, t0, Duration::from_millis(5)),
        "within the window"
    );
    assert!(!after_gap(ms, t0, Duration::ZERO));
}

#[test]
fn time_backwards_and_the_end_of_time_never_panic_nor_overspend() {
    let shared = RatioBudget::with_defaults();
    let t: KeyedBudget<2, &RatioBudget> = KeyedBudget::new(PER_KEY_DEFAULT, &shared).unwrap();
    assert!(t.for_key(1).try_spend(Instant::MAX, T));
    assert!(!t.for_key(1).try_spend(Instant::MAX, T));
    let _ = t.for_key(1).try_spend(Instant::ZERO, T);
    assert!(!t.for_key(1).try_spend(Instant::ZERO, T));
    t.for_key(1).record_first_attempt(Instant::ZERO);
    let _ = t.evict_idle(Instant::ZERO);
    let (_, retries) = shared.counts(Instant::ZERO);
    assert!(retries <= 3, "the shared floor holds at any time");
}

#[test]
fn views_are_copies_of_one_table() {
    let t: KeyedBudget<4, Unlimited> = KeyedBudget::new(PER_KEY_DEFAULT, Unlimited).unwrap();
    let a = t.for_key(5);
    let b = a;
    assert!(a.try_spend(Instant::ZERO, T));
    assert!(
        !b.try_spend(Instant::ZERO, T),
        "the same key's one floor retry"
    );
    fn spend(budget: impl RetryBudget) -> bool {
        budget.try_spend(Instant::ZERO, T)
    }
    assert!(!spend(a) && !spend(b));
    assert!(spend(t.for_key(6)), "another key");
    assert_eq!(*t.shared(), Unlimited);
}

/// One call's first attempt with `verdict`, and the retry policy's decision after it.
fn first_decision<Bu: RetryBudget>(
    budget: Bu,
    verdict: crate::verdict::Verdict,
    env: &mut crate::permit::Env<'_, crate::random::SeededRandom>,
) -> crate::retry::RetryDecision {
    use crate::retry::{AttemptOutcome, Retry, RetryConfig, RetryPolicy};
    let retry = Retry::new(RetryConfig::DEFAULT, budget);
    let mut state = retry.begin(env.now);
    let outcome = AttemptOutcome {
        attempt: 1,
        verdict,
        idempotent: true,
        deadline: None,
    };
    retry.decide(&mut state, &outcome, env)
}

/// Key 2 makes 50 calls that succeed; then key 1 makes 100 that fail; then key 2 fails once.
/// Answers the hostile key's retries and key 2's decision.
fn hostile_run<Bu: RetryBudget>(
    budget: impl Fn(u64) -> Bu,
    env: &mut crate::permit::Env<'_, crate::random::SeededRandom>,
) -> (u32, crate::retry::RetryDecision) {
    use crate::retry::{GiveUpReason, RetryDecision};
    use crate::verdict::Verdict;
    for _ in 0..50 {
        assert_eq!(
            first_decision(budget(2), Verdict::Success, env),
            RetryDecision::Done
        );
    }
    let mut hostile = 0;
    for _ in 0..100 {
        match first_decision(budget(1), Verdict::Transient, env) {
            RetryDecision::RetryAt(_) => hostile += 1,
            RetryDecision::GiveUp(r) => assert_eq!(r, GiveUpReason::BudgetExceeded),
            RetryDecision::Done => unreachable!("a transient failure"),
        }
    }
    (hostile, first_decision(budget(2), Verdict::Transient, env))
}

#[test]
fn retry_gives_up_with_budget_exceeded_for_the_hostile_key_only() {
    use crate::permit::Env;
    use crate::random::SeededRandom;
    use crate::retry::{GiveUpReason, RetryDecision};

    let mut rng = SeededRandom::new(3);
    let mut env = Env::new(Instant::from_secs(1), &mut rng);
    // The shared budget alone: the hostile key takes 10% of all 150 calls, key 2 none.
    let alone = RatioBudget::with_defaults();
    let (hostile, quiet) = hostile_run(|_| &alone, &mut env);
    assert_eq!(hostile, 15);
    assert_eq!(quiet, RetryDecision::GiveUp(GiveUpReason::BudgetExceeded));
    // Per key (`Retry::new(config, keyed.for_key(key))`): the hostile key gets 10% of its
    // own 100, and key 2 still retries.
    let shared = RatioBudget::with_defaults();
    let t: KeyedBudget<16, &RatioBudget> = KeyedBudget::new(PER_KEY_DEFAULT, &shared).unwrap();
    let (hostile, quiet) = hostile_run(|k| t.for_key(k), &mut env);
    assert_eq!(hostile, 10);
    assert!(matches!(quiet, RetryDecision::RetryAt(_)), "{quiet:?}");
    assert_eq!(t.counts(2, env.now), Some((51, 1)));
    assert_eq!(shared.counts(env.now), (151, 11));
}

#[test]
fn invalid_configs_are_refused_each_with_its_own_text() {
    extern crate std;
    use std::string::ToString;
    assert_eq!(
        KeyedBudget::<0, Unlimited>::new(PER_KEY_DEFAULT, Unlimited).err(),
        Some(KeyedBudgetError::ZeroCapacity)
    );
    let cases = [
        (
            per_key(0, 0, Duration::from_secs(1)),
            BudgetConfigError::NeverRetries,
        ),
        (
            per_key(1001, 1, Duration::from_secs(1)),
            BudgetConfigError::RatioAboveOne,
        ),
        (
            per_key(100, 1, Duration::ZERO),
            BudgetConfigError::EmptyWindow,
        ),
        (
            per_key(100, 1, Duration::from_nanos(79)),
            BudgetConfigError::WindowShorterThanBuckets,
        ),
    ];
    for (config, error) in cases {
        assert_eq!(
            KeyedBudget::<4, Unlimited>::new(config, Unlimited).err(),
            Some(KeyedBudgetError::PerKey(error)),
            "{config:?}"
        );
        let text = KeyedBudgetError::PerKey(error).to_string();
        assert!(text.ends_with(&error.to_string()), "{text}");
    }
    assert!(
        KeyedBudget::<4, Unlimited>::new(per_key(100, 1, Duration::from_nanos(80)), Unlimited)
            .is_ok()
    );
    let zero = KeyedBudgetError::ZeroCapacity.to_string();
    assert_ne!(
        zero,
        KeyedBudgetError::PerKey(BudgetConfigError::EmptyWindow).to_string()
    );
    use core::error::Error;
    assert!(KeyedBudgetError::ZeroCapacity.source().is_none());
    assert!(
        KeyedBudgetError::PerKey(BudgetConfigError::EmptyWindow)
            .source()
            .is_some()
    );
}

#[test]
fn memory_per_key_is_one_ratio_budget_and_a_tag() {
    use core::mem::size_of;
    let entry = size_of::<Entry<10>>();
    assert!(entry >= size_of::<RatioBudget<10>>() + size_of::<Tag>());
    // Nothing per key but the entry: the table is its entries, the overflow budget, the
    // shared budget and the writer flag, however many keys pass through.
    let overhead = size_of::<KeyedBudget<64, Unlimited>>() - 64 * entry;
    assert!(overhead <= size_of::<RatioBudget<10>>() + 8, "{overhead}");
    #[cfg(target_pointer_width = "64")]
    {
        assert_eq!(entry, 216, "ten buckets (the module docs state it)");
        assert_eq!(size_of::<Entry<4>>(), 144, "four buckets");
        // The window's ring of B + 1 starts of three counters, its sums, head, era and
        // divisor, and the settings block.
        assert_eq!(size_of::<RatioBudget<10>>(), 12 * 10 + 80);
        assert_eq!(size_of::<RatioBudget<4>>(), 12 * 4 + 80);
    }
}

#[test]
fn the_refund_counter_is_the_ratio_budgets_retries() {
    let b: RatioBudget<10> = RatioBudget::with_defaults();
    let now = Instant::from_secs(1);
    b.record_first_attempt(now);
    assert!(b.try_spend(now, T));
    b.refund_retry(now);
    assert_eq!(
        b.counts(now),
        (1, 0),
        "ratio.rs's window layout: [first attempts, retries]"
    );
}
