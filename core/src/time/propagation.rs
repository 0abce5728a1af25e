//! Passing a deadline on to the next hop: the time remaining, minus a safety margin, encoded
//! as gRPC's `grpc-timeout` header value or as plain milliseconds — and decoded on receipt.
//! Nothing allocates: an encoded value is a [`TimeoutHeader`], 20 bytes on the stack.
//!
//! A deadline travels with a request so each hop passes on the time *remaining* instead of
//! starting a fresh timeout. The Google SRE book's example (ch. 22): a request with a 30 s
//! deadline spends 7 s in A, so A's call to B carries 23 s; B spends 4 s, so its call to C
//! carries 19 s. The book also says to "reduce the outgoing deadline a bit (e.g., a few hundred
//! milliseconds)" for the time the request spends on the wire: that is the
//! [margin](DeadlinePropagation::with_margin).
//!
//! ```
//! use core::time::Duration;
//! use resilix::time::{DeadlinePropagation, Deadline, Instant, decode_grpc_timeout};
//!
//! let hop = DeadlinePropagation::NO_MARGIN;
//! // Service A: the request arrives with 30 s to go; A works for 7 s.
//! let deadline = Deadline::after(Instant::ZERO, Duration::from_secs(30));
//! let to_b = hop.grpc_timeout(deadline, Instant::from_secs(7));
//! assert_eq!(&*to_b, "23000000u");
//! // Service B, on its own clock: 23 s from when the request arrived; B works for 4 s.
//! let b_arrival = Instant::from_secs(500);
//! let b_deadline = Deadline::after(b_arrival, decode_grpc_timeout(to_b.as_bytes()).unwrap());
//! let to_c = hop.grpc_timeout(b_deadline, b_arrival + Duration::from_secs(4));
//! assert_eq!(&*to_c, "19000000u");
//! ```

use core::fmt;
use core::ops::Deref;
use core::time::Duration;

use super::{Deadline, Instant};

/// How a deadline is passed on: the remaining time minus a safety margin for transit.
///
/// ```
/// use core::time::Duration;
/// use resilix::time::{DeadlinePropagation, Deadline, Instant};
///
/// let hop = DeadlinePropagation::with_margin(Duration::from_millis(200));
/// let d = Deadline::after(Instant::ZERO, Duration::from_secs(30));
/// assert_eq!(hop.outgoing(d, Instant::from_secs(7)), Duration::from_millis(22_800));
/// assert_eq!(&*hop.millis(d, Instant::from_secs(7)), "22800");
/// // Less left than the margin: nothing to pass on, so do not send.
/// assert_eq!(hop.outgoing(d, Instant::from_millis(29_900)), Duration::ZERO);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DeadlinePropagation {
    margin: Duration,
}

impl DeadlinePropagation {
    /// Pass on exactly the time remaining, as gRPC itself does. The default (ours): a margin
    /// suited to one network is wrong for another, and a fixed default margin would silently
    /// eat short deadlines. The SRE book suggests "a few hundred milliseconds" for its setting;
    /// choose yours from the transit time you measure.
    pub const NO_MARGIN: DeadlinePropagation = DeadlinePropagation {
        margin: Duration::ZERO,
    };

    /// Pass on the time remaining minus `margin`. Any margin is valid; one longer than the time
    /// left passes on zero.
    pub const fn with_margin(margin: Duration) -> Self {
        DeadlinePropagation { margin }
    }

    /// The safety margin.
    pub const fn margin(&self) -> Duration {
        self.margin
    }

    /// The time to pass on at `now`: what remains of `deadline`, minus the margin, never below
    /// zero. Zero means the call should not be sent at all.
    pub const fn outgoing(&self, deadline: Deadline, now: Instant) -> Duration {
        deadline.remaining(now).saturating_sub(self.margin)
    }

    /// [`Self::outgoing`] as a `grpc-timeout` header value (see [`encode_grpc_timeout`]).
    pub fn grpc_timeout(&self, deadline: Deadline, now: Instant) -> TimeoutHeader {
        encode_grpc_timeout(self.outgoing(deadline, now))
    }

    /// [`Self::outgoing`] as whole milliseconds in decimal, rounded down (see
    /// [`encode_millis`]).
    pub fn millis(&self, deadline: Deadline, now: Instant) -> TimeoutHeader {
        encode_millis(self.outgoing(deadline, now))
    }
}

/// An encoded timeout: at most 20 ASCII bytes held inline. Derefs to `&str`.
///
/// ```
/// use core::time::Duration;
/// use resilix::time::encode_grpc_timeout;
///
/// let h = encode_grpc_timeout(Duration::from_millis(1_500));
/// assert_eq!(&*h, "1500000u");
/// assert_eq!(h.as_bytes(), b"1500000u");
/// assert_eq!(format!("{h}"), "1500000u");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimeoutHeader {
    bytes: [u8; 20],
    len: u8,
}

