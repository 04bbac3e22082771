//! sim (work in progress)
