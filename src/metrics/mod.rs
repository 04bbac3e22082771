//! metrics (work in progress)