impl TimeoutHeader {
    /// The value as ASCII bytes, for a header map that takes bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The value as a string slice.
    pub fn as_str(&self) -> &str {
        // Only ASCII digits and unit letters are ever written, so this never fails.
        core::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    /// `value` in decimal, followed by `unit` (if any).
    const fn decimal(mut value: u64, unit: Option<u8>) -> Self {
        let mut digits = [0u8; 20];
        let mut n = 0;
        loop {
            digits[n] = b'0' + (value % 10) as u8;
            n += 1;
            value /= 10;
            if value == 0 {
                break;
            }
        }
        let mut bytes = [0u8; 20];
        let mut i = 0;
        while i < n {
            bytes[i] = digits[n - 1 - i];
            i += 1;
        }
        if let Some(u) = unit {
            bytes[n] = u;
            n += 1;
        }
        TimeoutHeader {
            bytes,
            len: n as u8,
        }
    }
}

impl Deref for TimeoutHeader {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for TimeoutHeader {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for TimeoutHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for TimeoutHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TimeoutHeader({:?})", self.as_str())
    }
}

/// Why a received timeout value was refused.
///
/// ```
/// use resilix::time::{decode_grpc_timeout, TimeoutHeaderError};
///
/// assert_eq!(decode_grpc_timeout(b"10x"), Err(TimeoutHeaderError::BadUnit));
/// assert!(format!("{}", TimeoutHeaderError::TooManyDigits).contains("8 digits"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum TimeoutHeaderError {
    /// No digits.
    Empty,
    /// More digits than the format allows (8 for `grpc-timeout`; more than fit a `u64` of
    /// milliseconds).
    TooManyDigits,
    /// A byte other than an ASCII digit where a digit belongs (signs, spaces, dots included).
    NotADigit,
    /// The `grpc-timeout` unit is not one of `H M S m u n`.
    BadUnit,
}

impl fmt::Display for TimeoutHeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimeoutHeaderError::Empty => "timeout header has no digits",
            TimeoutHeaderError::TooManyDigits => {
                "timeout header has too many digits (grpc-timeout allows at most 8 digits; \
                 milliseconds must fit in 64 bits)"
            }
            TimeoutHeaderError::NotADigit => "timeout header has a byte that is not an ASCII digit",
            TimeoutHeaderError::BadUnit => {
                "grpc-timeout unit must be one of H (hours), M (minutes), S (seconds), \
                 m (milliseconds), u (microseconds), n (nanoseconds)"
            }
        })
    }
}

impl core::error::Error for TimeoutHeaderError {}

/// The largest `grpc-timeout` value: 8 ASCII digits.
const GRPC_MAX_VALUE: u64 = 99_999_999;

/// `grpc-timeout` units, finest first, with their length in nanoseconds.
const GRPC_UNITS: [(u8, u64); 6] = [
    (b'n', 1),
    (b'u', 1_000),
    (b'm', 1_000_000),
    (b'S', 1_000_000_000),
    (b'M', 60 * 1_000_000_000),
    (b'H', 3_600 * 1_000_000_000),
];

/// Encodes `remaining` as a `grpc-timeout` header value: up to 8 ASCII digits and a unit
/// (`H M S m u n`), per the gRPC over HTTP/2 spec.
///
/// The finest unit whose count fits in 8 digits is chosen, and the count is rounded *down*, so
/// the receiver never gets more time than remains; it loses less than one unit. Zero encodes
/// as `0n` (as grpc-go does; a caller with nothing left should not send at all). Beyond the
/// format's maximum, 99,999,999 hours (11,400 years), the value saturates there.
///
/// ```
/// use core::time::Duration;
/// use resilix::time::encode_grpc_timeout;
///
/// assert_eq!(&*encode_grpc_timeout(Duration::from_nanos(99_999_999)), "99999999n");
/// assert_eq!(&*encode_grpc_timeout(Duration::from_millis(100)), "100000u");
/// assert_eq!(&*encode_grpc_timeout(Duration::from_secs(3_600)), "3600000m");
/// assert_eq!(&*encode_grpc_timeout(Duration::ZERO), "0n");
/// assert_eq!(&*encode_grpc_timeout(Duration::MAX), "99999999H");
/// ```
pub fn encode_grpc_timeout(remaining: Duration) -> TimeoutHeader {
    let nanos = remaining.as_nanos();
    for (unit, len) in GRPC_UNITS {
        let count = nanos / u128::from(len);
        if count <= u128::from(GRPC_MAX_VALUE) {
            return TimeoutHeader::decimal(count as u64, Some(unit));
        }
    }
    TimeoutHeader::decimal(GRPC_MAX_VALUE, Some(b'H'))
}

