//! Deadline propagation encodings: decode(encode(d)) never grows the time and loses less than
//! one unit; the encoding is the finest unit that fits; the decoders never panic.
#![cfg(not(loom))]

use core::time::Duration;

use proptest::prelude::*;
use resilix::time::{
    Deadline, DeadlinePropagation, Instant, decode_grpc_timeout, decode_millis,
    encode_grpc_timeout, encode_millis,
};

const MAX_GRPC_NANOS: u128 = 99_999_999u128 * 3_600 * 1_000_000_000;

fn unit_nanos(unit: u8) -> u128 {
    match unit {
        b'n' => 1,
        b'u' => 1_000,
        b'm' => 1_000_000,
        b'S' => 1_000_000_000,
        b'M' => 60_000_000_000,
        b'H' => 3_600_000_000_000,
        _ => panic!("unit {unit}"),
    }
}

fn any_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (0u64..1_000_000_000).prop_map(Duration::from_nanos),
        any::<u64>().prop_map(Duration::from_nanos),
        (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
        (0u64..400_000_000_000).prop_map(Duration::from_secs),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn grpc_round_trip_never_grows_and_loses_under_one_unit(d in any_duration()) {
        let header = encode_grpc_timeout(d);
        let bytes = header.as_bytes();
        prop_assert!(bytes.len() >= 2 && bytes.len() <= 9, "{header:?}");
        let (&unit, digits) = bytes.split_last().unwrap();
        prop_assert!(digits.iter().all(u8::is_ascii_digit));
        let back = decode_grpc_timeout(bytes).unwrap();
        prop_assert!(back <= d, "{d:?} -> {header} -> {back:?}");
        let lost = d.as_nanos() - back.as_nanos();
        if d.as_nanos() <= MAX_GRPC_NANOS {
            prop_assert!(lost < unit_nanos(unit), "{d:?} -> {header}: lost {lost} ns");
        } else {
            prop_assert_eq!(&*header, "99999999H");
        }
        // Finest unit that fits: the next finer unit would need more than 8 digits.
        let finer = [b'n', b'u', b'm', b'S', b'M', b'H']
            .iter()
            .position(|&u| u == unit)
            .unwrap()
            .checked_sub(1)
            .map(|i| [b'n', b'u', b'm', b'S', b'M', b'H'][i]);
        if let Some(finer) = finer {
            prop_assert!(d.as_nanos() / unit_nanos(finer) > 99_999_999);
        }
    }

    #[test]
    fn millis_round_trip_floors(d in any_duration()) {
        let back = decode_millis(encode_millis(d).as_bytes()).unwrap();
        prop_assert!(back <= d);
        prop_assert!(d - back < Duration::from_millis(1) || d.as_millis() > u128::from(u64::MAX));
    }

    #[test]
    fn decoders_never_panic_and_accept_only_what_they_document(bytes in prop::collection::vec(any::<u8>(), 0..12)) {
        if let Ok(d) = decode_grpc_timeout(&bytes) {
            let (unit, digits) = bytes.split_last().unwrap();
            prop_assert!(b"HMSmun".contains(unit));
            prop_assert!(!digits.is_empty() && digits.len() <= 8);
            prop_assert!(digits.iter().all(u8::is_ascii_digit));
            // Re-encoding what was received never hands on more time.
            prop_assert!(decode_grpc_timeout(encode_grpc_timeout(d).as_bytes()).unwrap() <= d);
        }
        if let Ok(d) = decode_millis(&bytes) {
            prop_assert!(bytes.iter().all(u8::is_ascii_digit));
            prop_assert_eq!(decode_millis(encode_millis(d).as_bytes()), Ok(d));
        }
    }

    #[test]
    fn outgoing_is_remaining_minus_margin_never_more(
        start in any::<u64>(), span in any::<u64>(), now in any::<u64>(), margin in any::<u64>()
    ) {
        let deadline = Deadline::after(Instant::from_nanos(start), Duration::from_nanos(span));
        let now = Instant::from_nanos(now);
        let hop = DeadlinePropagation::with_margin(Duration::from_nanos(margin));
        let out = hop.outgoing(deadline, now);
        prop_assert!(out <= deadline.remaining(now));
        prop_assert_eq!(out, deadline.remaining(now).saturating_sub(Duration::from_nanos(margin)));
        prop_assert!(decode_grpc_timeout(hop.grpc_timeout(deadline, now).as_bytes()).unwrap() <= out);
        prop_assert!(decode_millis(hop.millis(deadline, now).as_bytes()).unwrap() <= out);
    }
}
