//! A description of a built pipeline that a test can assert on: which slots hold a policy,
//! and each policy's settings, read from its `Debug` form (every core policy and config
//! derives `Debug`, so this needs nothing from the policies).
//!
//! ```
//! use std::time::Duration;
//! use resilix::breaker::{Breaker, Config};
//! use resilix::pipeline::Pipeline;
//! use resilix::retry::{Retry, RetryConfig};
//! use resilix_testkit::describe::Description;
//!
//! let breaker = Breaker::new(Config::DEFAULT).unwrap();
//! let pipeline = Pipeline::new()
//!     .retry(Retry::unbudgeted(RetryConfig::DEFAULT))
//!     .breaker(&breaker)
//!     .attempt_timeout(Duration::from_secs(2));
//! let d = Description::of(&pipeline);
//! assert_eq!(d.policies(), ["retry", "breaker"]);
//! assert!(!d.has("bulkhead"));
//! assert!(d.setting("breaker", "minimum_calls: 20"));
//! assert_eq!(d.slot("attempt_timeout"), Some("Some(2s)"));
//! ```

use std::fmt::Debug;

/// The slots of a pipeline and the `Debug` text of what each holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Description {
    slots: Vec<(String, String)>,
}

/// What an empty slot reads as.
const ABSENT: [&str; 3] = ["()", "NoRetry", "None"];

impl Description {
    /// Describes `pipeline` (any `Debug` struct: a `Pipeline`, or a policy whose fields are
    /// its settings).
    pub fn of(pipeline: &impl Debug) -> Description {
        Description {
            slots: top_level_fields(&format!("{pipeline:?}")),
        }
    }

    /// Every slot, in order, with its text.
    pub fn slots(&self) -> impl Iterator<Item = (&str, &str)> {
        self.slots.iter().map(|(n, t)| (n.as_str(), t.as_str()))
    }

    /// The text of slot `name`, if the pipeline has that slot.
    pub fn slot(&self, name: &str) -> Option<&str> {
        self.slots().find(|(n, _)| *n == name).map(|(_, t)| t)
    }

    /// Whether slot `name` holds a policy (not `()`, `NoRetry` or `None`).
    pub fn has(&self, name: &str) -> bool {
        self.slot(name).is_some_and(|t| !ABSENT.contains(&t))
    }

    /// The slots that hold a policy, in pipeline order (outermost first), the attempt timeout
    /// left out.
    pub fn policies(&self) -> Vec<&str> {
        self.slots()
            .filter(|(n, t)| *n != "attempt_timeout" && !ABSENT.contains(t))
            .map(|(n, _)| n)
            .collect()
    }

    /// Whether slot `name`'s text contains `setting` (e.g. `"minimum_calls: 20"`), spaces as
    /// `Debug` prints them.
    pub fn setting(&self, name: &str, setting: &str) -> bool {
        self.slot(name).is_some_and(|t| t.contains(setting))
    }
}

/// `Name { a: X, b: Y { .. } }` → [("a", "X"), ("b", "Y { .. }")], splitting on commas at
/// depth one only.
fn top_level_fields(debug: &str) -> Vec<(String, String)> {
    let Some(open) = debug.find('{') else {
        return Vec::new();
    };
    let body = debug[open + 1..].trim_end();
    let body = body.strip_suffix('}').unwrap_or(body);
    let mut fields = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    let mut push = |part: &str| {
        if let Some((name, text)) = part.split_once(':') {
            fields.push((name.trim().to_string(), text.trim().to_string()));
        }
    };
    for (i, c) in body.char_indices() {
        match c {
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    push(&body[start..]);
    fields
}
