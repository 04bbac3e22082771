//! Money at the providers' prices, in both engines: against a priced provider that fails
//! every call, six attempts cost exactly six times one attempt's money; for a served run the
//! money figures equal the tokens times the price exactly; a provider without a price adds
//! nothing to them; a price that is not one is refused with exit 2 naming file, line and field.

use stormrig::metrics::{ConfigSummary, RunResult};
use stormrig::sim::{self, SimOptions};

use crate::support;
use support::process::{bin, cost, tmp_dir, write};

/// The token test's provider that answers 503 to everything (50 requests of 1,000 prompt +
/// 200 completion tokens), priced 0.003 / 0.015 per 1k, with a config of one attempt added.
fn always_fails() -> String {
    let text = super::provider_tokens::ALWAYS_FAILS.replacen(
        "time_per_output_token = \"0s\"\n",
        "time_per_output_token = \"0s\"\nprice = { prompt_per_1k = 0.003, completion_per_1k = 0.015 }\n",
        1,
    );
    assert!(text.contains("price = "), "the provider got its price");
    text + r#"
[[configs]]
name = "one-attempt"
preset = "no-retry"

# A money budget: each attempt costs one request's money (0.006); one request may spend 0.018.
[[configs]]
name = "money-budget"
preset = "naive"
max_attempts = 6
attempt_cost = 0.006
cost = { per_request_cap = 0.018 }
"#
}

/// One request's money at llm-a's price, in billionths: 1,000 × 0.003 / 1k + 200 × 0.015 / 1k.
const ONE_ATTEMPT_NANO: u64 = 1000 * 3_000 + 200 * 15_000;

fn check_failing(run: &RunResult) {
    let c = |name: &str| -> &ConfigSummary { support::config_named(&run.configs, name) };
    let one = c("one-attempt");
    let six = c("six-attempts");
    assert_eq!(one.attempts, 50);
    assert_eq!(six.attempts, 6 * 50);
    let nano = |cfg: &ConfigSummary| cfg.providers[0].money_nano.unwrap();
    assert_eq!(nano(one).received, 50 * ONE_ATTEMPT_NANO);
    assert_eq!(nano(six).received, 6 * nano(one).received);
    assert_eq!(nano(six).first_attempts, nano(one).received);
    assert_eq!(nano(six).served, 0);
    let (m1, m6) = (one.money.as_ref().unwrap(), six.money.as_ref().unwrap());
    // 50 requests × 0.006 = 0.3 and six times that, 1.8: exact decimals, as money is counted
    // in whole billionths (a sum of floats would drift to 1.7999999999999998).
    assert_eq!(m1.total.spent, 0.3, "{m1:?}");
    assert_eq!(m6.total.spent, 1.8, "{m6:?}");
    assert_eq!(m6.total.wasted, m6.total.spent);
    assert_eq!(m6.total.wasted_share, 1.0);
    assert_eq!(m6.total.cost_amplification, Some(6.0));
    assert_eq!(m1.total.cost_amplification, Some(1.0));
    assert_eq!(m6.providers.len(), 1);
    assert_eq!(m6.providers[0].name, "llm-a");
    assert_eq!(m6.providers[0].money, m6.total);
    // A budget of three attempts' tokens, or of three attempts' money, caps money at three
    // attempts' worth: spending stops at the cap.
    for name in ["token-budget", "money-budget"] {
        let capped = c(name);
        assert_eq!(nano(capped).received, 3 * nano(one).received, "{name}");
        let m = capped.money.as_ref().unwrap();
        assert_eq!(m.total.spent, 0.9, "{name}: 50 requests x 0.018");
        assert_eq!(m.total.cost_amplification, Some(3.0), "{name}");
        assert_eq!(
            capped.failures_by_reason.get("cost-cap"),
            Some(&50),
            "{name}"
        );
    }
}

#[test]
fn six_failing_attempts_cost_six_times_one_in_the_simulator() {
    let p = support::plan_of(&always_fails());
    check_failing(&sim::run(&p, &SimOptions::default()).unwrap().result);
}

#[test]
fn six_failing_attempts_cost_six_times_one_live() {
    let p = support::plan_of(&always_fails());
    check_failing(&support::run_live(&p, false).result);
}

/// Every call served by a priced provider; a second, unpriced provider is in the scenario
/// but stays out of the money figures.
const SERVED: &str = r#"
name = "provider-money-served"
seed = 4
duration = "2s"
drain = "2s"

[load]
kind = "constant"
rate = 20.0
method = "POST"
path = "/providers/priced/v1/chat/completions"

[target]
builtin = "default"

[[provider]]
name = "priced"
prompt_tokens = 1000
completion_tokens = 200
time_to_first_token = "1ms"
time_per_output_token = "0s"
price = { prompt_per_1k = 0.5, completion_per_1k = 2.0 }

[[provider]]
name = "free"
time_to_first_token = "1ms"

[[configs]]
name = "naive"
preset = "naive"
"#;

fn check_served(run: &RunResult) {
    let c = &run.configs[0];
    let p = &c.providers[0];
    assert!(p.served > 0 && p.served == p.arrivals, "{p:?}");
    let m = c.money.as_ref().unwrap();
    // The tokens at the price, computed here from the served counts: prompt and completion
    // of every served call (each 1,000 + 200).
    let expected = (p.served as f64 * 1000.0 * 0.5 + p.served as f64 * 200.0 * 2.0) / 1000.0;
    assert_eq!(m.total.spent, expected, "{m:?}");
    assert_eq!(m.total.served, expected);
    assert_eq!(m.total.wasted, 0.0);
    assert_eq!(m.total.cost_amplification, Some(1.0));
    assert_eq!(
        m.providers.len(),
        1,
        "the unpriced provider has no money: {m:?}"
    );
    assert_eq!(m.providers[0].name, "priced");
    assert_eq!(c.providers[1].money_nano, None);
    assert_eq!(c.tokens.as_ref().unwrap().spent, p.served * 1200);
}

#[test]
fn money_is_tokens_times_the_price_in_both_engines() {
    let p = support::plan_of(SERVED);
    check_served(&sim::run(&p, &SimOptions::default()).unwrap().result);
    check_served(&support::run_live(&p, false).result);
}

#[test]
fn a_price_that_is_not_one_is_refused_with_file_line_and_field() {
    for (i, (price, field, words)) in [
        (
            "prompt_per_1k = -0.1, completion_per_1k = 0.0",
            "prompt_per_1k",
            "not a price",
        ),
        (
            "prompt_per_1k = 0.0, completion_per_1k = nan",
            "completion_per_1k",
            "not a price",
        ),
        (
            "prompt_per_1k = 0.0, completion_per_1k = inf",
            "completion_per_1k",
            "not a price",
        ),
        (
            "prompt_per_1k = 0.0000001, completion_per_1k = 0.0",
            "prompt_per_1k",
            "millionth",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let text = SERVED.replace(
            "price = { prompt_per_1k = 0.5, completion_per_1k = 2.0 }",
            &format!("price = {{ {price} }}"),
        );
        let line = crate::support::line_starting(&text, "price = ");
        let dir = tmp_dir(&format!("money-refused-{i}"));
        let path = write(&dir, "s.toml", &text);
        let mut cmd = bin();
        cmd.arg("check").arg(&path);
        let out = cost(cmd);
        assert_eq!(out.code, 2, "{price}: {}", out.stderr);
        let want = format!("{}:{line}: provider[0].price.{field}: ", path.display());
        assert!(out.stderr.contains(&want), "{want} in {}", out.stderr);
        assert!(out.stderr.contains(words), "{}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    }
}
