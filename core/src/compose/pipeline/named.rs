//! [`pipeline_type!`](crate::pipeline_type): a pipeline's type written by slot name, for the
//! places a program must name it (a struct field, axum's `State`), so nobody counts positions.

/// The type of a [`Pipeline`](crate::pipeline::Pipeline) by slot name, in any order; a slot
/// left out is empty (`()`, or `NoRetry` for the retry).
///
/// The slots are `retry`, `throttler`, `breaker`, `limiter`, `bulkhead` and `rate_limit`. The
/// type is the same one the builder makes, so a pipeline built with
/// `Pipeline::new().retry(..).breaker(..)` has it, and it costs nothing.
///
/// ```
/// use resilix::prelude::*;
/// use resilix::pipeline_type;
///
/// // Written where a struct field must name it, with no slot positions. With the `alloc`
/// // feature (on in resilix-tokio) a slot may be an `Arc<TokenBucket>` just as well.
/// type Upstream<'a> = pipeline_type!(retry: Retry<&'a TokenBucket>, breaker: Breaker, bulkhead: Bulkhead);
///
/// struct AppState<'a> {
///     upstream: Upstream<'a>,
/// }
///
/// let budget = TokenBucket::default();
/// let upstream: Upstream<'_> = Pipeline::new()
///     .retry(Retry::new(RetryConfig::DEFAULT, &budget))
///     .breaker(Breaker::default())
///     .bulkhead(Bulkhead::default());
/// let state = AppState { upstream };
/// # let _ = state.upstream;
/// ```
///
/// A name that is not a slot, or a slot named twice, does not compile:
///
/// ```compile_fail
/// type Wrong = resilix::pipeline_type!(breakers: resilix::breaker::Breaker);
/// ```
///
/// ```compile_fail
/// use resilix::breaker::Breaker;
/// type Twice = resilix::pipeline_type!(breaker: Breaker, breaker: Breaker);
/// ```
#[macro_export]
macro_rules! pipeline_type {
    ($($slot:ident : $ty:ty),* $(,)?) => {
        $crate::__pipeline_type!(
            [unset $crate::retry::NoRetry] [unset ()] [unset ()] [unset ()] [unset ()] [unset ()]
            $($slot : $ty,)*
        )
    };
}

/// The accumulator behind [`pipeline_type!`]: one named slot taken per step, each marked
/// `set` once taken so that naming it again fails.
#[doc(hidden)]
#[macro_export]
macro_rules! __pipeline_type {
    ([$rm:ident $r:ty] [$tm:ident $t:ty] [$bm:ident $b:ty] [$lm:ident $l:ty] [$hm:ident $h:ty] [$rlm:ident $rl:ty]) => {
        $crate::pipeline::Pipeline<$r, $t, $b, $l, $h, $rl>
    };
    ([unset $r:ty] [$tm:ident $t:ty] [$bm:ident $b:ty] [$lm:ident $l:ty] [$hm:ident $h:ty] [$rlm:ident $rl:ty]
        retry : $ty:ty, $($rest:tt)*) => {
        $crate::__pipeline_type!([set $ty] [$tm $t] [$bm $b] [$lm $l] [$hm $h] [$rlm $rl] $($rest)*)
    };
    ([$rm:ident $r:ty] [unset $t:ty] [$bm:ident $b:ty] [$lm:ident $l:ty] [$hm:ident $h:ty] [$rlm:ident $rl:ty]
        throttler : $ty:ty, $($rest:tt)*) => {
        $crate::__pipeline_type!([$rm $r] [set $ty] [$bm $b] [$lm $l] [$hm $h] [$rlm $rl] $($rest)*)
    };
    ([$rm:ident $r:ty] [$tm:ident $t:ty] [unset $b:ty] [$lm:ident $l:ty] [$hm:ident $h:ty] [$rlm:ident $rl:ty]
        breaker : $ty:ty, $($rest:tt)*) => {
        $crate::__pipeline_type!([$rm $r] [$tm $t] [set $ty] [$lm $l] [$hm $h] [$rlm $rl] $($rest)*)
    };
    ([$rm:ident $r:ty] [$tm:ident $t:ty] [$bm:ident $b:ty] [unset $l:ty] [$hm:ident $h:ty] [$rlm:ident $rl:ty]
        limiter : $ty:ty, $($rest:tt)*) => {
        $crate::__pipeline_type!([$rm $r] [$tm $t] [$bm $b] [set $ty] [$hm $h] [$rlm $rl] $($rest)*)
    };
    ([$rm:ident $r:ty] [$tm:ident $t:ty] [$bm:ident $b:ty] [$lm:ident $l:ty] [unset $h:ty] [$rlm:ident $rl:ty]
        bulkhead : $ty:ty, $($rest:tt)*) => {
        $crate::__pipeline_type!([$rm $r] [$tm $t] [$bm $b] [$lm $l] [set $ty] [$rlm $rl] $($rest)*)
    };
    ([$rm:ident $r:ty] [$tm:ident $t:ty] [$bm:ident $b:ty] [$lm:ident $l:ty] [$hm:ident $h:ty] [unset $rl:ty]
        rate_limit : $ty:ty, $($rest:tt)*) => {
        $crate::__pipeline_type!([$rm $r] [$tm $t] [$bm $b] [$lm $l] [$hm $h] [set $ty] $($rest)*)
    };
    ([$rm:ident $r:ty] [$tm:ident $t:ty] [$bm:ident $b:ty] [$lm:ident $l:ty] [$hm:ident $h:ty] [$rlm:ident $rl:ty]
        $slot:ident : $ty:ty, $($rest:tt)*) => {
        ::core::compile_error!(::core::concat!(
            "pipeline_type!: `", ::core::stringify!($slot), "` is named twice or is not a slot; ",
            "the slots are retry, throttler, breaker, limiter, bulkhead, rate_limit"
        ))
    };
}
