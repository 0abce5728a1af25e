//! The boxes of answered requests' futures, kept for the next requests: what makes a request
//! through the Layer allocate nothing after warm-up (see the tower module's "Cost").
//!
//! Every request of a service is the same `async` block type, so the pool keeps its boxes
//! typed (`Pin<Box<F>>`) and a request writes its future over the answered one with
//! [`Pin::set`]: in place, with no unsafe code and no type-erased reuse. (`tokio_util`'s
//! `ReusableBoxFuture`, used before, moves the ≈ 730-byte future twice through calls a
//! release build does not inline: two copies per request, 200 instructions.) Only the
//! request in flight is type-erased ([`Boxed`]), and it goes back to the boxes of its own
//! type through [`Pooled::give_back`].
//!
//! The box answered last waits in a slot of its own (`crossbeam-utils`' `AtomicCell`), so a
//! service with one request in flight at a time, the common case, takes and gives back with
//! one swap each; the others wait in a bounded lock-free queue (`crossbeam-queue`'s
//! `ArrayQueue`), whose take and give-back cost a compare-and-swap and some 40 instructions
//! each.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use crossbeam_queue::ArrayQueue;
use crossbeam_utils::atomic::AtomicCell;

use super::BoxError;

/// What a request's future answers: the response, and the service's [`Home`], which the
/// future owned while it ran and hands over as it returns, so that `ResponseFuture` can give
/// the box back without an `Arc` of its own.
pub(super) type Answer<Resp> = (Result<Resp, BoxError>, Home<Resp>);

/// One request's future, in a box the next request can take over.
pub(super) type Boxed<Resp> = Pin<Box<dyn Pooled<Resp>>>;

/// The pool an answered request gives its box back to, through the service's shared state
/// with its policies' type erased (an unsizing coercion of the request's `Arc`: no
/// reference-count change).
pub(super) type Home<Resp> = Arc<dyn HasPool<Resp>>;

/// What holds a service's [`FuturePool`]: the state a service and its clones share.
pub(super) trait HasPool<Resp>: Send + Sync {
    fn pool(&self) -> &FuturePool<Resp>;
}

