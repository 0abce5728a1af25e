//! The resilix guide, compiled: every code block of every chapter in `docs/guide/` runs as a
//! doc test of this crate under plain `cargo test`, with the features the chapters use. Readers
//! find the same chapters rendered as `resilix_tokio::_guide`.
#![doc = include_str!("../../docs/guide/README.md")]

include!("../chapters.rs");
