//! The policy micro-benchmark: the policy decision plus recording per attempt, for the cases
//! `stormrig bench policy` prints, through the same code ([`PolicyPath`]). One iteration is
//! exactly one attempt, so divan's time per iteration is the time per attempt.
//!
//! `cargo bench --bench policy`

use divan::Bencher;
use stormrig::bench::hotpath::PolicyPath;
use stormrig::bench::POLICY_CASES;

fn main() {
    divan::main();
}

/// The retry quota of `aws-standard` drains within its first few dozen attempts; warming up
/// past that measures the steady state of the storm, as `bench policy`'s millions do.
const WARM_UP: u32 = 10_000;

#[divan::bench(args = POLICY_CASES)]
fn attempt(bencher: Bencher, case: &(&str, u16)) {
    let (name, status) = *case;
    let config = stormrig::policy::preset(name).expect("a shipped preset");
    let mut path = PolicyPath::new(&config, status);
    for _ in 0..WARM_UP {
        path.attempt();
    }
    bencher.bench_local(|| path.attempt());
}
