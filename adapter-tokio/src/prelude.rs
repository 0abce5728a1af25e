//! What a tokio service needs, in one line: `use resilix_tokio::prelude::*;`.
//!
//! The core's [prelude](resilix::prelude) (the pipeline, the call's options, every policy and
//! its config, the verdict, the refusal and the flat error), and this crate's [`Resilience`]
//! with the clock helpers a handler uses to turn a refusal into a wait.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use resilix_tokio::prelude::*;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let pipeline = Pipeline::new()
//!     .retry(Retry::new(RetryConfig::DEFAULT, Arc::new(TokenBucket::default())))
//!     .breaker(Breaker::default())
//!     .bulkhead(Bulkhead::default());
//! let resilience = Arc::new(Resilience::new(pipeline));
//! let options = CallOptions::default().timeout(Duration::from_secs(1));
//! let answer = resilience.execute(options, || async { Ok::<u32, std::io::Error>(42) }).await;
//! assert_eq!(answer.unwrap(), 42);
//! # });
//! ```

pub use resilix::prelude::*;

pub use crate::{Resilience, TokioTimer, deadline_in, now, retry_in};
