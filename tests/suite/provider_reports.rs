//! The reports show what `summary.json` knows of providers: the text summary and the HTML
//! page give each provider's counts, tokens, money and degraded answers; `summary.csv`
//! gains `degraded` and money columns; the attempts routed to each provider per second sum,
//! second by second, to the config's attempts, and each provider's own arrivals per second
//! (the HTML chart's series, every config) to its arrivals, in both engines.

use stormrig::metrics::{ConfigSummary, RunResult};
use stormrig::report::{files, html, text};
use stormrig::sim::{self, SimOptions};

use super::provider_failover::A_DOWN;
use crate::support;

/// Provider `a` down, `b` priced; `failover` fails over to `b` with a ladder behind it.
fn scenario() -> String {
    let base = &A_DOWN[..A_DOWN.find("[[configs]]").expect("configs")];
    let base = base.replace(
        "name = \"b\"\n",
        "name = \"b\"\nprice = { prompt_per_1k = 0.003, completion_per_1k = 0.015 }\n",
    );
    format!(
        "{base}[[configs]]\nname = \"failover\"\npreset = \"naive\"\n\
         failover = {{ providers = [\"a\", \"b\"], same_provider_retries = 1 }}\n\
         ladder = [{{ static = true }}]\n"
    )
}

/// Every second, the attempts routed to the providers add up to the config's attempts of
/// that second; over the run, to each provider's own arrivals.
fn check_series(run: &RunResult) {
    let c = support::config_named(&run.configs, "failover");
    for r in &c.routes {
        let p = c.providers.iter().find(|p| p.name == r.name).unwrap();
        assert_eq!(
            r.attempts_per_s.iter().sum::<u64>(),
            r.attempts,
            "{}",
            r.name
        );
        assert_eq!(r.attempts, p.arrivals, "{}", r.name);
    }
    // Each provider's own series, which the chart draws for every config, sums to its
    // arrivals (the seconds may differ from the client's by the trip to the provider).
    for cfg in &run.configs {
        for p in &cfg.providers {
            assert_eq!(
                p.arrivals_per_s.iter().sum::<u64>(),
                p.arrivals,
                "{} {}",
                cfg.name,
                p.name
            );
        }
    }
    let rows: Vec<_> = run
        .timeseries
        .iter()
        .filter(|r| r.config == "failover")
        .collect();
    assert!(rows.iter().any(|r| r.attempts > 0));
    for row in rows {
        let routed: u64 = c
            .routes
            .iter()
            .map(|r| {
                r.attempts_per_s
                    .get(row.second as usize)
                    .copied()
                    .unwrap_or(0)
            })
            .sum();
        assert_eq!(routed, row.attempts, "second {}", row.second);
    }
}

#[test]
fn attempts_per_second_per_provider_are_exact_in_both_engines() {
    let p = support::plan_of(&scenario());
    let sim = sim::run(&p, &SimOptions::default()).unwrap().result;
    check_series(&sim);
    let live = support::run_live(&p, false).result;
    check_series(&live);
}

fn failover(run: &RunResult) -> &ConfigSummary {
    support::config_named(&run.configs, "failover")
}

#[test]
fn text_html_and_csv_show_providers_tokens_money_and_degraded() {
    let p = support::plan_of(&scenario());
    let run = sim::run(&p, &SimOptions::default()).unwrap().result;
    let c = failover(&run);
    let b = c.providers.iter().find(|p| p.name == "b").unwrap();
    let money = c.money.as_ref().expect("b is priced");
    assert!(b.arrivals > 0 && money.total.spent > 0.0);

    let summary = text::summary(&run);
    let row = summary
        .lines()
        .find(|l| l.trim_start().starts_with("b "))
        .expect("a row for provider b");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[1], b.arrivals.to_string(), "{row}");
    assert_eq!(cells[4], b.tokens_received.to_string(), "{row}");
    let tokens = c.tokens.as_ref().unwrap();
    assert!(
        summary.contains(&format!("tokens spent {}", tokens.spent)),
        "{summary}"
    );
    assert!(summary.contains(&format!("money spent {:.4}", money.total.spent)));
    assert!(summary.lines().all(|l| l.chars().count() <= text::WIDTH));

    let dir = support::process::tmp_dir("provider-reports");
    files::write_data(&dir, &run).unwrap();
    let mut csv = csv::Reader::from_path(dir.join(files::SUMMARY_CSV)).unwrap();
    let header = csv.headers().unwrap().clone();
    let record = csv.records().next().unwrap().unwrap();
    let cell = |name: &str| {
        let i = header.iter().position(|h| h == name).expect(name);
        record[i].to_string()
    };
    let degraded = c.degraded.as_ref().unwrap().requests;
    assert_eq!(cell("degraded"), degraded.to_string());
    assert_eq!(cell("config"), "failover");
    assert_eq!(
        cell("money_spent").parse::<f64>().unwrap(),
        money.total.spent
    );
    assert_eq!(
        cell("money_wasted").parse::<f64>().unwrap(),
        money.total.wasted
    );

    let page = html::render(&run, None).unwrap();
    assert!(page.contains("<section id=\"providers\">"));
    assert!(page.contains("href=\"#providers\""));
    assert!(page.contains("id=\"chart-providers\""));
    assert!(page.contains("provider b"), "the chart's legend names b");
    assert!(page.contains(&format!("<td>b</td><td>{}</td>", b.arrivals)));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_without_providers_gets_no_provider_section_or_columns() {
    let configs = "[[configs]]\nname = \"naive\"\npreset = \"naive\"\n";
    let p = support::plan_of(&support::always_503("no-providers", 20.0, configs));
    let run = sim::run(&p, &SimOptions::default()).unwrap().result;
    let page = html::render(&run, None).unwrap();
    assert!(!page.contains("id=\"providers\""));
    let dir = support::process::tmp_dir("no-provider-reports");
    files::write_data(&dir, &run).unwrap();
    let header = std::fs::read_to_string(dir.join(files::SUMMARY_CSV)).unwrap();
    let header = header.lines().next().unwrap();
    assert!(
        !header.contains("degraded") && !header.contains("money"),
        "{header}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Configs without failover get the per-provider chart too: it draws what each provider
/// counted per second, and that series is the config's downstream arrivals per second when
/// every request goes to one provider.
#[test]
fn the_provider_chart_draws_every_config_from_the_providers_own_counts() {
    let path = support::repo_root().join("scenarios/llm-429-retry-after.toml");
    let plan = stormrig::plan::load(&path).unwrap();
    let run = sim::run(&plan, &SimOptions::default()).unwrap().result;
    for c in &run.configs {
        assert!(c.routes.is_empty(), "{}: no failover here", c.name);
        let p = &c.providers[0];
        assert!(p.arrivals > 0);
        let rows: Vec<_> = run
            .timeseries
            .iter()
            .filter(|r| r.config == c.name)
            .collect();
        for r in rows {
            assert_eq!(
                p.arrivals_per_s
                    .get(r.second as usize)
                    .copied()
                    .unwrap_or(0),
                r.downstream_arrivals,
                "{} second {}",
                c.name,
                r.second
            );
        }
    }
    let page = html::render(&run, None).unwrap();
    assert!(page.contains("id=\"chart-providers\""));
    assert!(page.contains("Arrivals per second at each provider"));
}
