// The guide's chapters, in reading order. Included by `guide/src/lib.rs` (doc tests) and by
// `adapter-tokio/src/lib.rs` (the rendered `resilix_tokio::_guide`), so the two cannot list
// different chapters.
pub mod getting_started {
    #![doc = include_str!("../docs/guide/getting-started.md")]
}
pub mod composing {
    #![doc = include_str!("../docs/guide/composing.md")]
}
pub mod retry {
    #![doc = include_str!("../docs/guide/retry.md")]
}
pub mod breaker {
    #![doc = include_str!("../docs/guide/breaker.md")]
}
pub mod throttler {
    #![doc = include_str!("../docs/guide/throttler.md")]
}
pub mod limiter {
    #![doc = include_str!("../docs/guide/limiter.md")]
}
pub mod bulkhead {
    #![doc = include_str!("../docs/guide/bulkhead.md")]
}
pub mod rate_limit {
    #![doc = include_str!("../docs/guide/rate-limit.md")]
}
pub mod deadlines {
    #![doc = include_str!("../docs/guide/deadlines.md")]
}
pub mod inbound {
    #![doc = include_str!("../docs/guide/inbound.md")]
}
pub mod hedging {
    #![doc = include_str!("../docs/guide/hedging.md")]
}
pub mod operating {
    #![doc = include_str!("../docs/guide/operating.md")]
}
pub mod testing {
    #![doc = include_str!("../docs/guide/testing.md")]
}
pub mod simulator {
    #![doc = include_str!("../docs/guide/simulator.md")]
}
pub mod embedded {
    #![doc = include_str!("../docs/guide/embedded.md")]
}
pub mod workers {
    #![doc = include_str!("../docs/guide/workers.md")]
}
pub mod migrating {
    #![doc = include_str!("../docs/guide/migrating.md")]
}
