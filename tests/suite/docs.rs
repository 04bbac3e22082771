//! The documentation against the code, so neither drifts from the other.
//!
//! The scenario reference (`docs/scenario-reference.md`) lists every key of a scenario file,
//! one `## ` section per table. The code's own list of a table's keys is what serde knows:
//! every struct of the file's shape denies unknown fields, and serde's refusal of an unknown
//! key names every key it would have taken (the list the loader's did-you-mean draws from).
//! Each section is held to that list both ways: a key the loader accepts and the page lacks,
//! or one the page names and the loader refuses, fails here.
//!
//! Every relative link of the README, `docs/`, `CONTRIBUTING.md`, `CHANGELOG.md` and
//! `reports/README.md` must point at a file that exists, and an `#anchor` at a heading of
//! that file (GitHub's rule: lowercase, spaces to `-`, punctuation but `-` and `_` dropped).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use stormrig::policy::{
    Backoff, BreakerConfig, BudgetConfig, BulkheadConfig, ConcurrencyLimitConfig, CostConfig,
    FailoverConfig, HedgingConfig, Jitter, RateLimiterConfig, RetryAfterConfig, RetryConfigSpec,
    RetryOn, Rung,
};
use stormrig::scenario::classes::ClassSection;
use stormrig::scenario::grpc::GrpcSection;
use stormrig::scenario::provider::{PriceSection, ProviderSection};
use stormrig::scenario::shedding::{AdaptiveConcurrencySpec, DisciplineTable, RateLimitSpec};
use stormrig::scenario::{
    DedupSpec, Dist, FaultSection, LayerSpec, LoadSection, RateStep, ScenarioFile,
    ServiceModelSpec, TargetFile, TargetSpec,
};

use crate::support;

const REFERENCE: &str = "docs/scenario-reference.md";

/// A key no table takes, to make serde say which keys it does take.
const NOT_A_KEY: &str = "zz_not_a_key";

/// The words serde lists after "expected" when it refuses an unknown field or variant:
/// "unknown field `x`, expected one of `a`, `b`", "... expected `a`", "... there are no
/// fields".
fn listed(message: &str) -> BTreeSet<String> {
    let rest = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|p| message.split_once(p).map(|(_, r)| r))
        .unwrap_or_else(|| panic!("not an unknown-key refusal: {message}"));
    let (_, rest) = rest.split_once('`').expect("the unknown key is backticked");
    if rest.contains("there are no fields") || rest.contains("there are no variants") {
        return BTreeSet::new();
    }
    let (_, expected) = rest
        .split_once("expected")
        .unwrap_or_else(|| panic!("no expected list: {message}"));
    let expected = expected.lines().next().unwrap_or("");
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// What serde lists when `T` is read from `toml` holding one key it does not take.
fn refused<T: DeserializeOwned>(toml: &str) -> BTreeSet<String> {
    match toml::from_str::<T>(toml) {
        Ok(_) => panic!("{} accepted {toml:?}", std::any::type_name::<T>()),
        Err(e) => listed(e.message()),
    }
}

/// The keys of a struct table.
fn fields<T: DeserializeOwned>() -> BTreeSet<String> {
    refused::<T>(&format!("{NOT_A_KEY} = 1"))
}

/// The keys of a table tagged by `kind`: `kind` and the keys of every kind.
fn tagged<T: DeserializeOwned>() -> BTreeSet<String> {
    let kinds = refused::<T>(&format!("kind = \"{NOT_A_KEY}\""));
    assert!(
        !kinds.is_empty(),
        "{} has no kinds",
        std::any::type_name::<T>()
    );
    let mut keys = BTreeSet::from(["kind".to_string()]);
    for kind in kinds {
        keys.extend(refused::<T>(&format!("kind = \"{kind}\"\n{NOT_A_KEY} = 1")));
    }
    keys
}

/// The keys of a table holding one of several keys (a ladder rung: `{ cached = 0.6 }`).
fn one_of<T: DeserializeOwned>() -> BTreeSet<String> {
    refused::<T>(&format!("{NOT_A_KEY} = 1"))
}

/// The key of a config table that the plan takes out before the policy core reads the rest
/// (`src/plan.rs`): a class's own policy, `classes.NAME = { ... }`.
const PLAN_CONFIG_KEYS: &[&str] = &["classes"];

