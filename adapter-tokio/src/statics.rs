use resilix::Rejection;
use resilix::observe::Observer;
use resilix::permit::{Env, Policy};
use resilix::random::Random;

/// A policy in a `static`, for pipelines whose calls are spawned on a multi-thread runtime.
///
/// A pipeline can hold `&'static Breaker` directly, and that works everywhere except in a
/// future handed to `tokio::spawn`: there rustc cannot prove the call's future `Send` for a
/// borrowed policy (its permit type depends on the borrow's lifetime, and the auto-trait check
/// of a generic `async fn` needs it for every lifetime: "implementation of `Send` is not
/// general enough"). `Static` names the permit with `'static`, which removes the question.
/// Owned policies and `Arc`-held ones (`Arc<Breaker>`, feature `alloc` of the core) need
/// nothing: their types carry no lifetime for the check to generalise.
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
/// let resilience = Arc::new(Resilience::new(Box::new(Pipeline::new().bulkhead(Static(&DB)))));
/// let task = tokio::spawn(async move {
///     resilience.execute(CallOptions::default(), || async { Ok::<u32, ()>(1) }).await
/// });
/// assert_eq!(task.await.unwrap(), Ok(1));
/// # });
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
