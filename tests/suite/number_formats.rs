//! One way of writing each kind of figure, wherever it is read: every shipped scenario's
//! simulated console summary and HTML report write a multiple (amplification, headroom,
//! bounds) with two decimals and `×`, a percentage with a space before `%`, and a count of
//! one in the singular. A second spelling of the same kind beside the first (`1.3x` by
//! `2.05×`, `50.00%` by `21.5 %`, `1 faults`) makes a reader wonder whether they differ.

use regex_lite::Regex;

use crate::support;
use crate::support::process::tmp_dir;

/// The page as text: no style, no script, tags dropped, entities for `<`, `>`, `&` read.
fn page_text(html: &str) -> String {
    let blocks = Regex::new(r"(?s)<(style|script)[^>]*>.*?</(style|script)>").unwrap();
    let tags = Regex::new(r"<[^>]+>").unwrap();
    let text = tags
        .replace_all(&blocks.replace_all(html, " "), " ")
        .into_owned();
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// What breaks the rules in `text`, each with a little of its context.
fn misspelt(text: &str) -> Vec<String> {
    let rules = [
        (r"\d+(\.\d+)?[xX]\b", "a multiple written with x, not ×"),
        (
            r"(^|[^.\d])(\d+|\d+\.\d|\d+\.\d{3,})×",
            "a multiple without two decimals",
        ),
        (r"\d%", "a percentage without a space before %"),
        (
            r"\b1 (faults|configs|requests|retries|attempts|shards|windows|times|seconds)\b",
            "one of something in the plural",
        ),
    ];
    let mut found = Vec::new();
    for (pattern, what) in rules {
        for m in Regex::new(pattern).unwrap().find_iter(text) {
            let from = text[..m.start()]
                .char_indices()
                .rev()
                .nth(30)
                .map_or(0, |(i, _)| i);
            let to = text[m.end()..]
                .char_indices()
                .nth(30)
                .map_or(text.len(), |(i, _)| m.end() + i);
            found.push(format!("{what}: …{}…", text[from..to].replace('\n', " ")));
        }
    }
    found
}

#[test]
fn the_rules_catch_each_misspelling() {
    assert_eq!(
        misspelt("amplification 2.50× and 50.00 % of 1 fault").len(),
        0
    );
    for bad in ["1.3x", "2.5×", "3×", "50.00%", "1 faults", "1.0049×"] {
        assert_eq!(misspelt(&format!("a {bad} b")).len(), 1, "{bad}");
    }
}

#[test]
fn every_shipped_report_writes_each_kind_of_figure_one_way() {
    let mut failed = Vec::new();
    for sim in support::simulate_every_shipped(&tmp_dir("formats"), &[]) {
        let html = std::fs::read_to_string(sim.out.join("index.html")).unwrap();
        for (source, text) in [("console", sim.console), ("index.html", page_text(&html))] {
            failed.extend(
                misspelt(&text)
                    .into_iter()
                    .map(|m| format!("{} {source}: {m}", sim.name)),
            );
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
