//! The resilix simulator: reproduces the published results the spec rests on with the real
//! core policies, a manual timeline and seeded randomness.

mod engine;
mod net;
mod observer;
mod occ;
mod queue;
mod rng;
mod stack;
mod upstream;

fn main() {}
