//! target (work in progress)
