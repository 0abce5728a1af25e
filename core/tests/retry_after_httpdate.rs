//! The Retry-After parser against `httpdate` (the HTTP-date parser hyper's `headers` uses),
//! over generated dates and near-dates (issue 23).
//!
//! Where both follow RFC 9110 they must agree to the second: every IMF-fixdate and asctime
//! date from 1970 to 9999 in both directions, and every one-byte mutation of them that either
//! accepts. Where they differ, it must be one of httpdate's known deviations, each named here:
//!
//! 1. **RFC 850 years**: httpdate reads a two-digit year in the fixed window 1970–2069; RFC
//!    9110 §5.6.7 (and we) read it against the recipient's clock (50 years ahead at most).
//!    Compared here with the clock at 2019-12-31T23:59:59Z, where the two windows coincide.
//! 2. **The unchecked byte**: httpdate does not look at the byte between an RFC 850 date's
//!    year and its time (`06-Nov-94 08:49:37`), so `06-Nov-94x08:49:37` parses there.
//! 3. **Leap seconds**: httpdate refuses every `23:59:60`; RFC 9110's `time-of-day` allows
//!    it, and we accept it at the end of a month (see the parser's module docs).
//! 4. **Whitespace**: httpdate trims every Unicode whitespace (`\n`, `\r`, form feed...); RFC
//!    9110's OWS is only spaces and tabs, so we refuse the rest.
#![cfg(not(loom))]

use std::time::{Duration, UNIX_EPOCH};

use proptest::prelude::*;
use resilix::classify::retry_after::RetryAfter;

/// 9999-12-31T23:59:59Z.
const LAST_HTTP_DATE: u64 = 253_402_300_799;
/// 2019-12-31T23:59:59Z: our RFC 850 window is then exactly httpdate's, 1970–2069.
const NOW_1970_2069: u64 = 1_577_836_799;

fn ours(value: &[u8], now: u64) -> Option<u64> {
    match RetryAfter::parse(value, now)? {
        RetryAfter::At { unix_secs } => Some(unix_secs),
        RetryAfter::Delay(_) => None,
    }
}

fn theirs(value: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(value).ok()?;
    let t = httpdate::parse_http_date(s).ok()?;
    Some(t.duration_since(UNIX_EPOCH).ok()?.as_secs())
}

fn imf(unix: u64) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(unix))
}

/// asctime from IMF-fixdate's fields: `Sun, 06 Nov 1994 08:49:37 GMT` → `Sun Nov  6 08:49:37 1994`.
fn asctime(unix: u64) -> String {
    let i = imf(unix);
    let day: u32 = i[5..7].parse().unwrap();
    format!(
        "{} {} {day:>2} {} {}",
        &i[0..3],
        &i[8..11],
        &i[17..25],
        &i[12..16]
    )
}

/// RFC 850 from IMF-fixdate's fields.
fn rfc850(unix: u64) -> String {
    const LONG: [(&str, &str); 7] = [
        ("Sun", "Sunday"),
        ("Mon", "Monday"),
        ("Tue", "Tuesday"),
        ("Wed", "Wednesday"),
        ("Thu", "Thursday"),
        ("Fri", "Friday"),
        ("Sat", "Saturday"),
    ];
    let i = imf(unix);
    let long = LONG.iter().find(|(s, _)| *s == &i[0..3]).unwrap().1;
    format!(
        "{long}, {}-{}-{} {} GMT",
        &i[5..7],
        &i[8..11],
        &i[14..16],
        &i[17..25]
    )
}

/// Why the two may disagree on `value`, if it is one of the known deviations.
fn known_deviation(value: &[u8]) -> Option<&'static str> {
    let s = String::from_utf8_lossy(value);
    let rfc850 = s.contains("day, ");
    if s.contains(":60") {
        return Some("leap second");
    }
    if value
        .iter()
        // `str::trim` (httpdate) trims Unicode white space, which includes the vertical tab
        // that `is_ascii_whitespace` leaves out.
        .any(|b| (b.is_ascii_whitespace() || *b == 0x0b) && !matches!(b, b' ' | b'\t'))
    {
        return Some("whitespace other than OWS");
    }
    if rfc850 {
        // The byte between the year and the time, 9 bytes after the comma and space.
        let comma = s.find(", ")?;
        if value.get(comma + 11).is_some_and(|b| *b != b' ') {
            return Some("RFC 850: the unchecked byte");
        }
    }
    None
}

