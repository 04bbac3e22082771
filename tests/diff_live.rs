//! The noise-aware diff against real noise: the main job run live twice, then diffed with
//! the defaults. A binary of its own so that it runs alone, as a CI job would run it, not
//! beside the main suite's other live runs (which the diff would rightly see as noise in
//! the latency tail).

use stormrig::report::files;

/// The main job run live twice, as a CI job would: the defaults find no regression between
/// the two; the same second run with envoy's amplification raised by 20 % fails.
#[test]
fn two_live_runs_of_the_main_job_diff_clean() {
    let root = std::env::temp_dir().join(format!("stormrig-diff-live-{}", std::process::id()));
    let bin = env!("CARGO_BIN_EXE_stormrig");
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/downstream-503-10s.toml"
    );
    let dirs = [root.join("a"), root.join("b")];
    for d in &dirs {
        let st = std::process::Command::new(bin)
            .args([
                "run".as_ref(),
                scenario.as_ref(),
                "--quiet".as_ref(),
                "--out".as_ref(),
                d.as_os_str(),
            ])
            .status()
            .unwrap();
        assert!(matches!(st.code(), Some(0 | 1)), "{st:?}");
    }
    let diff_cli = |a: &std::path::Path, b: &std::path::Path| {
        std::process::Command::new(bin)
            .args(["diff".as_ref(), a.as_os_str(), b.as_os_str()])
            .output()
            .unwrap()
    };
    let out = diff_cli(&dirs[0], &dirs[1]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let mut planted = files::read_data(&dirs[1]).unwrap();
    let envoy = planted
        .configs
        .iter_mut()
        .find(|c| c.name == "envoy")
        .unwrap();
    envoy.amplification *= 1.2;
    let p = root.join("planted");
    std::fs::create_dir_all(&p).unwrap();
    files::write_data(&p, &planted).unwrap();
    let out = diff_cli(&dirs[0], &p);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let bad: Vec<&str> = text.lines().filter(|l| l.ends_with("REGRESSION")).collect();
    assert_eq!(bad.len(), 1, "{text}");
    assert!(
        bad[0].starts_with("envoy") && bad[0].contains("amplification"),
        "{text}"
    );
    std::fs::remove_dir_all(&root).unwrap();
}
