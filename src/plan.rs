//! From a validated scenario to what the engines run: every retry config resolved by the
//! policy core (preset, then overrides, then validation), every error located in the file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::metrics::FaultBand;
pub use crate::policy::bounds::{amplification_bound, fleet_bound, topology_bounds};
use crate::policy::{AttemptCost, CostUnit, RetryConfig, RetryConfigSpec};
use crate::scenario::classes::RequestClass;
use crate::scenario::{self, ConfigEntry, Dist, LayerSpec, Scenario};

/// A config the engines run, with its resolved policy.
#[derive(Debug, Clone)]
pub struct PlannedConfig {
    pub name: String,
    pub config: RetryConfig,
    /// Per request class of the load (in its order; empty without classes), the class's own
    /// retry policy, or `None` where the class's requests go through `config` itself (and
    /// share its state: budget, breaker, cost ledger).
    pub class_policies: Vec<Option<RetryConfig>>,
}

impl PlannedConfig {
    /// The policy class `class` runs under.
    pub fn policy_of(&self, class: usize) -> &RetryConfig {
        self.class_policies
            .get(class)
            .and_then(Option::as_ref)
            .unwrap_or(&self.config)
    }
}

/// A scenario with its retry configs resolved.
#[derive(Debug, Clone)]
pub struct Plan {
    pub scenario: Scenario,
    pub configs: Vec<PlannedConfig>,
    /// The topology's layers, nearest to the load generator first (empty = direct run).
    pub layers: Vec<PlannedLayer>,
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

/// One topology layer the live engine runs, with its resolved policy.
#[derive(Debug, Clone)]
pub struct PlannedLayer {
    pub name: String,
    /// The layer's retry config; a pass-through layer gets [`pass_through`].
    pub config: RetryConfig,
    /// True when the scenario gave the layer no config (it forwards each request once).
    pub pass_through: bool,
    pub propagate_deadline: bool,
    pub service_time: Option<Dist>,
    pub concurrency: Option<u32>,
}

/// The config of a layer that only forwards: the `no-retry` preset (one attempt, no
/// timeout, no deadline, no budget), named after the layer.
pub fn pass_through(layer: &str) -> RetryConfig {
    let mut c = crate::policy::preset("no-retry").expect("the no-retry preset exists");
    c.name = layer.to_string();
    c.max_attempts = 1;
    c
}

/// The scenario's fault windows as reports draw them.
pub fn fault_bands(faults: &[scenario::Fault]) -> Vec<FaultBand> {
    faults
        .iter()
        .map(|f| FaultBand {
            start_s: f.at.as_secs_f64(),
            end_s: (f.at + f.length).as_secs_f64(),
            label: f.kind.label(),
            probability: f.probability,
        })
        .collect()
}

/// Resolves every config of `scenario`; `text` is the scenario file's text (for lines).
pub fn build(scenario: Scenario, text: &str) -> Result<Plan, PlanError> {
    let map = Lines::new(text);
    let classes = scenario.load.request_classes().into_owned();
    let mut configs = Vec::with_capacity(scenario.configs.len());
    for entry in &scenario.configs {
        configs.push(plan_config(&scenario, &map, &classes, entry)?);
    }
    if let Some(b) = &scenario.baseline {
        if !configs.iter().any(|c| &c.name == b) {
            return Err(PlanError {
                file: scenario.path.clone(),
                line: scenario::locate(text, "baseline").unwrap_or(1),
                field: "baseline".into(),
                message: format!(
                    "no config is named {b:?} (the configs are: {})",
                    configs
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
    }
    let mut layers = Vec::with_capacity(scenario.topology.len());
    for (i, l) in scenario.topology.iter().enumerate() {
        layers.push(plan_layer(&scenario, &map, i, l)?);
    }
    Ok(Plan {
        scenario,
        configs,
        layers,
    })
}

/// One config of the scenario resolved (its table, then each request class's own policy),
/// with the checks that need the whole load: routes and ladders per config, a derived
/// cost per policy.
fn plan_config(
    scenario: &Scenario,
    map: &Lines,
    classes: &[RequestClass],
    entry: &ConfigEntry,
) -> Result<PlannedConfig, PlanError> {
    // A refusal of the config's field `name`, at its line.
    let refuse = |name: &str, message: String| {
        let field = format!("{}.{name}", entry.field_path);
        PlanError {
            file: scenario.path.clone(),
            line: map.line(&field).unwrap_or(entry.line),
            field,
            message,
        }
    };
    let mut table = entry.table.clone();
    let class_tables = table.remove("classes");
    let mut config = resolve(
        &scenario.path,
        map,
        &table,
        &entry.name,
        &entry.field_path,
        entry.line,
    )?;
    let mut class_policies = match class_tables {
        None => Vec::new(),
        Some(t) => class_policies(scenario, map, entry, &table, t)?,
    };
    // Routes and degraded answers are reported per config, named by the config's own
    // failover list and ladder: a class may keep them or drop them, not bring others.
    for (ci, p) in class_policies.iter().enumerate() {
        let Some(p) = p else { continue };
        let name = &scenario.load.classes[ci].name;
        let differs = |field: &str, what: &str| {
            refuse(
                &format!("classes.{name}.{field}"),
                format!(
                    "class {name:?} has {what} of its own: {what} is reported per config, \
                     so give the config the {field} and let the class keep it (no preset) \
                     or drop it (a preset of its own)"
                ),
            )
        };
        if let Some(f) = &p.failover {
            if config.failover.as_ref().map(|c| &c.providers) != Some(&f.providers) {
                return Err(differs("failover", "a failover list"));
            }
        }
        if !p.ladder.is_empty() && p.ladder != config.ladder {
            return Err(differs("ladder", "a ladder"));
        }
    }
    // Every class's requests must make sense under the policy they run under: a
    // failover rule needs a provider's path, a derived cost one figure per policy.
    let mut shared_cost: Option<(usize, Vec<f64>)> = None;
    for (ci, class) in classes.iter().enumerate() {
        let own = class_policies.get(ci).is_some_and(Option::is_some);
        let field = |name: &str| match scenario.load.classes.is_empty() || !own {
            true => name.to_string(),
            false => format!("classes.{}.{name}", class.name),
        };
        let policy = match class_policies.get_mut(ci).and_then(Option::as_mut) {
            Some(p) => p,
            None => &mut config,
        };
        let for_class = |m: String| match scenario.load.classes.is_empty() {
            true => m,
            false => format!("class {:?}: {m}", class.name),
        };
        if let Some(f) = &policy.failover {
            check_failover(scenario, f, &class.path)
                .map_err(|m| refuse(&field("failover"), for_class(m)))?;
        }
        for (r, rung) in policy.ladder.iter().enumerate() {
            if let Some(name) = rung.model() {
                check_model(scenario, name, &class.path)
                    .map_err(|m| refuse(&field(&format!("ladder[{r}].model")), for_class(m)))?;
            }
        }
        if let AttemptCost::Derived(unit) = policy.attempt_cost {
            let per_slot = derived_costs(scenario, policy, unit, class)
                .map_err(|m| refuse(&field("attempt_cost"), for_class(m)))?;
            if own {
                policy.attempt_cost = AttemptCost::resolved(unit, per_slot);
                continue;
            }
            match &shared_cost {
                Some((other, costs)) if *costs != per_slot => {
                    return Err(refuse(
                        "attempt_cost",
                        format!(
                            "classes {:?} and {:?} cost differently under one policy: give \
                             one of them its own (classes.NAME = {{ ... }}) or a fixed number",
                            classes[*other].name, class.name
                        ),
                    ))
                }
                Some(_) => {}
                None => shared_cost = Some((ci, per_slot)),
            }
        }
    }
    if let (Some((_, per_slot)), AttemptCost::Derived(unit)) = (shared_cost, &config.attempt_cost) {
        config.attempt_cost = AttemptCost::resolved(*unit, per_slot);
    }
    Ok(PlannedConfig {
        name: entry.name.clone(),
        config,
        class_policies,
    })
}

/// Topology layer `i` resolved: its own config, or a pass-through; a layer's config has no
/// failover, derived cost or ladder (those serve the load generator's own attempts).
fn plan_layer(
    scenario: &Scenario,
    map: &Lines,
    i: usize,
    l: &LayerSpec,
) -> Result<PlannedLayer, PlanError> {
    let (config, pass) = match &l.config {
        None => (pass_through(&l.name), true),
        Some(table) => {
            let path = format!("topology[{i}].config");
            let line = map.line(&path).unwrap_or(1);
            let config = resolve(&scenario.path, map, table, &l.name, &path, line)?;
            if config.failover.is_some() {
                let field = format!("{path}.failover");
                return Err(PlanError {
                    file: scenario.path.clone(),
                    line: map.line(&field).unwrap_or(line),
                    field,
                    message: "failover routes the load generator's own attempts; \
                              a layer forwards to one next hop"
                        .into(),
                });
            }
            if matches!(config.attempt_cost, AttemptCost::Derived(_)) {
                let field = format!("{path}.attempt_cost");
                return Err(PlanError {
                    file: scenario.path.clone(),
                    line: map.line(&field).unwrap_or(line),
                    field,
                    message: "a layer's attempts reach no provider: give a number".into(),
                });
            }
            if config.hedges() {
                let key = match config.hedging.is_some() {
                    true => "hedging",
                    false => "hedge_on_per_try_timeout",
                };
                let field = format!("{path}.{key}");
                return Err(PlanError {
                    file: scenario.path.clone(),
                    line: map.line(&field).unwrap_or(line),
                    field,
                    message: "hedged copies are sent by the load generator's own client only; \
                              a layer's client retries"
                        .into(),
                });
            }
            if !config.ladder.is_empty() {
                let field = format!("{path}.ladder");
                return Err(PlanError {
                    file: scenario.path.clone(),
                    line: map.line(&field).unwrap_or(line),
                    field,
                    message: "the ladder answers the load generator's own users; a layer passes its downstream's \
                              answer on"
                        .into(),
                });
            }
            (config, false)
        }
    };
    Ok(PlannedLayer {
        name: l.name.clone(),
        config,
        pass_through: pass,
        propagate_deadline: l.propagate_deadline,
        service_time: l.service_time.clone(),
        concurrency: l.concurrency,
    })
}

/// A derived `attempt_cost` resolved: what one of the load's requests costs at the provider
/// of each failover slot (the load's path alone without failover), in `unit`.
fn derived_costs(
    sc: &Scenario,
    config: &RetryConfig,
    unit: CostUnit,
    class: &RequestClass,
) -> Result<Vec<f64>, String> {
    let word = match unit {
        CostUnit::Tokens => "tokens",
        CostUnit::Money => "money",
    };
    if class.draws_tokens() {
        return Err(format!(
            "{word:?} charges each attempt its request's tokens, but the class draws a token \
             count per request, which one figure per attempt cannot follow: give the class \
             fixed token counts or attempt_cost a number"
        ));
    }
    let paths: Vec<String> = match &config.failover {
        Some(f) => (0..f.providers.len())
            .map(|slot| f.path_to(&class.path, slot).into_owned())
            .collect(),
        None => vec![class.path.clone()],
    };
    paths
        .iter()
        .map(|path| {
            let Some(i) = scenario::provider::route(&sc.providers, path) else {
                return Err(format!(
                    "{word:?} is what an attempt costs at its provider, but {path:?} names \
                     no [[provider]] of the scenario"
                ));
            };
            let p = &sc.providers[i];
            // Fixed per class (checked above): any request's figure is every request's.
            let tokens = p.class_tokens(class, sc.seed, 0);
            match (unit, p.price) {
                (CostUnit::Tokens, _) => Ok(tokens.total() as f64),
                (CostUnit::Money, Some(price)) => {
                    Ok(price.nano(tokens) as f64 / scenario::provider::NANO_PER_UNIT)
                }
                (CostUnit::Money, None) => Err(format!(
                    "\"money\" needs a price: provider {:?} has none",
                    p.name
                )),
            }
        })
        .collect()
}

/// A failover rule routes a direct run's attempts between the scenario's own providers:
/// the load's path must name a provider, and so must every name the rule lists.
fn check_failover(
    sc: &Scenario,
    f: &crate::policy::FailoverConfig,
    path: &str,
) -> Result<(), String> {
    if !sc.topology.is_empty() {
        return Err(
            "failover routes the load generator's own attempts: it needs a direct run \
                    (no [[topology]])"
                .into(),
        );
    }
    if !path.starts_with(scenario::provider::PATH_PREFIX) {
        return Err(format!(
            "the path {:?} names no provider (failover needs {}NAME/...)",
            path,
            scenario::provider::PATH_PREFIX
        ));
    }
    match f
        .providers
        .iter()
        .find(|n| !sc.providers.iter().any(|p| &p.name == *n))
    {
        Some(n) => Err(format!("{n:?} is not a [[provider]] of the scenario")),
        None => Ok(()),
    }
}

/// A config's `classes = { NAME = { ... }, ... }`: per class of the load, its own policy.
/// A class table with a `preset` starts from that preset; one without starts from the
/// config's own table (`config`, without `classes`) and overrides its fields.
fn class_policies(
    sc: &Scenario,
    map: &Lines<'_>,
    entry: &ConfigEntry,
    config: &toml::Table,
    tables: toml::Value,
) -> Result<Vec<Option<RetryConfig>>, PlanError> {
    let at = |field: String, message: String| PlanError {
        file: sc.path.clone(),
        line: map.line(&field).unwrap_or(entry.line),
        field,
        message,
    };
    let field = format!("{}.classes", entry.field_path);
    if sc.load.classes.is_empty() {
        return Err(at(
            field,
            "the load has no [[load.classes]] to give a policy of its own".into(),
        ));
    }
    let toml::Value::Table(tables) = tables else {
        return Err(at(
            field,
            "is a table of class names, e.g. classes = { health = { max_attempts = 10 } }".into(),
        ));
    };
    let mut out = vec![None; sc.load.classes.len()];
    for (name, t) in tables {
        let path = format!("{field}.{name}");
        let Some(ci) = sc.load.classes.iter().position(|c| c.name == name) else {
            let hint =
                scenario::validate::suggest(&name, sc.load.classes.iter().map(|c| c.name.as_str()))
                    .map_or(String::new(), |s| format!(" (did you mean {s:?}?)"));
            return Err(at(path, format!("the load has no class {name:?}{hint}")));
        };
        let toml::Value::Table(t) = t else {
            return Err(at(
                path,
                "is a retry config table, e.g. { preset = \"no-retry\" }".into(),
            ));
        };
        let fresh = t.contains_key("preset");
        let mut table = if fresh {
            toml::Table::new()
        } else {
            config.clone()
        };
        table.extend(t);
        table.insert("name".into(), toml::Value::String(entry.name.clone()));
        let line = map.line(&path).unwrap_or(entry.line);
        let policy = resolve(&sc.path, map, &table, &entry.name, &path, line)?;
        out[ci] = Some(policy);
    }
    Ok(out)
}

/// A ladder's model rung sends the request to another provider of the scenario: the path
/// must name a provider (so it can name another), and the rung's name must be one.
fn check_model(sc: &Scenario, name: &str, path: &str) -> Result<(), String> {
    if !path.starts_with(scenario::provider::PATH_PREFIX) {
        return Err(format!(
            "a model rung sends the call to another provider, but the path {path:?} names no \
             provider ({}NAME/...)",
            scenario::provider::PATH_PREFIX
        ));
    }
    match sc.providers.iter().any(|p| p.name == name) {
        true => Ok(()),
        false => Err(format!("{name:?} is not a [[provider]] of the scenario")),
    }
}

/// Resolves one retry-config table (`name`, optional `preset`, overrides) written at
/// `field_path`; a table without a `name` is named `default_name`.
fn resolve(
    file: &Path,
    map: &Lines<'_>,
    table: &toml::Table,
    default_name: &str,
    field_path: &str,
    line: usize,
) -> Result<RetryConfig, PlanError> {
    let located = |field: String, message: String| {
        let full = if field.is_empty() {
            field_path.to_string()
        } else {
            format!("{field_path}.{field}")
        };
        PlanError {
            file: file.to_path_buf(),
            line: map.line(&full).unwrap_or(line),
            field: full,
            message,
        }
    };
    // A config written as just `preset = "x"` is named after its preset (or its layer).
    let mut table = table.clone();
    table
        .entry("name")
        .or_insert_with(|| toml::Value::String(default_name.to_string()));
    let spec: RetryConfigSpec = scenario::shape::from_table(&table)
        .map_err(|shape| located(shape.field, shape.kind.to_string()))?;
    spec.resolve().map_err(|e| {
        let field = match (&e, e.field()) {
            (_, Some(f)) => f.to_string(),
            (crate::policy::PolicyError::UnknownPreset { .. }, None) => "preset".into(),
            _ => String::new(),
        };
        located(field, e.to_string())
    })
}

/// The lines of a scenario's fields, indexed on first use: only an error or a topology layer
/// needs one, and the index is built once however many are looked up.
struct Lines<'a> {
    text: &'a str,
    map: std::cell::OnceCell<scenario::source::SourceMap>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        Lines {
            text,
            map: std::cell::OnceCell::new(),
        }
    }

    fn line(&self, path: &str) -> Option<usize> {
        self.map
            .get_or_init(|| scenario::source::SourceMap::new(self.text))
            .line(path)
    }
}

/// Why a scenario file could not be planned.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Scenario(#[from] scenario::ScenarioError),
    #[error(transparent)]
    Config(#[from] PlanError),
    /// `--only` named a config the scenario does not have.
    #[error("--only {name}: the scenario has no config of that name (it has: {have})")]
    UnknownConfig { name: String, have: String },
    /// `--duration` outside what a scenario may last.
    #[error("--duration: {0}")]
    Duration(String),
}

/// What the command line changes in a scenario (`--seed`, `--only`, `--duration`), applied
/// while the plan is made so that no caller edits a plan after it is built: a plan is
/// always one the checks have seen whole.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub seed: Option<u64>,
    /// Configs to keep by name (empty: all). The baseline stays, so every verdict is judged
    /// against the same config with or without the filter.
    pub only: Vec<String>,
    /// A new duration; faults that would start after it are dropped.
    pub duration: Option<Duration>,
    /// A real service to rehearse instead of the scenario's target (`run --target-url`).
    pub target_url: Option<String>,
}

/// Loads and plans a scenario file in one step.
pub fn load(path: &Path) -> Result<Plan, LoadError> {
    load_with(path, &Overrides::default())
}

/// Loads and plans a scenario file with the command line's overrides.
pub fn load_with(path: &Path, overrides: &Overrides) -> Result<Plan, LoadError> {
    let mut text = scenario::load::read_text(path)?;
    if let Some(url) = &overrides.target_url {
        text = scenario::with_target_url(&text, url);
    }
    let mut scenario = scenario::parse(path, &text)?;
    if let Some(seed) = overrides.seed {
        scenario.seed = seed;
    }
    if let Some(d) = overrides.duration {
        scenario::validate::check_duration("--duration", d)
            .map_err(|r| LoadError::Duration(r.message))?;
        scenario.faults.retain(|f| f.at < d);
        scenario.duration = d;
    }
    let mut plan = build(scenario, &text)?;
    if !overrides.only.is_empty() {
        keep_only(&mut plan, &overrides.only)?;
    }
    Ok(plan)
}

/// `--only`: the named configs and the baseline.
fn keep_only(plan: &mut Plan, only: &[String]) -> Result<(), LoadError> {
    if let Some(name) = only
        .iter()
        .find(|n| !plan.configs.iter().any(|c| &c.name == *n))
    {
        return Err(LoadError::UnknownConfig {
            name: name.clone(),
            have: plan
                .configs
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let baseline = plan.scenario.baseline.clone().or_else(|| {
        plan.configs
            .iter()
            .any(|c| c.name == "no-retry")
            .then(|| "no-retry".to_string())
    });
    plan.configs
        .retain(|c| only.contains(&c.name) || baseline.as_ref() == Some(&c.name));
    Ok(())
}
