//! Gate grammar, evaluation, verdict table and --abort-on-fail helpers.

use stormrig::report::figures::{self, Course, NOT_FIGURES};
use stormrig::report::gates::{
    all_passed, broken_early, can_no_longer_pass, check_figure, evaluate, figures_of, leaf_paths,
    may_stop_early, parse, verdict_table, Gate, GateError, Op, Selector,
};

use crate::support;
use stormrig::metrics::{LayerSummary, RunResult};
use support::{config, run};

fn two_configs() -> RunResult {
    run(vec![
        config("aws-standard", 1.25, 700.0, 3),
        config("naive", 2.5, 900.0, 0),
    ])
}

fn err(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

fn eval_err(text: &str, r: &RunResult) -> String {
    evaluate(&[parse(text).unwrap()], r)
        .unwrap_err()
        .to_string()
}

// ---- grammar ----

#[test]
fn parses_every_operator_and_selector() {
    let g = parse("aws-standard: amplification <= 1.3").unwrap();
    assert_eq!(
        g,
        Gate {
            text: "aws-standard: amplification <= 1.3".into(),
            selector: Selector::Config("aws-standard".into()),
            figure: "amplification".into(),
            op: Op::Le,
            limit: 1.3,
        }
    );
    let cases = [
        ("*: latency_ms.p99 < 800", Op::Lt, 800.0),
        ("*: latency_ms.p99 <= 800", Op::Le, 800.0),
        ("*: latency_ms.p99 > 800", Op::Gt, 800.0),
        ("*: latency_ms.p99 >= 800", Op::Ge, 800.0),
        ("*: latency_ms.p99 == 800", Op::Eq, 800.0),
    ];
    for (text, op, limit) in cases {
        let g = parse(text).unwrap();
        assert_eq!(g.selector, Selector::All, "{text}");
        assert_eq!(g.figure, "latency_ms.p99", "{text}");
        assert_eq!(g.op, op, "{text}");
        assert_eq!(g.limit, limit, "{text}");
    }
}

#[test]
fn whitespace_tolerant_and_percent() {
    let g = parse("  naive :budget_refusals==0  ").unwrap();
    assert_eq!(g.text, "naive :budget_refusals==0");
    assert_eq!(g.selector, Selector::Config("naive".into()));
    assert_eq!(g.figure, "budget_refusals");
    assert_eq!((g.op, g.limit), (Op::Eq, 0.0));
    let g = parse("*:success_share>=95%").unwrap();
    assert_eq!((g.op, g.limit), (Op::Ge, 0.95));
    let g = parse("*: amplification < 1.5e0").unwrap();
    assert_eq!(g.limit, 1.5);
    let g = parse("*: layers.edge.amplification < -2").unwrap();
    assert_eq!(
        (g.figure.as_str(), g.limit),
        ("layers.edge.amplification", -2.0)
    );
}

#[test]
fn malformed_gates_name_the_gate_and_the_problem() {
    assert_eq!(
        err("x: amplification => 2"),
        r#"gate "x: amplification => 2": expected an operator <, <=, >, >=, == after the figure"#
    );
    assert_eq!(
        err("x amplification <= 2"),
        r#"gate "x amplification <= 2": expected "SELECTOR: FIGURE OP NUMBER""#
    );
    assert_eq!(
        err("x: amplification != 2"),
        r#"gate "x: amplification != 2": expected an operator <, <=, >, >=, == after the figure"#
    );
    assert_eq!(
        err("x: amplification = 2"),
        r#"gate "x: amplification = 2": expected an operator <, <=, >, >=, == after the figure"#
    );
    assert_eq!(
        err("x: amplification 2"),
        r#"gate "x: amplification 2": expected an operator <, <=, >, >=, == after the figure"#
    );
    assert_eq!(
        err("x: amplification <="),
        r#"gate "x: amplification <=": expected a number after "<=""#
    );
    assert_eq!(
        err("x: amplification <= lots"),
        r#"gate "x: amplification <= lots": expected a number after "<=", found "lots""#
    );
    assert_eq!(
        err("x: amplification < inf"),
        r#"gate "x: amplification < inf": expected a number after "<", found "inf""#
    );
    assert_eq!(
        err("x: amplification <= 2 3"),
        r#"gate "x: amplification <= 2 3": expected a number after "<=", found "2 3""#
    );
    assert_eq!(
        err(": amplification <= 2"),
        r#"gate ": amplification <= 2": missing the config selector before ':' (a config name or *); expected "SELECTOR: FIGURE OP NUMBER""#
    );
    assert_eq!(
        err("x: <= 2"),
        r#"gate "x: <= 2": missing the figure after ':'; expected "SELECTOR: FIGURE OP NUMBER""#
    );
    assert_eq!(
        err("x: latency_ms..p99 <= 2"),
        r#"gate "x: latency_ms..p99 <= 2": figure "latency_ms..p99" is not a dotted path such as "latency_ms.p99""#
    );
    assert_eq!(
        err("   "),
        r#"gate "": empty gate expression; expected "SELECTOR: FIGURE OP NUMBER""#
    );
    assert!(matches!(
        parse("x amplification <= 2"),
        Err(GateError::Syntax { .. })
    ));
}

// ---- evaluation ----

#[test]
fn every_operator_evaluates_exactly() {
    let r = two_configs();
    // aws-standard amplification is 1.25.
    let cases = [
        ("aws-standard: amplification < 1.25", false),
        ("aws-standard: amplification < 1.26", true),
        ("aws-standard: amplification <= 1.25", true),
        ("aws-standard: amplification <= 1.24", false),
        ("aws-standard: amplification > 1.25", false),
        ("aws-standard: amplification > 1.2", true),
        ("aws-standard: amplification >= 1.25", true),
        ("aws-standard: amplification >= 1.26", false),
        ("aws-standard: amplification == 1.25", true),
        ("aws-standard: amplification == 1.3", false),
        ("aws-standard: amplification == 125%", true),
    ];
    for (text, passed) in cases {
        let v = evaluate(&[parse(text).unwrap()], &r).unwrap();
        assert_eq!(v.len(), 1, "{text}");
        assert_eq!(v[0].passed, passed, "{text}");
        assert_eq!(v[0].measured, Some(1.25), "{text}");
    }
}

#[test]
fn star_selects_every_config_and_name_selects_one() {
    let r = two_configs();
    let gates = [
        parse("*: latency_ms.p99 < 800").unwrap(),
        parse("naive: budget_refusals == 0").unwrap(),
    ];
    let v = evaluate(&gates, &r).unwrap();
    assert_eq!(v.len(), 3);
    assert_eq!(
        (v[0].config.as_str(), v[0].measured, v[0].passed),
        ("aws-standard", Some(700.0), true)
    );
    assert_eq!(
        (v[1].config.as_str(), v[1].measured, v[1].passed),
        ("naive", Some(900.0), false)
    );
    assert_eq!(v[1].gate, "*: latency_ms.p99 < 800");
    assert_eq!(v[1].figure, "latency_ms.p99");
    assert_eq!(v[1].op, "<");
    assert_eq!(v[1].limit, 800.0);
    assert_eq!(
        (v[2].config.as_str(), v[2].measured, v[2].passed),
        ("naive", Some(0.0), true)
    );
    assert!(!all_passed(&v));
    assert!(all_passed(&v[2..]));
    assert!(all_passed(&[]));
}

#[test]
fn nested_maps_named_arrays_derived_and_booleans() {
    let mut r = two_configs();
    let v = evaluate(
        &[
            parse("naive: failures_by_reason.max-attempts == 50").unwrap(),
            // Absent label in a count map: zero.
            parse("naive: failures_by_reason.budget-refused == 0").unwrap(),
            parse("naive: success_share >= 95%").unwrap(),
            parse("naive: recovered == 1").unwrap(),
            parse("naive: policy.max_attempts <= 3").unwrap(),
        ],
        &r,
    )
    .unwrap();
    let got: Vec<_> = v.iter().map(|v| (v.measured, v.passed)).collect();
    assert_eq!(
        got,
        vec![
            (Some(50.0), true),
            (Some(0.0), true),
            (Some(0.95), true),
            (Some(1.0), true),
            (Some(3.0), true)
        ]
    );
    // Arrays of objects with a `name` are addressed by name, dotted names included.
    r.configs[1].policy = serde_json::json!({"layers": [
        {"name": "edge", "amplification": 1.5},
        {"name": "db.primary", "amplification": 4.0}
    ]});
    let v = evaluate(
        &[
            parse("naive: policy.layers.edge.amplification <= 2").unwrap(),
            parse("naive: policy.layers.db.primary.amplification <= 2").unwrap(),
        ],
        &r,
    )
    .unwrap();
    assert_eq!((v[0].measured, v[0].passed), (Some(1.5), true));
    assert_eq!((v[1].measured, v[1].passed), (Some(4.0), false));
    assert_eq!(
        eval_err("naive: policy.layers.edgy.amplification <= 2", &r),
        r#"gate "naive: policy.layers.edgy.amplification <= 2": unknown figure "policy.layers.edgy.amplification" (did you mean "policy.layers.edge.amplification"?)"#
    );
}

#[test]
fn null_figure_fails_with_no_measurement() {
    let mut r = two_configs();
    r.configs[0].recovery_time_s = None;
    let v = evaluate(&[parse("*: recovery_time_s <= 30").unwrap()], &r).unwrap();
    assert_eq!((v[0].measured, v[0].passed), (None, false));
    assert_eq!((v[1].measured, v[1].passed), (Some(4.0), true));
    // Even a lower-bound gate cannot hold for what never happened.
    let v = evaluate(&[parse("aws-standard: recovery_time_s >= 0").unwrap()], &r).unwrap();
    assert_eq!((v[0].measured, v[0].passed), (None, false));
}

#[test]
fn unknown_names_are_errors_with_suggestions() {
    let r = two_configs();
    assert_eq!(
        eval_err("aws-standrd: amplification <= 1.3", &r),
        r#"gate "aws-standrd: amplification <= 1.3": no config named "aws-standrd" (did you mean "aws-standard"?)"#
    );
    assert_eq!(
        eval_err("*: amplif <= 2", &r),
        r#"gate "*: amplif <= 2": unknown figure "amplif" (did you mean "amplification"?)"#
    );
    assert_eq!(
        eval_err("*: latency_ms.p98 <= 2", &r),
        r#"gate "*: latency_ms.p98 <= 2": unknown figure "latency_ms.p98" (did you mean "latency_ms.p99"?)"#
    );
    assert_eq!(
        eval_err("zzzzqqq: amplification <= 2", &r),
        r#"gate "zzzzqqq: amplification <= 2": no config named "zzzzqqq""#
    );
    assert_eq!(
        eval_err("*: latency_ms <= 2", &r),
        r#"gate "*: latency_ms <= 2": figure "latency_ms" of config "aws-standard" is an object, not a number (did you mean "latency_ms.max"?)"#
    );
    assert_eq!(
        eval_err("*: name <= 2", &r),
        r#"gate "*: name <= 2": figure "name" of config "aws-standard" is a string, not a number"#
    );
    assert_eq!(
        eval_err("*: amplification <= 2", &run(vec![])),
        r#"gate "*: amplification <= 2": the run has no configs to check"#
    );
}

#[test]
fn verdict_table_lists_every_check() {
    let r = two_configs();
    let mut r2 = r.clone();
    r2.configs[0].recovery_time_s = None;
    let v = evaluate(
        &[
            parse("aws-standard: amplification <= 1.3").unwrap(),
            parse("*: recovery_time_s < 10").unwrap(),
        ],
        &r2,
    )
    .unwrap();
    let t = verdict_table(&v);
    let expected = "\
GATE                                CONFIG        MEASURED               LIMIT   RESULT
----------------------------------  ------------  ---------------------  ------  ------
aws-standard: amplification <= 1.3  aws-standard  1.25                   <= 1.3  PASS
*: recovery_time_s < 10             aws-standard  null (never happened)  < 10    FAIL
*: recovery_time_s < 10             naive         4                      < 10    PASS
2 of 3 gate checks passed, 1 failed
";
    assert_eq!(t, expected);
}

// ---- --abort-on-fail ----

#[test]
fn only_growing_and_fixed_figures_may_stop_a_run_early() {
    let g = |t: &str| parse(&format!("*: {t} <= 1")).unwrap();
    for f in [
        "attempts",
        "retries",
        "budget_refusals",
        "downstream_arrivals",
        "failures",
        "dropped",
        "target_shed",
        "duplicate_executions",
        "peak_concurrency",
        "failures_by_reason.budget-refused",
        "layers.edge.retries",
        "layers.db.primary.attempts",
        "policy.max_attempts",
        "amplification_bound",
    ] {
        assert!(may_stop_early(&g(f)), "{f}");
    }
    for f in [
        "amplification",
        "latency_ms.p99",
        "peak_amplification_1s",
        "recovery_time_s",
        "success_share",
        "layers.edge.amplification",
        "failures_by_reason",
        "not_a_figure",
    ] {
        assert!(!may_stop_early(&g(f)), "{f}");
    }
}

/// A config summary in which every part of summary.json holds something: a layer, labels in
/// both count maps, nulls where "never happened" is possible.
fn every_part_filled() -> stormrig::metrics::ConfigSummary {
    let mut c = config("edge-client", 1.5, 800.0, 4);
    c.failures_by_reason.insert("budget-refused".into(), 4);
    c.attempts_by_outcome.insert("503".into(), 250);
    c.topology_bound = Some(64.0);
    c.budget = Some(stormrig::metrics::drain::BudgetDrain {
        kind: "aws-quota".into(),
        capacity: Some(500.0),
        thresholds: stormrig::metrics::drain::PerClass {
            transient: Some(0.215),
            throttling: Some(0.321),
            timeout: Some(0.215),
        },
        no_threshold_reasons: Default::default(),
        drain_start_s: Some(5.0),
        first_refusal_s: Some(6.0),
        empty_s: Some(7.0),
        refilled_s: Some(20.0),
        lowest_level_pct: Some(2.0),
        windows: Vec::new(),
    });
    c.verdict = Some(stormrig::metrics::verdict::Verdict {
        baseline: Some("no-retry".into()),
        retry_efficiency: Some(0.5),
        extra_load_pct: Some(20.0),
        fault_load_added_pct: Some(40.0),
        extra_successes: Some(12),
        sentence: String::new(),
    });
    let price = stormrig::scenario::provider::Price {
        prompt_micro_per_1k: 3_000,
        completion_micro_per_1k: 15_000,
    };
    let mut provider = stormrig::metrics::provider::ProviderStats::new("llm.a", Some(price));
    let tokens = stormrig::scenario::provider::Tokens {
        prompt: 1000,
        completion: 200,
    };
    provider.arrive(tokens, true);
    provider.serve(tokens);
    c.tokens = Some(stormrig::metrics::provider::TokenFigures::of(
        std::slice::from_ref(&provider),
    ));
    c.money = stormrig::metrics::provider::MoneyFigures::of(std::slice::from_ref(&provider));
    c.providers.push(provider);
    let mut counts = stormrig::metrics::ClassCounts {
        started: 10,
        attempts: 14,
        retries: 4,
        succeeded: 8,
        failed: 1,
        degraded: 1,
        ..Default::default()
    };
    counts.latency_us.record(1500).unwrap();
    c.classes.push(stormrig::metrics::ClassSummary::of(
        "tool.pay",
        0.25,
        &counts,
        14,
        Some(stormrig::metrics::target::ClassTokens {
            received: 2400,
            served: 1200,
        }),
    ));
    let policy = stormrig::policy::preset("no-retry").unwrap();
    c.class_policies
        .insert("tool.pay".into(), serde_json::to_value(policy).unwrap());
    c.layers.push(LayerSummary {
        name: "db.primary".into(),
        arrivals: 1200,
        attempts: 1500,
        retries: 300,
        budget_refusals: 2,
        peak_in_flight: 30,
        amplification: 1.25,
        cumulative_amplification: 1.5,
        max_attempts: 3,
    });
    c
}

/// Every number, boolean and null a gate can reach in a config's summary.json is listed in
/// the figure table, and every row of the table names something a summary holds: a new
/// figure cannot be gated, aborted on or diffed without its unit, direction and course.
#[test]
fn the_figure_table_lists_every_figure_of_a_summary() {
    let mut leaves = std::collections::BTreeSet::new();
    leaf_paths(&figures_of(&every_part_filled()), "", &mut leaves);
    let figure_leaves: Vec<&String> = leaves
        .iter()
        .filter(|p| !NOT_FIGURES.iter().any(|n| p.split('.').next() == Some(*n)))
        .collect();
    for path in &figure_leaves {
        assert!(
            figures::find(path).is_some(),
            "summary.json figure {path:?} is not in src/report/figures.rs: add it to FIGURES with its unit, better direction and course"
        );
    }
    for row in figures::FIGURES {
        assert!(
            figure_leaves
                .iter()
                .any(|p| figures::find(p).is_some_and(|f| f.path == row.path)),
            "FIGURES lists {:?}, which no summary holds",
            row.path
        );
    }
    // And the gates accept exactly those: one of each is checked before any load.
    for path in &figure_leaves {
        check_figure(&parse(&format!("*: {path} <= 1")).unwrap()).unwrap();
    }
}

#[test]
fn unlisted_figures_are_refused_before_any_load() {
    let e = check_figure(&parse("*: amplif <= 2").unwrap()).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"gate "*: amplif <= 2": unknown figure "amplif" (did you mean "amplification"?)"#
    );
    assert!(check_figure(&parse("*: latency_ms <= 2").unwrap()).is_err());
    assert!(check_figure(&parse("*: name <= 2").unwrap()).is_err());
    check_figure(&parse("*: failures_by_reason.anything-at-all <= 2").unwrap()).unwrap();
}

