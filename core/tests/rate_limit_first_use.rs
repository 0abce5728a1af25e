//! A freshly built rate limiter admits its first call at any instant: its initial state must
//! not read as an arrival time in the future, whatever the tick word happens to alias to.

use resilix::rate_limit::{Rate, RateLimitConfig, RateLimiter};
use resilix::time::Instant;

#[test]
fn a_fresh_limiter_admits_its_first_call_at_any_instant() {
    for per_second in [1u32, 1_000, 100_000, 1_000_000] {
        let mut refused = 0;
        for i in 0..20_000u64 {
            let limiter =
                RateLimiter::new(RateLimitConfig::new(Rate::per_second(per_second))).unwrap();
            // Instants spread over hours, including the one benches found refused.
            let now = Instant::from_nanos(370_512_495_000 + i * 1_000_003_917);
            if limiter.try_acquire(now).is_err() {
                refused += 1;
            }
        }
        assert_eq!(
            refused, 0,
            "{per_second}/s: {refused} of 20,000 fresh limiters refused their first call"
        );
    }
    let limiter = RateLimiter::new(RateLimitConfig::new(Rate::per_second(1_000_000))).unwrap();
    assert!(
        limiter
            .try_acquire(Instant::from_nanos(370_512_495_000))
            .is_ok()
    );
}
