//! CSV files opened in a spreadsheet: a cell that starts like a formula (`=`, `+`, `-`,
//! `@`, tab, CR) is run as one by Excel, LibreOffice and Google Sheets. Config names come
//! from the user's file, so every CSV stormrig writes neutralises such text cells with a
//! leading `'`, and leaves numbers, negative ones included, as they are.

use crate::support::process::{bin, tmp_dir, write};

#[test]
fn a_config_named_like_a_formula_is_text_in_every_csv() {
    let dir = tmp_dir("csv-cells");
    let sc = write(
        &dir,
        "s.toml",
        &crate::support::three_seconds_of_503("cells", "-A1"),
    );
    let out = dir.join("run");
    crate::support::process::succeed(bin().arg("sim").arg(&sc).arg("--out").arg(&out).arg("-q"));
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let c = summary["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "-A1")
        .expect("summary.json keeps the name as written");

    let mut r = csv::Reader::from_path(out.join("summary.csv")).unwrap();
    let headers = r.headers().unwrap().clone();
    let row = r
        .records()
        .map(|r| r.unwrap())
        .find(|r| &r[0] == "'-A1")
        .unwrap();
    let cell = |n: &str| row[headers.iter().position(|h| h == n).unwrap()].to_string();
    assert_eq!(cell("config"), "'-A1");
    for n in [
        "upstream_requests",
        "attempts",
        "retries",
        "downstream_arrivals",
    ] {
        assert_eq!(cell(n), c[n].to_string(), "{n}");
    }
    assert_eq!(
        cell("amplification").parse::<f64>().unwrap(),
        c["amplification"].as_f64().unwrap()
    );

    let ts = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    let rows: Vec<&str> = ts.lines().skip(1).collect();
    assert!(!rows.is_empty());
    assert!(rows.iter().any(|l| l.starts_with("'-A1,")), "{ts}");
    assert!(
        rows.iter()
            .all(|l| l.starts_with("'-A1,") || l.starts_with("no-retry,")),
        "{ts}"
    );

    // Reading the run back (`report`) takes the name as written, not as neutralised.
    crate::support::process::succeed(bin().arg("report").arg(&out));
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        !html.contains("&#39;-A1") && !html.contains("'-A1"),
        "the quote leaked into the report"
    );
}
