//! Request classes: a load mixing health checks, inference calls and a payment tool call.
//! Every request's class comes from the seed and its id alone, so both engines and every
//! config send the same classes; each class runs under its own policy where the config
//! gives it one; the target counts each class's arrivals itself, and they equal the
//! client's attempts class by class, live and simulated.

use stormrig::metrics::{ClassSummary, ConfigSummary, RunResult};
use stormrig::plan::Plan;
use stormrig::scenario::classes::ClassMix;
use stormrig::sim::{self, SimOptions};

use crate::support;

/// 100 requests in the first second: 30 % health checks that always get 503, 50 %
/// inference calls that always succeed, 20 % payment calls (declared not idempotent) that
/// always get 503. Retries are immediate, so every count is fixed by the policies alone.
const MIX: &str = r#"
name = "class-mix"
seed = 11
duration = "2s"
drain = "3s"

[load]
kind = "steps"
steps = [{ at = "0s", rate = 100.0 }, { at = "1s", rate = 0.0 }]
method = "POST"

[[load.classes]]
name = "health"
weight = 3
method = "GET"
path = "/health"

[[load.classes]]
name = "inference"
weight = 5
path = "/providers/llm/v1/chat/completions"
idempotent = true
prompt_tokens = { min = 100, max = 900 }
completion_tokens = 40

[[load.classes]]
name = "payment"
weight = 2
path = "/tools/pay"
idempotent = false
headers = { "x-stormrig-amount" = "7" }

[target]
builtin = "default"

[[provider]]
name = "llm"
time_to_first_token = "1ms"
time_per_output_token = "0s"

[[faults]]
kind = "status"
status = 503
at = "0s"
for = "2s"
path = "/health"

[[faults]]
kind = "status"
status = 503
at = "0s"
for = "2s"
path = "/tools"

# One policy for every class: four attempts, POSTs retried without a key.
[[configs]]
name = "one-policy"
preset = "naive"
retry_non_idempotent = true

# Ten attempts for health checks (the config's table with one field changed), none for
# payments (a preset of their own), the config's four for inference.
[[configs]]
name = "per-class"
preset = "naive"
retry_non_idempotent = true
classes.health = { max_attempts = 10 }
classes.payment = { preset = "no-retry" }
"#;

fn class<'a>(c: &'a ConfigSummary, name: &str) -> &'a ClassSummary {
    c.classes
        .iter()
        .find(|k| k.name == name)
        .unwrap_or_else(|| panic!("{}: no class {name}", c.name))
}

/// The number of requests of each class the seeded mix gives the plan's 100 ids.
fn drawn(plan: &Plan) -> Vec<u64> {
    let classes = &plan.scenario.load.classes;
    let mix = ClassMix::new(classes);
    let mut n = vec![0u64; classes.len()];
    for id in 0..100 {
        n[mix.class_of(plan.scenario.seed, id)] += 1;
    }
    n
}

fn check_mix(run: &RunResult, plan: &Plan, engine: &str) {
    let n = drawn(plan);
    assert!(
        n.iter().all(|&k| k > 5),
        "{engine}: every class drawn: {n:?}"
    );
    for c in &run.configs {
        assert_eq!(c.upstream_requests, 100, "{engine} {}", c.name);
        let mut arrivals = 0;
        for (i, k) in c.classes.iter().enumerate() {
            assert_eq!(
                k.upstream_requests, n[i],
                "{engine} {} {}: the same requests in every config",
                c.name, k.name
            );
            assert_eq!(
                k.downstream_arrivals, k.attempts,
                "{engine} {} {}: the target counted what the client sent",
                c.name, k.name
            );
            arrivals += k.downstream_arrivals;
        }
        assert_eq!(arrivals, c.downstream_arrivals, "{engine} {}", c.name);
        assert_eq!(arrivals, c.attempts, "{engine} {}", c.name);
        // The provider is reached by inference calls alone.
        assert_eq!(
            c.providers[0].arrivals,
            class(c, "inference").attempts,
            "{engine} {}",
            c.name
        );
    }
    let one = support::config_named(&run.configs, "one-policy");
    let per = support::config_named(&run.configs, "per-class");
    let (health, inference, payment) = (n[0], n[1], n[2]);
    assert_eq!(class(one, "health").attempts, 4 * health, "{engine}");
    assert_eq!(class(one, "payment").attempts, 4 * payment, "{engine}");
    assert_eq!(class(one, "inference").attempts, inference, "{engine}");
    assert_eq!(class(per, "health").attempts, 10 * health, "{engine}");
    assert_eq!(class(per, "payment").attempts, payment, "{engine}");
    assert_eq!(class(per, "inference").attempts, inference, "{engine}");
    for c in [one, per] {
        assert_eq!(class(c, "health").successes, 0, "{engine}");
        assert_eq!(class(c, "inference").successes, inference, "{engine}");
        assert_eq!(class(c, "inference").success_share, 1.0, "{engine}");
    }
    assert!(per.class_policies.contains_key("health"));
    assert!(per.class_policies.contains_key("payment"));
    assert!(!per.class_policies.contains_key("inference"));
}

