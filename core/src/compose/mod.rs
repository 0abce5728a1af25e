//! Composition: the policies put in the one order of docs/design/spec.md §7 ([`pipeline`]), the retry loop as
//! a state machine ([`call`]) and as an async loop over any timer ([`execute`]), the front end
//! every adapter aliases ([`resilience`]) and its flat error ([`error`]), bounded waiting for a
//! slot ([`waiters`]) or a rate-limit cell ([`rate_wait`]), fallbacks ([`fallback`]) and
//! sharing by `Arc` (`shared`, feature `alloc`).

pub mod call;
pub mod error;
pub mod execute;
pub mod fallback;
pub mod pipeline;
pub mod rate_wait;
pub mod resilience;
pub mod shadow;
#[cfg(feature = "alloc")]
pub mod shared;
pub mod waiters;
