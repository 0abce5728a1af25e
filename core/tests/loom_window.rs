//! Model-checks the sliding window's claim protocol (`window.rs`, period words beside their
//! eras): in every interleaving of two threads claiming the same bucket for a new period and a
//! reader, the bucket's old counts never appear in the new period, and at most the increments
//! that race the claim are lost (the documented boundary loss).
//!
//! The windows are crate-private; the running-total window (`window/running.rs`) is driven
//! through [`RatioBudget`], whose first attempts and retries are its counters
//! (`record_first_attempt` adds, `try_spend` is the window's bounded increment, `counts`
//! reads), and the bucket-array window (`window.rs`, the breaker's) through [`RetryBreaker`],
//! whose attempts and failures are its two counters. One or two buckets of 8 ns (the shortest)
//! keep the models small; the protocol is the same for every bucket count and length.
//!
//! Every actor is a spawned thread: loom 0.7 explored no interleaving at all of the main
//! thread's reads with a spawned writer in these models (one iteration), so the main thread
//! only sets up and joins.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p resilix --release --test loom_window`
#![cfg(loom)]

use core::time::Duration;

use loom::sync::Arc;
use loom::thread;

use resilix::VerdictKind;
use resilix::retry::budget::{
    RatioBudget, RatioBudgetConfig, RetryBreaker, RetryBreakerConfig, RetryBudget,
};
use resilix::time::Instant;

/// Explores every interleaving with at most three preemptions (loom's bound; the claim
/// races below need at most two: one to stop a claimer between its mark and its zeroing or
/// publish, one to run the other claimer or the reader there). Unbounded, the three-thread
/// models run for more than twenty minutes.
fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// One bucket period: 8 ns.
const BUCKET: u64 = 8;

/// One circle of the 31-bit period word: 2^31 periods (17.2 s of 8 ns buckets).
const CIRCLE: u64 = 1 << 31;

/// A quarter circle: one era of the period word.
const ERA: u64 = CIRCLE / 4;

/// The instant at the start of period `p`.
fn at(p: u64) -> Instant {
    Instant::from_nanos(p * BUCKET)
}

/// A budget of `B` 8 ns buckets whose retry floor is `floor`, with `old` first attempts and
/// `old_retries` retries recorded in period `old_period`.
fn budget<const B: usize>(
    floor: u32,
    old_period: u64,
    old: u32,
    old_retries: u32,
) -> Arc<RatioBudget<B>> {
    let b = RatioBudget::<B>::with_buckets(RatioBudgetConfig {
        max_retry_permille: 0,
        min_retries_per_window: floor,
        window: Duration::from_nanos(BUCKET * B as u64),
    })
    .unwrap();
    for _ in 0..old {
        b.record_first_attempt(at(old_period));
    }
    for _ in 0..old_retries {
        assert!(b.try_spend(at(old_period), VerdictKind::Transient));
    }
    assert_eq!(b.counts(at(old_period)), (old, old_retries));
    Arc::new(b)
}

/// What the claim models read of a policy: its first attempts and its other counter in the
/// window ending at `now`.
trait Counted: RetryBudget + Send + Sync + 'static {
    fn both(&self, now: Instant) -> (u32, u32);
}

impl<const B: usize> Counted for RatioBudget<B> {
    fn both(&self, now: Instant) -> (u32, u32) {
        self.counts(now)
    }
}

impl<const B: usize> Counted for RetryBreaker<B> {
    fn both(&self, now: Instant) -> (u32, u32) {
        self.counts(now)
    }
}

/// A retry breaker of one 8 ns bucket (its `TimeWindow`: the breaker's and the retry
/// breaker's window, claimed by the protocol `window.rs` keeps for bucket arrays) with `old`
/// first attempts recorded in period `old_period`.
fn retry_breaker(old_period: u64, old: u32) -> Arc<RetryBreaker<1>> {
    let b = RetryBreaker::<1>::new(RetryBreakerConfig {
        max_failure_permille: 100,
        min_attempts: 0,
        window: Duration::from_nanos(BUCKET),
    })
    .unwrap();
    for _ in 0..old {
        b.record_first_attempt(at(old_period));
    }
    assert_eq!(b.counts(at(old_period)), (old, 0));
    Arc::new(b)
}

