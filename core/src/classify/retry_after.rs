//! The `Retry-After` header (RFC 9110 §10.2.3), parsed without allocation and without panics.
//!
//! An overloaded upstream (429, 503) may say how long to wait, either as a number of seconds
//! (`Retry-After: 120`) or as an HTTP-date (`Retry-After: Fri, 31 Dec 1999 23:59:59 GMT`).
//! [`parse_delay`] turns either into a [`Duration`] from now, ready for
//! [`Verdict::Overload`](crate::Verdict::Overload); [`RetryAfter::parse`] keeps the two forms
//! apart for callers that want the absolute date.
//!
//! The core's [`Instant`](crate::time::Instant) has an arbitrary origin, so an HTTP-date can only
//! be turned into a delay with the caller's wall clock: every function takes `now_unix_secs`,
//! the seconds since 1970-01-01T00:00:00Z (e.g. `SystemTime::now().duration_since(UNIX_EPOCH)`).
//!
//! ```
//! use core::time::Duration;
//! use resilix::classify::retry_after::parse_delay;
//!
//! let now = 784_111_777; // Sun, 06 Nov 1994 08:49:37 GMT
//! assert_eq!(parse_delay(b"120", now), Some(Duration::from_secs(120)));
//! assert_eq!(parse_delay(b"Sun, 06 Nov 1994 08:51:37 GMT", now), Some(Duration::from_secs(120)));
//! assert_eq!(parse_delay(b"soon", now), None); // malformed: no delay, never a panic
//! ```
//!
//! # What is accepted, and what yields nothing
//!
//! * `delay-seconds = 1*DIGIT`: any number of ASCII digits (leading zeros allowed). No sign,
//!   no fraction, no unit: `-1`, `+5`, `1.5` and `5s` yield nothing.
//! * `HTTP-date` in all three formats RFC 9110 §5.6.7 says a recipient MUST accept:
//!   IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, the obsolete RFC 850 form
//!   `Sunday, 06-Nov-94 08:49:37 GMT`, and asctime `Sun Nov  6 08:49:37 1994`.
//!   Names are case-sensitive, as the grammar's `%s"..."` says: `nov` or `gmt` yield nothing.
//! * Optional whitespace (spaces and tabs) around the value is ignored; inside a date, the
//!   separators must be exactly as the grammar writes them.
//! * Calendar dates are validated: no 30 February, no 29 February outside a leap year, no hour
//!   24.
//! * A leap second, `23:59:60`, is accepted where one can occur: RFC 9110's `time-of-day`
//!   allows it ("00:00:00 - 23:59:60 (leap second)", as RFC 5322 §3.3 does), and ITU-R TF.460-6
//!   puts a leap second only at the end of a UTC month, so `23:59:60` on any other day yields
//!   nothing. It counts as the next day's `00:00:00`: Unix time has no leap seconds, and the
//!   wait is then never shorter than the one asked for. The one exception is
//!   `31 Dec 9999 23:59:60`, whose next second no HTTP-date can write: it reads as
//!   `23:59:59`, so no date ever becomes an instant in year 10000. (The `httpdate` crate refuses
//!   every leap second; a refused date would make the client come back sooner.)
//! * The day name must be the right one for the date. It is redundant on purpose; when it
//!   disagrees with the date, the date was computed or copied wrongly and we cannot tell which
//!   part to trust, so the header is ignored and the caller's own backoff applies. (This is
//!   stricter than RFC 9110's advice to be robust; a wrong Retry-After is worse than none.)
//! * An RFC 850 two-digit year is read as RFC 9110 §5.6.7 requires: a timestamp that "appears
//!   to be more than 50 years in the future" is taken from the most recent past year with the
//!   same two digits. "More than 50 years" compares the whole date and time against `now` plus
//!   50 calendar years, to the second (not whole years): with now = 2022-09-06, `23-Sep-72` is
//!   1972 and `01-Sep-72` is 2072. That needs `now`, which is why [`RetryAfter::parse`] takes
//!   it.
//! * Dates before 1970 yield nothing (they are in the past for every `now`).
//! * A delay longer than [`MAX_DELAY`] *saturates* at [`MAX_DELAY`]: a longer requested wait
//!   must never make the client come back sooner than a shorter one would. An HTTP-date in the
//!   past yields nothing. See each for why.
//!
//! Design notes: docs/design/classify.md

