//! The step load: which steps, and the scenario each one runs.
//!
//! A step is the measured scenario with its load replaced (closed loop at `users` with no
//! think time, or a constant rate), one `no-retry` config (a retry would count one slow
//! request twice and hide the service time), no faults, no topology and no gates, and the
//! step's duration. It is written back to TOML and planned as a file is, so the target's
//! checks (the loopback guard of a `url`, its TLS, the builtin's model file) hold unchanged.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{CalibrateError, CalibrateOptions};
use crate::plan::{self, Plan};
use crate::scenario::{self, ServiceModel, Target};

/// The load of one step.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum StepLoad {
    /// `users` each send, wait for the answer and send again at once.
    Closed { users: u32 },
    /// Evenly spaced arrivals at `rate` per second.
    Open { rate: f64 },
    /// Evenly spaced arrivals past the measured capacity (1.5x the highest throughput of
    /// the other steps), on purpose: its queue fills, and what it refuses and when says how
    /// deep the queue is and how long it lets a request wait ([`super::queue`]).
    Overload { rate: f64 },
}

impl StepLoad {
    pub fn label(&self) -> String {
        match self {
            StepLoad::Closed { users: 1 } => "1 user".into(),
            StepLoad::Closed { users } => format!("{users} users"),
            StepLoad::Open { rate } => format!("{rate} req/s"),
            StepLoad::Overload { rate } => format!("overload {rate}/s"),
        }
    }
}

/// One step, planned.
#[derive(Debug, Clone)]
pub struct StepPlan {
    pub load: StepLoad,
    pub plan: Plan,
}

/// The scenario calibrated: its path (messages, model lookup), its table, and its plan.
#[derive(Debug, Clone)]
pub struct Base {
    pub path: PathBuf,
    table: toml::Table,
    pub plan: Plan,
}

impl Base {
    /// Reads and plans the scenario; a file that does not load as it is is refused first.
    pub fn read(path: &Path) -> Result<Base, CalibrateError> {
        let plan = plan::load(path).map_err(|e| CalibrateError::Scenario(e.to_string()))?;
        let text =
            scenario::load::read_text(path).map_err(|e| CalibrateError::Scenario(e.to_string()))?;
        let table: toml::Table = toml::from_str(&text)
            .map_err(|e| CalibrateError::Scenario(format!("{}: {e}", path.display())))?;
        Ok(Base {
            path: path.to_path_buf(),
            table,
            plan,
        })
    }

    /// The target's model as the scenario states it (a builtin's own, or a `url`'s `model`).
    pub fn stated_model(&self) -> Option<&ServiceModel> {
        match &self.plan.scenario.target {
            Target::Builtin { model, .. } => Some(model),
            Target::Url { model, .. } => model.as_ref(),
        }
    }

    /// The target in words, for the model file's header.
    pub fn target_label(&self) -> String {
        match &self.plan.scenario.target {
            Target::Builtin { name, .. } => format!("the built-in target (builtin = \"{name}\")"),
            Target::Url { url, .. } => format!("the service at {url}"),
        }
    }

    /// The overload step at `rate` (see [`StepLoad::Overload`]), planned.
    pub fn overload_step(
        &self,
        rate: f64,
        opts: &CalibrateOptions,
    ) -> Result<StepPlan, CalibrateError> {
        self.step(StepLoad::Overload { rate }, opts)
    }

    /// The scenario of one step, planned.
    fn step(&self, load: StepLoad, opts: &CalibrateOptions) -> Result<StepPlan, CalibrateError> {
        let mut t = self.table.clone();
        for key in ["faults", "topology", "gates", "baseline"] {
            t.remove(key);
        }
        let secs = |d: Duration| toml::Value::String(scenario::units::duration::format(d));
        t.insert("duration".into(), secs(opts.step_duration));
        // Long enough for a closed loop's last requests; a step that needs more is overloaded.
        t.insert("drain".into(), secs(drain(opts.step_duration)));
        let mut l = match t.remove("load") {
            Some(toml::Value::Table(l)) => l,
            _ => toml::Table::new(),
        };
        for key in [
            "rate",
            "from",
            "to",
            "steps",
            "users",
            "think_time",
            "clients",
            "max_planned_arrivals",
            "max_connections",
            "max_in_flight",
        ] {
            l.remove(key);
        }
        match load {
            StepLoad::Closed { users } => {
                l.insert("kind".into(), "closed".into());
                l.insert("users".into(), i64::from(users).into());
                l.insert("think_time".into(), "0s".into());
            }
            StepLoad::Open { rate } | StepLoad::Overload { rate } => {
                l.insert("kind".into(), "constant".into());
                l.insert("rate".into(), rate.into());
            }
        }
        t.insert("load".into(), toml::Value::Table(l));
        let mut config = toml::Table::new();
        config.insert("name".into(), "calibrate".into());
        config.insert("preset".into(), "no-retry".into());
        t.insert(
            "configs".into(),
            toml::Value::Array(vec![toml::Value::Table(config)]),
        );
        let text = toml::to_string(&t).map_err(|e| CalibrateError::Scenario(e.to_string()))?;
        let refuse = |m: String| CalibrateError::Scenario(format!("step at {}: {m}", load.label()));
        let sc = scenario::parse(&self.path, &text).map_err(|e| refuse(e.to_string()))?;
        let plan = plan::build(sc, &text).map_err(|e| refuse(e.to_string()))?;
        Ok(StepPlan { load, plan })
    }
}