/// Two threads record one first attempt each in period `new` of a one-bucket window whose
/// bucket held three first attempts of period `old`; a third thread reads the window at
/// `new` meanwhile. The reader never sees the old three; afterwards the window holds one or
/// two (the claimer's own add is never lost; the other's may land between the claim's mark
/// and its zeroing, the boundary loss). `make` builds the policy with the old three.
fn two_claims_and_a_reader<P: Counted>(make: fn(u64) -> Arc<P>, old: u64, new: u64) {
    model(move || {
        let b = make(old);
        let (b1, b2, b3) = (b.clone(), b.clone(), b.clone());
        let t1 = thread::spawn(move || b1.record_first_attempt(at(new)));
        let t2 = thread::spawn(move || b2.record_first_attempt(at(new)));
        let reader = thread::spawn(move || b3.both(at(new)));
        t1.join().unwrap();
        t2.join().unwrap();
        let (firsts, other) = reader.join().unwrap();
        assert!(firsts <= 2, "the old counts appeared to a reader: {firsts}");
        assert_eq!(other, 0);
        let (firsts, _) = b.both(at(new));
        assert!((1..=2).contains(&firsts), "after both adds: {firsts}");
        assert_eq!(b.both(at(old)).0, 0, "the old period is gone");
    });
}

/// The ratio budget's window (`RunningWindow`) holding three old first attempts.
fn ratio(old: u64) -> Arc<RatioBudget<1>> {
    budget::<1>(1, old, 3, 0)
}

/// The retry breaker's window (`TimeWindow`) holding three old first attempts.
fn time_window(old: u64) -> Arc<RetryBreaker<1>> {
    retry_breaker(old, 3)
}

/// The same slot exactly one circle later: the period word's low bits are unchanged, only
/// its era tells the periods apart.
#[test]
fn two_claims_a_whole_circle_later() {
    two_claims_and_a_reader(ratio, 5, 5 + CIRCLE);
    two_claims_and_a_reader(time_window, 5, 5 + CIRCLE);
}

/// The next period at a plain boundary, within one era.
#[test]
fn two_claims_at_a_period_boundary() {
    two_claims_and_a_reader(ratio, 5, 6);
    two_claims_and_a_reader(time_window, 5, 6);
}

/// The next period across an era boundary (the claim raises the era).
#[test]
fn two_claims_across_an_era_boundary() {
    two_claims_and_a_reader(ratio, ERA - 1, ERA);
    two_claims_and_a_reader(time_window, ERA - 1, ERA);
}

/// Three circles and a bit later, in a later era than the old one by more than the era
/// protocol's slack: the old word alone would widen to a period in the new window.
#[test]
fn two_claims_many_circles_later() {
    two_claims_and_a_reader(ratio, 5, 5 + 3 * CIRCLE + 2 * ERA);
    two_claims_and_a_reader(time_window, 5, 5 + 3 * CIRCLE + 2 * ERA);
}

/// Two buckets: one thread claims bucket 0 a whole circle later while another claims bucket 1
/// of the next period, and a reader reads at the later instant. Each bucket held three old
/// first attempts; the reader counts at most the two new ones, and afterwards the window
/// holds exactly both (claims of different buckets lose nothing).
#[test]
fn claims_of_neighbouring_buckets_and_a_reader() {
    model(|| {
        let b = budget::<2>(1, 4, 3, 0);
        b.record_first_attempt(at(5));
        b.record_first_attempt(at(5));
        b.record_first_attempt(at(5));
        assert_eq!(b.counts(at(5)).0, 6);
        let (p0, p1) = (4 + CIRCLE, 5 + CIRCLE);
        let (b1, b2, b3) = (b.clone(), b.clone(), b.clone());
        let t1 = thread::spawn(move || b1.record_first_attempt(at(p0)));
        let t2 = thread::spawn(move || b2.record_first_attempt(at(p1)));
        let reader = thread::spawn(move || b3.counts(at(p1)).0);
        t1.join().unwrap();
        t2.join().unwrap();
        let firsts = reader.join().unwrap();
        assert!(firsts <= 2, "old counts appeared: {firsts}");
        assert_eq!(b.counts(at(p1)).0, 2);
    });
}

/// Two spends racing the claim of a bucket whose old period spent the floor: never more
/// grants than the floor allows in the new period (the bounded increment stays exact), and
/// at least one (the claimer decides against its own zeroed bucket). A spend that finds the
/// bucket being claimed for its own period may decide against the not yet zeroed count and be
/// refused once: the conservative side of the boundary loss.
#[test]
fn spends_racing_a_claim_a_circle_later() {
    model(|| {
        let b = budget::<1>(2, 7, 0, 2);
        let new = 7 + CIRCLE;
        let (b1, b2) = (b.clone(), b.clone());
        let t1 = thread::spawn(move || b1.try_spend(at(new), VerdictKind::Transient) as u32);
        let t2 = thread::spawn(move || b2.try_spend(at(new), VerdictKind::Transient) as u32);
        let granted = t1.join().unwrap() + t2.join().unwrap();
        assert!((1..=2).contains(&granted), "{granted} granted");
        let (_, retries) = b.counts(at(new));
        assert!(retries <= 2 && retries >= 1, "{retries} counted");
    });
}