/// Every section of the reference, by its heading, with the code's keys for it.
fn code_keys() -> BTreeMap<&'static str, BTreeSet<String>> {
    let mut configs = fields::<RetryConfigSpec>();
    configs.extend(PLAN_CONFIG_KEYS.iter().map(|k| k.to_string()));
    BTreeMap::from([
        ("Top level", fields::<ScenarioFile>()),
        ("`[load]`", fields::<LoadSection>()),
        ("`[[load.steps]]`", fields::<RateStep>()),
        ("`[load.grpc]`", fields::<GrpcSection>()),
        ("`[[load.classes]]`", fields::<ClassSection>()),
        ("`[target]`", fields::<TargetSpec>()),
        ("`[target.service]`", fields::<ServiceModelSpec>()),
        ("Distributions", tagged::<Dist>()),
        ("`discipline`", fields::<DisciplineTable>()),
        ("`rate_limit`", fields::<RateLimitSpec>()),
        (
            "`adaptive_concurrency`",
            fields::<AdaptiveConcurrencySpec>(),
        ),
        ("`[target.dedup]`", fields::<DedupSpec>()),
        ("`[[faults]]`", fields::<FaultSection>()),
        ("`[[topology]]`", fields::<LayerSpec>()),
        ("`[[provider]]`", fields::<ProviderSection>()),
        ("`price`", fields::<PriceSection>()),
        ("`[[configs]]`", configs),
        ("`retry_on`", fields::<RetryOn>()),
        ("`backoff`", tagged::<Backoff>()),
        ("`jitter`", tagged::<Jitter>()),
        ("`retry_after`", fields::<RetryAfterConfig>()),
        ("`budget`", tagged::<BudgetConfig>()),
        ("`breaker`", fields::<BreakerConfig>()),
        ("`cost`", fields::<CostConfig>()),
        ("`failover`", fields::<FailoverConfig>()),
        ("`ladder`", one_of::<Rung>()),
        ("`hedging`", fields::<HedgingConfig>()),
        ("`rate_limiter`", tagged::<RateLimiterConfig>()),
        // A list of stage names, not a table: no keys of its own.
        ("`pipeline`", BTreeSet::new()),
        ("`bulkhead`", fields::<BulkheadConfig>()),
        ("`concurrency_limit`", tagged::<ConcurrencyLimitConfig>()),
        ("Target files", fields::<TargetFile>()),
    ])
}

/// The lines of a Markdown file outside fenced code blocks.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// The keys each `## ` section of the reference lists: the backticked word opening the first
/// cell of each table row.
fn doc_keys(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut sections: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = None;
    for line in prose_lines(text) {
        if let Some(h) = line.strip_prefix("## ") {
            current = Some(h.trim().to_string());
            sections.entry(h.trim().to_string()).or_default();
        } else if let (Some(section), Some(row)) = (&current, line.strip_prefix("| `")) {
            let key = row.split('`').next().unwrap_or("").to_string();
            sections.get_mut(section).unwrap().push(key);
        }
    }
    sections
}

fn compare_reference(text: &str) -> Vec<String> {
    let code = code_keys();
    let doc = doc_keys(text);
    let mut wrong = Vec::new();
    for (section, keys) in &doc {
        let Some(known) = code.get(section.as_str()) else {
            wrong.push(format!(
                "section {section:?} is not a table tests/suite/docs.rs knows (code_keys)"
            ));
            continue;
        };
        let mut seen = BTreeSet::new();
        for key in keys {
            if !seen.insert(key) {
                wrong.push(format!("{section}: `{key}` is listed twice"));
            }
            if !known.contains(key) {
                wrong.push(format!(
                    "{section}: `{key}` is not a key the loader accepts"
                ));
            }
        }
        for key in known {
            if !seen.contains(key) {
                wrong.push(format!("{section}: `{key}` is accepted but not documented"));
            }
        }
    }
    for section in code.keys() {
        if !doc.contains_key(*section) {
            wrong.push(format!("no section `## {section}`"));
        }
    }
    wrong
}

#[test]
fn the_scenario_reference_lists_exactly_the_keys_the_loader_accepts() {
    let text = std::fs::read_to_string(support::repo_root().join(REFERENCE)).unwrap();
    let wrong = compare_reference(&text);
    assert!(
        wrong.is_empty(),
        "{REFERENCE} and the code disagree:\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn the_reference_check_fails_on_a_missing_or_an_unknown_key() {
    let text = std::fs::read_to_string(support::repo_root().join(REFERENCE)).unwrap();
    let row = "| `drain` |";
    assert!(text.contains(row), "the reference documents `drain`");
    let without = text.replacen(row, "| `drain_missing` |", 1);
    let wrong = compare_reference(&without);
    assert!(
        wrong
            .iter()
            .any(|w| w.contains("`drain` is accepted but not documented")),
        "{wrong:?}"
    );
    assert!(
        wrong
            .iter()
            .any(|w| w.contains("`drain_missing` is not a key")),
        "{wrong:?}"
    );
}

/// GitHub's anchor of a heading: lowercase, spaces to `-`, every other character but
/// letters, digits, `-` and `_` dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings (a repeated heading gets `-1`, `-2`, ...).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut all = BTreeSet::new();
    for line in prose_lines(text) {
        let hashes = line.bytes().take_while(|b| *b == b'#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let a = anchor(&line[hashes..]);
        let n = seen.entry(a.clone()).or_insert(0);
        all.insert(if *n == 0 {
            a.clone()
        } else {
            format!("{a}-{n}")
        });
        *n += 1;
    }
    all
}

/// The targets of the inline links `[text](target)` outside fenced code.
fn link_targets(text: &str) -> Vec<String> {
    let prose = prose_lines(text).join("\n");
    prose
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split_once(')').map(|(t, _)| t.trim().to_string()))
        .collect()
}

