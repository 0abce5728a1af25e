//! Many threads record into one histogram at once: nothing is lost, nothing is double-counted.
#![cfg(not(loom))]

use std::thread;
use std::time::Duration;

use resilix::observe::DurationHistogram;
use resilix::random::{Random, SeededRandom};

const THREADS: u64 = 8;
const PER_THREAD: u64 = 50_000;
const QS: [f64; 8] = [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0];

fn value(rng: &mut SeededRandom) -> Duration {
    // Mostly one hot bucket (maximum contention on one counter), the rest spread widely.
    if rng.below(4) == 0 {
        Duration::from_nanos(rng.next_u64() >> rng.below(64))
    } else {
        Duration::from_micros(250)
    }
}

#[test]
fn concurrent_records_are_all_counted() {
    let shared = DurationHistogram::new();
    thread::scope(|s| {
        for t in 0..THREADS {
            let shared = &shared;
            s.spawn(move || {
                let mut rng = SeededRandom::new(t);
                for _ in 0..PER_THREAD {
                    shared.record(value(&mut rng));
                }
            });
        }
    });
    assert_eq!(shared.count(), THREADS * PER_THREAD);

    // The same values recorded by one thread give the same histogram, reading for reading.
    let serial = DurationHistogram::new();
    for t in 0..THREADS {
        let mut rng = SeededRandom::new(t);
        for _ in 0..PER_THREAD {
            serial.record(value(&mut rng));
        }
    }
    assert_eq!((shared.min(), shared.max()), (serial.min(), serial.max()));
    assert_eq!(shared.mean(), serial.mean());
    for q in QS {
        assert_eq!(shared.quantile(q), serial.quantile(q), "q={q}");
    }
}

#[test]
fn per_thread_histograms_merged_while_others_record() {
    // Each thread owns a histogram and merges it into the total, while a scraper reads the
    // total concurrently: the final total holds every record exactly once.
    let total = DurationHistogram::new();
    thread::scope(|s| {
        for t in 0..THREADS {
            let total = &total;
            s.spawn(move || {
                let mine = DurationHistogram::new();
                let mut rng = SeededRandom::new(100 + t);
                for _ in 0..PER_THREAD {
                    mine.record(value(&mut rng));
                }
                total.merge_from(&mine);
            });
        }
        s.spawn(|| {
            // Counts only grow while nobody resets, so a later scrape never reads less.
            let mut previous = 0;
            for _ in 0..1_000 {
                let n = total.count();
                assert!(
                    previous <= n && n <= THREADS * PER_THREAD,
                    "{previous} then {n}"
                );
                previous = n;
                if let (Some(lo), Some(hi)) = (total.min(), total.max()) {
                    assert!(lo <= hi, "{lo:?} > {hi:?}");
                }
            }
        });
    });
    assert_eq!(total.count(), THREADS * PER_THREAD);
    let serial = DurationHistogram::new();
    for t in 0..THREADS {
        let mut rng = SeededRandom::new(100 + t);
        for _ in 0..PER_THREAD {
            serial.record(value(&mut rng));
        }
    }
    assert_eq!((total.min(), total.max()), (serial.min(), serial.max()));
    for q in QS {
        assert_eq!(total.quantile(q), serial.quantile(q), "q={q}");
    }
}