/// Inference calls draw their prompt tokens per request: the provider counts exactly the
/// tokens the client's draws say, served ones and received ones alike.
fn check_tokens(run: &RunResult, plan: &Plan, engine: &str) {
    let classes = &plan.scenario.load.classes;
    let mix = ClassMix::new(classes);
    let seed = plan.scenario.seed;
    let want: u64 = (0..100)
        .filter(|&id| mix.class_of(seed, id) == 1)
        .map(|id| {
            let (p, c) = classes[1].tokens(seed, id);
            p.unwrap() + c.unwrap()
        })
        .sum();
    for c in &run.configs {
        let p = &c.providers[0];
        assert_eq!(p.tokens_received, want, "{engine} {}", c.name);
        assert_eq!(p.tokens_served, want, "{engine} {}", c.name);
        // The providers charge them to the class that sent them, and to no other.
        let t = |name: &str| class(c, name).tokens.expect("a scenario with providers");
        assert_eq!(
            (t("inference").received, t("inference").served),
            (want, want)
        );
        for other in ["health", "payment"] {
            assert_eq!(
                (t(other).received, t(other).served),
                (0, 0),
                "{engine} {other}"
            );
        }
    }
}

#[test]
fn each_class_runs_under_its_policy_and_is_counted_by_the_target_in_both_engines() {
    let plan = support::plan_of(MIX);
    let sim = sim::run(&plan, &SimOptions::default()).unwrap().result;
    check_mix(&sim, &plan, "sim");
    check_tokens(&sim, &plan, "sim");
    let live = support::run_live(&plan, false).result;
    check_mix(&live, &plan, "live");
    check_tokens(&live, &plan, "live");
    // Payments are writes the target executes: one policy retried them into duplicates.
    let dup =
        |r: &RunResult, name: &str| support::config_named(&r.configs, name).duplicate_executions;
    for (r, engine) in [(&sim, "sim"), (&live, "live")] {
        assert_eq!(dup(r, "per-class"), 0, "{engine}");
        assert_eq!(dup(r, "one-policy"), 0, "{engine}: a 503 executes nothing");
    }
}

#[test]
fn a_declared_idempotent_class_is_retried_without_side_effects_and_a_payment_is_not() {
    // The shipped agent scenario: one SDK client for everything duplicates payments under
    // lost responses; a policy per class (the payment keyed) never does.
    let path = support::repo_root().join("scenarios/agent-tool-calls.toml");
    let plan = stormrig::plan::load(&path).unwrap();
    let run = sim::run(&plan, &SimOptions::default()).unwrap().result;
    let c = |n: &str| support::config_named(&run.configs, n);
    assert!(c("sdk-defaults").duplicate_executions > 0);
    assert!(c("sdk-defaults").idempotency.extra_debited > 0);
    assert_eq!(c("per-class").duplicate_executions, 0);
    assert_eq!(c("per-class").idempotency.extra_debited, 0);
    assert!(
        c("per-class").idempotency.dedup_replays > 0,
        "the keyed retries were replayed"
    );
    // Inference calls are declared idempotent: retried, never counted as side effects.
    assert!(class(c("sdk-defaults"), "inference").retries > 0);
    assert_eq!(c("no-retry").duplicate_executions, 0);
    assert!(
        class(c("per-class"), "health").success_share
            >= class(c("no-retry"), "health").success_share
    );
}

fn refusal(text: &str) -> String {
    let path = std::path::Path::new("tests/inline.toml");
    match stormrig::scenario::parse(path, text) {
        Err(e) => e.to_string(),
        Ok(sc) => match stormrig::plan::build(sc, text) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted:\n{text}"),
        },
    }
}

#[test]
fn bad_classes_are_refused_naming_file_line_and_field() {
    let cases: &[(&str, &str, &str)] = &[
        ("weight = 3", "weight = 0", "load.classes[0].weight"),
        (
            "name = \"payment\"",
            "name = \"health\"",
            "load.classes[2].name",
        ),
        (
            "completion_tokens = 40",
            "completion_tokens = { min = 50, max = 40 }",
            "load.classes[1].completion_tokens",
        ),
        (
            "method = \"GET\"",
            "method = \"G ET\"",
            "load.classes[0].method",
        ),
        (
            "path = \"/tools/pay\"",
            "path = \"tools/pay\"",
            "load.classes[2].path",
        ),
        (
            "classes.health = { max_attempts = 10 }",
            "classes.helth = { max_attempts = 10 }",
            "configs[1].classes.helth",
        ),
        (
            "classes.health = { max_attempts = 10 }",
            "classes.health = { max_attempts = 0 }",
            "configs[1].classes.health",
        ),
        (
            "headers = { \"x-stormrig-amount\" = \"7\" }",
            "headers = { \"x-stormrig-request\" = \"7\" }",
            "load.classes[2].headers",
        ),
    ];
    for (from, to, field) in cases {
        assert!(MIX.contains(from), "{from}");
        let text = MIX.replacen(from, to, 1);
        let msg = refusal(&text);
        // The line the edit is on.
        let line = MIX[..MIX.find(from).unwrap()].matches('\n').count() + 1;
        assert!(msg.starts_with("tests/inline.toml:"), "{msg}");
        assert!(msg.contains(field), "{to}: {msg}");
        assert!(
            msg.starts_with(&format!("tests/inline.toml:{line}:")),
            "{to}: line {line}: {msg}"
        );
    }
    let typo = refusal(&MIX.replacen("classes.health =", "classes.helth =", 1));
    assert!(typo.contains("did you mean \"health\""), "{typo}");
    let no_classes = refusal(&format!(
        "{}\n[[configs]]\nname = \"x\"\npreset = \"naive\"\nclasses.a = {{ max_attempts = 2 }}\n",
        support::three_seconds_of_503("plain", "aws")
    ));
    assert!(
        no_classes.contains("has no [[load.classes]]"),
        "{no_classes}"
    );
    let layered = refusal(&format!("{MIX}\n[[topology]]\nname = \"edge\"\n"));
    assert!(layered.contains("load.classes"), "{layered}");
}
