//! `attempt_cost` derived from what an attempt asks of its provider, in both engines:
//! `"tokens"` (the request's own prompt + completion tokens) and `"money"` (those tokens at
//! the provider's price). A per-request cap in that unit stops spending exactly at the cap,
//! a client-wide cap is a ceiling (first attempts included), and a derived cost that no
//! provider can give is refused naming file, line and field.

use stormrig::metrics::{ConfigSummary, RunResult};
use stormrig::sim::{self, SimOptions};

use super::provider_tokens::{plan_of, ALWAYS_FAILS};
use crate::support;

/// The request's own tokens: 2,000 prompt (from the load's header, not the provider's
/// default of 1,000) + 200 completion.
const REQUEST_TOKENS: u64 = 2200;
/// Those tokens at 0.003 / 0.015 per 1k, in billionths: 0.009.
const REQUEST_NANO: u64 = 2000 * 3_000 + 200 * 15_000;

/// [`ALWAYS_FAILS`] with the 2,000-token header, a price, and `configs`.
fn scenario(configs: &str) -> String {
    let base = &ALWAYS_FAILS[..ALWAYS_FAILS.find("[[configs]]").expect("configs")];
    let base = base
        .replace(
            "/v1/chat/completions\"\n",
            "/v1/chat/completions\"\nheaders = { \"x-stormrig-prompt-tokens\" = \"2000\" }\n",
        )
        .replace(
            "time_per_output_token = \"0s\"\n",
            "time_per_output_token = \"0s\"\nprice = { prompt_per_1k = 0.003, completion_per_1k = 0.015 }\n",
        );
    format!("{base}{configs}")
}

/// Six attempts allowed, the cap three attempts' worth, in tokens and in money.
const CAPPED: &str = r#"
[[configs]]
name = "tokens-cap"
preset = "naive"
max_attempts = 6
attempt_cost = "tokens"
cost = { per_request_cap = 6600 }

[[configs]]
name = "money-cap"
preset = "naive"
max_attempts = 6
attempt_cost = "money"
cost = { per_request_cap = 0.027 }
"#;

/// Every request spent exactly the cap: three attempts of its own 2,200 tokens (with the
/// provider's default 1,200 the cap would have allowed five), counted by the provider.
fn check_capped(run: &RunResult) {
    for name in ["tokens-cap", "money-cap"] {
        let c: &ConfigSummary = support::config_named(&run.configs, name);
        let n = c.upstream_requests;
        assert!(n > 0, "{name}");
        let p = &c.providers[0];
        assert_eq!(
            p.arrivals, c.attempts,
            "{name}: attempts reach the provider"
        );
        assert_eq!(p.arrivals, 3 * n, "{name}: three attempts per request");
        assert_eq!(p.tokens_received, 3 * REQUEST_TOKENS * n, "{name}");
        assert_eq!(
            p.money_nano.unwrap().received,
            3 * REQUEST_NANO * n,
            "{name}"
        );
        assert_eq!(c.failures, n, "{name}");
    }
}

#[test]
fn a_cap_in_the_requests_own_tokens_or_money_stops_spending_at_the_cap_in_both_engines() {
    let p = plan_of(&scenario(CAPPED));
    check_capped(&sim::run(&p, &SimOptions::default()).unwrap().result);
    check_capped(&support::run_live(&p, false).result);
}

#[test]
fn a_derived_cost_without_a_provider_or_a_price_is_refused_naming_the_field() {
    let refused = |text: &str, why: &str| {
        let path = support::repo_root().join("scenarios/provider-test.toml");
        let sc = stormrig::scenario::parse(&path, text).unwrap();
        let e = stormrig::plan::build(sc, text).unwrap_err();
        assert!(e.field.ends_with("attempt_cost"), "{}", e.field);
        let line = crate::support::line_starting(text, "attempt_cost = ");
        assert_eq!(e.line, line);
        assert!(e.message.contains(why), "{}", e.message);
    };
    // No price on the provider: no money.
    let unpriced = ALWAYS_FAILS.replace("attempt_cost = 1200", "attempt_cost = \"money\"");
    refused(&unpriced, "has none");
    // The load's path names no provider: no tokens.
    let nowhere = scenario(CAPPED)
        .replace(
            "/providers/llm-a/v1/chat/completions",
            "/v1/chat/completions",
        )
        .replace("attempt_cost = \"money\"\n", "");
    refused(&nowhere, "names no [[provider]]");
}

/// The console's `refused` column counts the retries a cost cap refused, as it counts the
/// budget's: a capped config that sent less must show why where people look.
#[test]
fn the_console_counts_cost_cap_refusals_as_refused() {
    use crate::support::process::{bin, succeed, tmp_dir, write};
    let dir = tmp_dir("cost-console");
    let file = write(&dir, "capped.toml", &scenario(CAPPED));
    let out = dir.join("out");
    let o = succeed(bin().arg("sim").arg(&file).arg("--out").arg(&out));
    let console = String::from_utf8(o.stdout).unwrap();
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let table = &console[console.find(" refused ").expect("refused column")..];
    for c in summary["configs"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        let by_cost = c["failures_by_reason"]["cost-cap"].as_u64().unwrap_or(0);
        assert!(by_cost > 0, "{name}: {c}");
        let expected = c["budget_refusals"].as_u64().unwrap() + by_cost;
        let row = table
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} in {table}"));
        let shown: u64 = row[name.len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(shown, expected, "{row}");
    }
}

/// A client-wide cap of 25 attempts' worth of tokens, six attempts allowed per request.
const CEILING: &str = r#"
[[configs]]
name = "global-cap"
preset = "naive"
max_attempts = 6
attempt_cost = "tokens"
cost = { global_cap = 55000 }
"#;

/// The cap is a ceiling: the client spends exactly 25 attempts' tokens whatever the order
/// requests came in, and every request after that fails `cost-cap` without an attempt,
/// first attempts included (so at most 4 requests could use all six attempts).
fn check_ceiling(run: &RunResult) {
    let c: &ConfigSummary = support::config_named(&run.configs, "global-cap");
    let n = c.upstream_requests;
    assert_eq!(n, 50);
    let p = &c.providers[0];
    assert_eq!(c.attempts, 25, "attempts stop at the cap");
    assert_eq!(p.arrivals, 25, "the provider counted what was sent");
    assert_eq!(p.tokens_received, 25 * REQUEST_TOKENS);
    assert_eq!(c.failures, n);
    let reason = |r: &str| c.failures_by_reason.get(r).copied().unwrap_or(0);
    assert_eq!(
        reason("cost-cap") + reason("max-attempts"),
        n,
        "{:?}",
        c.failures_by_reason
    );
    assert!(
        reason("max-attempts") <= 25 / 6,
        "{:?}",
        c.failures_by_reason
    );
}

#[test]
fn a_global_cap_is_a_ceiling_first_attempts_included_in_both_engines() {
    let p = plan_of(&scenario(CEILING));
    check_ceiling(&sim::run(&p, &SimOptions::default()).unwrap().result);
    check_ceiling(&support::run_live(&p, false).result);
}
