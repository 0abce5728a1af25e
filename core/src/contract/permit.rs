//! The admit/settle contract that every policy and the pipeline implement.
//!
//! Before a call, [`Policy::admit`] returns a permit or a [`Rejection`]. After the call,
//! [`Permit::settle`] consumes the permit with the call's [`Verdict`]. Permits are linear:
//!
//! * **Settle** records the outcome and gives back what the permit held.
//! * **Drop** without settling means the call was cancelled (a dropped future, an early
//!   return). The permit gives back what it holds — a bulkhead slot, an in-flight count, a
//!   half-open probe — and records *no* outcome. No path leaks capacity or leaves a breaker
//!   stuck half-open.
//!
//! Time and randomness arrive in an [`Env`], with the observer that hears the policy's events.
//!
//! ```
//! use resilix::permit::{Env, Permit, Policy};
//! use resilix::random::SeededRandom;
//! use resilix::time::Instant;
//! use resilix::Verdict;
//!
//! // `()` is the absent policy: it admits everything and costs nothing.
//! let mut rng = SeededRandom::new(1);
//! let mut env = Env::new(Instant::ZERO, &mut rng);
//! let permit = ().admit(&mut env).unwrap();
//! permit.settle(&Verdict::Success, &mut env);
//! ```

use crate::observe::Observer;
use crate::random::Random;
use crate::rejection::Rejection;
use crate::time::Instant;
use crate::verdict::Verdict;

/// What a policy needs from its caller at each step: the time, a source of randomness, and
/// an observer for its events.
///
/// ```
/// use resilix::permit::Env;
/// use resilix::random::SeededRandom;
/// use resilix::time::Instant;
///
/// let mut rng = SeededRandom::new(7);
/// let log = ();
/// let mut env = Env::new(Instant::from_secs(1), &mut rng).with_observer(&log);
/// env.now = Instant::from_secs(2); // advance between steps
/// ```
pub struct Env<'e, R: ?Sized, O: ?Sized = ()> {
    /// The current instant on the caller's timeline.
    pub now: Instant,
    /// The caller's randomness.
    pub rng: &'e mut R,
    /// Hears the events of every policy this environment is passed to.
    pub observer: &'e O,
}

impl<'e, R: Random + ?Sized> Env<'e, R, ()> {
    /// An environment at `now` drawing from `rng`, with the no-op observer.
    pub fn new(now: Instant, rng: &'e mut R) -> Self {
        Env {
            now,
            rng,
            observer: &(),
        }
    }
}

impl<'e, R: Random + ?Sized, O: Observer + ?Sized> Env<'e, R, O> {
    /// The same environment, reporting to `observer`.
    pub fn with_observer<O2: Observer + ?Sized>(self, observer: &'e O2) -> Env<'e, R, O2> {
        Env {
            now: self.now,
            rng: self.rng,
            observer,
        }
    }

    /// Reborrows this environment for a nested call.
    pub fn reborrow(&mut self) -> Env<'_, R, O> {
        Env {
            now: self.now,
            rng: &mut *self.rng,
            observer: self.observer,
        }
    }
}

/// A policy that decides, before each call, whether to send it.
///
/// Implementations take `&self` and are `Sync`: one instance serves every task, thread and
/// interrupt handler (docs/design/contracts.md §4). `admit` must be cheap when it refuses: rejection is the
/// load-shedding fast path.
pub trait Policy {
    /// What an admitted call holds until it settles or is dropped.
    type Permit<'a>: Permit
    where
        Self: 'a;

    /// Admit the call, or refuse it with the reason.
    fn admit<'a, R: Random + ?Sized, O: Observer + ?Sized>(
        &'a self,
        env: &mut Env<'_, R, O>,
    ) -> Result<Self::Permit<'a>, Rejection>;
}

/// An admitted call's claim on a policy. Settle it with the verdict, or drop it to cancel.
///
/// Dropping means cancelled: whatever the permit holds is given back and no outcome is
/// recorded. Implementations put that in their `Drop`.
pub trait Permit {
    /// The call finished with `verdict` at `env.now`; record it and give back what is held.
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        self,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    );
}

/// The absent policy: admits everything, records nothing, compiles to nothing.
impl Policy for () {
    type Permit<'a> = ();

    #[inline(always)]
    fn admit<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        _env: &mut Env<'_, R, O>,
    ) -> Result<(), Rejection> {
        Ok(())
    }
}

/// The absent policy's permit.
impl Permit for () {
    #[inline(always)]
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        self,
        _verdict: &Verdict,
        _env: &mut Env<'_, R, O>,
    ) {
    }
}

/// A shared reference to a policy is the policy: `static`s and borrowed instances plug into a
/// pipeline directly.
impl<P: Policy + ?Sized> Policy for &P {
    type Permit<'a>
        = P::Permit<'a>
    where
        Self: 'a;

    #[inline(always)]
    fn admit<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        env: &mut Env<'_, R, O>,
    ) -> Result<Self::Permit<'_>, Rejection> {
        (**self).admit(env)
    }
}

