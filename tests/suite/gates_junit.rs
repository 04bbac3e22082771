//! junit.xml of a run with a failing gate, read back with quick-xml.

use std::collections::HashMap;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;
use stormrig::report::{gates, junit};

use crate::support;
use stormrig::metrics::RunResult;
use support::{config, run};

fn attrs(e: &BytesStart<'_>) -> HashMap<String, String> {
    e.attributes()
        .map(|a| {
            let a = a.unwrap();
            (
                String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                a.unescape_value().unwrap().into_owned(),
            )
        })
        .collect()
}

/// (testsuite attributes, testcases as (attributes, failure attributes, failure text)).
type Case = (
    HashMap<String, String>,
    Option<HashMap<String, String>>,
    String,
);

fn read(xml: &str) -> (HashMap<String, String>, Vec<Case>) {
    let mut r = Reader::from_str(xml);
    let mut suite = HashMap::new();
    let mut cases: Vec<Case> = Vec::new();
    let mut in_failure = false;
    let mut roots = 0;
    loop {
        match r.read_event().unwrap() {
            Event::Start(e) | Event::Empty(e) if e.name().as_ref() == b"testsuites" => {
                roots += 1;
            }
            Event::Start(e) if e.name().as_ref() == b"testsuite" => suite = attrs(&e),
            Event::Start(e) | Event::Empty(e) if e.name().as_ref() == b"testcase" => {
                cases.push((attrs(&e), None, String::new()));
            }
            Event::Start(e) if e.name().as_ref() == b"failure" => {
                cases.last_mut().unwrap().1 = Some(attrs(&e));
                in_failure = true;
            }
            Event::Text(t) if in_failure => {
                cases.last_mut().unwrap().2 = t.unescape().unwrap().into_owned();
            }
            Event::End(e) if e.name().as_ref() == b"failure" => in_failure = false,
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(roots, 1, "one <testsuites> root");
    (suite, cases)
}

fn gated_run() -> RunResult {
    let mut r = run(vec![
        config("aws-standard", 1.25, 700.0, 3),
        config("naive <&> \"quoted\"", 2.5, 900.0, 0),
    ]);
    let gs = gates::parse_all(&["*: amplification <= 1.3", "*: latency_ms.p99 < 800"]).unwrap();
    r.gates = gates::evaluate(&gs, &r).unwrap();
    r
}

#[test]
fn failing_gate_is_a_failed_testcase() {
    let r = gated_run();
    let xml = junit::render(&r);
    let (suite, cases) = read(&xml);
    assert_eq!(suite["name"], "stormrig.brownout");
    assert_eq!(suite["tests"], "4");
    assert_eq!(suite["failures"], "2");
    assert_eq!(suite["errors"], "0");
    assert_eq!(cases.len(), 4);

    let failed: Vec<&Case> = cases.iter().filter(|c| c.1.is_some()).collect();
    assert_eq!(failed.len(), 2);
    let (case, failure, text) = failed[0];
    assert_eq!(case["classname"], "naive <&> \"quoted\"");
    assert_eq!(case["name"], "*: amplification <= 1.3");
    let failure = failure.as_ref().unwrap();
    assert_eq!(failure["message"], "measured 2.5, limit <= 1.3");
    assert_eq!(failure["type"], "gate");
    assert_eq!(
        text,
        "config naive <&> \"quoted\": amplification = 2.5, limit <= 1.3"
    );
    let (case, failure, _) = failed[1];
    assert_eq!(case["name"], "*: latency_ms.p99 < 800");
    assert_eq!(
        failure.as_ref().unwrap()["message"],
        "measured 900, limit < 800"
    );

    let passed: Vec<(&str, &str)> = cases
        .iter()
        .filter(|c| c.1.is_none())
        .map(|c| (c.0["classname"].as_str(), c.0["name"].as_str()))
        .collect();
    assert_eq!(
        passed,
        vec![
            ("aws-standard", "*: amplification <= 1.3"),
            ("aws-standard", "*: latency_ms.p99 < 800")
        ]
    );
}

#[test]
fn null_measurement_and_no_gates() {
    let mut r = run(vec![config("a", 1.0, 1.0, 0)]);
    r.configs[0].recovery_time_s = None;
    r.gates = gates::evaluate(&[gates::parse("a: recovery_time_s <= 30").unwrap()], &r).unwrap();
    let (_, cases) = read(&junit::render(&r));
    assert_eq!(
        cases[0].1.as_ref().unwrap()["message"],
        "measured null (never happened), limit <= 30"
    );

    r.gates.clear();
    let (suite, cases) = read(&junit::render(&r));
    assert_eq!(
        (suite["tests"].as_str(), suite["failures"].as_str()),
        ("0", "0")
    );
    assert!(cases.is_empty());
}

#[test]
fn escape_covers_markup_quotes_and_control_characters() {
    assert_eq!(
        junit::escape("a<b>&\"c'\n\u{1}"),
        "a&lt;b&gt;&amp;&quot;c&apos;&#10;\u{FFFD}"
    );
}

#[test]
fn write_puts_junit_xml_in_the_run_dir() {
    let dir = std::env::temp_dir().join(format!("stormrig-gates-junit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let r = gated_run();
    junit::write(&dir, &r).unwrap();
    let text = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert_eq!(text, junit::render(&r));
    assert!(!dir.join(".junit.xml.tmp").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
