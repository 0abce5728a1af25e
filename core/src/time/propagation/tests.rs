use super::*;

#[test]
fn finest_unit_that_fits_is_chosen_at_each_boundary() {
    let cases: [(Duration, &str); 10] = [
        (Duration::from_nanos(1), "1n"),
        (Duration::from_nanos(99_999_999), "99999999n"),
        (Duration::from_nanos(100_000_000), "100000u"),
        (Duration::from_nanos(100_000_999), "100000u"),
        (Duration::from_micros(99_999_999), "99999999u"),
        (Duration::from_micros(100_000_000), "100000m"),
        (Duration::from_millis(99_999_999), "99999999m"),
        (Duration::from_secs(99_999_999), "99999999S"),
        (Duration::from_secs(100_000_000), "1666666M"),
        (Duration::from_secs(60 * 99_999_999 + 60), "1666666H"),
    ];
    for (d, want) in cases {
        assert_eq!(&*encode_grpc_timeout(d), want, "{d:?}");
    }
}

#[test]
fn decode_refuses_malformed_values() {
    use TimeoutHeaderError::*;
    let cases: [(&[u8], TimeoutHeaderError); 10] = [
        (b"", Empty),
        (b"S", Empty),
        (b"5", BadUnit),
        (b"12", BadUnit),
        (b"5s", BadUnit),
        (b"5 S", NotADigit),
        (b" 5S", NotADigit),
        (b"+5S", NotADigit),
        (b"123456789S", TooManyDigits),
        (b"5\xffS", NotADigit),
    ];
    for (v, want) in cases {
        assert_eq!(decode_grpc_timeout(v), Err(want), "{v:?}");
    }
    assert_eq!(
        decode_grpc_timeout(b"00000001S"),
        Ok(Duration::from_secs(1))
    );
    assert_eq!(
        decode_grpc_timeout(b"99999999H"),
        Ok(Duration::from_secs(99_999_999 * 3_600))
    );
    assert_eq!(decode_grpc_timeout(b"0n"), Ok(Duration::ZERO));
}

#[test]
fn every_unit_decodes_to_its_own_scale() {
    let cases: [(&[u8], Duration); 6] = [
        (b"7n", Duration::from_nanos(7)),
        (b"7u", Duration::from_micros(7)),
        (b"7m", Duration::from_millis(7)),
        (b"7S", Duration::from_secs(7)),
        (b"7M", Duration::from_secs(7 * 60)),
        (b"7H", Duration::from_secs(7 * 3_600)),
    ];
    for (v, want) in cases {
        assert_eq!(decode_grpc_timeout(v), Ok(want), "{v:?}");
        // And back: the encoder picks the finest unit that fits, the same duration.
        assert_eq!(
            decode_grpc_timeout(encode_grpc_timeout(want).as_bytes()),
            Ok(want)
        );
    }
}

#[test]
fn a_header_reads_the_same_through_every_view() {
    // HTTP crates take a header value as `AsRef<str>` or `&str`; each view is the text.
    let header = encode_grpc_timeout(Duration::from_millis(250));
    let through_as_ref: &str = header.as_ref();
    assert_eq!(through_as_ref, "250000u");
    assert_eq!(&*header, "250000u");
}

#[test]
fn millis_edges() {
    assert_eq!(
        decode_millis(b"18446744073709551615"),
        Ok(Duration::from_millis(u64::MAX))
    );
    assert_eq!(
        decode_millis(b"000000000000000000001"),
        Err(TimeoutHeaderError::TooManyDigits)
    );
    assert_eq!(decode_millis(b"-1"), Err(TimeoutHeaderError::NotADigit));
    assert_eq!(&*encode_millis(Duration::from_millis(23_000)), "23000");
    // Past u64 milliseconds the count saturates: a truncated u128 would be a short wait
    // (2^64 ms truncates to 0; Duration::MAX happens to truncate to u64::MAX itself).
    let past = Duration::from_millis(u64::MAX) + Duration::from_millis(1);
    assert_eq!(&*encode_millis(past), "18446744073709551615");
    assert_eq!(&*encode_millis(Duration::MAX), "18446744073709551615");
    assert_eq!(
        &*encode_millis(Duration::from_millis(u64::MAX)),
        "18446744073709551615"
    );
}

#[test]
fn margin_saturates_and_time_backwards_gives_more_not_a_panic() {
    let d = Deadline::after(Instant::from_secs(10), Duration::from_secs(5));
    let hop = DeadlinePropagation::with_margin(Duration::from_secs(1));
    assert_eq!(hop.outgoing(d, Instant::from_secs(14)), Duration::ZERO);
    assert_eq!(hop.outgoing(d, Instant::MAX), Duration::ZERO);
    assert_eq!(&*hop.grpc_timeout(d, Instant::MAX), "0n");
    // A clock that stepped back before the deadline was set sees the whole span.
    assert_eq!(hop.outgoing(d, Instant::ZERO), Duration::from_secs(14));
    let never = Deadline::at(Instant::MAX);
    assert_eq!(
        &*DeadlinePropagation::NO_MARGIN.millis(never, Instant::ZERO),
        "18446744073709"
    );
}