/// An optional policy: `None` is the absent policy (admits everything, holds no permit),
/// `Some(p)` is `p`. For pipelines whose slots are chosen at run time (a config file that may
/// or may not have a breaker) without a second pipeline type per combination.
///
/// ```
/// use resilix::bulkhead::{Bulkhead, BulkheadConfig};
/// use resilix::permit::{Env, Policy};
/// use resilix::random::SeededRandom;
/// use resilix::time::Instant;
///
/// let mut rng = SeededRandom::new(1);
/// let mut env = Env::new(Instant::ZERO, &mut rng);
/// let absent: Option<Bulkhead> = None;
/// assert!(absent.admit(&mut env).unwrap().is_none(), "None admits and holds nothing");
/// let one = Some(Bulkhead::new(BulkheadConfig::new(1)?));
/// let held = one.admit(&mut env).unwrap();
/// assert!(one.admit(&mut env).is_err(), "Some(p) is p: its one slot is taken");
/// drop(held);
/// # Ok::<(), resilix::bulkhead::BulkheadConfigError>(())
/// ```
impl<P: Policy> Policy for Option<P> {
    type Permit<'a>
        = Option<P::Permit<'a>>
    where
        Self: 'a;

    #[inline(always)]
    fn admit<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        env: &mut Env<'_, R, O>,
    ) -> Result<Self::Permit<'_>, Rejection> {
        match self {
            Some(policy) => policy.admit(env).map(Some),
            None => Ok(None),
        }
    }
}

/// An optional policy's permit: settles the inner permit if there is one; dropping it drops
/// (cancels) the inner permit.
impl<P: Permit> Permit for Option<P> {
    #[inline(always)]
    fn settle<R: Random + ?Sized, O: Observer + ?Sized>(
        self,
        verdict: &Verdict,
        env: &mut Env<'_, R, O>,
    ) {
        if let Some(permit) = self {
            permit.settle(verdict, env);
        }
    }
}

/// A policy whose permits can be kept apart from it: what a future that owns its pipeline
/// (the tower Layer's, which holds it through an `Arc`) keeps across an await, since a value
/// cannot hold a borrow of another value it owns.
///
/// [`detach`](Detach::detach) turns a permit into its data, with no borrow of the policy;
/// [`attach`](Detach::attach) turns that data back into the permit, to settle or drop. A
/// detached permit releases nothing when dropped (it cannot reach its policy): attach it again
/// to the policy it came from, and to no other, before it goes.
///
/// ```
/// use resilix::bulkhead::{Bulkhead, BulkheadConfig};
/// use resilix::permit::{Detach, Env, Permit, Policy};
/// use resilix::random::SeededRandom;
/// use resilix::time::Instant;
/// use resilix::Verdict;
///
/// let bulkhead = Bulkhead::new(BulkheadConfig::new(1)?);
/// let mut rng = SeededRandom::new(1);
/// let mut env = Env::new(Instant::ZERO, &mut rng);
/// let held = Bulkhead::detach(bulkhead.admit(&mut env).unwrap());
/// assert_eq!(bulkhead.held(), 1, "detached, the slot is still held");
/// bulkhead.attach(held).settle(&Verdict::Success, &mut env);
/// assert_eq!(bulkhead.held(), 0);
/// # Ok::<(), resilix::bulkhead::BulkheadConfigError>(())
/// ```
pub trait Detach: Policy {
    /// A permit's data, without the borrow of its policy.
    type Detached: 'static;

    /// The permit's data; what it holds stays held.
    fn detach(permit: Self::Permit<'_>) -> Self::Detached;

    /// The permit again, from the data [`detach`](Detach::detach) took from one of this
    /// policy's permits.
    fn attach(&self, detached: Self::Detached) -> Self::Permit<'_>;
}

impl Detach for () {
    type Detached = ();

    #[inline(always)]
    fn detach(_permit: ()) {}

    #[inline(always)]
    fn attach(&self, _detached: ()) {}
}

impl<P: Detach + ?Sized> Detach for &P {
    type Detached = P::Detached;

    #[inline(always)]
    fn detach(permit: P::Permit<'_>) -> P::Detached {
        P::detach(permit)
    }

    #[inline(always)]
    fn attach(&self, detached: P::Detached) -> P::Permit<'_> {
        (**self).attach(detached)
    }
}

impl<P: Detach> Detach for Option<P> {
    type Detached = Option<P::Detached>;

    #[inline(always)]
    fn detach(permit: Option<P::Permit<'_>>) -> Option<P::Detached> {
        permit.map(P::detach)
    }

    /// `None` unless both are there: a policy that is `None` issued no permit to come back.
    #[inline(always)]
    fn attach(&self, detached: Option<P::Detached>) -> Option<P::Permit<'_>> {
        match (self, detached) {
            (Some(policy), Some(detached)) => Some(policy.attach(detached)),
            _ => None,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
