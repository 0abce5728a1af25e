//! What a first program needs, in one line: `use resilix::prelude::*;`.
//!
//! The pipeline and the call's options; every policy in pipeline order with its config
//! (`BreakerConfig` is [`breaker::Config`](crate::breaker::Config) under the name its siblings
//! follow); the retry budgets; the verdict, the refusal and the flat error; the caller's time and
//! a seeded generator; and the admit/settle contract, for code that drives a pipeline by hand.
//! Everything else stays in its module.
//!
//! ```
//! use core::time::Duration;
//! use resilix::prelude::*;
//!
//! let pipeline = Pipeline::new()
//!     .retry(Retry::unbudgeted(RetryConfig::DEFAULT))
//!     .breaker(Breaker::new(BreakerConfig::DEFAULT).unwrap())
//!     .bulkhead(Bulkhead::new(BulkheadConfig::DEFAULT))
//!     .attempt_timeout(Duration::from_millis(250));
//! let mut rng = SeededRandom::new(7);
//! let mut env = Env::new(Instant::ZERO, &mut rng);
//! let attempt = pipeline.admit(&mut env, None).unwrap();
//! attempt.settle(&Verdict::Success, &mut env);
//! assert_eq!(pipeline.bulkhead_ref().held(), 0);
//! ```

pub use crate::Error;
pub use crate::breaker::{Breaker, Config as BreakerConfig};
pub use crate::bulkhead::{Bulkhead, BulkheadConfig};
pub use crate::call::CallOptions;
pub use crate::limiter::{Limiter, LimiterConfig};
pub use crate::observe::{Event, Observer};
pub use crate::permit::{Env, Permit, Policy};
pub use crate::pipeline::Pipeline;
pub use crate::pipeline_type;
pub use crate::random::SeededRandom;
pub use crate::rate_limit::{Rate, RateLimitConfig, RateLimiter};
pub use crate::rejection::{RejectReason, Rejection};
pub use crate::retry::budget::{RatioBudget, RatioBudgetConfig, TokenBucket, TokenBucketConfig};
pub use crate::retry::{Backoff, Retry, RetryConfig, Strategy};
pub use crate::throttler::{Throttler, ThrottlerConfig};
pub use crate::time::{Deadline, Instant};
pub use crate::verdict::{Verdict, VerdictKind};
