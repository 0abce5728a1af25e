//! Model-checks the throttler's running-total window (`mechanism/window/running.rs`): in every
//! interleaving of settles that move the window into a new period, a settle whose clock is a
//! period stale, and a reader, no call is lost or counted twice (once quiescent, a window that
//! covers every period in play counts exactly every settle), the old window's counts never
//! reappear after an idle gap, and a reader at the periods a move is crossing reads between
//! what the window held before and after.
//!
//! The window is crate-private; it is driven through the throttler: an admit that never sheds
//! (a cap of zero) and a settle `Success` adds one request and one accept, `counts` reads.
//! One or two buckets of 8 ns (the shortest) keep the models small; a move is the same code for
//! every bucket count.
//!
//! Every actor is a spawned thread (loom 0.7 explores no interleaving of the main thread's
//! reads with a spawned writer), so the main thread only sets up and joins.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p resilix --release --test loom_throttler`
#![cfg(loom)]

use core::time::Duration;

use loom::sync::Arc;
use loom::thread;

use resilix::permit::{Env, Permit, Policy};
use resilix::random::SeededRandom;
use resilix::throttler::{Throttler, ThrottlerConfig};
use resilix::time::Instant;
use resilix::verdict::Verdict;

/// At most two preemptions: the races below need one to stop a mover between reading the sums
/// and marking, or between its mark and its publish, and one to run another actor there (a
/// settle here is an admit's read and an add, which makes three-preemption models of three
/// actors run for more than ten minutes).
fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(f);
}

/// One bucket period: 8 ns.
const BUCKET: u64 = 8;

/// One circle of the 31-bit head word: 2^31 periods.
const CIRCLE: u64 = 1 << 31;

/// A quarter circle: one era of the head word.
const ERA: u64 = CIRCLE / 4;

fn at(p: u64) -> Instant {
    Instant::from_nanos(p * BUCKET)
}

/// A throttler of `B` 8 ns buckets that never sheds, with `old` successes settled at period
/// `old_period`.
fn throttler<const B: usize>(old_period: u64, old: u32) -> Arc<Throttler<B>> {
    let t = Throttler::<B>::with_buckets(ThrottlerConfig {
        max_rejection_rate: 0.0,
        window: Duration::from_nanos(BUCKET * B as u64),
        min_requests: 0,
        ..ThrottlerConfig::DEFAULT
    })
    .unwrap();
    for _ in 0..old {
        settle(&t, at(old_period));
    }
    assert_eq!(t.counts(at(old_period)), (old, old));
    Arc::new(t)
}

/// One call admitted and settled `Success` at `now`.
fn settle<const B: usize>(t: &Throttler<B>, now: Instant) {
    let mut rng = SeededRandom::new(0);
    let mut env = Env::new(now, &mut rng);
    let permit = t.admit(&mut env).expect("a cap of zero never sheds");
    permit.settle(&Verdict::Success, &mut env);
}

/// Two settles at period `new` race to move a two-bucket window from `old` (which holds three
/// calls), and a reader reads at `new`. Once both are done, the window at `new` holds exactly
/// what it should (the old three if `old` is still in it, and both new calls); the reader saw
/// at least the old three and at most all five; and once `new` has slid out nothing is left.
fn two_moves_and_a_reader(old: u64, new: u64) {
    model(move || {
        let t = throttler::<2>(old, 3);
        let (t1, t2, t3) = (t.clone(), t.clone(), t.clone());
        let a = thread::spawn(move || settle(&t1, at(new)));
        let b = thread::spawn(move || settle(&t2, at(new)));
        let reader = thread::spawn(move || t3.counts(at(new)));
        a.join().unwrap();
        b.join().unwrap();
        let (requests, accepts) = reader.join().unwrap();
        let kept = if new - old < 2 { 3 } else { 0 };
        assert!(
            (kept..=kept + 2).contains(&requests),
            "the reader saw {requests} (kept {kept})"
        );
        assert!(accepts <= kept + 2);
        assert_eq!(
            t.counts(at(new)),
            (kept + 2, kept + 2),
            "a call lost or doubled"
        );
        assert_eq!(t.counts(at(new + 2)), (0, 0), "everything slid out");
    });
}

/// The next period, within one era: the old calls stay in the window.
#[test]
fn two_moves_at_a_period_boundary() {
    two_moves_and_a_reader(5, 6);
}

/// The next period across an era boundary (the move raises the era).
#[test]
fn two_moves_across_an_era_boundary() {
    two_moves_and_a_reader(ERA - 1, ERA);
}

/// Exactly one circle later: the head word's low bits are unchanged, only its era tells the
/// periods apart; the old calls must not reappear.
#[test]
fn two_moves_a_whole_circle_later() {
    two_moves_and_a_reader(5, 5 + CIRCLE);
}

/// Three circles and a half later: past the era protocol's slack for the old word alone.
#[test]
fn two_moves_many_circles_later() {
    two_moves_and_a_reader(5, 5 + 3 * CIRCLE + 2 * ERA);
}

/// A settle whose clock is still in the old period races a settle that moves the window on,
/// and a reader one period behind the move reads meanwhile: the stale call is counted once
/// (in the old period or the new: both are in the window), and the reader, at the old period,
/// reads between the old three and all five.
#[test]
fn a_stale_settle_and_a_stale_reader_across_a_move() {
    model(|| {
        let t = throttler::<2>(5, 3);
        let (t1, t2, t3) = (t.clone(), t.clone(), t.clone());
        let stale = thread::spawn(move || settle(&t1, at(5)));
        let mover = thread::spawn(move || settle(&t2, at(6)));
        let reader = thread::spawn(move || t3.counts(at(5)));
        stale.join().unwrap();
        mover.join().unwrap();
        let (requests, accepts) = reader.join().unwrap();
        assert!((3..=5).contains(&requests), "the reader saw {requests}");
        assert!(accepts <= 5);
        assert_eq!(t.counts(at(6)), (5, 5), "a call lost or doubled");
        assert_eq!(t.counts(at(8)), (0, 0));
    });
}

/// One bucket: a move writes the very slot the window starts at. Two settles move it from
/// period 5 to 6 while a reader reads at 6: the reader never sees the old calls of period 5,
/// and afterwards the window holds exactly the two new calls (the mover reads the sums before
/// it marks the head, so the settle that finds the mark adds after that read: never counted in
/// the period the window left).
#[test]
fn one_bucket_moves_its_only_slot() {
    model(|| {
        let t = throttler::<1>(5, 3);
        let (t1, t2, t3) = (t.clone(), t.clone(), t.clone());
        let a = thread::spawn(move || settle(&t1, at(6)));
        let b = thread::spawn(move || settle(&t2, at(6)));
        let reader = thread::spawn(move || t3.counts(at(6)));
        a.join().unwrap();
        b.join().unwrap();
        let (requests, _) = reader.join().unwrap();
        assert!(requests <= 2, "the old calls appeared: {requests}");
        assert_eq!(t.counts(at(6)), (2, 2), "a call lost or doubled");
        assert_eq!(t.counts(at(7)), (0, 0));
    });
}