/// Decodes a `grpc-timeout` header value: 1 to 8 ASCII digits followed by one of `H M S m u
/// n`. Anything else — a sign, a space, a ninth digit, another unit — is refused; surrounding
/// whitespace should already have been trimmed by the HTTP/2 layer.
///
/// ```
/// use core::time::Duration;
/// use resilix::time::{decode_grpc_timeout, Deadline, Instant, TimeoutHeaderError};
///
/// assert_eq!(decode_grpc_timeout(b"250m"), Ok(Duration::from_millis(250)));
/// assert_eq!(decode_grpc_timeout(b"2H"), Ok(Duration::from_secs(7_200)));
/// assert_eq!(decode_grpc_timeout(b"123456789n"), Err(TimeoutHeaderError::TooManyDigits));
/// assert_eq!(decode_grpc_timeout(b"-1S"), Err(TimeoutHeaderError::NotADigit));
/// // On receipt, the deadline is the arrival instant plus the timeout.
/// let now = Instant::from_secs(40);
/// let d = Deadline::after(now, decode_grpc_timeout(b"5S").unwrap());
/// assert_eq!(d.instant(), Instant::from_secs(45));
/// ```
pub fn decode_grpc_timeout(value: &[u8]) -> Result<Duration, TimeoutHeaderError> {
    let Some((&unit, digits)) = value.split_last() else {
        return Err(TimeoutHeaderError::Empty);
    };
    // 99,999,999 hours is 3.6e20 ns, past u64 nanoseconds: scale in the unit's own terms.
    let scale: fn(u64) -> Duration = match unit {
        b'n' => Duration::from_nanos,
        b'u' => Duration::from_micros,
        b'm' => Duration::from_millis,
        b'S' => Duration::from_secs,
        b'M' => |count| Duration::from_secs(count * 60),
        b'H' => |count| Duration::from_secs(count * 3_600),
        _ => return Err(TimeoutHeaderError::BadUnit),
    };
    // At most 8 digits, so the minute and hour products above cannot overflow.
    parse_digits(digits, 8).map(scale)
}

/// Encodes `remaining` as whole milliseconds in decimal, rounded down so the receiver never
/// gets more time than remains (for `x-request-timeout-ms`-style headers and JSON fields).
///
/// ```
/// use core::time::Duration;
/// use resilix::time::encode_millis;
///
/// assert_eq!(&*encode_millis(Duration::from_micros(1_999)), "1");
/// assert_eq!(&*encode_millis(Duration::ZERO), "0");
/// assert_eq!(&*encode_millis(Duration::MAX), "18446744073709551615");
/// ```
pub fn encode_millis(remaining: Duration) -> TimeoutHeader {
    let millis = remaining.as_millis();
    let millis = if millis > u128::from(u64::MAX) {
        u64::MAX
    } else {
        millis as u64
    };
    TimeoutHeader::decimal(millis, None)
}

/// Decodes whole milliseconds in decimal: 1 to 20 ASCII digits whose value fits in a `u64`.
///
/// ```
/// use core::time::Duration;
/// use resilix::time::{decode_millis, TimeoutHeaderError};
///
/// assert_eq!(decode_millis(b"1500"), Ok(Duration::from_millis(1_500)));
/// assert_eq!(decode_millis(b""), Err(TimeoutHeaderError::Empty));
/// assert_eq!(decode_millis(b"1.5"), Err(TimeoutHeaderError::NotADigit));
/// assert_eq!(decode_millis(b"18446744073709551616"), Err(TimeoutHeaderError::TooManyDigits));
/// ```
pub fn decode_millis(value: &[u8]) -> Result<Duration, TimeoutHeaderError> {
    parse_digits(value, 20).map(Duration::from_millis)
}

/// 1..=`max_digits` ASCII digits as a `u64`; a value past `u64::MAX` counts as too many digits.
fn parse_digits(digits: &[u8], max_digits: usize) -> Result<u64, TimeoutHeaderError> {
    if digits.is_empty() {
        return Err(TimeoutHeaderError::Empty);
    }
    if !digits.iter().all(u8::is_ascii_digit) {
        return Err(TimeoutHeaderError::NotADigit);
    }
    if digits.len() > max_digits {
        return Err(TimeoutHeaderError::TooManyDigits);
    }
    digits.iter().try_fold(0u64, |acc, &b| {
        acc.checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or(TimeoutHeaderError::TooManyDigits)
    })
}

#[cfg(all(test, not(loom)))]
mod tests;
