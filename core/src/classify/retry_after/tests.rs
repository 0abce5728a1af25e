extern crate std;

use super::*;

const NOW: u64 = 1_700_000_000; // Tue, 14 Nov 2023 22:13:20 GMT
const RFC_EXAMPLE: u64 = 784_111_777; // Sun, 06 Nov 1994 08:49:37 GMT

fn at(v: &str) -> Option<u64> {
    match RetryAfter::parse(v.as_bytes(), NOW)? {
        RetryAfter::At { unix_secs } => Some(unix_secs),
        RetryAfter::Delay(_) => panic!("{v:?} parsed as a delay"),
    }
}

fn secs(s: u64) -> Option<Duration> {
    Some(Duration::from_secs(s))
}

#[test]
fn delay_seconds() {
    assert_eq!(parse_delay(b"0", NOW), secs(0));
    assert_eq!(parse_delay(b"1", NOW), secs(1));
    assert_eq!(parse_delay(b"120", NOW), secs(120));
    assert_eq!(parse_delay(b"007", NOW), secs(7));
    // Leading zeros do not count towards the cap.
    assert_eq!(parse_delay(b"0000000000000000000000000042", NOW), secs(42));
    // A delay ignores now, even at its extremes.
    assert_eq!(parse_delay(b"5", 0), secs(5));
    assert_eq!(parse_delay(b"5", u64::MAX), secs(5));
}

#[test]
fn optional_whitespace_around_the_value() {
    assert_eq!(parse_delay(b" 5", NOW), secs(5));
    assert_eq!(parse_delay(b"5 \t ", NOW), secs(5));
    assert_eq!(parse_delay(b"\t5\t", NOW), secs(5));
    assert_eq!(at("  Sun, 06 Nov 1994 08:49:37 GMT\t"), Some(RFC_EXAMPLE));
    // Only SP and HTAB are whitespace here.
    assert_eq!(parse_delay(b"5\n", NOW), None);
    assert_eq!(parse_delay(b"\r5", NOW), None);
    // Not inside a number.
    assert_eq!(parse_delay(b"1 2", NOW), None);
}

#[test]
fn malformed_values_yield_nothing() {
    for v in [
        "", " ", "\t \t", "1.5", "-1", "+5", "5s", "5 s", "0x10", "1e3", "٣", "five", "12a", "a12",
        ",", "GMT", "Sun,",
    ] {
        assert_eq!(RetryAfter::parse(v.as_bytes(), NOW), None, "{v:?}");
    }
    assert_eq!(RetryAfter::parse(&[0xff, 0xfe], NOW), None);
    assert_eq!(RetryAfter::parse(&[b'1', 0], NOW), None);
}

#[test]
fn huge_delays_saturate() {
    assert_eq!(parse_delay(b"31535999", NOW), secs(31_535_999));
    assert_eq!(parse_delay(b"31536000", NOW), Some(MAX_DELAY));
    // One second more still reads as the cap, not as no Retry-After at all.
    assert_eq!(parse_delay(b"31536001", NOW), Some(MAX_DELAY));
    // A Unix timestamp sent as delay-seconds, the common server bug.
    assert_eq!(parse_delay(b"1700000000", NOW), Some(MAX_DELAY));
    assert_eq!(parse_delay(b"18446744073709551615", NOW), Some(MAX_DELAY)); // u64::MAX
    assert_eq!(parse_delay(b"18446744073709551616", NOW), Some(MAX_DELAY)); // u64::MAX + 1
    assert_eq!(parse_delay(b"99999999999999999999", NOW), Some(MAX_DELAY));
    assert_eq!(parse_delay(&[b'9'; 4096], NOW), Some(MAX_DELAY));
    // Leading zeros before a huge number do not overflow either.
    let mut v = std::vec![b'0'; 4096];
    v.extend_from_slice(b"99999999999999999999");
    assert_eq!(parse_delay(&v, NOW), Some(MAX_DELAY));
}

#[test]
fn a_longer_wait_never_comes_back_sooner() {
    // Over delay-seconds around the cap and far beyond, the parsed wait never decreases.
    let mut last = Duration::ZERO;
    for v in (31_535_990u64..31_536_010).chain([
        40_000_000,
        1_700_000_000,
        u64::from(u32::MAX),
        u64::MAX,
    ]) {
        let got = parse_delay(std::format!("{v}").as_bytes(), NOW).unwrap();
        assert!(got >= last, "{v}: {got:?} < {last:?}");
        last = got;
    }
    // And over dates: every second of the day around the cap, then the last HTTP-date.
    let mut last = Duration::ZERO;
    for unix in (NOW + MAX_DELAY_SECS - 5..NOW + MAX_DELAY_SECS + 5).chain([253_402_300_799]) {
        let got = RetryAfter::At { unix_secs: unix }.delay_from(NOW).unwrap();
        assert!(got >= last, "{unix}");
        last = got;
    }
}