/// `--abort-on-fail` judges a config's summary so far: gates on counts the old snapshot
/// never carried (shed requests, failure reasons, layers, settings) stop a run too.
#[test]
fn broken_early_judges_every_growing_figure() {
    let c = every_part_filled();
    let gs = |texts: &[&str]| -> Vec<Gate> { texts.iter().map(|t| parse(t).unwrap()).collect() };
    for broken in [
        "*: target_shed <= 9",
        "*: failures_by_reason.budget-refused < 4",
        "*: failures_by_reason.deadline-labels-never-seen == 0",
        "edge-client: layers.db.primary.retries <= 299",
        "*: policy.max_attempts >= 4",
    ] {
        let expect = !broken.contains("never-seen");
        assert_eq!(broken_early(&gs(&[broken]), &c), expect, "{broken}");
    }
    for holds in [
        "*: target_shed <= 10",
        // A lower bound on a count may still be reached.
        "*: failures_by_reason.budget-refused >= 100",
        // Ratios may still come down.
        "*: amplification <= 1.0",
        // Another config.
        "other: target_shed <= 0",
    ] {
        assert!(!broken_early(&gs(&[holds]), &c), "{holds}");
    }
    assert_eq!(
        figures::find("target_shed").map(|f| f.course),
        Some(Course::OnlyGrows)
    );
}

