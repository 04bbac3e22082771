//! scenario (work in progress)