/// Every broken relative link of `file` (a path relative to the repository root).
fn broken_links(root: &Path, file: &str) -> Vec<String> {
    let path = root.join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let dir = path.parent().unwrap();
    let mut broken = Vec::new();
    for target in link_targets(&text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (to, fragment) = match target.split_once('#') {
            Some((p, f)) => (p, Some(f)),
            None => (target.as_str(), None),
        };
        let linked: PathBuf = if to.is_empty() {
            path.clone()
        } else {
            dir.join(to)
        };
        if !linked.exists() {
            broken.push(format!("{file}: ({target}): no file {}", linked.display()));
            continue;
        }
        if let Some(fragment) = fragment {
            let Ok(linked_text) = std::fs::read_to_string(&linked) else {
                broken.push(format!("{file}: ({target}): an anchor into a folder"));
                continue;
            };
            if !anchors(&linked_text).contains(fragment) {
                broken.push(format!("{file}: ({target}): no heading with that anchor"));
            }
        }
    }
    broken
}

/// The Markdown files whose links are checked.
fn documents(root: &Path) -> Vec<String> {
    let mut files: Vec<String> = [
        "README.md",
        "CONTRIBUTING.md",
        "CHANGELOG.md",
        "reports/README.md",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut docs: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| format!("docs/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

#[test]
fn every_relative_link_of_the_docs_resolves() {
    let root = support::repo_root();
    let files = documents(&root);
    let broken: Vec<String> = files.iter().flat_map(|f| broken_links(&root, f)).collect();
    assert!(
        broken.is_empty(),
        "broken links:\n  {}",
        broken.join("\n  ")
    );
    // Every doc is reachable from the README.
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let linked: BTreeSet<String> = link_targets(&readme)
        .into_iter()
        .map(|t| t.split('#').next().unwrap_or("").to_string())
        .collect();
    for f in files.iter().filter(|f| *f != "README.md") {
        assert!(linked.contains(f), "README.md does not link {f}");
    }
}

#[test]
fn the_link_check_fails_on_a_missing_file_or_anchor() {
    let root = std::env::temp_dir().join(format!("stormrig-docs-links-{}", std::process::id()));
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(
        root.join("docs/a.md"),
        "# A page\n\n## `stormrig run`, again\n\n[ok](#stormrig-run-again) [ok](../b.md) \
         [file](../missing.md) [anchor](#nowhere)\n\n```\n[code](not-checked.md)\n```\n",
    )
    .unwrap();
    std::fs::write(root.join("b.md"), "# B\n").unwrap();
    let broken = broken_links(&root, "docs/a.md");
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(broken[0].contains("missing.md"), "{broken:?}");
    assert!(broken[1].contains("#nowhere"), "{broken:?}");
}

/// Every repository path a doc names in backticks (`src/session.rs`, `tests/run.sh`) that
/// does not exist: files move, and a doc that still names the old place misleads.
fn missing_paths(root: &Path, file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root.join(file)).unwrap();
    let prose = prose_lines(&text).join("\n");
    let named = prose.split('`').skip(1).step_by(2).filter(|w| {
        ["src/", "tests/", "scenarios/", "targets/", ".ci/"]
            .iter()
            .any(|p| w.starts_with(p))
            && w.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-/".contains(&b))
    });
    named
        .filter(|p| !root.join(p).exists())
        .map(|p| format!("{file}: `{p}` does not exist"))
        .collect()
}

#[test]
fn every_repository_path_the_docs_name_exists() {
    let root = support::repo_root();
    let missing: Vec<String> = documents(&root)
        .iter()
        .flat_map(|f| missing_paths(&root, f))
        .collect();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_path_check_fails_on_a_path_that_moved() {
    let root = std::env::temp_dir().join(format!("stormrig-docs-paths-{}", std::process::id()));
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/here.rs"), "").unwrap();
    std::fs::write(
        root.join("a.md"),
        "`src/here.rs`, `src/gone.rs`, `targets/NAME.toml` (a placeholder)\n",
    )
    .unwrap();
    let missing = missing_paths(&root, "a.md");
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(missing, ["a.md: `src/gone.rs` does not exist"]);
}
