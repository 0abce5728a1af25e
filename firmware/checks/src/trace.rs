use core::fmt;

/// The most values one scenario records; a scenario that needs more should be split.
const CAPACITY: usize = 96;

/// The decisions a scenario made, as numbers, in order.
pub struct Trace {
    values: [u64; CAPACITY],
    len: usize,
    overflowed: bool,
}

impl Default for Trace {
    fn default() -> Self {
        Self::new()
    }
}

impl Trace {
    /// An empty trace.
    pub const fn new() -> Self {
        Trace {
            values: [0; CAPACITY],
            len: 0,
            overflowed: false,
        }
    }

    /// Records one value.
    pub fn push(&mut self, value: u64) {
        match self.values.get_mut(self.len) {
            Some(slot) => {
                *slot = value;
                self.len += 1;
            }
            None => self.overflowed = true,
        }
    }

    /// Records an optional value, `u64::MAX` standing for `None`.
    pub fn push_opt(&mut self, value: Option<u64>) {
        self.push(value.unwrap_or(u64::MAX));
    }

    /// What was recorded.
    pub fn values(&self) -> &[u64] {
        &self.values[..self.len]
    }

    /// `Ok` when the trace is exactly `expected`; otherwise the first difference.
    pub fn compare(&self, expected: &[u64]) -> Result<(), Failure> {
        if self.overflowed {
            return Err(Failure::Overflow);
        }
        let got = self.values();
        for (index, (&g, &want)) in got.iter().zip(expected).enumerate() {
            if g != want {
                return Err(Failure::Mismatch {
                    index,
                    got: g,
                    want,
                });
            }
        }
        if got.len() != expected.len() {
            return Err(Failure::Length {
                got: got.len(),
                want: expected.len(),
            });
        }
        Ok(())
    }
}

/// Why a check failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The scenario's own assertion failed.
    Assertion(&'static str),
    /// The device decided differently from the host at this step.
    Mismatch { index: usize, got: u64, want: u64 },
    /// The device made a different number of decisions.
    Length { got: usize, want: usize },
    /// The scenario recorded more than a trace holds.
    Overflow,
}

impl Failure {
    /// A small number for harnesses that can only return an integer (wasm): 1 for an
    /// assertion, 1000 + the step for a mismatch, 2 for a length, 3 for an overflow.
    pub fn code(&self) -> u32 {
        match self {
            Failure::Assertion(_) => 1,
            Failure::Length { .. } => 2,
            Failure::Overflow => 3,
            Failure::Mismatch { index, .. } => 1000 + *index as u32,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Assertion(what) => write!(f, "assertion failed: {what}"),
            Failure::Mismatch { index, got, want } => {
                write!(f, "step {index}: device {got}, host {want}")
            }
            Failure::Length { got, want } => write!(f, "device recorded {got} steps, host {want}"),
            Failure::Overflow => f.write_str("trace overflowed"),
        }
    }
}
