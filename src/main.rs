//! The `stormrig` binary: parse, run, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

use stormrig::app::{self, Exit};
use stormrig::cli::Cli;

#[cfg(not(feature = "system-alloc"))]
mod alloc;

/// mimalloc instead of glibc's malloc: the generator's hot path (hyper's request and
/// response structures, header maps, channels) allocates and frees a few dozen small
/// blocks per attempt, and glibc's allocator was ~13 % of its user-space instructions.
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static GLOBAL: alloc::Mimalloc = alloc::Mimalloc;

fn main() -> ExitCode {
    #[cfg(not(feature = "system-alloc"))]
    alloc::without_huge_pages();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // clap's own help/version output is a success; everything else is usage.
            return if e.use_stderr() {
                Exit::BadInput.into()
            } else {
                Exit::Ok.into()
            };
        }
    };
    match app::run(cli) {
        Ok(exit) => exit.into(),
        Err(e) => {
            // Not eprintln!: a closed stderr must not turn the documented code into a panic.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "stormrig: error: {}", e.message);
            e.exit.into()
        }
    }
}
