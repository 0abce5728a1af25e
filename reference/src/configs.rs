//! Configurations drawn from a generator: how the fuzz targets turn the first bytes of their
//! input ([`Bytes`](crate::timeline::Bytes)) into a policy's configuration, written once for
//! every target that fuzzes that policy. Each draws in a fixed order, so that an input (and
//! every corpus entry) keeps meaning the same configuration.
//!
//! ```
//! use resilix::retry::budget::TokenBucket;
//! use resilix::throttler::Throttler;
//! use resilix_reference::configs::{
//!     accepts_multiplier, throttler_config, throttler_mix, token_bucket_config,
//! };
//! use resilix_reference::timeline::Bytes;
//!
//! let mut rng = Bytes::new(&[3, 0, 0, 0, 9, 0, 0, 0]);
//! let bucket = token_bucket_config(&mut rng);
//! assert!(bucket.capacity.as_milli() >= 1);
//! let _ = TokenBucket::new(bucket);
//! let throttler = throttler_config(&mut rng, 4, accepts_multiplier, 40);
//! assert!(throttler.min_requests < 40);
//! let _ = Throttler::<4>::with_buckets(throttler);
//! assert_eq!(throttler_mix(&mut rng).transient, 60);
//! ```

use std::time::Duration;

use resilix::random::Random;
use resilix::retry::budget::{Charge, RetrySuccess, TokenBucketConfig, Tokens};
use resilix::throttler::{LocalRejections, ThrottlerConfig};

use crate::twin::Mix;

/// A token bucket's configuration: one of the three presets, or (one time in four) every
/// field drawn, the initial balance and the floor within the capacity. It may still be one
/// `TokenBucket::new` refuses (a floor and a cost above the capacity).
pub fn token_bucket_config<R: Random + ?Sized>(rng: &mut R) -> TokenBucketConfig {
    match rng.below(4) {
        0 => TokenBucketConfig::GRPC_A6_EXAMPLE,
        1 => TokenBucketConfig::AWS_SDK_STANDARD,
        2 => TokenBucketConfig::BROOKER_2022,
        _ => {
            let capacity = 1 + rng.below(20_000) as u32;
            TokenBucketConfig {
                capacity: Tokens::milli(capacity),
                initial: Tokens::milli(rng.below(u64::from(capacity) + 1) as u32),
                retry_cost: Tokens::milli(1 + rng.below(3_000) as u32),
                timeout_retry_cost: Tokens::milli(1 + rng.below(3_000) as u32),
                first_try_success: Tokens::milli(rng.below(1_000) as u32),
                retry_success: if rng.below(2) == 0 {
                    RetrySuccess::RefundCost
                } else {
                    RetrySuccess::Deposit(Tokens::milli(rng.below(1_000) as u32))
                },
                floor: Tokens::milli(rng.below(u64::from(capacity)) as u32),
                charge: if rng.below(2) == 0 {
                    Charge::EveryFailure
                } else {
                    Charge::GrantedRetry
                },
            }
        }
    }
}

/// A throttler's `K`: Google's 2, infinity (never sheds), or one in `[1, 5)`.
pub fn accepts_multiplier<R: Random + ?Sized>(rng: &mut R) -> f64 {
    match rng.below(4) {
        0 => 2.0,
        1 => f64::INFINITY,
        _ => 1.0 + rng.below(4_000_000) as f64 / 1e6,
    }
}

/// A throttler's cap on the rejection probability, in `[0, 1)`.
pub fn max_rejection_rate<R: Random + ?Sized>(rng: &mut R) -> f64 {
    rng.below(1_000_000) as f64 / 1e6
}

/// A throttler's configuration over `buckets` buckets: a window from `buckets` × 8 ns (the
/// shortest) to about four days, log-uniform; `K` from `multiplier`; a low-traffic floor
/// below `min_requests_below`; either treatment of local rejections. It may still be one the
/// throttler refuses (a floor a tiny window cannot reach).
pub fn throttler_config<R: Random + ?Sized>(
    rng: &mut R,
    buckets: usize,
    multiplier: impl FnOnce(&mut R) -> f64,
    min_requests_below: u64,
) -> ThrottlerConfig {
    let octave = rng.below(49) as u32;
    let lo = (buckets as u64 * 8) << octave;
    let window = Duration::from_nanos(lo + rng.below(lo));
    ThrottlerConfig {
        accepts_multiplier: multiplier(rng),
        max_rejection_rate: max_rejection_rate(rng),
        window,
        min_requests: rng.below(min_requests_below) as u32,
        local_rejections: if rng.below(2) == 0 {
            LocalRejections::CountAsRequests
        } else {
            LocalRejections::Ignore
        },
    }
}

/// The verdicts a throttler's run settles with: a share of successes drawn, against failures
/// enough for it to shed.
pub fn throttler_mix<R: Random + ?Sized>(rng: &mut R) -> Mix {
    Mix {
        success: rng.below(256) as u8,
        transient: 60,
        timeout: 30,
        overload: 30,
        answered: 20,
    }
}