use core::time::Duration;

/// The longest `Retry-After` the parser reports: 365 days (ours). Longer ones saturate here.
///
/// A representation bound, not a policy: the policy is the retry's
/// [`max_retry_after`](crate::retry::RetryConfig::max_retry_after) (5 minutes by default),
/// beyond which the call gives up with
/// [`RetryAfterTooLong`](crate::retry::GiveUpReason::RetryAfterTooLong), and the call's
/// deadline. A longer value — most often a server sending a Unix timestamp (≈ 1.7 × 10⁹ s,
/// 54 years) as delay-seconds, or a number that overflows `u64` — still means "not for a very
/// long time", so it reads as this rather than as no Retry-After at all: reading it as none
/// would hand the call to its own backoff, and a longer requested wait would bring the client
/// back sooner (within milliseconds) than a shorter one. It also keeps `now + delay` far from
/// the end of the core's `u64`-nanosecond timeline (584 years).
///
/// ```
/// use resilix::classify::retry_after::{parse_delay, MAX_DELAY};
/// assert_eq!(parse_delay(b"31536000", 0), Some(MAX_DELAY));
/// assert_eq!(parse_delay(b"31536001", 0), Some(MAX_DELAY)); // saturates
/// assert_eq!(parse_delay(b"99999999999999999999999", 0), Some(MAX_DELAY));
/// ```
pub const MAX_DELAY: Duration = Duration::from_secs(MAX_DELAY_SECS);

const MAX_DELAY_SECS: u64 = 365 * 24 * 60 * 60;

/// A parsed `Retry-After` value: a relative delay, or an absolute date.
///
/// ```
/// use core::time::Duration;
/// use resilix::classify::retry_after::RetryAfter;
///
/// let now = 1_700_000_000;
/// let ra = RetryAfter::parse(b" 30 ", now).unwrap();
/// assert_eq!(ra, RetryAfter::Delay(Duration::from_secs(30)));
///
/// let ra = RetryAfter::parse(b"Thu, 01 Jan 1970 00:00:00 GMT", now).unwrap();
/// assert_eq!(ra, RetryAfter::At { unix_secs: 0 });
/// assert_eq!(ra.delay_from(now), None); // long past
/// assert_eq!(ra.delay_from(0), Some(Duration::ZERO));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RetryAfter {
    /// `delay-seconds`: wait this long from when the response arrived. Never above
    /// [`MAX_DELAY`] (a longer one saturates there).
    Delay(Duration),
    /// `HTTP-date`: wait until this wall-clock time.
    At {
        /// Seconds since 1970-01-01T00:00:00Z.
        unix_secs: u64,
    },
}

impl RetryAfter {
    /// Parses a `Retry-After` field value; `None` if it is not one we can use (see the
    /// [module docs](self) for exactly what is accepted).
    ///
    /// `now_unix_secs` is only read to place an RFC 850 two-digit year in its century. A date
    /// in the past is returned as it is; [`delay_from`](Self::delay_from) refuses it.
    ///
    /// ```
    /// use resilix::classify::retry_after::RetryAfter;
    ///
    /// let now = 1_700_000_000; // November 2023
    /// let imf = RetryAfter::parse(b"Sun, 06 Nov 1994 08:49:37 GMT", now);
    /// let rfc850 = RetryAfter::parse(b"Sunday, 06-Nov-94 08:49:37 GMT", now);
    /// let asctime = RetryAfter::parse(b"Sun Nov  6 08:49:37 1994", now);
    /// assert_eq!(imf, Some(RetryAfter::At { unix_secs: 784_111_777 }));
    /// assert_eq!(rfc850, imf);
    /// assert_eq!(asctime, imf);
    /// assert_eq!(RetryAfter::parse(b"Mon, 06 Nov 1994 08:49:37 GMT", now), None); // a Sunday
    /// ```
    pub fn parse(value: &[u8], now_unix_secs: u64) -> Option<RetryAfter> {
        let value = trim_ows(value);
        if value.is_empty() {
            return None;
        }
        if value.iter().all(u8::is_ascii_digit) {
            return parse_delay_seconds(value).map(RetryAfter::Delay);
        }
        let unix_secs = match value.get(3) {
            Some(b',') => parse_imf_fixdate(value)?,
            Some(b' ') => parse_asctime(value)?,
            _ => parse_rfc850(value, now_unix_secs)?,
        };
        Some(RetryAfter::At { unix_secs })
    }

