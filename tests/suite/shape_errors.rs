//! A value of the wrong shape is refused at its full dotted path, at its line, in the words
//! of the file's author: never serde's vocabulary ("enum", "variant", "internally tagged")
//! or a Rust type name.

use std::path::Path;

use stormrig::plan;
use stormrig::scenario::parse;

const FILE: &str = "scenarios/shape.toml";

/// Written in a person's words, never serde's.
const FORBIDDEN: [&str; 8] = [
    "enum",
    "variant",
    "internally tagged",
    "Dist",
    "struct",
    "u32",
    "f64",
    "invalid type",
];

const HEAD: &str = r#"name = "shape"
duration = "10s"

[load]
kind = "constant"
rate = 100.0

[target]
builtin = "default"
"#;

/// The refusal of `HEAD` + `tail`, from the scenario loader or, for a config table, the
/// planner; as its one line.
fn refusal(tail: &str) -> String {
    let text = format!("{HEAD}{tail}");
    let shown = match parse(Path::new(FILE), &text) {
        Err(e) => e.to_string(),
        Ok(sc) => match plan::build(sc, &text) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted:\n{text}"),
        },
    };
    for word in FORBIDDEN {
        assert!(!shown.contains(word), "{word:?} in {shown}");
    }
    shown
}

fn assert_starts(shown: &str, line: usize, field: &str) {
    let prefix = format!("{FILE}:{line}: {field}: ");
    assert!(
        shown.starts_with(&prefix),
        "{shown:?} should start with {prefix:?}"
    );
}

#[test]
fn a_distribution_written_as_a_duration_says_what_a_distribution_is() {
    let shown = refusal(
        "\n[[faults]]\nkind = \"latency\"\nadd = \"800ms\"\n\n[[configs]]\npreset = \"naive\"\n",
    );
    assert_starts(&shown, 13, "faults[0].add");
    assert!(shown.contains("kind = \"constant\""), "{shown}");
}

#[test]
fn an_unknown_key_inside_a_config_table_names_the_table() {
    let shown = refusal(
        "\n[[configs]]\npreset = \"naive\"\n\n[[configs]]\nname = \"b\"\npreset = \"naive\"\n\n\
         [[configs]]\nname = \"c\"\npreset = \"naive\"\n\
         backoff = { kind = \"exponential\", initial = \"1s\" }\n",
    );
    assert_starts(&shown, 21, "configs[2].backoff.initial");
    assert!(shown.contains("unknown key `initial`"), "{shown}");
}

#[test]
fn a_missing_kind_is_the_kind_field() {
    let shown = refusal("\n[[configs]]\npreset = \"naive\"\nbackoff = { base = \"1s\" }\n");
    assert_starts(&shown, 13, "configs[0].backoff.kind");
    assert!(shown.contains("is missing"), "{shown}");
}

#[test]
fn an_unknown_budget_kind_lists_the_kinds_with_a_did_you_mean() {
    let cfg =
        "\n[[configs]]\npreset = \"naive\"\n\n[[configs]]\nname = \"b\"\npreset = \"naive\"\n";
    let shown = refusal(&format!("{cfg}budget = {{ kind = \"token-bucket\" }}\n"));
    assert_starts(&shown, 17, "configs[1].budget.kind");
    assert!(shown.contains("unknown kind `token-bucket`"), "{shown}");
    assert!(
        shown.contains("aws-quota") && shown.contains("ratio"),
        "{shown}"
    );
    let shown = refusal(&format!("{cfg}budget = {{ kind = \"ration\" }}\n"));
    assert!(shown.contains("did you mean `ratio`?"), "{shown}");
}

#[test]
fn a_missing_budget_field_names_it() {
    let shown = refusal(
        "\n[[configs]]\npreset = \"naive\"\n\n[[configs]]\nname = \"b\"\npreset = \"naive\"\n\
         budget = { kind = \"aws-quota\", capacity = 500, throttling_cost = 5, \
         timeout_cost = 14, success_increment = 1 }\n",
    );
    assert_starts(&shown, 17, "configs[1].budget.transient_cost");
    assert!(shown.contains("is missing"), "{shown}");
}

#[test]
fn a_bare_number_for_a_duration_says_durations_need_a_unit() {
    let shown = refusal(
        "\n[[faults]]\nkind = \"status\"\nstatus = 503\nat = 10\n\n[[configs]]\npreset = \"naive\"\n",
    );
    assert_starts(&shown, 14, "faults[0].at");
    assert!(
        shown.contains("the number 10") && shown.contains("\"10s\""),
        "{shown}"
    );
}

#[test]
fn a_bad_duration_in_a_config_names_the_field_not_the_table() {
    let shown = refusal("\n[[configs]]\npreset = \"naive\"\nper_try_timeout = \"1 sec\"\n");
    assert_starts(&shown, 13, "configs[0].per_try_timeout");
    assert!(
        shown.contains("\"1 sec\"") && shown.contains("unit"),
        "{shown}"
    );
}

#[test]
fn a_plain_choice_inside_a_kind_table_is_named_itself() {
    let shown = refusal(
        "\n[[configs]]\npreset = \"naive\"\nbudget = { kind = \"ratio\", ratio = 0.1, deposit = \"bogus\" }\n",
    );
    assert_starts(&shown, 13, "configs[0].budget.deposit");
    assert!(shown.contains("request, success"), "{shown}");
}

#[test]
fn the_control_api_refuses_in_the_same_words() {
    use stormrig::scenario::FaultSection;
    let body = serde_json::json!({ "kind": "latency", "add": "800ms", "at": "0s", "for": "1s" });
    let e = stormrig::scenario::shape::from_json::<FaultSection>(body).unwrap_err();
    assert!(e.starts_with("add: "), "{e}");
    assert!(e.contains("kind = \"constant\""), "{e}");
    for word in FORBIDDEN {
        assert!(!e.contains(word), "{word:?} in {e}");
    }
}

#[test]
fn a_control_byte_in_a_comment_gives_its_position_and_reason() {
    let text = format!("# a comment \u{1} here\n{HEAD}");
    let e = parse(Path::new(FILE), &text).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{FILE}:1: ")), "{e}");
    assert!(e.contains("column 13") && e.contains("U+0001"), "{e}");
}
