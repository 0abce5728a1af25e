//! Clock handles share one timeline.

use core::time::Duration;

use resilix::RejectReason;
use resilix::call::CallOptions;
use resilix::execute::Timer;
use resilix::pipeline::Pipeline;
use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::resilience::{FixedSeeds, Resilience};

use super::{Tolerance, latency};

/// Two handles made 60 units apart share one timeline: a timer made late reads the same
/// instant as one made early (it sees the 60 units that passed before it existed), and a
/// burst-1 rate limiter shared by a `Resilience` on each admits one call per interval between
/// them, never one per handle. A refusal's retry-at, on that timeline, is when the limiter
/// admits again. `make` is the adapter's timer constructor.
///
/// The refusals must come before the token is back, however slow the machine: the interval is
/// 100 units plus the tolerance's lateness, so on real timers a stall up to `tol.late` between
/// the first call and the last refusal still finds the bucket empty.
pub async fn handles_share_one_timeline<Tm: Timer>(
    make: impl Fn() -> Tm,
    unit: Duration,
    tol: Tolerance,
) {
    // One instant for one moment, whenever the handle was made.
    let early = make();
    let t0 = early.now();
    latency(&early, 60 * unit).await;
    let late = make();
    let (a, b, c) = (early.now(), late.now(), early.now());
    assert!(
        a <= b && b <= c,
        "a timer made 60 units later reads another timeline: {a:?}, {b:?}, {c:?}"
    );
    tol.assert_elapsed(c - a, Duration::ZERO, "three reads at one moment");
    tol.assert_elapsed(b - t0, 60 * unit, "the late timer sees the time before it");

    // One rate limiter, one token per interval, burst 1, shared by two long-lived handles.
    let interval = 100 * unit + tol.late;
    let left = interval - 60 * unit;
    let limiter = RateLimiter::new(RateLimitConfig::new(Rate::one_every(interval)).with_burst(1))
        .expect("a valid rate limit");
    let pipeline = Pipeline::new().rate_limit(&limiter);
    let first = Resilience::with_parts(&pipeline, make(), FixedSeeds::new(21));
    macro_rules! call {
        ($r:expr) => {
            $r.execute(CallOptions::default(), || async { Ok::<(), ()>(()) })
        };
    }
    // The limiter saw the call at some instant between these two readings (real clocks move).
    let before = first.now();
    assert_eq!(call!(first).await, Ok(()), "a full bucket admits");
    let taken = first.now();
    latency(first.timer(), 60 * unit).await;
    let second = Resilience::with_parts(&pipeline, make(), FixedSeeds::new(22));
    let handles = [&second, &first];
    for i in 0..10 {
        let r = handles[i % 2];
        let err = call!(r)
            .await
            .expect_err("the bucket is empty for 40 more units (and the lateness)");
        let rejection = err.rejection().expect("refused by the limiter");
        assert_eq!(rejection.reason(), RejectReason::RateLimited);
        let retry_at = rejection.retry_at().expect("a rate limiter knows when");
        // The token comes back one interval after it was taken (within 0.1 %, the GCRA's
        // tick), wherever the handle that reads it was made.
        let (since_before, since) = (retry_at - before, retry_at - taken);
        assert!(
            since_before >= interval && since <= interval + interval / 1000,
            "handle {i}: admits again {since:?} after the token was taken"
        );
        let wait = r.retry_in(&rejection).expect("a wait");
        assert!(
            wait <= left + interval / 1000 && wait + tol.late + unit >= left,
            "handle {i}: a wait of {wait:?} for {left:?}"
        );
    }
    // At the retry-at, exactly one of the two handles' calls is admitted.
    let retry_at = call!(second)
        .await
        .unwrap_err()
        .rejection()
        .unwrap()
        .retry_at()
        .unwrap();
    second.timer().sleep_until(retry_at).await;
    let mut admitted = 0;
    for i in 0..10 {
        if call!(handles[i % 2]).await.is_ok() {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 1, "burst 1: one call between both handles");
}
