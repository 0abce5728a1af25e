//! The attempt timeout's rule: zero is refused by both setters, with the rule's text.

extern crate std;

use core::time::Duration;
use std::string::ToString;

use super::*;

#[test]
fn a_zero_attempt_timeout_is_refused_and_any_other_is_kept() {
    assert_eq!(
        Pipeline::new().try_attempt_timeout(Duration::ZERO).err(),
        Some(AttemptTimeoutError::Zero)
    );
    for d in [
        Duration::from_nanos(1),
        Duration::from_millis(250),
        Duration::MAX,
    ] {
        let p = Pipeline::new().try_attempt_timeout(d).unwrap();
        assert_eq!(p.attempt_timeout_value(), Some(d));
        assert_eq!(
            Pipeline::new().attempt_timeout(d).attempt_timeout_value(),
            Some(d)
        );
    }
    assert_eq!(Pipeline::new().attempt_timeout_value(), None);
}

#[test]
#[should_panic(expected = "an attempt timeout of zero times out every attempt")]
fn the_builder_panics_on_zero_with_the_rules_text() {
    let _ = Pipeline::new().attempt_timeout(Duration::ZERO);
}

#[test]
fn the_rules_text_says_what_to_do() {
    let text = AttemptTimeoutError::Zero.to_string();
    assert!(text.contains("leave it unset"), "{text}");
    assert!(text.contains("p99"), "{text}");
}

/// `pipeline_type!` names the builder's own type, whatever the order of the slots.
#[test]
fn pipeline_type_names_the_builders_type_in_any_order() {
    use crate::breaker::Breaker;
    use crate::bulkhead::{Bulkhead, BulkheadConfig};
    use crate::retry::budget::TokenBucket;
    use crate::retry::{Retry, RetryConfig};

    type Named<'a> = crate::pipeline_type!(
        bulkhead: Bulkhead,
        breaker: &'a Breaker,
        retry: Retry<&'a TokenBucket>,
    );
    let budget = TokenBucket::default();
    let breaker = Breaker::default();
    let built: Named<'_> = Pipeline::new()
        .retry(Retry::new(RetryConfig::DEFAULT, &budget))
        .breaker(&breaker)
        .bulkhead(Bulkhead::new(BulkheadConfig::new(3).unwrap()));
    assert_eq!(built.bulkhead_ref().max_concurrent(), 3);
    let empty: crate::pipeline_type!() = Pipeline::new();
    let _ = empty;
}
