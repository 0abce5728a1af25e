//! Properties of the `Retry-After` parser: it never panics, and what a server can legally
//! write (delay-seconds, the three HTTP-date formats) reads back exactly.
#![cfg(not(loom))]

use core::time::Duration;

use proptest::prelude::*;
use resilix::classify::retry_after::{MAX_DELAY, RetryAfter, parse_delay};

/// 9999-12-31T23:59:59Z, the last instant a four-digit year can write.
const LAST_HTTP_DATE: u64 = 253_402_300_799;

const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const DAYS_LONG: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A broken-down UTC time, computed independently of the parser: by walking years and
/// months rather than by Hinnant's closed form, so a shared mistake is unlikely.
struct Civil {
    year: u64,
    month: usize, // 0-based
    day: u64,
    hour: u64,
    minute: u64,
    second: u64,
    weekday: usize, // 0 = Sunday
}

fn is_leap(y: u64) -> bool {
    y.is_multiple_of(4) && (!y.is_multiple_of(100) || y.is_multiple_of(400))
}

fn civil(unix: u64) -> Civil {
    let mut days = unix / 86_400;
    let secs = unix % 86_400;
    let weekday = ((days + 4) % 7) as usize;
    let mut year = 1970;
    loop {
        let len = if is_leap(year) { 366 } else { 365 };
        if days < len {
            break;
        }
        days -= len;
        year += 1;
    }
    let mut month = 0;
    loop {
        let len = match month {
            1 if is_leap(year) => 29,
            1 => 28,
            3 | 5 | 8 | 10 => 30,
            _ => 31,
        };
        if days < len {
            break;
        }
        days -= len;
        month += 1;
    }
    Civil {
        year,
        month,
        day: days + 1,
        hour: secs / 3600,
        minute: secs / 60 % 60,
        second: secs % 60,
        weekday,
    }
}

fn imf_fixdate(unix: u64) -> String {
    let c = civil(unix);
    format!(
        "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
        DAYS[c.weekday], c.day, MONTHS[c.month], c.year, c.hour, c.minute, c.second
    )
}

fn rfc850(unix: u64) -> String {
    let c = civil(unix);
    format!(
        "{}, {:02}-{}-{:02} {:02}:{:02}:{:02} GMT",
        DAYS_LONG[c.weekday],
        c.day,
        MONTHS[c.month],
        c.year % 100,
        c.hour,
        c.minute,
        c.second
    )
}

fn asctime(unix: u64) -> String {
    let c = civil(unix);
    format!(
        "{} {} {:>2} {:02}:{:02}:{:02} {:04}",
        DAYS[c.weekday], MONTHS[c.month], c.day, c.hour, c.minute, c.second, c.year
    )
}

