//! live (work in progress)
