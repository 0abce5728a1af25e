//! The duration parser over random inputs: what it writes it reads back, sums of components
//! are exact, and nothing panics.

use std::time::Duration;

use proptest::prelude::*;
use resilix_config::duration::{format, parse};

const UNITS: [(&str, u128); 7] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn format_reads_back_to_the_nanosecond(nanos in any::<u64>()) {
        let d = Duration::from_nanos(nanos);
        prop_assert_eq!(parse(&format(d)), Ok(d), "{}", format(d));
    }

    #[test]
    fn small_durations_read_back_too(nanos in 0u64..10_000_000_000) {
        let d = Duration::from_nanos(nanos);
        prop_assert_eq!(parse(&format(d)), Ok(d));
    }

    #[test]
    fn components_add_up_exactly(parts in prop::collection::vec((0u64..100_000, 0usize..7, 0u32..4), 1..5)) {
        let mut text = String::new();
        let mut expected: u128 = 0;
        for (value, unit, decimals) in parts {
            let (name, scale) = UNITS[unit];
            // `value` read with `decimals` places: value / 10^decimals units.
            let denominator = 10u128.pow(decimals);
            let whole = value as u128 / denominator;
            let fraction = value as u128 % denominator;
            if decimals == 0 {
                text.push_str(&format!("{whole}{name}"));
            } else {
                text.push_str(&format!("{whole}.{fraction:0width$}{name}", width = decimals as usize));
            }
            let exact = value as u128 * scale;
            if !exact.is_multiple_of(denominator) {
                prop_assert!(parse(&text).is_err(), "{} is finer than 1 ns", text);
                return Ok(());
            }
            expected += exact / denominator;
        }
        prop_assert_eq!(parse(&text), Ok(Duration::from_nanos(expected as u64)), "{}", text);
    }

    #[test]
    fn any_text_is_parsed_or_refused_without_a_panic(text in "\\PC{0,24}") {
        if let Ok(d) = parse(&text) {
            // Whatever it accepted, it can write and read again.
            prop_assert_eq!(parse(&format(d)), Ok(d));
        }
    }

    #[test]
    fn unit_shaped_text_is_parsed_or_refused_without_a_panic(text in "[0-9.]{0,25}(ns|us|ms|s|m|h|x)?[0-9.]{0,4}(s|m)?") {
        let _ = parse(&text);
    }
}
