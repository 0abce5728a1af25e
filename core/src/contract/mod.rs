//! The vocabulary every policy speaks: what an outcome was ([`verdict`]), why a call was
//! refused ([`rejection`]), what a policy is and what it hands back ([`permit`]), why a retry
//! loop stopped (`give_up`) and the operator's controls ([`control`]). Nothing here depends on
//! a policy or on the composition above it.

pub mod control;
pub(crate) mod give_up;
pub mod permit;
pub mod rejection;
pub mod verdict;
