//! From a validated scenario to what the engines run: every retry config resolved by the
//! policy core (preset, then overrides, then validation), every error located in the file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::policy::{BudgetConfig, RetryConfig, RetryConfigSpec};
use crate::scenario::{self, Scenario};

/// A config the engines run, with its resolved policy.
#[derive(Debug, Clone)]
pub struct PlannedConfig {
    pub name: String,
    pub config: RetryConfig,
}

/// A scenario with its retry configs resolved.
#[derive(Debug, Clone)]
pub struct Plan {
    pub scenario: Scenario,
    pub configs: Vec<PlannedConfig>,
}

/// A retry config in the scenario that the policy core refused.
#[derive(Debug, thiserror::Error)]
#[error("{}:{line}: {field}: {message}", file.display())]
pub struct PlanError {
    pub file: PathBuf,
    pub line: usize,
    pub field: String,
    pub message: String,
}

/// Resolves every config of `scenario`; `text` is the scenario file's text (for lines).
pub fn build(scenario: Scenario, text: &str) -> Result<Plan, PlanError> {
    let mut configs = Vec::with_capacity(scenario.configs.len());
    for entry in &scenario.configs {
        let located = |field: String, message: String| {
            let full = if field.is_empty() {
                entry.field_path.clone()
            } else {
                format!("{}.{field}", entry.field_path)
            };
            PlanError {
                file: scenario.path.clone(),
                line: scenario::locate(text, &full).unwrap_or(entry.line),
                field: full,
                message,
            }
        };
        // A config written as just `preset = "x"` is named after its preset.
        let mut table = entry.table.clone();
        table
            .entry("name")
            .or_insert_with(|| toml::Value::String(entry.name.clone()));
        let spec: RetryConfigSpec =
            toml::Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| {
                    let msg = e.message().to_string();
                    let field = unknown_field(&msg).unwrap_or_default();
                    located(field, msg)
                })?;
        let config = spec.resolve().map_err(|e| {
            let field = match (&e, e.field()) {
                (_, Some(f)) => f.to_string(),
                (crate::policy::PolicyError::UnknownPreset { .. }, None) => "preset".into(),
                _ => String::new(),
            };
            located(field, e.to_string())
        })?;
        configs.push(PlannedConfig {
            name: entry.name.clone(),
            config,
        });
    }
    Ok(Plan { scenario, configs })
}

/// The most amplification a config can cause in a run of `duration` at `mean_rate`
/// logical requests per second: its attempt cap, tightened by a ratio budget to
/// 1 + ratio + the reserve's share (min_per_sec over the run plus the initial ttl's worth,
/// spread over the requests). Other budgets have no static bound tighter than the cap.
pub fn amplification_bound(config: &RetryConfig, mean_rate: f64, duration: Duration) -> f64 {
    let cap = f64::from(config.max_attempts);
    match &config.budget {
        BudgetConfig::Ratio {
            ratio,
            ttl,
            min_per_sec,
            ..
        } if mean_rate > 0.0 && !duration.is_zero() => {
            let requests = mean_rate * duration.as_secs_f64();
            let reserve = f64::from(*min_per_sec) * (duration + *ttl).as_secs_f64();
            cap.min(1.0 + ratio + reserve / requests)
        }
        _ => cap,
    }
}

/// The key serde named in an "unknown field `x`" message, so the error can point at it.
fn unknown_field(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("unknown field `")?;
    Some(rest[..rest.find('`')?].to_string())
}

/// Why a scenario file could not be planned.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Scenario(#[from] scenario::ScenarioError),
    #[error(transparent)]
    Config(#[from] PlanError),
}

/// Loads and plans a scenario file in one step.
pub fn load(path: &Path) -> Result<Plan, LoadError> {
    let scenario = scenario::load(path)?;
    // The loader read it already; a failure now only costs the precise line.
    let text = std::fs::read_to_string(path).unwrap_or_default();
    Ok(build(scenario, &text)?)
}
