use resilix::Rejection;
use resilix::observe::Observer;
use resilix::permit::{Detach, Env, Policy};
use resilix::random::Random;

/// A policy in a `static`, for pipelines whose calls are spawned on a multi-thread runtime.
///
/// A pipeline can hold `&'static Breaker` directly, and that works everywhere (the tower
/// Layer included, spawned or not) except in a future handed to `tokio::spawn` that awaits
/// [`Resilience::execute`](resilix::resilience::Resilience::execute) or its siblings. There
/// rustc refuses it:
///
/// ```text
/// error: implementation of `resilix::permit::Policy` is not general enough
///    = note: `resilix::permit::Policy` would have to be implemented for the type `&'0 Breaker`, for any lifetime `'0`...
///    = note: ...but `resilix::permit::Policy` is actually implemented for the type `&'1 Breaker`, for some specific lifetime `'1`
/// error: implementation of `std::marker::Send` is not general enough
/// ```
///
/// Why, and why it cannot be fixed on the reference itself: the call's future holds the
/// attempt's permits across an await, typed `<&'s Breaker as Policy>::Permit<'p>`. To prove
/// a spawned future `Send`, rustc erases every lifetime in it and proves the bound for all of
/// them at once; normalising that projection needs the associated type's `where Self: 'p`,
/// that is `'s: 'p`, which cannot hold for every pair. The `where Self: 'a` is not ours to
/// drop: rustc demands it on any associated type that `admit(&'a self)` returns ("missing
/// required bound on `Permit`", rust-lang/rust#87479), and an impl must repeat it (E0477). So
/// any policy type that carries a lifetime hits this, and `Static<P>`, which carries none,
/// does not. The tower Layer avoids it by proving its future `Send` where the service is
/// built, with the lifetimes still known, and keeping only a boxed `dyn Future + Send`.
/// Owned policies and `Arc`-held ones (`Arc<Breaker>`) need nothing either.
///
/// ```
/// use std::sync::Arc;
/// use resilix::bulkhead::{Bulkhead, BulkheadConfig};
/// use resilix::call::CallOptions;
/// use resilix::pipeline::Pipeline;
/// use resilix_tokio::{Resilience, Static};
///
/// static DB: Bulkhead = Bulkhead::new(BulkheadConfig::DEFAULT);
///
/// # tokio::runtime::Builder::new_multi_thread().enable_time().build().unwrap().block_on(async {
/// let resilience = Arc::new(Resilience::new(Pipeline::new().bulkhead(Static(&DB))));
/// let task = tokio::spawn(async move {
///     resilience.execute(CallOptions::default(), || async { Ok::<u32, ()>(1) }).await
/// });
/// assert_eq!(task.await.unwrap(), Ok(1));
/// # });
/// ```
///
/// The same with `.bulkhead(&DB)` does not compile (if a future rustc accepts it, this
/// example fails and `Static` can go):
///
/// ```compile_fail
/// # use std::sync::Arc;
/// # use resilix::bulkhead::{Bulkhead, BulkheadConfig};
/// # use resilix::call::CallOptions;
/// # use resilix::pipeline::Pipeline;
/// # use resilix_tokio::Resilience;
/// static DB: Bulkhead = Bulkhead::new(BulkheadConfig::DEFAULT);
/// # async fn run() {
/// let resilience = Arc::new(Resilience::new(Pipeline::new().bulkhead(&DB)));
/// tokio::spawn(async move {
///     resilience.execute(CallOptions::default(), || async { Ok::<u32, ()>(1) }).await
/// });
/// # }
/// ```
#[derive(Debug)]
pub struct Static<P: 'static>(pub &'static P);

impl<P> Clone for Static<P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for Static<P> {}

impl<P: Policy + Sync + 'static> Policy for Static<P> {
    type Permit<'a> = P::Permit<'static>;

    #[inline(always)]
    fn admit<R: Random + ?Sized, O: Observer + ?Sized>(
        &self,
        env: &mut Env<'_, R, O>,
    ) -> Result<P::Permit<'static>, Rejection> {
        self.0.admit(env)
    }
}

/// A `&'static` policy's permit borrows nothing that can go: it is its own detached form.
impl<P: Policy + Sync + 'static> Detach for Static<P> {
    type Detached = P::Permit<'static>;

    #[inline(always)]
    fn detach(permit: P::Permit<'static>) -> P::Permit<'static> {
        permit
    }

    #[inline(always)]
    fn attach(&self, detached: P::Permit<'static>) -> P::Permit<'static> {
        detached
    }
}
