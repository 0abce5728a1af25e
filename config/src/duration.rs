//! Durations as people write them: `"250ms"`, `"5s"`, `"1h30m"`, `"1.5s"`.
//!
//! The grammar is Go's `time.ParseDuration` without the sign: one or more `<number><unit>`
//! pairs, the number a decimal with an optional fraction, the unit one of `ns`, `us` (or `µs`),
//! `ms`, `s`, `m`, `h`; `"0"` alone is zero. The value is computed in integer nanoseconds, so
//! `"0.1s"` is exactly 100 ms. Refused rather than rounded: a fraction finer than a
//! nanosecond (`"1.5ns"`), a total beyond `u64::MAX` nanoseconds (584 years, the core's
//! saturating horizon), a missing unit (`"250"`: seconds or milliseconds?), and anything else.
//!
//! [`format()`] writes the shortest form this parser reads back to the same nanosecond, in Go's
//! style: `"1h30m"`, `"1.5s"`, `"250ms"`, `"0s"`.
//!
//! ```
//! use core::time::Duration;
//! use resilix_config::duration::{format, parse};
//!
//! assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5_400)));
//! assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1_500)));
//! assert_eq!(format(Duration::from_millis(1_500)), "1.5s");
//! assert!(parse("250").is_err(), "a number without a unit is ambiguous");
//! ```

use core::fmt;
use core::time::Duration;

/// Why a duration string was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DurationError {
    /// The string is empty.
    Empty,
    /// A number with no unit after it (`"250"`).
    MissingUnit,
    /// A unit that is not one of `ns`, `us`, `µs`, `ms`, `s`, `m`, `h`.
    UnknownUnit,
    /// Something other than a number where a number belongs (`"ms"`, `"1..5s"`, `"-1s"`).
    NotANumber,
    /// A fraction finer than one nanosecond (`"1.5ns"`, `"0.0000000001s"`).
    FinerThanNanosecond,
    /// More than `u64::MAX` nanoseconds (about 584 years).
    TooLong,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DurationError::Empty => "a duration is empty: write e.g. \"250ms\", \"5s\" or \"1h30m\"",
            DurationError::MissingUnit => {
                "a duration needs a unit after its number (ns, us, ms, s, m, h): e.g. \"250ms\""
            }
            DurationError::UnknownUnit => {
                "unknown duration unit: use ns, us (or µs), ms, s, m or h"
            }
            DurationError::NotANumber => {
                "a duration is a decimal number and a unit, repeated: e.g. \"1h30m\" or \"1.5s\" (no sign)"
            }
            DurationError::FinerThanNanosecond => {
                "a duration must be a whole number of nanoseconds"
            }
            DurationError::TooLong => "a duration must be at most u64::MAX nanoseconds (584 years)",
        })
    }
}

impl core::error::Error for DurationError {}

const UNITS: [(&str, u64); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    // U+03BC, the Greek letter Go also accepts beside U+00B5, the micro sign.
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Parses a duration; see the [module docs](self) for the grammar.
///
/// ```
/// use core::time::Duration;
/// use resilix_config::duration::{parse, DurationError};
///
/// assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
/// assert_eq!(parse("2h45m0.5s"), Ok(Duration::from_millis(9_900_500)));
/// assert_eq!(parse("1.5ns"), Err(DurationError::FinerThanNanosecond));
/// ```
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    if text.is_empty() {
        return Err(DurationError::Empty);
    }
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = text;
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        if number.is_empty() {
            return Err(DurationError::NotANumber);
        }
        let unit_end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_end);
        if unit.is_empty() {
            return Err(DurationError::MissingUnit);
        }
        let scale = UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|&(_, nanos)| nanos)
            .ok_or(DurationError::UnknownUnit)?;
        total = total
            .checked_add(component(number, scale)?)
            .ok_or(DurationError::TooLong)?;
        if total > u64::MAX as u128 {
            return Err(DurationError::TooLong);
        }
        rest = next;
    }
    Ok(Duration::from_nanos(total as u64))
}

/// `number` (digits, an optional point and digits) times `scale` nanoseconds, exactly.
fn component(number: &str, scale: u64) -> Result<u128, DurationError> {
    let (whole, fraction) = match number.split_once('.') {
        Some((w, f)) => (w, f),
        None => (number, ""),
    };
    if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
        return Err(DurationError::NotANumber);
    }
    let mut value: u128 = 0;
    for digit in whole.bytes() {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add((digit - b'0') as u128))
            .filter(|v| *v <= u64::MAX as u128)
            .ok_or(DurationError::TooLong)?;
    }
    let mut nanos = value * scale as u128;
    // The fraction's digits beyond the first 20 can only be zeros in a whole number of
    // nanoseconds (scale < 10^13); those are dropped before the arithmetic, never rounded.
    let significant = fraction.trim_end_matches('0');
    if significant.len() > 19 {
        return Err(DurationError::FinerThanNanosecond);
    }
    if !significant.is_empty() {
        let digits: u128 = significant.parse().map_err(|_| DurationError::NotANumber)?;
        let denominator = 10u128.pow(significant.len() as u32);
        let scaled = digits * scale as u128;
        if !scaled.is_multiple_of(denominator) {
            return Err(DurationError::FinerThanNanosecond);
        }
        nanos += scaled / denominator;
    }
    Ok(nanos)
}