/// The drain of a step: as long as the step, at least one second.
pub fn drain(step: Duration) -> Duration {
    step.max(Duration::from_secs(1))
}

/// Closed-loop users 1, 2, 4, ... up to `max` (which is always the last).
pub fn user_steps(max: u32) -> Vec<u32> {
    let mut v = Vec::new();
    let mut u = 1u32;
    while u < max {
        v.push(u);
        u = u.saturating_mul(2);
    }
    v.push(max);
    v
}

/// Open-loop rates: an eighth, a quarter, a half and all of `max`.
pub fn rate_steps(max: f64) -> Vec<f64> {
    [8.0, 4.0, 2.0, 1.0].iter().map(|d| max / d).collect()
}

/// Every step, checked against the bounds and planned, before any is run.
pub fn plan_all(base: &Base, opts: &CalibrateOptions) -> Result<Vec<StepPlan>, CalibrateError> {
    let loads = loads(opts)?;
    let each = opts.step_duration + drain(opts.step_duration);
    let count = loads.len() + usize::from(opts.overload);
    let planned = each * count as u32;
    if planned > opts.max_time {
        return Err(CalibrateError::Usage(format!(
            "{} steps of up to {} each (load and drain) may take {}, past --max-time {}; \
             lower --max-concurrency, --step-duration, or raise --max-time",
            count,
            humantime::format_duration(each),
            humantime::format_duration(planned),
            humantime::format_duration(opts.max_time),
        )));
    }
    if opts.overload {
        // Its rate follows from the other steps; a step at any rate must plan, so a bad
        // file is refused now, before any load.
        base.overload_step(1.0, opts)?;
    }
    loads.into_iter().map(|l| base.step(l, opts)).collect()
}

/// The step loads the options ask for, refusing zero bounds.
pub fn loads(opts: &CalibrateOptions) -> Result<Vec<StepLoad>, CalibrateError> {
    if opts.step_duration.is_zero() {
        return Err(CalibrateError::Usage(
            "--step-duration: must be above 0".into(),
        ));
    }
    if opts.max_time.is_zero() {
        return Err(CalibrateError::Usage("--max-time: must be above 0".into()));
    }
    let mut loads = Vec::new();
    match opts.max_concurrency {
        Some(0) => {
            return Err(CalibrateError::Usage(
                "--max-concurrency: must be at least 1".into(),
            ))
        }
        Some(c) => loads.extend(
            user_steps(c)
                .into_iter()
                .map(|users| StepLoad::Closed { users }),
        ),
        None => {}
    }
    match opts.max_rate {
        Some(r) if !(r.is_finite() && r > 0.0) => {
            return Err(CalibrateError::Usage(format!(
                "--max-rate {r}: must be a number above 0"
            )))
        }
        Some(r) => loads.extend(
            rate_steps(r)
                .into_iter()
                .map(|rate| StepLoad::Open { rate }),
        ),
        None => {}
    }
    if loads.is_empty() {
        return Err(CalibrateError::Usage(
            "give --max-concurrency, --max-rate or both".into(),
        ));
    }
    Ok(loads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_double_up_to_the_bound() {
        assert_eq!(user_steps(1), vec![1]);
        assert_eq!(user_steps(8), vec![1, 2, 4, 8]);
        assert_eq!(user_steps(6), vec![1, 2, 4, 6]);
    }

    #[test]
    fn zero_bounds_are_refused() {
        let opts = CalibrateOptions {
            max_concurrency: Some(0),
            max_rate: None,
            step_duration: Duration::from_secs(1),
            max_time: Duration::from_secs(60),
            overload: false,
        };
        assert!(loads(&opts).is_err());
        let opts = CalibrateOptions {
            max_concurrency: None,
            max_rate: Some(0.0),
            ..opts
        };
        assert!(loads(&opts).is_err());
        let opts = CalibrateOptions {
            max_rate: Some(100.0),
            step_duration: Duration::ZERO,
            ..opts
        };
        assert!(loads(&opts).is_err());
    }
}