#[test]
fn the_formatters_agree_with_known_dates() {
    assert_eq!(imf(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_eq!(asctime(784_111_777), "Sun Nov  6 08:49:37 1994");
    assert_eq!(rfc850(784_111_777), "Sunday, 06-Nov-94 08:49:37 GMT");
}

#[test]
fn the_known_deviations_are_real() {
    // Each deviation listed above, shown once, so the list cannot go stale silently.
    let leap = b"Sat, 31 Dec 2016 23:59:60 GMT";
    assert_eq!(theirs(leap), None);
    assert_eq!(ours(leap, 0), Some(1_483_228_800));
    let odd = b"Sunday, 06-Nov-94x08:49:37 GMT";
    assert_eq!(theirs(odd), Some(784_111_777));
    assert_eq!(ours(odd, NOW_1970_2069), None);
    let newline = b"\nSun, 06 Nov 1994 08:49:37 GMT";
    assert_eq!(theirs(newline), Some(784_111_777));
    assert_eq!(ours(newline, 0), None);
    // RFC 850 from a clock in 2030: "72" is 2072 for us (42 years ahead), still 1972 for
    // httpdate; a 1972 date's day name then matches only httpdate's reading.
    let v = rfc850(86_400 * (365 * 2 + 265)); // Friday, 22-Sep-72
    assert_eq!(theirs(v.as_bytes()), Some(86_400 * (365 * 2 + 265)));
    assert_eq!(ours(v.as_bytes(), NOW_1970_2069), theirs(v.as_bytes()));
    assert_eq!(ours(v.as_bytes(), 1_893_456_000), None, "{v} from 2030");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 5_000, ..ProptestConfig::default() })]

    #[test]
    fn imf_fixdate_and_asctime_agree_everywhere(unix in 0..=LAST_HTTP_DATE, now in any::<u64>()) {
        for v in [imf(unix), asctime(unix)] {
            prop_assert_eq!(theirs(v.as_bytes()), Some(unix), "httpdate on {}", v);
            prop_assert_eq!(ours(v.as_bytes(), now), Some(unix), "ours on {}", v);
        }
    }

    #[test]
    fn rfc850_agrees_where_the_windows_coincide(unix in 0u64..3_155_760_000) {
        // 1970..2069: both windows.
        let v = rfc850(unix);
        prop_assert_eq!(theirs(v.as_bytes()), Some(unix), "httpdate on {}", v);
        prop_assert_eq!(ours(v.as_bytes(), NOW_1970_2069), Some(unix), "ours on {}", v);
    }

    #[test]
    fn one_byte_mutations_agree_or_are_a_known_deviation(
        unix in 0..=LAST_HTTP_DATE,
        form in 0u8..3,
        at in any::<prop::sample::Index>(),
        byte in prop_oneof![
            proptest::sample::select(b"0123456789 :,-\t\nGMTSunMonDecJanFriday".to_vec()),
            any::<u8>(),
        ],
        insert in any::<bool>(),
    ) {
        let mut v = match form {
            0 => imf(unix),
            1 => asctime(unix),
            _ => rfc850(unix % 3_155_760_000),
        }
        .into_bytes();
        let i = at.index(v.len() + 1);
        if insert {
            v.insert(i, byte);
        } else if i < v.len() {
            v[i] = byte;
        }
        let (a, b) = (ours(&v, NOW_1970_2069), theirs(&v));
        if a != b {
            prop_assert!(
                known_deviation(&v).is_some(),
                "ours {:?}, httpdate {:?} on {:?}",
                a,
                b,
                String::from_utf8_lossy(&v)
            );
        }
    }
}

#[test]
fn a_system_time_round_trip_near_both_ends() {
    // The edges of both parsers' ranges: the epoch and the last second of 9999.
    for unix in [0, 1, 59, 86_399, 86_400, LAST_HTTP_DATE - 1, LAST_HTTP_DATE] {
        let v = imf(unix);
        assert_eq!(theirs(v.as_bytes()), Some(unix));
        assert_eq!(ours(v.as_bytes(), 0), Some(unix));
    }
}
