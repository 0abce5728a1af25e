//! HTTP classification and Retry-After parsing: civil-date arithmetic in 64-bit integers on
//! 32-bit cores.

use resilix::classify::http::classify_status;
use resilix::classify::retry_after::{RetryAfter, parse_delay};
use resilix::{Verdict, VerdictKind};

use super::{ensure, nanos};
use crate::Trace;
use crate::codes::verdict_code;

pub(crate) fn http(t: &mut Trace) -> Result<(), &'static str> {
    let wait = Some(core::time::Duration::from_secs(2));
    for status in [
        0u16, 100, 200, 204, 304, 400, 404, 408, 413, 421, 425, 429, 499, 500, 501, 502, 503, 504,
        505, 511, 599, 600, 999,
    ] {
        let v = classify_status(status, wait);
        t.push(verdict_code(&v));
    }
    ensure(
        classify_status(404, None) == Verdict::Answered,
        "a 404 is not an answer",
    )?;
    ensure(
        classify_status(503, wait).retry_after() == wait,
        "503 lost its Retry-After",
    )?;
    ensure(
        classify_status(500, wait).kind() == VerdictKind::Uncertain,
        "500 is not uncertain",
    )?;
    ensure(
        classify_status(408, None).kind() == VerdictKind::Transient,
        "408 is not transient",
    )?;
    Ok(())
}

pub(crate) fn retry_after(t: &mut Trace) -> Result<(), &'static str> {
    let now: u64 = 1_700_000_000; // November 2023
    let imf = RetryAfter::parse(b"Sun, 06 Nov 1994 08:49:37 GMT", now);
    ensure(
        imf == Some(RetryAfter::At {
            unix_secs: 784_111_777,
        }),
        "IMF-fixdate misparsed",
    )?;
    ensure(
        RetryAfter::parse(b"Sunday, 06-Nov-94 08:49:37 GMT", now) == imf,
        "RFC 850 date misparsed",
    )?;
    ensure(
        RetryAfter::parse(b"Sun Nov  6 08:49:37 1994", now) == imf,
        "asctime date misparsed",
    )?;
    ensure(
        RetryAfter::parse(b"Mon, 06 Nov 1994 08:49:37 GMT", now).is_none(),
        "wrong weekday accepted",
    )?;
    let cases: [&[u8]; 12] = [
        b"120",
        b"0",
        b" 7 ",
        b"-1",
        b"1.5",
        b"99999999999999999999",
        b"Tue, 14 Nov 2023 22:13:40 GMT",
        b"Tue, 14 Nov 2023 22:13:20 GMT",
        b"Wed, 29 Feb 2040 00:00:00 GMT",
        b"Tuesday, 14-Nov-23 22:14:20 GMT",
        b"Tue Nov 14 22:15:00 2023",
        b"",
    ];
    for value in cases {
        t.push_opt(parse_delay(value, now).map(nanos));
        t.push_opt(match RetryAfter::parse(value, now) {
            Some(RetryAfter::At { unix_secs }) => Some(unix_secs),
            Some(RetryAfter::Delay(d)) => Some(nanos(d) | 1 << 63),
            None => None,
        });
    }
    Ok(())
}
