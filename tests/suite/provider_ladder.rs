//! The degradation ladder: a request whose attempts could not get an answer (its only
//! provider down, the provider's breaker open) is answered by the client itself — from
//! the cache for a seeded share, by a static fallback for the rest — counted as degraded,
//! neither success nor failure, at no downstream cost. Both engines.

use stormrig::metrics::{ConfigSummary, RunResult};
use stormrig::sim::{self, SimOptions};

use super::provider_failover::A_DOWN;
use crate::support;

/// Provider `a` answers 503 to everything. Both configs send only to `a`, behind a breaker;
/// `ladder` answers what `a` could not, `bare` fails it.
fn scenario() -> String {
    let base = &A_DOWN[..A_DOWN.find("[[configs]]").expect("configs")];
    let failover = r#"failover = { providers = ["a"], breaker = { failure_threshold = 3, open_for = "500ms" } }"#;
    format!(
        "{base}[[configs]]\nname = \"bare\"\npreset = \"naive\"\n{failover}\n\n\
         [[configs]]\nname = \"ladder\"\npreset = \"naive\"\n{failover}\n\
         ladder = [{{ cached = 0.6 }}, {{ static = true }}]\n"
    )
}

/// The requests the cache answered.
fn cached(c: &ConfigSummary) -> u64 {
    c.degraded.as_ref().expect("a ladder").rungs[0].requests
}

fn check(run: &RunResult) {
    let bare = support::config_named(&run.configs, "bare");
    let c = support::config_named(&run.configs, "ladder");
    assert_eq!(bare.failures, bare.upstream_requests);
    assert!(bare.degraded.is_none());
    let d = c.degraded.as_ref().expect("a ladder");
    assert_eq!((c.successes, c.failures), (0, 0), "every request degraded");
    assert_eq!(d.requests, c.upstream_requests);
    assert_eq!(
        d.rungs.iter().map(|r| r.rung.as_str()).collect::<Vec<_>>(),
        ["cached", "static"]
    );
    assert_eq!(d.rungs[0].requests + d.rungs[1].requests, d.requests);
    let share = cached(c) as f64 / d.requests as f64;
    assert!((0.4..0.8).contains(&share), "cached share {share}");
    assert!(d.latency_ms.max > 0.0);
    // No downstream cost: the provider saw exactly the attempts the client sent, the same
    // for both configs (the ladder answers after the attempts, it adds none).
    for cfg in [bare, c] {
        let a = &cfg.providers[0];
        assert_eq!(a.arrivals, cfg.attempts, "{}", cfg.name);
        assert_eq!(cfg.routes[0].attempts, a.arrivals, "{}", cfg.name);
    }
}

#[test]
fn the_ladder_answers_what_the_providers_could_not_in_both_engines() {
    let p = support::plan_of(&scenario());
    let sim = sim::run(&p, &SimOptions::default()).unwrap().result;
    check(&sim);
    let live = support::run_live(&p, false).result;
    check(&live);
    // The same seed draws the same requests into the cache, whichever engine ran them.
    let c = |r: &RunResult| cached(support::config_named(&r.configs, "ladder"));
    let u = |r: &RunResult| support::config_named(&r.configs, "ladder").upstream_requests;
    assert_eq!(u(&sim), u(&live));
    assert_eq!(c(&sim), c(&live));
}

#[test]
fn a_ladder_rung_out_of_range_is_refused_naming_it() {
    let text = scenario().replace("cached = 0.6", "cached = 1.6");
    let sc = stormrig::scenario::parse(std::path::Path::new("tests/inline.toml"), &text).unwrap();
    let e = stormrig::plan::build(sc, &text).unwrap_err();
    assert!(e.field.ends_with("ladder[0].cached"), "{}", e.field);
    assert_eq!(e.line, text.lines().count(), "the ladder's line");
}