#[test]
fn epoch_anchors() {
    assert_eq!(at("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
    assert_eq!(at("Sun, 06 Nov 1994 08:49:37 GMT"), Some(RFC_EXAMPLE));
    assert_eq!(at("Sat, 01 Jan 2000 00:00:00 GMT"), Some(946_684_800));
    assert_eq!(at("Tue, 14 Nov 2023 22:13:20 GMT"), Some(NOW));
    assert_eq!(at("Tue, 19 Jan 2038 03:14:08 GMT"), Some(1 << 31));
    // The last second the grammar can write.
    assert_eq!(at("Fri, 31 Dec 9999 23:59:59 GMT"), Some(253_402_300_799));
}

#[test]
fn all_three_formats_agree() {
    let now = NOW;
    for v in [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
        "Sun Nov 06 08:49:37 1994",
    ] {
        assert_eq!(
            RetryAfter::parse(v.as_bytes(), now),
            Some(RetryAfter::At {
                unix_secs: RFC_EXAMPLE
            }),
            "{v:?}"
        );
    }
    assert_eq!(
        at("Wed Nov 15 22:13:20 2023"),
        Some(NOW + 86_400),
        "two-digit day in asctime"
    );
}

#[test]
fn future_dates_become_delays() {
    assert_eq!(parse_delay(b"Tue, 14 Nov 2023 22:13:20 GMT", NOW), secs(0));
    assert_eq!(
        parse_delay(b"Tue, 14 Nov 2023 22:15:20 GMT", NOW),
        secs(120)
    );
    assert_eq!(
        parse_delay(b"Wednesday, 15-Nov-23 22:13:20 GMT", NOW),
        secs(86_400)
    );
    assert_eq!(parse_delay(b"Wed Nov 15 22:13:20 2023", NOW), secs(86_400));
}

#[test]
fn past_dates_yield_nothing() {
    assert_eq!(parse_delay(b"Tue, 14 Nov 2023 22:13:19 GMT", NOW), None);
    assert_eq!(parse_delay(b"Sun, 06 Nov 1994 08:49:37 GMT", NOW), None);
    assert_eq!(parse_delay(b"Thu, 01 Jan 1970 00:00:00 GMT", 1), None);
    assert_eq!(
        parse_delay(b"Fri, 31 Dec 9999 23:59:59 GMT", u64::MAX),
        None
    );
    // Before the epoch: in the past for every now, so not even a date.
    assert_eq!(at("Wed, 31 Dec 1969 23:59:59 GMT"), None);
    assert_eq!(at("Sat, 01 Jan 0000 00:00:00 GMT"), None);
}

#[test]
fn dates_too_far_ahead_saturate() {
    // 365 days after NOW is the cap (2024 is a leap year, so 13 Nov); later saturates.
    let cap = NOW + MAX_DELAY_SECS;
    assert_eq!(
        RetryAfter::At { unix_secs: cap - 1 }.delay_from(NOW),
        secs(MAX_DELAY_SECS - 1)
    );
    assert_eq!(
        RetryAfter::At { unix_secs: cap }.delay_from(NOW),
        Some(MAX_DELAY)
    );
    assert_eq!(
        RetryAfter::At { unix_secs: cap + 1 }.delay_from(NOW),
        Some(MAX_DELAY)
    );
    assert_eq!(
        parse_delay(b"Wed, 13 Nov 2024 22:13:20 GMT", NOW),
        Some(MAX_DELAY)
    );
    assert_eq!(
        parse_delay(b"Wed, 13 Nov 2024 22:13:21 GMT", NOW),
        Some(MAX_DELAY)
    );
    assert_eq!(
        parse_delay(b"Fri, 31 Dec 9999 23:59:59 GMT", NOW),
        Some(MAX_DELAY)
    );
    // A date is still parsed, so a caller can see what the server meant.
    assert_eq!(at("Fri, 31 Dec 9999 23:59:59 GMT"), Some(253_402_300_799));
    assert_eq!(
        parse_delay(b"Fri, 31 Dec 9999 23:59:59 GMT", 253_402_300_700),
        secs(99)
    );
}

#[test]
fn leap_years() {
    assert_eq!(at("Thu, 29 Feb 2024 00:00:00 GMT"), Some(1_709_164_800));
    assert_eq!(at("Tue, 29 Feb 2000 00:00:00 GMT"), Some(951_782_400));
    // 2023 is not a leap year; 2100 is not (divisible by 100, not by 400).
    assert_eq!(at("Wed, 29 Feb 2023 00:00:00 GMT"), None);
    assert_eq!(at("Mon, 01 Mar 2100 00:00:00 GMT"), Some(4_107_542_400));
    assert_eq!(at("Mon, 29 Feb 2100 00:00:00 GMT"), None);
    assert_eq!(
        at("Sun, 28 Feb 2100 00:00:00 GMT"),
        Some(4_107_542_400 - 86_400)
    );
}

#[test]
fn impossible_calendar_dates_yield_nothing() {
    for v in [
        "Fri, 30 Feb 2024 00:00:00 GMT",
        "Thu, 31 Apr 2024 00:00:00 GMT",
        "Mon, 00 Jan 2024 00:00:00 GMT",
        "Thu, 32 Jan 2024 00:00:00 GMT",
        "Mon, 01 Jan 2024 24:00:00 GMT",
        "Mon, 01 Jan 2024 00:60:00 GMT",
        "Mon, 01 Jan 2024 00:00:61 GMT",
        "Mon, 01 Jan 2024 12:00:60 GMT", // a leap second only at 23:59:60
        "Sun Nov 31 08:49:37 1994",
        "Sun Nov  0 08:49:37 1994",
        "Sunday, 31-Nov-94 08:49:37 GMT",
    ] {
        assert_eq!(RetryAfter::parse(v.as_bytes(), NOW), None, "{v:?}");
    }
}

#[test]
fn a_leap_second_is_the_next_midnight() {
    assert_eq!(
        at("Sat, 31 Dec 2016 23:59:60 GMT"),
        at("Sun, 01 Jan 2017 00:00:00 GMT")
    );
    assert_eq!(at("Sun, 01 Jan 2017 00:00:00 GMT"), Some(1_483_228_800));
    assert_eq!(
        at("Tue, 30 Jun 2015 23:59:60 GMT"),
        at("Wed, 01 Jul 2015 00:00:00 GMT")
    );
    // In all three formats.
    assert_eq!(at("Saturday, 31-Dec-16 23:59:60 GMT"), Some(1_483_228_800));
    assert_eq!(at("Sat Dec 31 23:59:60 2016"), Some(1_483_228_800));
    // The end of any month may hold one (ITU-R TF.460-6), a leap February's 29th included.
    assert_eq!(
        at("Thu, 29 Feb 2024 23:59:60 GMT"),
        at("Fri, 01 Mar 2024 00:00:00 GMT")
    );
    assert_eq!(
        at("Sun, 31 Mar 2024 23:59:60 GMT"),
        at("Mon, 01 Apr 2024 00:00:00 GMT")
    );
}

#[test]
fn a_leap_second_only_at_the_end_of_a_month() {
    for v in [
        "Fri, 30 Dec 2016 23:59:60 GMT",
        "Wed, 28 Feb 2024 23:59:60 GMT",
        "Tue, 14 Nov 2023 23:59:60 GMT",
        "Mon, 29 Jun 2015 23:59:60 GMT",
        "Tue Nov 14 23:59:60 2023",
        "Tuesday, 14-Nov-23 23:59:60 GMT",
        "Sat, 31 Dec 2016 23:58:60 GMT",
        "Sat, 31 Dec 2016 22:59:60 GMT",
    ] {
        assert_eq!(RetryAfter::parse(v.as_bytes(), NOW), None, "{v:?}");
    }
}

#[test]
fn the_last_leap_second_stays_in_year_9999() {
    // Issue 23: this was 253_402_300_800, an instant in year 10000.
    assert_eq!(at("Fri, 31 Dec 9999 23:59:60 GMT"), Some(253_402_300_799));
    assert_eq!(at("Fri Dec 31 23:59:60 9999"), Some(253_402_300_799));
    assert_eq!(at("Fri, 31 Dec 9999 23:59:59 GMT"), Some(253_402_300_799));
    let (year, _, _) = civil_from_days(253_402_300_799 / 86_400);
    assert_eq!(year, 9999);
    // Every accepted date of the last minute, in every format, is in year 9999.
    for s in 0..=60 {
        for v in [
            std::format!("Fri, 31 Dec 9999 23:59:{s:02} GMT"),
            std::format!("Fri Dec 31 23:59:{s:02} 9999"),
        ] {
            let unix = at(&v).unwrap();
            assert!(unix <= 253_402_300_799, "{v}");
        }
    }
}

#[test]
fn the_day_name_must_match_the_date() {
    assert_eq!(at("Mon, 06 Nov 1994 08:49:37 GMT"), None);
    assert_eq!(at("Sat, 06 Nov 1994 08:49:37 GMT"), None);
    assert_eq!(at("Monday, 06-Nov-94 08:49:37 GMT"), None);
    assert_eq!(at("Mon Nov  6 08:49:37 1994"), None);
    // Every day name is recognised in its own place.
    let week = [
        ("Sun", "Sunday", 6),
        ("Mon", "Monday", 7),
        ("Tue", "Tuesday", 8),
        ("Wed", "Wednesday", 9),
        ("Thu", "Thursday", 10),
        ("Fri", "Friday", 11),
        ("Sat", "Saturday", 12),
    ];
    for (i, (short, long, day)) in week.into_iter().enumerate() {
        let want = Some(RFC_EXAMPLE + i as u64 * 86_400);
        assert_eq!(at(&format_args_imf(short, day)), want, "{short}");
        let rfc850 = std::format!("{long}, {day:02}-Nov-94 08:49:37 GMT");
        assert_eq!(at(&rfc850), want, "{long}");
        let asctime = std::format!("{short} Nov {day:>2} 08:49:37 1994");
        assert_eq!(at(&asctime), want, "{asctime}");
    }
}

fn format_args_imf(day_name: &str, day: u32) -> std::string::String {
    std::format!("{day_name}, {day:02} Nov 1994 08:49:37 GMT")
}

#[test]
fn every_month_is_recognised() {
    let firsts = [
        ("Jan", 1_704_067_200),
        ("Feb", 1_706_745_600),
        ("Mar", 1_709_251_200),
        ("Apr", 1_711_929_600),
        ("May", 1_714_521_600),
        ("Jun", 1_717_200_000),
        ("Jul", 1_719_792_000),
        ("Aug", 1_722_470_400),
        ("Sep", 1_725_148_800),
        ("Oct", 1_727_740_800),
        ("Nov", 1_730_419_200),
        ("Dec", 1_733_011_200),
    ];
    for (month, unix) in firsts {
        let days = unix / 86_400;
        let name = core::str::from_utf8(DAY_NAMES[weekday(days as i64) as usize]).unwrap();
        let v = std::format!("{name}, 01 {month} 2024 00:00:00 GMT");
        assert_eq!(at(&v), Some(unix), "{v}");
    }
}

#[test]
fn names_are_case_sensitive() {
    for v in [
        "Sun, 06 nov 1994 08:49:37 GMT",
        "Sun, 06 NOV 1994 08:49:37 GMT",
        "sun, 06 Nov 1994 08:49:37 GMT",
        "SUN, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 gmt",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "sunday, 06-Nov-94 08:49:37 GMT",
        "Sun nov  6 08:49:37 1994",
    ] {
        assert_eq!(RetryAfter::parse(v.as_bytes(), NOW), None, "{v:?}");
    }
}

#[test]
fn truncated_or_padded_dates_yield_nothing() {
    let full = "Sun, 06 Nov 1994 08:49:37 GMT";
    for len in 0..full.len() {
        assert_eq!(
            RetryAfter::parse(&full.as_bytes()[..len], NOW),
            None,
            "{len}"
        );
    }
    let full = "Sunday, 06-Nov-94 08:49:37 GMT";
    for len in 0..full.len() {
        assert_eq!(
            RetryAfter::parse(&full.as_bytes()[..len], NOW),
            None,
            "{len}"
        );
    }
    let full = "Sun Nov  6 08:49:37 1994";
    for len in 0..full.len() {
        assert_eq!(
            RetryAfter::parse(&full.as_bytes()[..len], NOW),
            None,
            "{len}"
        );
    }
    for v in [
        "Sun, 06 Nov 1994 08:49:37 GMT x",
        "Sun, 06 Nov 1994 08:49:37 GMTx",
        "Sun, 6 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 94 08:49:37 GMT",
        "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun,  06 Nov 1994 08:49:37 GMT",
        "Sun, 06-Nov-1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49 GMT",
        "Sun, 06 Nov 1994 08:49:37 +0000",
        "Sunday, 06-Nov-94 08:49:37 GMT x",
        "Sunday, 6-Nov-94 08:49:37 GMT",
        "Sun Nov 6 08:49:37 1994",
        "Sun Nov  6 08:49:37 1994 ",
        "Sun Nov  6 08:49:37 94",
        "Sun Nov  6 08:49:37 1994 GMT",
        "Sun Nov _6 08:49:37 1994",
    ] {
        // Trailing OWS is trimmed, so that one case is valid; every other is not.
        let want = if v.ends_with("1994 ") {
            Some(RetryAfter::At {
                unix_secs: RFC_EXAMPLE,
            })
        } else {
            None
        };
        assert_eq!(RetryAfter::parse(v.as_bytes(), NOW), want, "{v:?}");
    }
}

/// The year `rfc850_year` picks for `yy` on `month`/`day` at `time`, with `now`.
fn year_of(yy: u8, month: u8, day: u8, time: [u8; 3], now: u64) -> i64 {
    let f = Fields {
        weekday: 0,
        year: i64::from(yy),
        month,
        day,
        time,
    };
    rfc850_year(&f, now)
}

fn unix(y: i64, m: u8, d: u8, [h, n, s]: [u8; 3]) -> u64 {
    (days_from_civil(y, m, d) * 86_400 + i64::from(h) * 3_600 + i64::from(n) * 60 + i64::from(s))
        as u64
}

fn rfc850(y: i64, m: u8, d: u8, [h, n, s]: [u8; 3]) -> std::string::String {
    let days = days_from_civil(y, m, d);
    let name = core::str::from_utf8(DAY_NAMES_LONG[weekday(days) as usize]).unwrap();
    let month = core::str::from_utf8(MONTHS[m as usize - 1]).unwrap();
    std::format!(
        "{name}, {d:02}-{month}-{:02} {h:02}:{n:02}:{s:02} GMT",
        y.rem_euclid(100)
    )
}

#[test]
fn rfc850_years_follow_the_fifty_year_rule() {
    // With now in 2023, "94" is 1994 (2094 would be 71 years ahead)...
    assert_eq!(at("Sunday, 06-Nov-94 08:49:37 GMT"), Some(RFC_EXAMPLE));
    // ...and "73" is 2073 before 14 Nov 22:13:20 (50 years ahead at most), 1973 after it.
    for (date, want) in [
        ((2073, 1, 1, [0, 0, 0]), 2073),
        ((2073, 11, 14, [22, 13, 20]), 2073),
        ((2073, 11, 14, [22, 13, 21]), 1973),
        ((2073, 12, 31, [0, 0, 0]), 1973),
        ((2074, 1, 1, [0, 0, 0]), 1974),
    ] {
        let (y, m, d, t) = date;
        let v = rfc850(want, m, d, t);
        assert_eq!(at(&v), Some(unix(want, m, d, t)), "{v}");
        assert_eq!(year_of((y % 100) as u8, m, d, t, NOW), want, "{v}");
    }
    // At the epoch, "94" is 1994 and "20" is 2020; "21" before 1 Jan 00:00:00 plus 50
    // years... is 1921 (2021 is more than 50 years after 1970-01-01).
    assert_eq!(year_of(94, 1, 1, [0, 0, 0], 0), 1994);
    assert_eq!(year_of(20, 1, 1, [0, 0, 0], 0), 2020);
    assert_eq!(year_of(20, 1, 1, [0, 0, 1], 0), 1920);
    assert_eq!(year_of(21, 1, 1, [0, 0, 0], 0), 1921);
    // Near the end of a century the window crosses it.
    let in_2099 = unix(2099, 6, 1, [0, 0, 0]);
    assert_eq!(year_of(0, 1, 1, [0, 0, 0], in_2099), 2100);
    assert_eq!(year_of(99, 1, 1, [0, 0, 0], in_2099), 2099);
    assert_eq!(year_of(49, 5, 31, [23, 59, 59], in_2099), 2149);
    assert_eq!(year_of(49, 6, 1, [0, 0, 1], in_2099), 2049);
    assert_eq!(year_of(50, 1, 1, [0, 0, 0], in_2099), 2050);
    // Any now, however absurd, gives a year that is then refused, not a panic.
    assert!(year_of(0, 1, 1, [0, 0, 0], u64::MAX) > 9999);
    assert_eq!(
        parse_delay(b"Sunday, 06-Nov-94 08:49:37 GMT", u64::MAX),
        None
    );
}

#[test]
fn the_fifty_year_rule_compares_full_instants() {
    // Issue 23's example: with now = 2022-09-06, 2072-09-23 is more than 50 years ahead,
    // so "72" is 1972. 2072-09-23 was a Friday and was accepted; 1972-09-23 was a Saturday,
    // so the Friday header now names no date at all, and the Saturday one is 1972.
    let now = unix(2022, 9, 6, [0, 0, 0]);
    assert_eq!(
        RetryAfter::parse(b"Friday, 23-Sep-72 08:01:46 GMT", now),
        None
    );
    assert_eq!(
        RetryAfter::parse(b"Saturday, 23-Sep-72 08:01:46 GMT", now),
        Some(RetryAfter::At {
            unix_secs: unix(1972, 9, 23, [8, 1, 46])
        })
    );
    assert_eq!(year_of(72, 9, 23, [8, 1, 46], now), 1972);
    assert_eq!(year_of(72, 9, 6, [0, 0, 0], now), 2072);
    assert_eq!(year_of(72, 9, 6, [0, 0, 1], now), 1972);
    // 2072-09-05 is not: it stays in 2072 (a Monday).
    assert_eq!(
        RetryAfter::parse(b"Monday, 05-Sep-72 08:01:46 GMT", now),
        Some(RetryAfter::At {
            unix_secs: unix(2072, 9, 5, [8, 1, 46])
        })
    );
    // A leap day's 50th anniversary does not exist; the comparison is still exact.
    let leap_now = unix(2024, 2, 29, [12, 0, 0]);
    assert_eq!(year_of(74, 2, 28, [23, 59, 59], leap_now), 2074);
    assert_eq!(year_of(74, 3, 1, [0, 0, 0], leap_now), 1974);
    // Against a plain model over many nows and dates: the chosen year is the one ending in
    // the two digits, within a century, whose instant is at most now + 50 calendar years
    // and more than now + 50 years - 100 years.
    let mut rng = crate::random::SeededRandom::new(23);
    use crate::random::Random;
    for _ in 0..200_000 {
        let now = rng.below(unix(2200, 1, 1, [0, 0, 0]));
        let (ny, nm, nd) = civil_from_days((now / 86_400) as i64);
        let rest = now % 86_400;
        let nt = [
            (rest / 3_600) as u8,
            (rest / 60 % 60) as u8,
            (rest % 60) as u8,
        ];
        let m = 1 + rng.below(12) as u8;
        let d = 1 + rng.below(28) as u8;
        let t = [
            rng.below(24) as u8,
            rng.below(60) as u8,
            rng.below(60) as u8,
        ];
        let yy = rng.below(100) as u8;
        let got = year_of(yy, m, d, t, now);
        assert_eq!(got.rem_euclid(100), i64::from(yy));
        let limit = (ny + 50, nm, nd, nt);
        assert!((got, m, d, t) <= limit, "{now} {yy} {m} {d} {t:?}: {got}");
        assert!(
            (got + 100, m, d, t) > limit,
            "{now} {yy} {m} {d} {t:?}: {got}"
        );
    }
}

#[test]
fn civil_round_trip_across_eras() {
    // Every day from 0001-01-01 to 9999-12-31 and a little beyond, both ways.
    let first = days_from_civil(1, 1, 1);
    let last = days_from_civil(9999, 12, 31);
    assert_eq!(last, 2_932_896);
    let mut expected_weekday = weekday(first);
    for days in first..=last + 400 {
        let (y, m, d) = civil_from_days(days);
        assert_eq!(days_from_civil(y, m, d), days);
        assert!((1..=days_in_month(y, m)).contains(&d));
        assert_eq!(weekday(days), expected_weekday);
        expected_weekday = (expected_weekday + 1) % 7;
    }
    assert_eq!(civil_from_days(0), (1970, 1, 1));
    assert_eq!(civil_from_days(-1), (1969, 12, 31));
    assert_eq!(weekday(0), 4, "1970-01-01 was a Thursday");
}

#[test]
fn delay_from_extremes_of_now() {
    let d = RetryAfter::At { unix_secs: 0 };
    assert_eq!(d.delay_from(0), secs(0));
    assert_eq!(d.delay_from(u64::MAX), None);
    let d = RetryAfter::At {
        unix_secs: u64::MAX,
    };
    assert_eq!(d.delay_from(u64::MAX), secs(0));
    assert_eq!(d.delay_from(u64::MAX - MAX_DELAY_SECS), Some(MAX_DELAY));
    assert_eq!(d.delay_from(0), Some(MAX_DELAY));
}
