//! Turning a call's result into a [`Verdict`].
//!
//! A classifier is the one place where "what happened" becomes "what it means", so every
//! policy downstream agrees. Built in: [`ResultClassifier`] for `Result`, [`http::HttpStatus`]
//! for HTTP status codes, and [`retry_after`] for the `Retry-After` header. Any
//! `Fn(&T) -> Verdict` is a classifier too.
//!
//! ```
//! use resilix::classify::{Classify, ResultClassifier};
//! use resilix::Verdict;
//!
//! let c = ResultClassifier::new();
//! assert_eq!(c.classify(&Ok::<u8, ()>(1)), Verdict::Success);
//! assert_eq!(c.classify(&Err::<u8, ()>(())), Verdict::Transient);
//!
//! // A closure works as a classifier.
//! let by_len = |s: &&str| if s.is_empty() { Verdict::Transient } else { Verdict::Success };
//! assert_eq!(by_len.classify(&"ok"), Verdict::Success);
//! ```
//!
//! Design notes: docs/design/classify.md

pub mod http;
pub mod retry_after;

use crate::verdict::Verdict;

/// Classifies an outcome of type `T`.
pub trait Classify<T: ?Sized> {
    /// The verdict for `outcome`.
    fn classify(&self, outcome: &T) -> Verdict;
}

impl<T: ?Sized, F: Fn(&T) -> Verdict> Classify<T> for F {
    fn classify(&self, outcome: &T) -> Verdict {
        self(outcome)
    }
}

/// Classifies a `Result`: `Ok` is [`Verdict::Success`]; an `Err` is [`Verdict::Transient`]
/// unless a function for errors says otherwise.
///
/// ```
/// use resilix::classify::{Classify, ResultClassifier};
/// use resilix::Verdict;
///
/// #[derive(Debug)]
/// enum Error { NotFound, Busy, Reset }
/// let c = ResultClassifier::with_errors(|e: &Error| match e {
///     Error::NotFound => Verdict::Answered,
///     Error::Busy => Verdict::Overload { retry_after: None },
///     Error::Reset => Verdict::Transient,
/// });
/// assert_eq!(c.classify(&Err::<(), _>(Error::NotFound)), Verdict::Answered);
/// assert_eq!(c.classify(&Ok::<(), Error>(())), Verdict::Success);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ResultClassifier<F = AllErrorsTransient> {
    errors: F,
}

/// The default error rule of [`ResultClassifier`]: every error is transient.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllErrorsTransient;

impl ResultClassifier<AllErrorsTransient> {
    /// `Ok` is success, every `Err` transient.
    pub const fn new() -> Self {
        ResultClassifier {
            errors: AllErrorsTransient,
        }
    }
}

impl<F> ResultClassifier<F> {
    /// `Ok` is success; errors are classified by `errors`.
    pub const fn with_errors(errors: F) -> Self {
        ResultClassifier { errors }
    }
}

impl<T, E> Classify<Result<T, E>> for ResultClassifier<AllErrorsTransient> {
    fn classify(&self, outcome: &Result<T, E>) -> Verdict {
        match outcome {
            Ok(_) => Verdict::Success,
            Err(_) => Verdict::Transient,
        }
    }
}

impl<T, E, F: Fn(&E) -> Verdict> Classify<Result<T, E>> for ResultClassifier<F> {
    fn classify(&self, outcome: &Result<T, E>) -> Verdict {
        match outcome {
            Ok(_) => Verdict::Success,
            Err(e) => (self.errors)(e),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn result_table() {
        let c = ResultClassifier::new();
        assert_eq!(c.classify(&Ok::<(), u8>(())), Verdict::Success);
        assert_eq!(c.classify(&Err::<(), u8>(1)), Verdict::Transient);
        let c = ResultClassifier::with_errors(|e: &u8| {
            if *e == 4 {
                Verdict::Answered
            } else {
                Verdict::Timeout
            }
        });
        assert_eq!(c.classify(&Err::<(), u8>(4)), Verdict::Answered);
        assert_eq!(c.classify(&Err::<(), u8>(5)), Verdict::Timeout);
        assert_eq!(c.classify(&Ok::<(), u8>(())), Verdict::Success);
    }
}