/// A request's future with its type erased, which knows the queue it goes back to.
pub(super) trait Pooled<Resp>: Send {
    fn poll_answer(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Answer<Resp>>;

    /// Keeps the box of an answered request in `pool`, or frees it if the pool is full (or
    /// keeps none).
    fn give_back(self: Pin<Box<Self>>, pool: &FuturePool<Resp>);
}

impl<Resp, F> Pooled<Resp> for F
where
    F: Future<Output = Answer<Resp>> + Send + 'static,
{
    #[inline]
    fn poll_answer(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Answer<Resp>> {
        self.poll(cx)
    }

    fn give_back(self: Pin<Box<Self>>, pool: &FuturePool<Resp>) {
        if let Some(boxes) = pool.boxes::<F>() {
            boxes.give(self);
        }
    }
}

/// How many boxes a service and its clones keep, unless
/// [`ResilienceLayer::future_pool`](super::ResilienceLayer::future_pool) says otherwise.
///
/// Ours: 128, about five times the attempts a default bulkhead lets run at once (25), so the
/// requests such a service has in flight fit with room to spare (refused ones hold a box
/// until their first poll too), while bounding what a past burst leaves behind (128 futures:
/// about 91 KiB for the full pipeline's ≈ 730-byte future). The pool's slots are allocated
/// when the service's first request comes (a lock-free bounded queue is a fixed array): 16
/// bytes a slot, a box's pointer and a stamp, so 2 KiB at this default, per `Layer::layer`
/// call that serves a request. Requests in flight beyond the bound still run; their boxes are
/// freed when they answer, so each request over the bound costs one allocation. A server with
/// more requests in flight at once raises it; a stack built per connection may lower it.
pub const DEFAULT_FUTURE_POOL: usize = 128;

/// The boxes of a service's answered requests, shared by the service and its clones, each
/// taken over by a later request of the same service (made by the Layer: see the
/// [module docs](super#cost)).
///
/// Only a box whose future has answered comes back: the `async` block then holds nothing
/// (its captures, the inner service's clone among them, are dropped or handed over when it
/// returns), so a pooled box keeps neither policies nor services alive. A request dropped
/// before it answered drops its future on the spot, box included.
///
/// Lock-free: the box answered last in a slot of its own (a take or a give-back is one swap),
/// the others in a bounded queue (one compare-and-swap each); a `Mutex` around a `Vec` costs a
/// lock and an unlock (two read-modify-writes) each. A pool of 0 keeps nothing at all.
pub struct FuturePool<Resp> {
    max: usize,
    /// The boxes of the service's future type, made by its first request (the `Layer`
    /// cannot name an `async` block's type; the request that makes one can).
    boxes: OnceLock<Typed>,
    _answers: PhantomData<fn() -> Resp>,
}

/// A service's [`Boxes`], its future type erased so the pool can be named.
struct Typed {
    boxes: Box<dyn Any + Send + Sync>,
    /// [`Boxes::len`] for the type inside.
    len: fn(&(dyn Any + Send + Sync)) -> usize,
}

/// The boxes of one future type.
struct Boxes<F> {
    /// The box answered last.
    hot: AtomicCell<Option<Pin<Box<F>>>>,
    /// The others, up to the pool's bound less one (`None` for a bound of 1).
    cold: Option<ArrayQueue<Pin<Box<F>>>>,
}

impl<F> Boxes<F> {
    /// Room for `max ≥ 1` boxes.
    fn new(max: usize) -> Self {
        Boxes {
            hot: AtomicCell::new(None),
            cold: (max > 1).then(|| ArrayQueue::new(max - 1)),
        }
    }

    #[inline]
    fn take(&self) -> Option<Pin<Box<F>>> {
        match self.hot.take() {
            Some(boxed) => Some(boxed),
            None => self.cold.as_ref()?.pop(),
        }
    }

    /// The answered box goes to the hot slot; one it displaces goes to the queue, or is freed
    /// if the queue is full.
    #[inline]
    fn give(&self, boxed: Pin<Box<F>>) {
        if let Some(older) = self.hot.swap(Some(boxed))
            && let Some(cold) = &self.cold
        {
            let _ = cold.push(older);
        }
    }

    /// A snapshot, exact when no request starts or answers meanwhile: the hot box is taken to
    /// be counted and given straight back (a request starting at that instant finds it
    /// elsewhere or allocates; the cost of a slot that can only be read by swapping).
    fn len(&self) -> usize {
        let cold = self.cold.as_ref().map_or(0, ArrayQueue::len);
        match self.hot.take() {
            Some(hot) => {
                self.give(hot);
                cold + 1
            }
            None => cold,
        }
    }

    fn len_of(boxes: &(dyn Any + Send + Sync)) -> usize
    where
        F: Send + 'static,
    {
        boxes.downcast_ref::<Self>().map_or(0, Self::len)
    }
}

impl<Resp> FuturePool<Resp> {
    /// An empty pool keeping up to `max` boxes.
    pub(super) fn new(max: usize) -> Self {
        FuturePool {
            max,
            boxes: OnceLock::new(),
            _answers: PhantomData,
        }
    }

    /// The boxes of `F`: `None` for a pool of 0, or before a request of `F` made them.
    #[inline]
    fn boxes<F: Send + 'static>(&self) -> Option<&Boxes<F>> {
        self.boxes.get()?.boxes.downcast_ref()
    }

    /// A box for the next request's future, if one is free (making the boxes of `F` on a
    /// service's first request).
    #[inline]
    fn take<F: Send + 'static>(&self) -> Option<Pin<Box<F>>> {
        if self.max == 0 {
            return None;
        }
        let typed = self.boxes.get_or_init(|| Typed {
            boxes: Box::new(Boxes::<F>::new(self.max)),
            len: Boxes::<F>::len_of,
        });
        // A pool only ever sees one future type (one `Layer::layer` call, one service type),
        // so the downcast fails only if that ever changed: then the request allocates.
        typed.boxes.downcast_ref::<Boxes<F>>()?.take()
    }

    /// How many boxes are waiting for a request. A snapshot, exact while the service is idle:
    /// the box answered last can only be counted by taking it and giving it back, so a request
    /// starting at that instant may find it gone and use another box or allocate.
    pub fn len(&self) -> usize {
        self.boxes
            .get()
            .map_or(0, |typed| (typed.len)(&*typed.boxes))
    }

