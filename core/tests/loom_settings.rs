//! Model-checks the settings block behind every in-place reconfiguration
//! (`core/src/mechanism/settings.rs`): two slots of words and one control word (writer flag,
//! swap count).
//!
//! What must hold in every interleaving: a reader never returns words of two different
//! writes (a torn block), a reader is never made to wait by a writer stopped anywhere in its
//! write (one swap, finished or not, never makes even a single read attempt fail), and of two
//! writers racing, exactly one publishes and the other is refused.
//!
//! Blocks are written as `[x, x]` (two words are enough to tear); the initial block is `[0, 0]`.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p resilix --release --test loom_settings`
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicU32, Ordering};
use loom::thread;

use resilix::settings::Settings;

fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

fn whole([a, b]: [u32; 2]) -> u32 {
    assert_eq!(a, b, "a torn block: words of two writes");
    a
}

/// Two swaps in a row ([1,1] then [2,2], the second rewriting the slot the reader may be in)
/// against a reader: the reader sees one whole block, and never an older one than the last it
/// saw.
#[test]
fn a_reader_racing_two_swaps_sees_whole_blocks_in_order() {
    model(|| {
        let s = Arc::new(Settings::new([0, 0]));
        let writer = {
            let s = Arc::clone(&s);
            thread::spawn(move || {
                s.replace([1, 1]).unwrap();
                s.replace([2, 2]).unwrap();
            })
        };
        let reader = {
            let s = Arc::clone(&s);
            thread::spawn(move || {
                let first = whole(s.read());
                let second = whole(s.read());
                assert!(second >= first, "went back from {first} to {second}");
            })
        };
        writer.join().unwrap();
        reader.join().unwrap();
        assert_eq!(whole(s.read()), 2);
    });
}

/// One swap, stopped at any point of its write, against a reader: the reader's single attempt
/// always succeeds (it never waits for, or retries because of, a writer it does not race
/// twice), with the old block or the new one.
#[test]
fn one_swap_never_makes_a_reader_retry() {
    model(|| {
        let s = Arc::new(Settings::new([0, 0]));
        let writer = {
            let s = Arc::clone(&s);
            thread::spawn(move || s.replace([1, 1]).unwrap())
        };
        let reader = {
            let s = Arc::clone(&s);
            thread::spawn(move || {
                let block = s.try_read().expect("one swap made a reader retry");
                assert!(whole(block) <= 1);
            })
        };
        writer.join().unwrap();
        reader.join().unwrap();
    });
}

/// Two writers at once: the flag lets exactly one publish; the other is refused, changing
/// nothing, and a reader sees the initial block or the winner's.
#[test]
fn of_two_racing_writers_one_publishes_and_one_is_refused() {
    model(|| {
        let s = Arc::new(Settings::new([0, 0]));
        let refused = Arc::new(AtomicU32::new(0));
        let writers: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|x| {
                let (s, refused) = (Arc::clone(&s), Arc::clone(&refused));
                thread::spawn(move || {
                    if s.replace([x, x]).is_err() {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        let reader = {
            let s = Arc::clone(&s);
            thread::spawn(move || assert!(whole(s.read()) <= 2))
        };
        for w in writers {
            w.join().unwrap();
        }
        reader.join().unwrap();
        let refused = refused.load(Ordering::Relaxed);
        // Both may publish one after the other; never both refused, never a lost write.
        assert!(refused <= 1);
        assert_eq!(s.swaps(), 2 - refused);
        assert_ne!(whole(s.read()), 0);
    });
}