    /// How long to wait from `now_unix_secs`, saturating at [`MAX_DELAY`]; `None` if the date
    /// is already past.
    ///
    /// A past date yields nothing rather than zero: it most often means the two clocks
    /// disagree, and "retry at once" is the worst guess under overload, so the caller's own
    /// jittered backoff applies instead. A date equal to `now` is a zero delay.
    ///
    /// ```
    /// use core::time::Duration;
    /// use resilix::classify::retry_after::RetryAfter;
    ///
    /// let at = RetryAfter::At { unix_secs: 1_000 };
    /// assert_eq!(at.delay_from(990), Some(Duration::from_secs(10)));
    /// assert_eq!(at.delay_from(1_000), Some(Duration::ZERO));
    /// assert_eq!(at.delay_from(1_001), None);
    /// // Far ahead saturates: never sooner than a nearer date.
    /// let far = RetryAfter::At { unix_secs: u64::MAX };
    /// assert_eq!(far.delay_from(0), Some(resilix::classify::retry_after::MAX_DELAY));
    /// // A delay is already relative; `now` does not change it.
    /// let d = RetryAfter::Delay(Duration::from_secs(5));
    /// assert_eq!(d.delay_from(u64::MAX), Some(Duration::from_secs(5)));
    /// ```
    pub const fn delay_from(self, now_unix_secs: u64) -> Option<Duration> {
        match self {
            RetryAfter::Delay(d) => Some(d),
            RetryAfter::At { unix_secs } => match unix_secs.checked_sub(now_unix_secs) {
                Some(secs) if secs <= MAX_DELAY_SECS => Some(Duration::from_secs(secs)),
                Some(_) => Some(MAX_DELAY),
                None => None,
            },
        }
    }
}

/// Parses a `Retry-After` value into the delay from `now_unix_secs`: the one call most callers
/// need. `None` for anything malformed, negative or in the past; a wait beyond [`MAX_DELAY`]
/// saturates at it.
///
/// ```
/// use core::time::Duration;
/// use resilix::classify::retry_after::parse_delay;
/// use resilix::Verdict;
///
/// let now = 784_111_777; // Sun, 06 Nov 1994 08:49:37 GMT
/// let header = b"Sun, 06 Nov 1994 08:50:07 GMT";
/// let verdict = Verdict::Overload { retry_after: parse_delay(header, now) };
/// assert_eq!(verdict.retry_after(), Some(Duration::from_secs(30)));
/// assert_eq!(parse_delay(b"-1", now), None);
/// assert_eq!(parse_delay(b"99999999999999999999", now), Some(resilix::classify::retry_after::MAX_DELAY));
/// ```
pub fn parse_delay(value: &[u8], now_unix_secs: u64) -> Option<Duration> {
    RetryAfter::parse(value, now_unix_secs)?.delay_from(now_unix_secs)
}

/// Strips optional whitespace (RFC 9110 §5.6.3: spaces and horizontal tabs).
fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// `1*DIGIT`, already known to be digits only, saturating at [`MAX_DELAY`]. Leading zeros do
/// not count: the value stays below the cap while they are read, so it never overflows.
fn parse_delay_seconds(digits: &[u8]) -> Option<Duration> {
    let mut secs: u64 = 0;
    for &d in digits {
        secs = secs * 10 + u64::from(d - b'0');
        if secs > MAX_DELAY_SECS {
            return Some(MAX_DELAY);
        }
    }
    Some(Duration::from_secs(secs))
}

/// `Fri, 31 Dec 9999 23:59:59 GMT`, the last second an HTTP-date can write.
const LAST_HTTP_DATE: i64 = 253_402_300_799;

