//! Honouring `Retry-After`, judged by the provider's own clock: the provider remembers
//! when each request it answered 429 may come back and, at its next arrival, counts it as
//! honoured (no earlier) or early. A client that follows the header is never early; one
//! that retries at once is. Both engines, the live one against the real target.

use stormrig::metrics::RunResult;
use stormrig::sim::{self, SimOptions};

use super::provider_tokens::THROTTLED;
use crate::support;

/// The throttled provider (60 calls/s against 60 requests per minute), with a client that
/// follows `Retry-After` (the OpenAI SDK's defaults) beside one that retries at once.
fn scenario() -> String {
    let base = &THROTTLED[..THROTTLED.find("[[configs]]").expect("configs")];
    format!(
        "{base}[[configs]]\nname = \"honours\"\npreset = \"openai-python\"\n\n\
         [[configs]]\nname = \"immediate\"\npreset = \"naive\"\n"
    )
}

fn check(run: &RunResult) {
    let p = |name: &str| &support::config_named(&run.configs, name).providers[0];
    let (honours, immediate) = (p("honours"), p("immediate"));
    assert!(honours.throttled > 0, "{honours:?}");
    assert_eq!(honours.retry_after_early, 0, "{honours:?}");
    assert!(honours.retry_after_honoured > 0, "{honours:?}");
    assert!(immediate.retry_after_early > 0, "{immediate:?}");
    for s in [honours, immediate] {
        // Every return follows a 429 of its own.
        assert!(
            s.retry_after_honoured + s.retry_after_early <= s.throttled,
            "{s:?}"
        );
    }
}

#[test]
fn no_attempt_of_a_client_honouring_retry_after_reaches_the_provider_early_live() {
    check(&support::run_live(&support::plan_of(&scenario()), false).result);
}

#[test]
fn no_attempt_of_a_client_honouring_retry_after_reaches_the_provider_early_simulated() {
    let p = support::plan_of(&scenario());
    check(&sim::run(&p, &SimOptions::default()).unwrap().result);
}