#[test]
fn the_formatter_agrees_with_known_dates() {
    // Guards the test's own formatter, so a round trip cannot pass by sharing a bug.
    assert_eq!(imf_fixdate(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    assert_eq!(imf_fixdate(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_eq!(rfc850(784_111_777), "Sunday, 06-Nov-94 08:49:37 GMT");
    assert_eq!(asctime(784_111_777), "Sun Nov  6 08:49:37 1994");
    assert_eq!(imf_fixdate(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
    assert_eq!(imf_fixdate(LAST_HTTP_DATE), "Fri, 31 Dec 9999 23:59:59 GMT");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..64),
        now in any::<u64>(),
    ) {
        let parsed = RetryAfter::parse(&bytes, now);
        let delay = parse_delay(&bytes, now);
        prop_assert_eq!(delay, parsed.and_then(|p| p.delay_from(now)));
        if let Some(d) = delay {
            prop_assert!(d <= MAX_DELAY);
        }
    }

    #[test]
    fn never_panics_on_date_shaped_bytes(
        // Bytes drawn from the date alphabet reach deep into the date grammar.
        bytes in proptest::collection::vec(
            proptest::sample::select(b"0123456789 ,:-SunMoTueWdhFriSatJanFebMrApyJlgOctNvDcGMT\t".to_vec()),
            20..34,
        ),
        now in any::<u64>(),
    ) {
        if let Some(d) = parse_delay(&bytes, now) {
            prop_assert!(d <= MAX_DELAY);
        }
    }

    #[test]
    fn delay_seconds_round_trip(secs in any::<u32>(), now in any::<u64>(), zeros in 0usize..30) {
        let text = format!("{}{secs}", "0".repeat(zeros));
        // Beyond the cap a delay saturates (issue 23): never "no Retry-After".
        let want = Some(Duration::from_secs(u64::from(secs)).min(MAX_DELAY));
        prop_assert_eq!(parse_delay(text.as_bytes(), now), want);
        prop_assert_eq!(
            RetryAfter::parse(text.as_bytes(), now),
            want.map(RetryAfter::Delay)
        );
    }

    #[test]
    fn delay_seconds_with_any_junk_is_refused(secs in any::<u32>(), junk in "[^0-9 \t]") {
        let before = format!("{junk}{secs}");
        let after = format!("{secs}{junk}");
        prop_assert_eq!(parse_delay(before.as_bytes(), 0), None);
        prop_assert_eq!(parse_delay(after.as_bytes(), 0), None);
    }

    #[test]
    fn imf_fixdate_round_trips(unix in 0..=LAST_HTTP_DATE, now in any::<u64>()) {
        let text = imf_fixdate(unix);
        prop_assert_eq!(
            RetryAfter::parse(text.as_bytes(), now),
            Some(RetryAfter::At { unix_secs: unix }),
            "{}", text
        );
    }

    #[test]
    fn asctime_round_trips(unix in 0..=LAST_HTTP_DATE, now in any::<u64>()) {
        let text = asctime(unix);
        prop_assert_eq!(
            RetryAfter::parse(text.as_bytes(), now),
            Some(RetryAfter::At { unix_secs: unix }),
            "{}", text
        );
    }

    #[test]
    fn rfc850_round_trips_within_fifty_years_of_now(
        // Years 1970..=9949, so that now + 50 years stays writable.
        now in 0u64..253_400_000_000 - 50 * 366 * 86_400,
        offset in -(49i64 * 365 * 86_400)..=(50 * 365 * 86_400),
    ) {
        let Some(unix) = now.checked_add_signed(offset) else { return Ok(()) };
        let text = rfc850(unix);
        prop_assert_eq!(
            RetryAfter::parse(text.as_bytes(), now),
            Some(RetryAfter::At { unix_secs: unix }),
            "{} at now={}", text, now
        );
    }

    #[test]
    fn a_future_date_is_the_delay_to_it(now in 0..LAST_HTTP_DATE, ahead in 0..=MAX_DELAY.as_secs()) {
        let at = (now + ahead).min(LAST_HTTP_DATE);
        let text = imf_fixdate(at);
        prop_assert_eq!(parse_delay(text.as_bytes(), now), Some(Duration::from_secs(at - now)));
    }

    #[test]
    fn only_dates_from_now_to_the_cap_are_delays(
        at in 0..=LAST_HTTP_DATE,
        // now within two caps either side of the date, so both outcomes are common.
        before in -2 * MAX_DELAY.as_secs() as i64..=2 * MAX_DELAY.as_secs() as i64,
    ) {
        let Some(now) = at.checked_add_signed(-before) else { return Ok(()) };
        let text = imf_fixdate(at);
        // A date ahead is a delay, saturating at the cap; a date behind is none.
        let want = (at >= now).then(|| Duration::from_secs(at - now).min(MAX_DELAY));
        prop_assert_eq!(parse_delay(text.as_bytes(), now), want);
    }

    #[test]
    fn a_longer_requested_wait_never_comes_back_sooner(a in any::<u64>(), b in any::<u64>(), now in 0..LAST_HTTP_DATE) {
        let (short, long) = (a.min(b), a.max(b));
        let d = |v: u64| parse_delay(format!("{v}").as_bytes(), now).unwrap();
        prop_assert!(d(short) <= d(long));
        // The same for dates ahead of now.
        let at = |ahead: u64| {
            let unix = now.saturating_add(ahead).min(LAST_HTTP_DATE);
            parse_delay(imf_fixdate(unix).as_bytes(), now).unwrap()
        };
        prop_assert!(at(short) <= at(long));
    }

    #[test]
    fn rfc850_years_by_the_exact_fifty_year_rule(
        now in 0u64..253_400_000_000 - 50 * 366 * 86_400,
        // Within a century either side of now, so the rule's other candidate is 100 years off.
        offset in -(100i64 * 365 * 86_400)..=(100 * 365 * 86_400),
    ) {
        let Some(unix) = now.checked_add_signed(offset) else { return Ok(()) };
        // The model: of the instants in the same century-class (same two-digit year, same
        // month, day and time), the one chosen is the latest that is not more than 50 calendar
        // years after now. Dates whose chosen year falls before 1970 yield nothing.
        let text = rfc850(unix);
        let c = civil(unix);
        let n = civil(now);
        let limit = (n.year + 50, n.month, n.day, (n.hour, n.minute, n.second));
        let key = |y: u64| (y, c.month, c.day, (c.hour, c.minute, c.second));
        let mut year = n.year + (c.year % 100 + 100 - n.year % 100) % 100; // first not before now's
        if key(year) > limit {
            year -= 100;
        }
        let got = RetryAfter::parse(text.as_bytes(), now);
        if year == c.year {
            prop_assert_eq!(got, Some(RetryAfter::At { unix_secs: unix }), "{} at now={}", text, now);
        } else {
            // Another century: 100 years are 36,524 or 36,525 days, never a whole number of
            // weeks, so the day name no longer matches and the header names no date.
            prop_assert_eq!(got, None, "{} at now={}", text, now);
        }
    }

    #[test]
    fn a_wrong_day_name_is_refused(unix in 0..=LAST_HTTP_DATE, shift in 1usize..7) {
        let c = civil(unix);
        let right = DAYS[c.weekday];
        let wrong = DAYS[(c.weekday + shift) % 7];
        let text = imf_fixdate(unix).replacen(right, wrong, 1);
        prop_assert_eq!(RetryAfter::parse(text.as_bytes(), 0), None, "{}", text);
    }
}