/// Writes `duration` as the parser reads it back to the same nanosecond: `"1h30m"`,
/// `"1.5s"`, `"250ms"`, `"12.345us"`, `"0s"`. Durations beyond `u64::MAX` nanoseconds are
/// written as that maximum (the core saturates there too).
///
/// ```
/// use core::time::Duration;
/// use resilix_config::duration::format;
///
/// assert_eq!(format(Duration::from_secs(5_400)), "1h30m");
/// assert_eq!(format(Duration::from_micros(1_500)), "1.5ms");
/// assert_eq!(format(Duration::ZERO), "0s");
/// ```
pub fn format(duration: Duration) -> String {
    let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    if nanos == 0 {
        return "0s".into();
    }
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return decimal(nanos, 1_000, "us");
    }
    if nanos < 1_000_000_000 {
        return decimal(nanos, 1_000_000, "ms");
    }
    let mut out = String::new();
    let hours = nanos / 3_600_000_000_000;
    let minutes = nanos / 60_000_000_000 % 60;
    let below_minute = nanos % 60_000_000_000;
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    if below_minute > 0 {
        out.push_str(&decimal(below_minute, 1_000_000_000, "s"));
    }
    out
}

/// `nanos / unit` with its exact decimal fraction, trailing zeros dropped.
fn decimal(nanos: u64, unit: u64, suffix: &str) -> String {
    let whole = nanos / unit;
    let fraction = nanos % unit;
    if fraction == 0 {
        return format!("{whole}{suffix}");
    }
    let width = unit.ilog10() as usize;
    let digits = format!("{fraction:0width$}");
    format!("{whole}.{}{suffix}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_the_docs_promise() {
        let ok = [
            ("250ms", Duration::from_millis(250)),
            ("5s", Duration::from_secs(5)),
            ("1h30m", Duration::from_secs(5_400)),
            ("1.5s", Duration::from_millis(1_500)),
            ("0", Duration::ZERO),
            ("0s", Duration::ZERO),
            ("1ns", Duration::from_nanos(1)),
            ("1us", Duration::from_micros(1)),
            ("1µs", Duration::from_micros(1)),
            ("1μs", Duration::from_micros(1)),
            (".5s", Duration::from_millis(500)),
            ("5.s", Duration::from_secs(5)),
            ("0.1s", Duration::from_millis(100)),
            ("1.000000001s", Duration::from_nanos(1_000_000_001)),
            ("1.50000000000000000000000s", Duration::from_millis(1_500)),
            ("1m1m", Duration::from_secs(120)),
            ("18446744073709551615ns", Duration::from_nanos(u64::MAX)),
            ("5124095h34m33.709551615s", Duration::from_nanos(u64::MAX)),
        ];
        for (text, expected) in ok {
            assert_eq!(parse(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn every_refusal_has_its_reason() {
        let bad = [
            ("", DurationError::Empty),
            ("250", DurationError::MissingUnit),
            ("1h30", DurationError::MissingUnit),
            ("5sec", DurationError::UnknownUnit),
            ("5 s", DurationError::UnknownUnit),
            ("5S", DurationError::UnknownUnit),
            ("ms", DurationError::NotANumber),
            ("-1s", DurationError::NotANumber),
            ("1..5s", DurationError::NotANumber),
            (".s", DurationError::NotANumber),
            ("1.5ns", DurationError::FinerThanNanosecond),
            ("0.0000000001s", DurationError::FinerThanNanosecond),
            ("18446744073709551616ns", DurationError::TooLong),
            ("5124095h34m33.709551616s", DurationError::TooLong),
            ("99999999999999999999999h", DurationError::TooLong),
        ];
        for (text, error) in bad {
            assert_eq!(parse(text), Err(error), "{text}");
        }
    }

    #[test]
    fn format_is_gos_style() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(999), "999ns"),
            (Duration::from_nanos(12_345), "12.345us"),
            (Duration::from_micros(1_500), "1.5ms"),
            (Duration::from_millis(250), "250ms"),
            (Duration::from_millis(1_500), "1.5s"),
            (Duration::from_secs(60), "1m"),
            (Duration::from_secs(5_400), "1h30m"),
            (Duration::from_secs(3_601), "1h1s"),
            (Duration::from_nanos(3_600_000_000_001), "1h0.000000001s"),
        ];
        for (duration, text) in cases {
            assert_eq!(format(duration), text);
            assert_eq!(parse(text), Ok(duration), "{text} reads back");
        }
        assert_eq!(
            format(Duration::MAX),
            format(Duration::from_nanos(u64::MAX))
        );
    }

    #[test]
    fn every_error_has_its_own_text() {
        let all = [
            DurationError::Empty,
            DurationError::MissingUnit,
            DurationError::UnknownUnit,
            DurationError::NotANumber,
            DurationError::FinerThanNanosecond,
            DurationError::TooLong,
        ];
        let texts: std::collections::BTreeSet<String> = all.iter().map(|e| e.to_string()).collect();
        assert_eq!(texts.len(), all.len());
    }
}
