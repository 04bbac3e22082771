//! The failure-steps scenario live on loopback: the drain thresholds predict where each
//! budget drains, as in the simulator, and every retry is useful or wasted. Takes the
//! scenario's 50 s of wall time plus its drain.

use std::path::PathBuf;

use stormrig::live::{self, RunOptions};
use stormrig::plan;

#[test]
fn failure_steps_live_drains_where_the_thresholds_predict() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/failure-steps.toml");
    let p = plan::load(&path).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let run = rt.block_on(async {
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let opts = RunOptions {
            attempt_log: false,
            progress: false,
            abort_when: None,
            ..Default::default()
        };
        live::run(&p, &opts, rx).await.unwrap().result
    });
    assert!(!run.partial);
    assert_eq!(
        run.duration_s, 50.0,
        "the scenario's duration, not the last arrival"
    );
    for c in &run.configs {
        assert_eq!(c.useful_retries + c.wasted_retries, c.retries, "{}", c.name);
        let b = c.budget.as_ref().unwrap();
        for w in &b.windows {
            assert_eq!(
                w.drain_predicted, w.drain_observed,
                "{} in {}-{} s",
                c.name, w.start_s, w.end_s
            );
        }
    }
    let t = |name: &str| {
        run.configs
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.budget.as_ref())
            .and_then(|b| b.thresholds.transient)
    };
    assert_eq!(t("aws-standard"), Some(0.2149));
    assert_eq!(t("aws-standard-classic"), Some(0.3207));
    assert_eq!(t("grpc"), Some(0.0909));
}