const DAY_NAMES: [&[u8]; 7] = [b"Sun", b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat"];
const DAY_NAMES_LONG: [&[u8]; 7] = [
    b"Sunday",
    b"Monday",
    b"Tuesday",
    b"Wednesday",
    b"Thursday",
    b"Friday",
    b"Saturday",
];
const MONTHS: [&[u8]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// A date as written, before it is checked against the calendar.
struct Fields {
    weekday: u8,
    year: i64,
    month: u8,
    day: u8,
    time: [u8; 3],
}

/// `IMF-fixdate = day-name "," SP date1 SP time-of-day SP GMT`, e.g.
/// `Sun, 06 Nov 1994 08:49:37 GMT` (always 29 bytes).
fn parse_imf_fixdate(v: &[u8]) -> Option<u64> {
    let [
        w0,
        w1,
        w2,
        b',',
        b' ',
        d0,
        d1,
        b' ',
        m0,
        m1,
        m2,
        b' ',
        y0,
        y1,
        y2,
        y3,
        b' ',
        t @ ..,
    ] = v
    else {
        return None;
    };
    let [h0, h1, b':', n0, n1, b':', s0, s1, b' ', b'G', b'M', b'T'] = t else {
        return None;
    };
    to_unix(Fields {
        weekday: index_of(&DAY_NAMES, &[*w0, *w1, *w2])?,
        year: i64::from(four_digits([*y0, *y1, *y2, *y3])?),
        month: index_of(&MONTHS, &[*m0, *m1, *m2])? + 1,
        day: two_digits(*d0, *d1)?,
        time: [
            two_digits(*h0, *h1)?,
            two_digits(*n0, *n1)?,
            two_digits(*s0, *s1)?,
        ],
    })
}

/// `asctime-date = day-name SP month SP ( 2DIGIT / ( SP DIGIT ) ) SP time-of-day SP year`,
/// e.g. `Sun Nov  6 08:49:37 1994` (always 24 bytes).
fn parse_asctime(v: &[u8]) -> Option<u64> {
    let [
        w0,
        w1,
        w2,
        b' ',
        m0,
        m1,
        m2,
        b' ',
        d0,
        d1,
        b' ',
        h0,
        h1,
        b':',
        n0,
        n1,
        b':',
        s0,
        s1,
        b' ',
        y0,
        y1,
        y2,
        y3,
    ] = v
    else {
        return None;
    };
    let day = match (*d0, *d1) {
        (b' ', d) => digit(d)?,
        (d0, d1) => two_digits(d0, d1)?,
    };
    to_unix(Fields {
        weekday: index_of(&DAY_NAMES, &[*w0, *w1, *w2])?,
        year: i64::from(four_digits([*y0, *y1, *y2, *y3])?),
        month: index_of(&MONTHS, &[*m0, *m1, *m2])? + 1,
        day,
        time: [
            two_digits(*h0, *h1)?,
            two_digits(*n0, *n1)?,
            two_digits(*s0, *s1)?,
        ],
    })
}

/// `rfc850-date = day-name-l "," SP day "-" month "-" 2DIGIT SP time-of-day SP GMT`,
/// e.g. `Sunday, 06-Nov-94 08:49:37 GMT`.
fn parse_rfc850(v: &[u8], now_unix_secs: u64) -> Option<u64> {
    let comma = v.iter().position(|&b| b == b',')?;
    let (name, rest) = v.split_at(comma);
    let [
        b',',
        b' ',
        d0,
        d1,
        b'-',
        m0,
        m1,
        m2,
        b'-',
        y0,
        y1,
        b' ',
        h0,
        h1,
        b':',
        n0,
        n1,
        b':',
        s0,
        s1,
        b' ',
        b'G',
        b'M',
        b'T',
    ] = rest
    else {
        return None;
    };
    let mut fields = Fields {
        weekday: index_of(&DAY_NAMES_LONG, name)?,
        year: i64::from(two_digits(*y0, *y1)?),
        month: index_of(&MONTHS, &[*m0, *m1, *m2])? + 1,
        day: two_digits(*d0, *d1)?,
        time: [
            two_digits(*h0, *h1)?,
            two_digits(*n0, *n1)?,
            two_digits(*s0, *s1)?,
        ],
    };
    fields.year = rfc850_year(&fields, now_unix_secs);
    to_unix(fields)
}

/// RFC 9110 §5.6.7: a timestamp with a two-digit year that "appears to be more than 50 years
/// in the future" is in "the most recent year in the past that had the same last two digits".
///
/// `f.year` holds the two digits. The candidate is the first year ending in them that is not
/// before now's year; it is moved back a century when the whole timestamp (month, day, hour,
/// minute, second) lies after now plus 50 calendar years, compared field by field. Comparing
/// the fields rather than second counts keeps the rule exact across leap days (now plus 50
/// years of a 29 February is a date that may not exist, but it still sorts correctly) and
/// needs no validation first: a date that does not exist is refused afterwards, whatever its
/// century.
fn rfc850_year(f: &Fields, now_unix_secs: u64) -> i64 {
    // `now / 86400` fits an i64 for every u64, and so does its year.
    let days = (now_unix_secs / 86_400) as i64;
    let (now_year, now_month, now_day) = civil_from_days(days);
    let rest = now_unix_secs % 86_400;
    let now_time = [
        (rest / 3_600) as u8,
        (rest / 60 % 60) as u8,
        (rest % 60) as u8,
    ];
    let year = now_year + (f.year - now_year).rem_euclid(100);
    let limit = (now_year + 50, now_month, now_day, now_time);
    if (year, f.month, f.day, f.time) > limit {
        year - 100
    } else {
        year
    }
}

/// Checks the calendar and the day name, then counts seconds since the Unix epoch.
fn to_unix(f: Fields) -> Option<u64> {
    let [hour, minute, second] = f.time;
    // ITU-R TF.460-6: a leap second is the last second of a UTC month.
    let leap_second =
        second == 60 && hour == 23 && minute == 59 && f.day == days_in_month(f.year, f.month);
    let valid = (1..=9999).contains(&f.year)
        && (1..=days_in_month(f.year, f.month)).contains(&f.day)
        && hour < 24
        && minute < 60
        && (second < 60 || leap_second);
    if !valid {
        return None;
    }
    let days = days_from_civil(f.year, f.month, f.day);
    if weekday(days) != f.weekday {
        return None;
    }
    let secs = days * 86_400 + i64::from(hour) * 3_600 + i64::from(minute) * 60 + i64::from(second);
    // 9999-12-31T23:59:60 would be year 10000's first second, which no HTTP-date can write:
    // it stays the last second the grammar can (see the module docs).
    let secs = if secs > LAST_HTTP_DATE {
        LAST_HTTP_DATE
    } else {
        secs
    };
    u64::try_from(secs).ok()
}

fn index_of(names: &[&[u8]], name: &[u8]) -> Option<u8> {
    names.iter().position(|n| *n == name).map(|i| i as u8)
}

fn digit(b: u8) -> Option<u8> {
    if b.is_ascii_digit() {
        Some(b - b'0')
    } else {
        None
    }
}

fn two_digits(a: u8, b: u8) -> Option<u8> {
    Some(digit(a)? * 10 + digit(b)?)
}

fn four_digits([a, b, c, d]: [u8; 4]) -> Option<u16> {
    Some(u16::from(two_digits(a, b)?) * 100 + u16::from(two_digits(c, d)?))
}

const fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

const fn days_in_month(year: i64, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant, "chrono-Compatible
/// Low-Level Date Algorithms"). Integer-only; called here only for years 1..=9999.
const fn days_from_civil(year: i64, month: u8, day: u8) -> i64 {
    let (m, d) = (month as i64, day as i64);
    // Years start in March, so the leap day is the last day of the year.
    let y = if m <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400; // [0, 399]
    let mp = (m + 9) % 12; // March = 0
    let doy = (153 * mp + 2) / 5 + d - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`]: (year, month, day) of a day count since 1970-01-01.
const fn civil_from_days(days: i64) -> (i64, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097; // [0, 146096]
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8; // [1, 31]
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8; // [1, 12]
    let year = yoe + era * 400 + if month <= 2 { 1 } else { 0 };
    (year, month, day)
}

/// 0 = Sunday. 1970-01-01 was a Thursday.
const fn weekday(days: i64) -> u8 {
    (days + 4).rem_euclid(7) as u8
}

#[cfg(all(test, not(loom)))]
mod tests;
