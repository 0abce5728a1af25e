//! Making a model draw the same random values as the real policy: the real one draws through a
//! [`Recorder`], then the model replays exactly those draws, and any difference in how many
//! each side drew is a mismatch in itself.

use resilix::random::Random;

/// Passes a generator's draws through and keeps them.
pub(crate) struct Recorder<'r> {
    inner: &'r mut dyn Random,
    drawn: Vec<u32>,
}

impl<'r> Recorder<'r> {
    pub(crate) fn new(inner: &'r mut dyn Random) -> Recorder<'r> {
        Recorder {
            inner,
            drawn: Vec::new(),
        }
    }

    /// Runs `model` on the draws recorded so far; an error, naming `who`, if the model drew a
    /// different number of values than the real policy did.
    pub(crate) fn replay<T>(
        &self,
        who: &str,
        model: impl FnOnce(&mut dyn Random) -> T,
    ) -> Result<T, String> {
        replay(&self.drawn, who, model)
    }
}

impl Random for Recorder<'_> {
    fn next_u32(&mut self) -> u32 {
        let v = self.inner.next_u32();
        self.drawn.push(v);
        v
    }
}

/// Runs `model` on `drawn`; an error, naming `who`, if it drew a different number of values.
pub(crate) fn replay<T>(
    drawn: &[u32],
    who: &str,
    model: impl FnOnce(&mut dyn Random) -> T,
) -> Result<T, String> {
    let mut r = Replay { drawn, beyond: 0 };
    let out = model(&mut r);
    if r.drawn.is_empty() && r.beyond == 0 {
        Ok(out)
    } else {
        Err(format!(
            "randomness: the real {who} drew {} values, its model {}",
            drawn.len(),
            drawn.len() - r.drawn.len() + r.beyond
        ))
    }
}

/// Replays recorded draws; past their end, all ones, counted (ones, not zeros: `below(n)`
/// accepts an all-ones draw for every `n` below 2^63, and would reject zeros forever for most).
struct Replay<'d> {
    drawn: &'d [u32],
    beyond: usize,
}

impl Random for Replay<'_> {
    fn next_u32(&mut self) -> u32 {
        match self.drawn.split_first() {
            Some((&v, rest)) => {
                self.drawn = rest;
                v
            }
            None => {
                self.beyond += 1;
                u32::MAX
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model that draws fewer, more or other values than the real policy is caught by the
    /// replay itself, before any decision is compared.
    #[test]
    fn a_different_number_of_draws_is_caught() {
        assert_eq!(
            replay(&[1, 2], "pipeline", |r| r.next_u32()),
            Err("randomness: the real pipeline drew 2 values, its model 1".to_string())
        );
        assert!(replay(&[], "limiter", |r| r.next_u32()).is_err());
        assert_eq!(
            replay(&[7, 9], "throttler", |r| (r.next_u32(), r.next_u32())),
            Ok((7, 9))
        );
    }
}