#[test]
fn can_no_longer_pass_only_for_upper_bounds_on_counts() {
    let g = |t: &str| parse(t).unwrap();
    assert!(!can_no_longer_pass(&g("*: retries < 100"), 99.0));
    assert!(can_no_longer_pass(&g("*: retries < 100"), 100.0));
    assert!(!can_no_longer_pass(&g("*: retries <= 100"), 100.0));
    assert!(can_no_longer_pass(&g("*: retries <= 100"), 101.0));
    assert!(!can_no_longer_pass(&g("*: budget_refusals == 0"), 0.0));
    assert!(can_no_longer_pass(&g("*: budget_refusals == 0"), 1.0));
    assert!(!can_no_longer_pass(&g("*: retries > 100"), 1e9));
    assert!(!can_no_longer_pass(&g("*: retries >= 100"), 1e9));
    // Not a monotone count: never judged early.
    assert!(!can_no_longer_pass(&g("*: amplification <= 1.3"), 9.0));
}

// ---- footguns: %, short forms, cut-short runs ----

#[test]
fn percent_only_on_ratios_and_shares() {
    assert_eq!(parse("*: amplification <= 130%").unwrap().limit, 1.3);
    assert_eq!(parse("*: success_share >= 99.5%").unwrap().limit, 0.995);
    for (gate, unit) in [
        ("*: budget_refusals < 10%", "a count of attempts"),
        (
            "*: failures_by_reason.budget-refused < 10%",
            "a count of requests",
        ),
        ("*: latency_ms.p99 < 10%", "milliseconds"),
        ("*: recovery_time_s <= 50%", "seconds"),
    ] {
        let e = err(gate);
        assert!(e.contains("`%` applies only to ratios and shares"), "{e}");
        assert!(e.contains(unit), "{gate}: {e}");
    }
    // Without % the same count gate is fine.
    assert_eq!(parse("*: budget_refusals < 10").unwrap().limit, 10.0);
}

