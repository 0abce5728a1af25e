//! Shadow mode: a policy that decides and reports, and lets every call through.
//!
//! Adopting a breaker or a rate limit on a live service is safer in three steps: run it in
//! shadow and watch what it *would* refuse, compare that with what the service can afford,
//! then enforce. [`Shadow`] wraps any policy (a breaker, a limiter, a bulkhead, a rate limiter,
//! a throttler, a keyed table) in a pipeline slot. While it shadows, a refusal of the wrapped
//! policy becomes [`Event::ShadowRejected`] and the call goes on as if the slot were empty; an
//! admission is the policy's own, so the policy learns from every call it admitted exactly as
//! when it enforces. [`Shadow::enforce`] and [`Shadow::shadow`] switch it while it runs (an
//! operator's hand, a config reload), one atomic store, no lock.
//!
//! ```
//! use resilix::bulkhead::{Bulkhead, BulkheadConfig};
//! use resilix::observe::{Event, Observer};
//! use resilix::permit::{Env, Policy};
//! use resilix::random::SeededRandom;
//! use resilix::shadow::Shadow;
//! use resilix::time::Instant;
//! use core::sync::atomic::{AtomicU32, Ordering};
//!
//! #[derive(Default)]
//! struct Count(AtomicU32);
//! impl Observer for Count {
//!     fn on_event(&self, event: &Event) {
//!         if let Event::ShadowRejected { .. } = event {
//!             self.0.fetch_add(1, Ordering::Relaxed);
//!         }
//!     }
//! }
//!
//! let cap = Shadow::new(Bulkhead::new(BulkheadConfig::new(1)?));
//! let (count, mut rng) = (Count::default(), SeededRandom::new(1));
//! let mut env = Env::new(Instant::ZERO, &mut rng).with_observer(&count);
//! let first = cap.admit(&mut env).unwrap();
//! let second = cap.admit(&mut env).unwrap(); // over the cap: let through, reported
//! assert_eq!(count.0.load(Ordering::Relaxed), 1);
//! cap.enforce();
//! assert!(cap.admit(&mut env).is_err(), "enforcing: refused");
//! # drop((first, second));
//! # Ok::<(), resilix::bulkhead::BulkheadConfigError>(())
//! ```

use crate::observe::{Event, Observer};
use crate::permit::{Env, Permit, Policy};
use crate::random::Random;
use crate::rejection::Rejection;
use crate::sync::{AtomicBool, Ordering};
use crate::verdict::Verdict;

/// A policy in shadow mode, or enforcing: see the [module docs](self).
#[derive(Debug)]
pub struct Shadow<P> {
    policy: P,
    enforcing: AtomicBool,
}

impl<P> Shadow<P> {
    crate::sync::const_fn_unless_loom! {
        /// `policy` in shadow: it decides and reports, and refuses nothing.
        pub fn new(policy: P) -> Self {
            Shadow { policy, enforcing: AtomicBool::new(false) }
        }
    }

    crate::sync::const_fn_unless_loom! {
        /// `policy`, enforcing from the start (switch it to shadow with [`Self::shadow`]).
        pub fn enforcing(policy: P) -> Self {
            Shadow { policy, enforcing: AtomicBool::new(true) }
        }
    }

    /// From now on its refusals refuse.
    pub fn enforce(&self) {
        self.enforcing.store(true, Ordering::Relaxed);
    }

    /// From now on its refusals are reported as [`Event::ShadowRejected`] and let through.
    pub fn shadow(&self) {
        self.enforcing.store(false, Ordering::Relaxed);
    }

    /// Whether its refusals refuse.
    pub fn is_enforcing(&self) -> bool {
        self.enforcing.load(Ordering::Relaxed)
    }

    /// The wrapped policy (its controls, gauges and counts).
    pub const fn policy(&self) -> &P {
        &self.policy
    }
}

impl<P: Policy> Policy for Shadow<P> {
    type Permit<'a>
        = ShadowPermit<P::Permit<'a>>
    where
        Self: 'a;

    #[inline]
    fn admit<'a, R: Random + ?Sized, O: Observer + ?Sized>(
        &'a self,
        env: &mut Env<'_, R, O>,
    ) -> Result<ShadowPermit<P::Permit<'a>>, Rejection> {
        match self.policy.admit(env) {
            Ok(permit) => Ok(ShadowPermit(Some(permit))),
            Err(rejection) if self.is_enforcing() => Err(rejection),
            Err(rejection) => {
                env.observer.on_event(&Event::ShadowRejected { rejection });
                Ok(ShadowPermit(None))
            }
        }
    }
}

/// A call through a [`Shadow`]: the policy's own permit when it admitted, nothing when it
/// would have refused (that call records nothing in it, as a refused call would not).
#[derive(Debug)]
pub struct ShadowPermit<P>(Option<P>);

impl<P> ShadowPermit<P> {
    /// Whether the policy would have refused this call (it went through in shadow).
    pub const fn would_have_refused(&self) -> bool {
        self.0.is_none()
    }
}

impl<P: Permit> Permit for ShadowPermit<P> {
    #[inline]
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        self,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) {
        if let Some(permit) = self.0 {
            permit.settle(verdict, env);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
