//! One error type for a config that could not be read or built: where (the field path, and the
//! line and column when the parser knows them) and what rule it broke.

use core::fmt;

use resilix::breaker;
use resilix::bulkhead::BulkheadConfigError;
use resilix::limiter::LimiterConfigError;
use resilix::pipeline::AttemptTimeoutError;
use resilix::rate_limit::RateLimitConfigError;
use resilix::retry::RetryConfigError;
use resilix::retry::budget::BudgetConfigError;
use resilix::throttler::ThrottlerConfigError;

/// A position in the config text, both counted from 1 (the column in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// The line, from 1.
    pub line: usize,
    /// The column, from 1.
    pub column: usize,
}

#[cfg(feature = "toml")]
impl Location {
    /// The line and column of byte `offset` in `text`.
    pub(crate) fn of_offset(text: &str, offset: usize) -> Location {
        let before = &text[..floor_char_boundary(text, offset)];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Location {
            line,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

#[cfg(feature = "toml")]
fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// The rule a config broke. Policy rules are the core's own errors, so each rule is written
/// once, in the core, and its text (`Display`) is the core's.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Problem {
    /// The parser refused the text: bad syntax, an unknown field (fields are never ignored),
    /// a wrong type, a bad duration. The parser's own message.
    Parse(String),
    /// The breaker's rule (`resilix::breaker::ConfigError`).
    Breaker(breaker::ConfigError),
    /// The throttler's rule.
    Throttler(ThrottlerConfigError),
    /// The adaptive limiter's rule.
    Limiter(LimiterConfigError),
    /// The bulkhead's rule.
    Bulkhead(BulkheadConfigError),
    /// The rate limiter's rule.
    RateLimit(RateLimitConfigError),
    /// The retry policy's or the backoff's rule.
    Retry(RetryConfigError),
    /// A retry budget's rule.
    Budget(BudgetConfigError),
    /// The attempt timeout's rule (not zero).
    AttemptTimeout(AttemptTimeoutError),
    /// A retry names a budget that `[budgets]` does not define.
    UnknownBudget(String),
    /// A field that means nothing for this kind of budget or limiter algorithm.
    NotForKind {
        /// The kind or algorithm in force.
        kind: &'static str,
    },
    /// A breaker window with both `length` and `calls`.
    WindowTwoKinds,
    /// A file whose extension names no format this build reads.
    UnknownFormat(String),
    /// The file could not be read.
    Io(String),
    /// A reload offered a config with no pipelines while some are live: refused, because an
    /// empty or truncated file reads as exactly that (see [`Live`](crate::Live)).
    NoPipelines {
        /// How many pipelines are live.
        live: usize,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Parse(message) => f.write_str(message),
            Problem::Breaker(e) => e.fmt(f),
            Problem::Throttler(e) => e.fmt(f),
            Problem::Limiter(e) => e.fmt(f),
            Problem::Bulkhead(e) => e.fmt(f),
            Problem::RateLimit(e) => e.fmt(f),
            Problem::Retry(e) => e.fmt(f),
            Problem::Budget(e) => e.fmt(f),
            Problem::AttemptTimeout(e) => e.fmt(f),
            Problem::UnknownBudget(name) => write!(
                f,
                "no budget named {name:?}: define it under [budgets.{name}] or remove the reference"
            ),
            Problem::NotForKind { kind } => write!(f, "this field does not apply to {kind}"),
            Problem::WindowTwoKinds => f.write_str(
                "a breaker window is either `length` (a time window) or `calls` (the last N calls), not both",
            ),
            Problem::UnknownFormat(ext) => write!(
                f,
                "cannot tell the format from the extension {ext:?}: use .toml or .json (with the crate's feature of that name)"
            ),
            Problem::Io(message) => f.write_str(message),
            Problem::NoPipelines { live } => write!(
                f,
                "the new config has no pipelines while {live} are live: refusing to remove them all \
                 (an empty or truncated file?); remove them by name instead"
            ),
        }
    }
}

/// A config that could not be read or built: the field's path, the rule, and where in the
/// text when the parser says.
///
/// ```
/// use resilix_config::{Config, Problem};
///
/// let err = Config::from_toml_str("[pipelines.payments.breaker]\nhalf_open_probes = 0\n")
///     .and_then(|c| c.build())
///     .unwrap_err();
/// assert_eq!(err.path(), "pipelines.payments.breaker.half_open_probes");
/// assert!(matches!(err.problem(), Problem::Breaker(_)));
/// assert_eq!(
///     err.to_string(),
///     "pipelines.payments.breaker.half_open_probes: half-open probes 0 is out of range 1..=15"
/// );
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    path: String,
    problem: Problem,
    location: Option<Location>,
}

impl ConfigError {
    pub(crate) fn new(path: impl Into<String>, problem: Problem) -> ConfigError {
        ConfigError {
            path: path.into(),
            problem,
            location: None,
        }
    }

    #[cfg_attr(not(any(feature = "toml", feature = "json")), allow(dead_code))]
    pub(crate) fn at(mut self, location: Option<Location>) -> ConfigError {
        self.location = location;
        self
    }

    /// The dotted path of the field (`pipelines.payments.breaker.open_wait`); empty when the
    /// problem is the whole text (a syntax error before any field).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The rule that was broken.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// Where in the text, when the parser knows (parse errors; validation happens after
    /// parsing and names the path only).
    pub fn location(&self) -> Option<Location> {
        self.location
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        write!(f, "{}", self.problem)?;
        if let Some(Location { line, column }) = self.location {
            write!(f, " (line {line}, column {column})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

/// `base.field`, or `field` at the root.
pub(crate) fn join(base: &str, field: &str) -> String {
    if base.is_empty() {
        field.to_owned()
    } else if field.is_empty() {
        base.to_owned()
    } else {
        format!("{base}.{field}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "toml")]
    #[test]
    fn locations_count_lines_and_characters_from_one() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(
            Location::of_offset(text, 0),
            Location { line: 1, column: 1 }
        );
        assert_eq!(
            Location::of_offset(text, 6),
            Location { line: 2, column: 1 }
        );
        // After the two-byte é: the third character.
        assert_eq!(
            Location::of_offset(text, 9),
            Location { line: 2, column: 3 }
        );
        // Inside a character, or past the end: clamped, never a panic.
        assert_eq!(
            Location::of_offset(text, 8),
            Location { line: 2, column: 2 }
        );
        assert_eq!(Location::of_offset(text, 99).line, 3);
    }

    #[test]
    fn display_is_path_rule_and_place() {
        let e = ConfigError::new(
            "pipelines.a.retry.budget",
            Problem::UnknownBudget("x".into()),
        )
        .at(Some(Location {
            line: 3,
            column: 10,
        }));
        assert_eq!(
            e.to_string(),
            "pipelines.a.retry.budget: no budget named \"x\": define it under [budgets.x] or remove the reference (line 3, column 10)"
        );
        assert_eq!(join("", "a"), "a");
        assert_eq!(join("a", ""), "a");
        assert_eq!(join("a", "b.c"), "a.b.c");
    }
}