    /// Whether no box is waiting (the next request allocates one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most boxes it keeps.
    pub fn max(&self) -> usize {
        self.max
    }
}

/// The future `make` makes from `home`, in a box an answered request gave back to `home`'s
/// pool, or in a new one when none was free (warm-up, or more requests in flight than ever
/// before). `make` takes `home` so that the pool is searched before the future owns what
/// holds it.
#[inline(always)]
pub(super) fn boxed<Resp, H, F>(home: Arc<H>, make: impl FnOnce(Arc<H>) -> F) -> Boxed<Resp>
where
    H: HasPool<Resp> + ?Sized,
    F: Future<Output = Answer<Resp>> + Send + 'static,
{
    match home.pool().take::<F>() {
        // Drops the answered future (which holds nothing) and writes the new one in place.
        Some(mut spare) => {
            spare.set(make(home));
            spare
        }
        None => Box::pin(make(home)),
    }
}

impl<Resp> fmt::Debug for FuturePool<Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FuturePool")
            .field("len", &self.len())
            .field("max", &self.max())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Holder(FuturePool<u32>);
    impl HasPool<u32> for Holder {
        fn pool(&self) -> &FuturePool<u32> {
            &self.0
        }
    }

    async fn answer(n: u32, home: Arc<Holder>) -> Answer<u32> {
        (Ok(n), home as Home<u32>)
    }

    #[test]
    fn a_slot_is_a_thin_pointer_and_a_stamp() {
        assert_eq!(
            size_of::<Pin<Box<u64>>>() + size_of::<usize>(),
            16,
            "update DEFAULT_FUTURE_POOL's docs"
        );
    }

    #[test]
    fn a_pool_of_zero_keeps_nothing_and_has_no_queue() {
        let home = Arc::new(Holder(FuturePool::new(0)));
        let future = boxed(Arc::clone(&home), |h| answer(1, h));
        future.give_back(&home.0);
        assert!(home.0.boxes.get().is_none());
        assert_eq!((home.0.len(), home.0.max()), (0, 0));
    }

    #[test]
    fn a_pool_of_one_keeps_the_box_answered_last_and_no_queue() {
        let home = Arc::new(Holder(FuturePool::new(1)));
        let first = boxed(Arc::clone(&home), |h| answer(1, h));
        let second = boxed(Arc::clone(&home), |h| answer(2, h));
        first.give_back(&home.0);
        assert_eq!(home.0.len(), 1);
        // The second displaces the first, which has no queue to go to and is freed, its
        // unpolled future's `Arc` with it.
        second.give_back(&home.0);
        assert_eq!((home.0.len(), Arc::strong_count(&home)), (1, 2));
        // Taken and given back in turn, as by a service with one request in flight.
        for n in 3..6 {
            let next = boxed(Arc::clone(&home), |h| answer(n, h));
            assert_eq!(home.0.len(), 0, "request {n} took the box");
            next.give_back(&home.0);
            assert_eq!(home.0.len(), 1);
        }
    }

    #[test]
    fn a_full_pool_frees_what_it_is_given() {
        let home = Arc::new(Holder(FuturePool::new(2)));
        // Three requests in flight at once, on an empty pool: three new boxes.
        let in_flight: Vec<_> = (0..3)
            .map(|n| boxed(Arc::clone(&home), |h| answer(n, h)))
            .collect();
        assert_eq!(Arc::strong_count(&home), 4);
        for answered in in_flight {
            answered.give_back(&home.0);
        }
        assert_eq!((home.0.len(), home.0.max()), (2, 2));
        // The third box was dropped, its unpolled future (and `Arc`) with it; the two pooled
        // ones still hold theirs, having never run.
        assert_eq!(Arc::strong_count(&home), 3);
        let taken = boxed(Arc::clone(&home), |h| answer(7, h));
        assert_eq!(home.0.len(), 1);
        assert_eq!(
            Arc::strong_count(&home),
            3,
            "`set` dropped the old future and its `Arc`, and the new one holds one"
        );
        drop(taken);
        assert_eq!(Arc::strong_count(&home), 2);
    }
}
