//! Bad scenario files are refused with one line naming the file, the line and the field.

use std::path::{Path, PathBuf};

use stormrig::scenario::{load, locate, parse, ErrorKind, ScenarioError};

const GOOD: &str = r#"name = "bad"
duration = "10s"

[load]
kind = "constant"
rate = 100.0

[target]
builtin = "default"

[[faults]]
kind = "status"
status = 503
at = "2s"
for = "5s"

[[faults]]
kind = "reset"
probability = 0.5
at = "1s"
for = "2s"

[[configs]]
preset = "naive"
"#;

const FILE: &str = "scenarios/bad.toml";

/// GOOD with line `line` (1-based) replaced by `with`.
fn edit(line: usize, with: &str) -> String {
    GOOD.lines()
        .enumerate()
        .map(|(i, l)| if i + 1 == line { with } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

fn refused(text: &str) -> ScenarioError {
    match parse(Path::new(FILE), text) {
        Ok(s) => panic!("accepted: {s:?}"),
        Err(e) => e,
    }
}

/// Checks file, line, field and that Display is exactly one line of the form
/// `file:line: field: message`.
fn assert_at(e: &ScenarioError, line: usize, field: Option<&str>) {
    let shown = e.to_string();
    assert!(!shown.contains('\n'), "not one line: {shown}");
    assert_eq!(e.file(), Path::new(FILE), "{shown}");
    assert_eq!(e.line(), Some(line), "{shown}");
    assert_eq!(e.field(), field, "{shown}");
    let prefix = match field {
        Some(f) => format!("{FILE}:{line}: {f}: "),
        None => format!("{FILE}:{line}: "),
    };
    assert!(
        shown.starts_with(&prefix),
        "{shown:?} should start with {prefix:?}"
    );
}

#[test]
fn the_good_base_loads() {
    let s = parse(Path::new(FILE), GOOD).unwrap();
    assert_eq!(s.faults.len(), 2);
    assert_eq!(s.configs[0].name, "naive");
    assert_eq!(s.configs[0].line, 23);
}

#[test]
fn syntax_error() {
    let e = refused(&edit(6, "rate = = 100.0"));
    assert_at(&e, 6, None);
    assert!(matches!(e.kind(), ErrorKind::Syntax(_)));
    assert!(e.to_string().contains("TOML syntax error"), "{e}");
}

#[test]
fn unknown_key_suggests_the_known_one() {
    let e = refused(&edit(2, r#"durration = "10s""#));
    assert_at(&e, 2, Some("durration"));
    assert!(e.to_string().contains("did you mean `duration`?"), "{e}");
    match e.kind() {
        ErrorKind::UnknownKey {
            key,
            suggestion,
            expected,
        } => {
            assert_eq!(key, "durration");
            assert_eq!(suggestion.as_deref(), Some("duration"));
            assert!(expected.iter().any(|k| k == "faults"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_nested_key_names_its_table() {
    let e = refused(&edit(19, "probabilty = 0.5"));
    assert_at(&e, 19, Some("faults[1].probabilty"));
    assert!(e.to_string().contains("did you mean `probability`?"), "{e}");
}

#[test]
fn negative_rate() {
    let e = refused(&edit(6, "rate = -5.0"));
    assert_at(&e, 6, Some("load.rate"));
    assert_eq!(
        e.to_string(),
        "scenarios/bad.toml:6: load.rate: -5 is outside (0, ∞); a rate is arrivals per second"
    );
}

#[test]
fn zero_connections() {
    let e = refused(&edit(6, "rate = 100.0\nmax_connections = 0"));
    assert_at(&e, 7, Some("load.max_connections"));
}

#[test]
fn probability_above_one() {
    let e = refused(&edit(19, "probability = 1.5"));
    assert_eq!(
        e.to_string(),
        "scenarios/bad.toml:19: faults[1].probability: 1.5 is outside [0, 1]"
    );
    assert_at(&e, 19, Some("faults[1].probability"));
}

#[test]
fn fault_outside_the_duration() {
    let e = refused(&edit(15, r#"for = "9s""#));
    assert_at(&e, 15, Some("faults[0].for"));
    assert!(
        e.to_string().contains("after the scenario's duration 10s"),
        "{e}"
    );
    let e = refused(&edit(14, r#"at = "12s""#));
    assert_at(&e, 14, Some("faults[0].at"));
}

#[test]
fn unreadable_file() {
    let path = Path::new("scenarios/does-not-exist.toml");
    let e = load(path).unwrap_err();
    assert_eq!(e.file(), path);
    assert_eq!(e.line(), None);
    assert_eq!(e.field(), None);
    assert!(matches!(e.kind(), ErrorKind::Unreadable(_)));
    assert!(
        e.to_string()
            .starts_with("scenarios/does-not-exist.toml: cannot read the file: "),
        "{e}"
    );
    assert!(std::error::Error::source(&e).is_some());
}

#[test]
fn load_kind_typo() {
    let e = refused(&edit(5, r#"kind = "poison""#));
    assert_at(&e, 5, Some("load.kind"));
    assert!(e.to_string().contains("did you mean `poisson`?"), "{e}");
}

#[test]
fn fault_kind_typo() {
    let e = refused(&edit(18, r#"kind = "rest""#));
    assert_at(&e, 18, Some("faults[1].kind"));
    assert!(e.to_string().contains("did you mean `reset`?"), "{e}");
}

#[test]
fn wrong_type_names_the_field() {
    let e = refused(&edit(6, r#"rate = "fast""#));
    assert_at(&e, 6, Some("load.rate"));
    assert!(matches!(e.kind(), ErrorKind::WrongType(_)), "{e}");
}

#[test]
fn bare_number_duration_is_refused_at_its_field() {
    let e = refused(&edit(2, "duration = \"10\""));
    assert_at(&e, 2, Some("duration"));
    assert!(e.to_string().contains("no unit"), "{e}");
}

#[test]
fn missing_required_key() {
    let e = refused(&edit(2, ""));
    assert_eq!(e.field(), Some("duration"), "{e}");
    let e = refused(&edit(13, ""));
    assert_at(&e, 11, Some("faults[0].status"));
}

#[test]
fn ramp_refuses_rate() {
    let text = edit(5, r#"kind = "ramp""#);
    let e = refused(&text);
    assert_at(&e, 6, Some("load.rate"));
    assert!(
        e.to_string()
            .contains("ramp takes `from` and `to`, not `rate`"),
        "{e}"
    );
}

#[test]
fn status_fault_refuses_fields_it_does_not_use() {
    let e = refused(&edit(13, "concurrency = 4"));
    assert_at(&e, 13, Some("faults[0].concurrency"));
    let e = refused(&edit(13, "status = 700"));
    assert_at(&e, 13, Some("faults[0].status"));
    assert!(e.to_string().contains("700 is outside [100, 599]"), "{e}");
}

#[test]
fn bad_name_and_duration() {
    let e = refused(&edit(1, r#"name = "a/b""#));
    assert_at(&e, 1, Some("name"));
    let e = refused(&edit(2, r#"duration = "25h""#));
    assert_at(&e, 2, Some("duration"));
    assert!(e.to_string().contains("outside (0s, 24h]"), "{e}");
}

#[test]
fn duplicate_config_names() {
    let text = format!("{GOOD}\n[[configs]]\npreset = \"naive\"\n");
    let e = refused(&text);
    assert_at(&e, 27, Some("configs[1].preset"));
    assert!(e.to_string().contains("unique"), "{e}");
}

#[test]
fn url_targets() {
    let text = edit(9, r#"url = "http://127.0.0.1:8080/api""#);
    let s = parse(Path::new(FILE), &text).unwrap();
    match s.target {
        stormrig::scenario::Target::Url { host, port, .. } => {
            assert_eq!((host.as_str(), port), ("127.0.0.1", 8080));
        }
        other => panic!("{other:?}"),
    }
    let e = refused(&edit(9, r#"url = "http://example.com/""#));
    assert_at(&e, 9, Some("target.url"));
    assert!(e.to_string().contains("allow_remote"), "{e}");
    let text = edit(9, "builtin = \"default\"\nurl = \"http://127.0.0.1:1\"");
    let e = refused(&text);
    assert_at(&e, 10, Some("target.url"));
}

#[test]
fn inline_service_overlays_the_named_model() {
    let text = edit(9, "builtin = \"default\"\nservice = { concurrency = 3 }");
    let s = parse(Path::new(FILE), &text).unwrap();
    match s.target {
        stormrig::scenario::Target::Builtin { name, model, .. } => {
            assert_eq!(name, "default");
            assert_eq!(model.concurrency, 3);
            assert_eq!(model.queue, 256, "from targets/default.toml");
        }
        other => panic!("{other:?}"),
    }
    let text = edit(
        9,
        "builtin = \"default\"\nservice = { service_time = { kind = \"log-normal\", median = \"5ms\", p99 = \"1ms\" } }",
    );
    let e = refused(&text);
    assert_at(&e, 10, Some("target.service.service_time.p99"));
    let text = edit(
        9,
        "builtin = \"default\"\nservice = { service_time = { kind = \"lognormal\", median = \"5ms\", p99 = \"1ms\" } }",
    );
    let e = refused(&text);
    assert_eq!(e.line(), Some(10), "{e}");
    assert!(e.to_string().contains("did you mean `log-normal`?"), "{e}");
}

/// A scenario in a temporary project: `<dir>/scenarios/s.toml` and `<dir>/targets/*.toml`.
fn project(name: &str, target: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "stormrig-scenario-test-{name}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(dir.join("scenarios")).unwrap();
    std::fs::create_dir_all(dir.join("targets")).unwrap();
    std::fs::write(dir.join("targets/t.toml"), target).unwrap();
    let path = dir.join("scenarios/s.toml");
    std::fs::write(&path, edit(9, r#"builtin = "t""#)).unwrap();
    path
}

#[test]
fn named_target_file_is_found_next_to_the_scenarios_folder() {
    let path = project("ok", "[service]\nconcurrency = 5\n");
    let s = load(&path).unwrap();
    match s.target {
        stormrig::scenario::Target::Builtin { model, .. } => assert_eq!(model.concurrency, 5),
        other => panic!("{other:?}"),
    }
}

#[test]
fn errors_in_a_target_file_name_that_file() {
    let path = project("bad", "description = \"x\"\n\n[service]\nconcurrency = 0\n");
    let e = load(&path).unwrap_err();
    let target = path
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("targets/t.toml");
    assert_eq!(e.file(), target, "{e}");
    assert_eq!(e.line(), Some(4), "{e}");
    assert_eq!(e.field(), Some("service.concurrency"), "{e}");
}

#[test]
fn missing_target_file_is_refused_at_builtin() {
    let e = refused(&edit(9, r#"builtin = "nope""#));
    assert_at(&e, 9, Some("target.builtin"));
    assert!(e.to_string().contains("no target `nope`"), "{e}");
}

#[test]
fn locate_finds_config_fields() {
    let text = format!(
        "{GOOD}\n[[configs]]\nname = \"x\"\npreset = \"aws-standard\"\nbackoff = {{ kind = \"exponential\", cap = \"1s\" }}\n"
    );
    assert_eq!(locate(&text, "configs[1]"), Some(26));
    assert_eq!(locate(&text, "configs[1].backoff.cap"), Some(29));
    // Not written: the nearest written parent.
    assert_eq!(locate(&text, "configs[1].jitter.kind"), Some(26));
    assert_eq!(locate(&text, "faults[1].probability"), Some(19));
}

#[test]
fn connection_level_faults_load_with_their_fields() {
    let text = edit(18, "kind = \"slicer\"\nslice_bytes = 16\ndelay = \"10ms\"");
    let s = parse(Path::new(FILE), &text).unwrap();
    assert_eq!(
        s.faults[1].kind,
        stormrig::scenario::FaultKind::Slicer {
            slice_bytes: 16,
            delay: std::time::Duration::from_millis(10)
        }
    );
    let text = edit(18, "kind = \"slow_close\"\ndelay = \"2s\"");
    let s = parse(Path::new(FILE), &text).unwrap();
    assert_eq!(s.faults[1].kind.label(), "slow close");
}

#[test]
fn connection_level_faults_refuse_bad_values_naming_the_field() {
    let e = refused(&edit(18, "kind = \"bandwidth\"\nbytes_per_s = 0"));
    assert_at(&e, 19, Some("faults[1].bytes_per_s"));
    let e = refused(&edit(18, "kind = \"bandwidth\""));
    assert!(
        e.to_string().contains("faults[1].bytes_per_s: is missing"),
        "{e}"
    );
    let e = refused(&edit(
        18,
        "kind = \"slicer\"\nslice_bytes = 4\ndelay = \"2h\"",
    ));
    assert_at(&e, 20, Some("faults[1].delay"));
    assert!(e.to_string().contains("above the limit of 3600s"), "{e}");
    let e = refused(&edit(
        18,
        "kind = \"slicer\"\nslice_bytes = 2000000\ndelay = \"1ms\"",
    ));
    assert_at(&e, 19, Some("faults[1].slice_bytes"));
    let e = refused(&edit(18, "kind = \"slow-close\"\ndelay = \"0s\""));
    assert_at(&e, 19, Some("faults[1].delay"));
    // A field of another kind: the kind takes only its own.
    let e = refused(&edit(12, "kind = \"slow-close\"\ndelay = \"1s\""));
    assert_at(&e, 14, Some("faults[0].status"));
    assert!(e.to_string().contains("takes `delay`"), "{e}");
}