#[test]
fn short_forms_name_their_figures_and_tails_are_suggested() {
    let g = parse("*: p99 < 800").unwrap();
    assert_eq!(g.figure, "latency_ms.p99");
    assert_eq!(g.text, "*: p99 < 800");
    assert!(check_figure(&g).is_ok());
    assert_eq!(parse("*: p99.9 < 900").unwrap().figure, "latency_ms.p999");
    assert_eq!(parse("*: amp <= 1.5").unwrap().figure, "amplification");
    let e = check_figure(&parse("*: max < 900").unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("did you mean \"latency_ms.max\""), "{e}");
    let v = evaluate(&[parse("naive: p99 < 1000").unwrap()], &two_configs()).unwrap();
    assert_eq!(
        (v[0].figure.as_str(), v[0].measured),
        ("latency_ms.p99", Some(900.0))
    );
}

#[test]
fn a_cut_short_run_never_passes_a_gate() {
    let mut r = two_configs();
    r.partial = true;
    let gates = [
        // Would pass: incomplete.
        parse("*: amplification <= 3").unwrap(),
        // A count already above its upper bound: failed for good.
        parse("aws-standard: budget_refusals <= 2").unwrap(),
        // A lower bound more of the run could still meet: incomplete.
        parse("naive: budget_refusals >= 1").unwrap(),
    ];
    let v = evaluate(&gates, &r).unwrap();
    let labels: Vec<&str> = v.iter().map(|v| v.label()).collect();
    assert_eq!(labels, ["INCOMPLETE", "INCOMPLETE", "FAIL", "INCOMPLETE"]);
    assert!(v.iter().all(|v| !v.passed));
    assert!(!all_passed(&v));
    let t = verdict_table(&v);
    assert!(
        t.contains("0 of 4 gate checks passed, 1 failed, 3 incomplete"),
        "{t}"
    );
    // The same run, whole: passes and fails as measured.
    r.partial = false;
    let v = evaluate(&gates, &r).unwrap();
    let labels: Vec<&str> = v.iter().map(|v| v.label()).collect();
    assert_eq!(labels, ["PASS", "PASS", "FAIL", "FAIL"]);
}
