//! One name for "a real resilix pipeline driven through `Call`", so the engine is written once
//! for every composition of policies an experiment builds.

use resilix::Verdict;
use resilix::call::{Call, CallOptions, Next, Stop};
use resilix::observe::Observer;
use resilix::permit::{Env, Policy};
use resilix::pipeline::{Attempt, Pipeline};
use resilix::random::SeededRandom;
use resilix::retry::RetryPolicy;
use resilix::time::{Deadline, Instant};

/// A pipeline as the simulator drives it: begin a call, admit attempts, settle them.
pub trait Stack {
    type Call<'a>
    where
        Self: 'a;
    type Attempt<'a>
    where
        Self: 'a;

    fn begin(&self, now: Instant, options: CallOptions) -> Self::Call<'_>;

    fn admit<'a, O: Observer>(
        call: &mut Self::Call<'a>,
        env: &mut Env<'_, SeededRandom, O>,
    ) -> Result<Self::Attempt<'a>, Stop>;

    fn settle<'a, O: Observer>(
        call: &mut Self::Call<'a>,
        attempt: Self::Attempt<'a>,
        verdict: &Verdict,
        env: &mut Env<'_, SeededRandom, O>,
    ) -> Next;

    /// The instant the attempt must be raced against (attempt timeout or call deadline).
    fn deadline<'a>(attempt: &Self::Attempt<'a>) -> Option<Deadline>
    where
        Self: 'a;
}

impl<Rt: RetryPolicy, T: Policy, B: Policy, L: Policy, H: Policy, Rl: Policy> Stack
    for Pipeline<Rt, T, B, L, H, Rl>
{
    type Call<'a>
        = Call<'a, Rt, T, B, L, H, Rl>
    where
        Self: 'a;
    type Attempt<'a>
        = Attempt<'a, T, B, L, H, Rl>
    where
        Self: 'a;

    fn begin(&self, now: Instant, options: CallOptions) -> Self::Call<'_> {
        self.call(now, options)
    }

    fn admit<'a, O: Observer>(
        call: &mut Self::Call<'a>,
        env: &mut Env<'_, SeededRandom, O>,
    ) -> Result<Self::Attempt<'a>, Stop> {
        call.admit(env)
    }

    fn settle<'a, O: Observer>(
        call: &mut Self::Call<'a>,
        attempt: Self::Attempt<'a>,
        verdict: &Verdict,
        env: &mut Env<'_, SeededRandom, O>,
    ) -> Next {
        call.settle(attempt, verdict, env)
    }

    fn deadline<'a>(attempt: &Self::Attempt<'a>) -> Option<Deadline>
    where
        Self: 'a,
    {
        attempt.deadline()
    }
}