/// Provider `a` down, `b` healthy (the lighter model), `c` down as well.
fn model_scenario() -> String {
    let base = &A_DOWN[..A_DOWN.find("[[configs]]").expect("configs")];
    format!(
        "{base}[[provider]]\nname = \"c\"\ntime_to_first_token = \"1ms\"\n\
         time_per_output_token = \"0s\"\n\n\
         [[faults]]\nkind = \"status\"\nstatus = 503\nat = \"0s\"\nfor = \"2s\"\npath = \"/providers/c\"\n\n\
         [[configs]]\nname = \"lighter\"\npreset = \"naive\"\n\
         ladder = [{{ model = \"b\" }}, {{ static = true }}]\n\n\
         [[configs]]\nname = \"lighter-down\"\npreset = \"naive\"\n\
         ladder = [{{ model = \"c\" }}, {{ static = true }}]\n"
    )
}

fn check_model_rung(run: &RunResult, engine: &str) {
    let arrivals =
        |c: &ConfigSummary, p: &str| c.providers.iter().find(|s| s.name == p).unwrap().arrivals;
    for name in ["lighter", "lighter-down"] {
        let c = support::config_named(&run.configs, name);
        let n = c.upstream_requests;
        assert!(n > 20, "{engine} {name}: {n}");
        // Four attempts of the policy at `a`, then one at the rung's provider.
        assert_eq!(arrivals(c, "a"), 4 * n, "{engine} {name}");
        assert_eq!(
            c.attempts,
            5 * n,
            "{engine} {name}: the rung's call is an attempt"
        );
        assert_eq!(c.downstream_arrivals, 5 * n, "{engine} {name}");
        assert_eq!((c.successes, c.failures), (0, 0), "{engine} {name}");
        let d = c.degraded.as_ref().expect("a ladder");
        assert_eq!(d.requests, n, "{engine} {name}");
        let rungs: Vec<(&str, u64)> = d
            .rungs
            .iter()
            .map(|r| (r.rung.as_str(), r.requests))
            .collect();
        match name {
            "lighter" => {
                assert_eq!(arrivals(c, "b"), n, "{engine}");
                assert_eq!(
                    c.providers.iter().find(|s| s.name == "b").unwrap().served,
                    n
                );
                assert_eq!(rungs, [("model b", n), ("static", 0)], "{engine}");
            }
            _ => {
                assert_eq!(arrivals(c, "c"), n, "{engine}");
                assert_eq!(arrivals(c, "b"), 0, "{engine}");
                assert_eq!(rungs, [("model c", 0), ("static", n)], "{engine}");
            }
        }
    }
}

#[test]
fn a_model_rung_sends_one_more_attempt_to_a_lighter_provider_in_both_engines() {
    let p = support::plan_of(&model_scenario());
    let sim = sim::run(&p, &SimOptions::default()).unwrap().result;
    check_model_rung(&sim, "sim");
    let live = support::run_live(&p, false).result;
    check_model_rung(&live, "live");
}

#[test]
fn a_model_rung_must_name_a_provider() {
    let text = model_scenario().replace("model = \"c\"", "model = \"zzz\"");
    let sc = stormrig::scenario::parse(std::path::Path::new("tests/inline.toml"), &text).unwrap();
    let e = stormrig::plan::build(sc, &text).unwrap_err();
    assert!(e.field.ends_with("ladder[0].model"), "{}", e.field);
    assert!(
        e.message.contains("\"zzz\" is not a [[provider]]"),
        "{}",
        e.message
    );
}

#[test]
fn a_ladder_in_a_layer_is_refused_naming_the_field_in_plain_words() {
    let path = support::repo_root().join("scenarios/layers-3x3-no-budget.toml");
    let text = std::fs::read_to_string(&path).unwrap().replacen(
        "config = { preset = \"naive\" }",
        "config = { preset = \"naive\", ladder = [{ static = true }] }",
        1,
    );
    let sc = stormrig::scenario::parse(&path, &text).unwrap();
    let e = stormrig::plan::build(sc, &text).unwrap_err();
    assert!(e.field.ends_with(".ladder"), "{}", e.field);
    assert!(e.message.contains("a layer passes"), "{}", e.message);
    assert!(
        !e.message.contains("  "),
        "one space between words: {:?}",
        e.message
    );
}
