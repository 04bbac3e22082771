//! policy (work in progress)
