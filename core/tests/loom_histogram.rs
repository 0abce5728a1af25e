//! Model-checks concurrent `record` and `merge_from`: every interleaving keeps the count exact
//! and the extremes right.
//!
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p resilix --release --test loom_histogram`
#![cfg(loom)]

use core::time::Duration;

use loom::sync::Arc;
use loom::thread;
use resilix::observe::DurationHistogram;
use resilix::observe::histogram::bucket_count;

/// P = 0 keeps the model small (65 counters).
type Small = DurationHistogram<0, { bucket_count(0) }>;

#[test]
fn two_recorders_same_bucket() {
    loom::model(|| {
        let h = Arc::new(Small::with_precision());
        let h2 = h.clone();
        let t = thread::spawn(move || h2.record(Duration::from_nanos(1_000)));
        h.record(Duration::from_nanos(1_001));
        t.join().unwrap();
        assert_eq!(h.count(), 2);
        assert_eq!(h.min(), Some(Duration::from_nanos(1_000)));
        assert_eq!(h.max(), Some(Duration::from_nanos(1_001)));
    });
}

#[test]
fn record_races_merge() {
    loom::model(|| {
        let total = Arc::new(Small::with_precision());
        let part = Small::with_precision();
        part.record(Duration::from_nanos(5));
        part.record(Duration::from_millis(3));
        let t2 = total.clone();
        let t = thread::spawn(move || t2.merge_from(&part));
        // The same P = 0 bucket as the merged 3 ms: a lost update would show in the count.
        total.record(Duration::from_nanos(3_000_007));
        t.join().unwrap();
        assert_eq!(total.count(), 3);
        assert_eq!(total.min(), Some(Duration::from_nanos(5)));
        assert_eq!(total.max(), Some(Duration::from_nanos(3_000_007)));
        // The median is the 3 ms record, within P = 0's bound of one half.
        let median = total.quantile(0.5).unwrap();
        assert!(median.abs_diff(Duration::from_millis(3)) <= Duration::from_micros(1_500));
    });
}
