//! The boxes of answered requests' futures, kept for the next requests: what makes a request
//! through the Layer allocate nothing after warm-up (see the tower module's "Cost").

use std::fmt;
use std::future::Future;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio_util::sync::ReusableBoxFuture;

use super::BoxError;

/// One request's future, boxed in an allocation the next request can take over.
pub(super) type Boxed<Resp> = ReusableBoxFuture<'static, Result<Resp, BoxError>>;

/// How many boxes a service and its clones keep, unless
/// [`ResilienceLayer::future_pool`](super::ResilienceLayer::future_pool) says otherwise.
///
/// Ours: 1024 covers the requests a service has in flight at once in most deployments (a
/// bulkhead's default is 25 attempts), while bounding what a past burst leaves behind to
/// 1024 futures (about 760 KiB for the full pipeline's ≈ 760-byte future). Requests in
/// flight beyond it still run; their boxes are freed when they answer, so each request over
/// the cap costs one allocation.
pub const DEFAULT_FUTURE_POOL: usize = 1024;

/// The boxes of a service's answered requests, shared by the service and its clones, each
/// taken over by a later request of the same service (made by the Layer: see the
/// [module docs](super#cost)).
///
/// Only a box whose future has answered comes back: the `async` block then holds nothing
/// (its captures, the pipeline's `Arc` and the inner service's clone among them, are dropped
/// when it returns), so a pooled box keeps neither policies nor services alive. A request
/// dropped before it answered drops its future on the spot, box included.
///
/// A `Mutex<Vec<_>>`: the lock is held for one `pop` or `push` of a pointer, which neither
/// allocates (after warm-up) nor drops anything, so contention lasts a few instructions; a
/// lock-free stack of boxes would need `unsafe` (its ABA problem), which this crate forbids.
pub struct FuturePool<Resp> {
    boxes: Mutex<Vec<Boxed<Resp>>>,
    max: usize,
}

impl<Resp> FuturePool<Resp> {
    /// An empty pool keeping up to `max` boxes.
    pub(super) fn new(max: usize) -> Self {
        FuturePool {
            boxes: Mutex::new(Vec::new()),
            max,
        }
    }

    /// `future` in a pooled box, or a new one when none is free (warm-up, or more requests
    /// in flight than ever before).
    pub(super) fn boxed<F>(&self, future: F) -> Boxed<Resp>
    where
        F: Future<Output = Result<Resp, BoxError>> + Send + 'static,
    {
        let pooled = self.lock().pop();
        match pooled {
            // Every request of a service is the same `async` block type, so the layouts match
            // and `set` writes in place; it would reallocate otherwise, never misbehave.
            Some(mut boxed) => {
                boxed.set(future);
                boxed
            }
            None => ReusableBoxFuture::new(future),
        }
    }

    /// Keeps the box of an answered request, or frees it if the pool is full.
    pub(super) fn give_back(&self, boxed: Boxed<Resp>) {
        let excess = {
            let mut boxes = self.lock();
            if boxes.len() < self.max {
                boxes.push(boxed);
                None
            } else {
                Some(boxed)
            }
        };
        // Freed outside the lock.
        drop(excess);
    }

    /// How many boxes are waiting for a request.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no box is waiting (the next request allocates one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most boxes it keeps.
    pub fn max(&self) -> usize {
        self.max
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Boxed<Resp>>> {
        // A `pop` or `push` cannot leave the list half-changed, so a panic elsewhere while
        // holding the lock (there is none) would not make the boxes unusable.
        self.boxes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<Resp> fmt::Debug for FuturePool<Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FuturePool")
            .field("len", &self.len())
            .field("max", &self.max)
            .finish()
    }
}
