//! Time edges: saturating arithmetic at both ends of the timeline, and deadline propagation
//! encodings, which divide 64- and 128-bit numbers (library calls on 32-bit cores).

use core::time::Duration;

use resilix::time::{
    Clock, Deadline, DeadlinePropagation, Instant, ManualClock, decode_grpc_timeout,
    encode_grpc_timeout, encode_millis,
};

use super::{ensure, nanos, push_bytes};
use crate::Trace;

pub(crate) fn edges(t: &mut Trace) -> Result<(), &'static str> {
    let year = Duration::from_secs(365 * 24 * 3600);
    ensure(
        Instant::MAX + year == Instant::MAX,
        "Instant::MAX + 1 year does not saturate",
    )?;
    ensure(
        Instant::ZERO - year == Instant::ZERO,
        "Instant::ZERO - 1 year does not saturate",
    )?;
    // Backwards time is a zero duration, never a panic.
    ensure(
        Instant::from_millis(5) - Instant::from_millis(10) == Duration::ZERO,
        "backwards",
    )?;
    // The manual clock (an AtomicU64: portable-atomic's lock-based fallback on 32-bit cores,
    // which is why no policy stores time in one) saturates too.
    let clock = ManualClock::new(Instant::MAX - Duration::from_secs(1));
    ensure(
        clock.advance(year) == Instant::MAX && clock.now() == Instant::MAX,
        "ManualClock wrapped",
    )?;
    let far = Deadline::after(Instant::MAX - Duration::from_secs(1), year);
    ensure(
        far.instant() == Instant::MAX,
        "a deadline past the end does not saturate",
    )?;
    t.push(nanos(far.remaining(Instant::ZERO)));
    let d = Deadline::after(Instant::from_secs(1), Duration::from_millis(1500));
    t.push(u64::from(d.has_passed(Instant::from_millis(2499))));
    t.push(u64::from(d.has_passed(Instant::from_millis(2500))));
    t.push(nanos(d.remaining(Instant::from_millis(1750))));

    for remaining in [
        Duration::ZERO,
        Duration::from_nanos(1),
        Duration::from_millis(999),
        Duration::from_secs(30),
        Duration::from_secs(100_000_000),
        Duration::MAX,
    ] {
        let header = encode_grpc_timeout(remaining);
        push_bytes(t, header.as_bytes());
        let back = decode_grpc_timeout(header.as_bytes()).map_err(|_| "grpc-timeout round trip")?;
        // Rounded down: the receiver is never given more time than remains.
        ensure(
            back <= remaining,
            "grpc-timeout gives the receiver more time than remains",
        )?;
        t.push(nanos(back));
        push_bytes(t, encode_millis(remaining).as_bytes());
    }
    let hop = DeadlinePropagation::with_margin(Duration::from_millis(200));
    let deadline = Deadline::after(Instant::ZERO, Duration::from_secs(30));
    ensure(
        &*hop.millis(deadline, Instant::from_secs(7)) == "22800",
        "propagated millis",
    )?;
    push_bytes(
        t,
        hop.grpc_timeout(deadline, Instant::from_secs(7)).as_bytes(),
    );
    t.push(nanos(hop.outgoing(deadline, Instant::from_millis(29_900))));
    Ok(())
}
