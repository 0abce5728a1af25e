//! The Retry-After parser (being written).
