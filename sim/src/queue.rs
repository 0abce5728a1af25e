//! The time-ordered event queue: earliest first, and among events at the same instant, the one
//! scheduled first. The sequence tiebreak is what makes a run a pure function of its seed: a
//! heap alone would pop equal-time events in an order that depends on its internal layout.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use resilix::time::Instant;

struct Entry<E> {
    at: Instant,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (then lowest sequence) on top.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .at
            .cmp(&self.at)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// A discrete-event queue over the caller's timeline.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    now: Instant,
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            next_seq: 0,
            now: Instant::ZERO,
        }
    }

    /// Schedules `event` at `at`. An instant in the past is moved to now: the simulated world
    /// never goes back in time, whatever a model computes.
    pub fn schedule(&mut self, at: Instant, event: E) {
        let at = at.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { at, seq, event });
    }

    /// The next event, advancing the queue's clock to its instant.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let entry = self.heap.pop()?;
        self.now = entry.at;
        Some((entry.at, entry.event))
    }

    /// The instant of the last event popped.
    pub fn now(&self) -> Instant {
        self.now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_by_scheduling_order() {
        let mut q = EventQueue::new();
        q.schedule(Instant::from_millis(5), "late");
        q.schedule(Instant::from_millis(1), "first at 1");
        q.schedule(Instant::from_millis(3), "middle");
        q.schedule(Instant::from_millis(1), "second at 1");
        q.schedule(Instant::from_millis(1), "third at 1");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(
            order,
            ["first at 1", "second at 1", "third at 1", "middle", "late"]
        );
        assert_eq!(q.now(), Instant::from_millis(5));
    }

    #[test]
    fn many_equal_times_keep_fifo_order() {
        let mut q = EventQueue::new();
        for i in 0..1000u32 {
            q.schedule(Instant::from_millis(u64::from(i % 3)), i);
        }
        let mut last = (Instant::ZERO, None::<u32>);
        while let Some((at, e)) = q.pop() {
            assert!(at >= last.0);
            if let (true, Some(prev)) = (at == last.0, last.1) {
                assert!(e > prev, "{e} popped after {prev} at the same instant");
            }
            last = (at, Some(e));
        }
    }

    #[test]
    fn the_past_is_clamped_to_now() {
        let mut q = EventQueue::new();
        q.schedule(Instant::from_millis(10), 1);
        q.pop();
        q.schedule(Instant::from_millis(2), 2);
        assert_eq!(q.pop(), Some((Instant::from_millis(10), 2)));
    }
}
