//! The rate limiter against its reference model on a timeline the fuzzer steers (gaps from
//! 1 ns to ten years, arrivals, n-cell acquisitions, reconfigurations): any difference in a
//! decision, a refusal's instant or `available`, or a breach of burst + rate × elapsed panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resilix::random::Random;
use resilix::rate_limit::RateLimiter;
use resilix::time::Instant;
use resilix_reference::rate_limit::{Params, RateLimitTwin, arbitrary_config};
use resilix_reference::timeline::Bytes;
use resilix_reference::twin::Mix;
use resilix_reference::{Gaps, Timeline, drive};

fuzz_target!(|data: &[u8]| {
    let mut rng = Bytes::new(data);
    let first = arbitrary_config(&mut rng);
    let Ok(real) = RateLimiter::new(first) else {
        assert!(
            Params::of(first).is_err(),
            "{first:?}: refused by the real limiter only"
        );
        return;
    };
    let pool: Vec<_> = (0..3).map(|_| arbitrary_config(&mut rng)).collect();
    let mut twin = RateLimitTwin::new(&real, first, pool, 32).expect("the model accepts it too");
    let start = Instant::from_nanos(rng.next_u64() >> 2);
    let mut timeline = Timeline::new(start, Gaps::LONG);
    if let Err(m) = drive(
        &mut twin,
        &mut timeline,
        &mut rng,
        128,
        Mix::MOSTLY_HEALTHY,
        4,
    ) {
        panic!("{first:?}: {m}");
    }
});
