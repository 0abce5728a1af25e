//! The Retry-After parser on arbitrary bytes and an arbitrary wall clock: no panic, no delay
//! beyond the documented cap, a longer wait saturating at it rather than vanishing, and an
//! HTTP-date means the same instant from every `now`, never one past year 9999.
#![no_main]

use core::time::Duration;

use libfuzzer_sys::fuzz_target;
use resilix::classify::retry_after::{MAX_DELAY, RetryAfter, parse_delay};

fuzz_target!(|data: &[u8]| {
    // The first 8 bytes are the caller's clock, the rest the header value.
    let (now, value) = match data.split_first_chunk::<8>() {
        Some((now, value)) => (u64::from_le_bytes(*now), value),
        None => (0, data),
    };

    let parsed = RetryAfter::parse(value, now);
    let delay = parse_delay(value, now);
    assert_eq!(delay, parsed.and_then(|p| p.delay_from(now)));
    if let Some(d) = delay {
        assert!(d <= MAX_DELAY, "{d:?} beyond the cap for {value:?}");
    }

    match parsed {
        Some(RetryAfter::Delay(d)) => {
            assert!(d <= MAX_DELAY);
            // delay-seconds saturates at the cap rather than reading as nothing.
            let digits = value.trim_ascii();
            let exact = digits
                .iter()
                .try_fold(0u64, |n, &c| n.checked_mul(10)?.checked_add(u64::from(c - b'0')));
            let want = exact.map_or(MAX_DELAY, |n| Duration::from_secs(n).min(MAX_DELAY));
            assert_eq!(d, want, "{value:?}");
            // A delay is relative: no clock changes it.
            assert_eq!(RetryAfter::parse(value, now ^ u64::MAX), parsed);
            assert_eq!(parsed.and_then(|p| p.delay_from(u64::MAX)), Some(d));
        }
        Some(at @ RetryAfter::At { unix_secs }) => {
            // 9999-12-31T23:59:59Z: no HTTP-date can write a later second.
            assert!(unix_secs <= 253_402_300_799);
            // The delay to a date is exactly the distance to it, from any clock.
            assert_eq!(at.delay_from(unix_secs), Some(Duration::ZERO));
            assert_eq!(at.delay_from(unix_secs.saturating_add(1)), None);
            let earlier = unix_secs.saturating_sub(MAX_DELAY.as_secs());
            assert_eq!(
                at.delay_from(earlier),
                Some(Duration::from_secs(unix_secs - earlier))
            );
            // Further ahead saturates at the cap: never sooner than a nearer date (issue 23).
            if let Some(far) = unix_secs.checked_sub(MAX_DELAY.as_secs() + 1) {
                assert_eq!(at.delay_from(far), Some(MAX_DELAY));
                assert_eq!(at.delay_from(far / 2), Some(MAX_DELAY));
            }
            // Four-digit-year formats do not depend on the clock at all.
            let four_digit_year = value.trim_ascii().get(3).is_some_and(|&b| b == b',' || b == b' ');
            if four_digit_year {
                assert_eq!(RetryAfter::parse(value, 0), parsed);
                assert_eq!(RetryAfter::parse(value, u64::MAX), parsed);
            }
        }
        None => assert_eq!(delay, None),
    }
});
