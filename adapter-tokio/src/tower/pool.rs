//! The boxes of answered requests' futures, kept for the next requests: what makes a request
//! through the Layer allocate nothing after warm-up (see the tower module's "Cost").

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use crossbeam_queue::ArrayQueue;
use tokio_util::sync::ReusableBoxFuture;

use super::BoxError;

/// One request's future, boxed in an allocation the next request can take over. It answers
/// with the response and the service's [`Home`], which the future owned while it ran and
/// hands over as it returns, so that `ResponseFuture` can give the box back without an `Arc`
/// of its own.
pub(super) type Boxed<Resp> = ReusableBoxFuture<'static, (Result<Resp, BoxError>, Home<Resp>)>;

/// The pool an answered request gives its box back to, through the service's shared state
/// with its policies' type erased (an unsizing coercion of the request's `Arc`: no
/// reference-count change).
pub(super) type Home<Resp> = Arc<dyn HasPool<Resp>>;

/// What holds a service's [`FuturePool`]: the state a service and its clones share.
pub(super) trait HasPool<Resp>: Send + Sync {
    fn pool(&self) -> &FuturePool<Resp>;
}

/// How many boxes a service and its clones keep, unless
/// [`ResilienceLayer::future_pool`](super::ResilienceLayer::future_pool) says otherwise.
///
/// Ours: 128, about five times the attempts a default bulkhead lets run at once (25), so the
/// requests such a service has in flight fit with room to spare (refused ones hold a box
/// until their first poll too), while bounding what a past burst leaves behind (128 futures:
/// about 95 KiB for the full pipeline's ≈ 760-byte future). The pool's slots are allocated
/// up front when the service is built (a lock-free bounded queue is a fixed array): 24 bytes a
/// slot, a box's pointer and a stamp, so 3 KiB at this default (24 KiB at the 1024 the pool
/// had when it grew on demand), per `Layer::layer` call, whether or not a request ever comes.
/// Requests in flight beyond the bound still run; their boxes are freed when they answer, so
/// each request over the bound costs one allocation. A server with more requests in flight at
/// once raises it; a stack built per connection may lower it.
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
/// A bounded lock-free queue (`crossbeam-queue`'s `ArrayQueue`): a take or a give-back is
/// one compare-and-swap, where a `Mutex` around a `Vec` costs a lock and an unlock (two
/// read-modify-writes) each. A pool of 0 keeps no queue at all.
pub struct FuturePool<Resp> {
    /// `None` for a pool of 0 (an `ArrayQueue` cannot be empty-sized).
    boxes: Option<ArrayQueue<Boxed<Resp>>>,
}

impl<Resp> FuturePool<Resp> {
    /// An empty pool keeping up to `max` boxes (its `max` slots allocated now).
    pub(super) fn new(max: usize) -> Self {
        FuturePool {
            boxes: (max > 0).then(|| ArrayQueue::new(max)),
        }
    }

    /// A box for the next request's future (see [`boxed`]), if one is free.
    pub(super) fn take(&self) -> Option<Boxed<Resp>> {
        self.boxes.as_ref().and_then(ArrayQueue::pop)
    }

    /// Keeps the box of an answered request, or frees it if the pool is full.
    pub(super) fn give_back(&self, boxed: Boxed<Resp>) {
        if let Some(boxes) = &self.boxes {
            // Full: `push` hands the box back, and it is freed here.
            let _ = boxes.push(boxed);
        }
    }

    /// How many boxes are waiting for a request.
    pub fn len(&self) -> usize {
        self.boxes.as_ref().map_or(0, ArrayQueue::len)
    }

    /// Whether no box is waiting (the next request allocates one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most boxes it keeps.
    pub fn max(&self) -> usize {
        self.boxes.as_ref().map_or(0, ArrayQueue::capacity)
    }
}

/// The future `make` makes, in the `spare` box [`FuturePool::take`] found, or in a new one
/// when none was free (warm-up, or more requests in flight than ever before). Apart from
/// `take` so that the future can own what holds the pool; made here, where it is stored, so
/// that it is written into the box in place rather than built and then copied (about 760
/// bytes for the full pipeline).
#[inline(always)]
pub(super) fn boxed<Resp, F>(spare: Option<Boxed<Resp>>, make: impl FnOnce() -> F) -> Boxed<Resp>
where
    F: Future<Output = (Result<Resp, BoxError>, Home<Resp>)> + Send + 'static,
{
    match spare {
        // Every request of a service is the same `async` block type, so the layouts match and
        // `set` writes in place; it would reallocate otherwise, never misbehave.
        Some(mut spare) => {
            spare.set(make());
            spare
        }
        None => ReusableBoxFuture::new(make()),
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

    /// What `DEFAULT_FUTURE_POOL`'s docs say a slot costs: the box's (wide) pointer and the
    /// queue's stamp.
    #[test]
    fn a_slot_is_a_wide_pointer_and_a_stamp() {
        assert_eq!(
            size_of::<Boxed<u64>>() + size_of::<usize>(),
            24,
            "update DEFAULT_FUTURE_POOL's docs"
        );
    }

    #[test]
    fn a_pool_of_zero_keeps_nothing_and_has_no_queue() {
        let pool = FuturePool::<u32>::new(0);
        assert!(pool.boxes.is_none());
        assert_eq!((pool.len(), pool.max()), (0, 0));
    }

    #[test]
    fn a_full_pool_frees_what_it_is_given() {
        struct Nowhere;
        impl HasPool<u32> for Nowhere {
            fn pool(&self) -> &FuturePool<u32> {
                unreachable!("not polled")
            }
        }
        let pool = FuturePool::<u32>::new(2);
        let home: Home<u32> = Arc::new(Nowhere);
        // Three requests in flight at once, on an empty pool: three new boxes.
        let in_flight: Vec<_> = (0..3)
            .map(|_| {
                let home = Arc::clone(&home);
                boxed(pool.take(), || async move { (Ok(1), home) })
            })
            .collect();
        for answered in in_flight {
            pool.give_back(answered);
        }
        assert_eq!((pool.len(), pool.max()), (2, 2));
        // The third box was dropped, its unpolled future (and `Arc`) with it; the two pooled
        // ones still hold theirs, having never run.
        assert_eq!(Arc::strong_count(&home), 3);
        let other: Home<u32> = Arc::new(Nowhere);
        let taken = boxed(pool.take(), || async move { (Ok(2), other) });
        assert_eq!(pool.len(), 1);
        assert_eq!(Arc::strong_count(&home), 2, "`set` dropped the old future");
        drop(taken);
    }
}
