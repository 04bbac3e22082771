//! Sense checks on a deserialized scenario: every refusal names the dotted field path, the
//! value and what would be allowed. The loader turns a [`Refusal`] into a located
//! [`ScenarioError`](super::ScenarioError).
//!
//! What is *not* checked here: the inside of `configs` tables (the policy core resolves and
//! checks them, returning paths relative to the table) and gate expressions (the gates
//! module parses them).
//!
//! The checks are split by section: `load` for `[load]`, `fault` for `[[faults]]`, `target`
//! for `[target]`; the refusal itself is in `refuse`, a leaf that the sections' own checks in
//! `classes`, `grpc` and `provider` use without naming the rest. This file keeps the checks
//! several sections share and those of the scenario's lists (configs, topology, lengths).

mod fault;
mod load;
pub(super) mod refuse;
mod target;

pub use fault::{check_fault, FAULT_KINDS};
pub use load::{check_load, check_work, planned_field, LOAD_KINDS};
pub(crate) use refuse::refuse;
pub use refuse::{suggest, Checked, Refusal};
pub use target::{check_service_spec, check_target, check_wire, parse_url, TargetChoice};

use std::collections::BTreeSet;
use std::time::Duration;

use super::limits::{self, big};
use super::model::*;
use super::units::duration::format as fmt_d;
pub use refuse::check_name;

/// The longest run a scenario may describe.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

pub fn check_duration(field: &str, d: Duration) -> Checked<()> {
    if d.is_zero() || d > MAX_DURATION {
        return refuse(field, format!("{} is outside (0s, 24h]", fmt_d(d)));
    }
    Ok(())
}

/// A count against its ceiling: `count <= max`, refused with both figures.
fn check_count(field: &str, what: &str, count: u64, max: u64) -> Checked<()> {
    if count > max {
        return refuse(
            field,
            format!(
                "{} {what} is above the limit of {}",
                big(count as f64),
                big(max as f64)
            ),
        );
    }
    Ok(())
}

pub fn check_dist(field: &str, d: &Dist) -> Checked<()> {
    match d {
        Dist::Constant { .. } => Ok(()),
        Dist::Uniform { min, max } => {
            if min > max {
                return refuse(
                    format!("{field}.min"),
                    format!(
                        "{} is above max {}; need min ≤ max",
                        fmt_d(*min),
                        fmt_d(*max)
                    ),
                );
            }
            Ok(())
        }
        Dist::Exponential { mean } => {
            if mean.is_zero() {
                return refuse(format!("{field}.mean"), "0s is outside (0s, ∞)");
            }
            Ok(())
        }
        Dist::LogNormal { median, p99 } => {
            if median.is_zero() {
                return refuse(format!("{field}.median"), "0s is outside (0s, ∞)");
            }
            if p99 < median {
                return refuse(
                    format!("{field}.p99"),
                    format!(
                        "{} is below the median {}; need p99 ≥ median",
                        fmt_d(*p99),
                        fmt_d(*median)
                    ),
                );
            }
            Ok(())
        }
    }
}

/// How many faults and gates a scenario lists, and how long each gate is.
pub fn check_lengths(file: &ScenarioFile) -> Checked<()> {
    check_count(
        "faults",
        "fault windows",
        file.faults.len() as u64,
        limits::MAX_FAULTS as u64,
    )?;
    check_count(
        "gates",
        "gates",
        file.gates.len() as u64,
        limits::MAX_GATES as u64,
    )?;
    for (i, g) in file.gates.iter().enumerate() {
        check_count(
            &format!("gates[{i}]"),
            "bytes",
            g.len() as u64,
            limits::MAX_GATE_LEN as u64,
        )?;
    }
    Ok(())
}

/// Each config's name (its `name`, or its `preset` when it has none), checked unique.
pub fn check_configs(configs: &[toml::Table]) -> Checked<Vec<String>> {
    if configs.is_empty() {
        return refuse(
            "configs",
            "is empty; compare at least one retry config, e.g. [[configs]] preset = \"aws-standard\"",
        );
    }
    check_count(
        "configs",
        "configs",
        configs.len() as u64,
        limits::MAX_CONFIGS as u64,
    )?;
    let mut seen = BTreeSet::new();
    let mut names = Vec::with_capacity(configs.len());
    for (i, t) in configs.iter().enumerate() {
        let p = format!("configs[{i}]");
        let get = |key: &str| -> Checked<Option<String>> {
            match t.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(v) => refuse(
                    format!("{p}.{key}"),
                    format!("expected a string, found {} `{v}`", v.type_str()),
                ),
            }
        };
        let name = get("name")?;
        let preset = get("preset")?;
        let (field, name) = match (name, preset) {
            (Some(n), _) => (format!("{p}.name"), n),
            (None, Some(pr)) => (format!("{p}.preset"), pr),
            (None, None) => {
                return refuse(
                    p,
                    "needs a `name` or a `preset`, e.g. preset = \"aws-standard\"",
                )
            }
        };
        check_name(&field, &name)?;
        if !seen.insert(name.clone()) {
            return refuse(
                field,
                format!("`{name}` is used by an earlier config; give each config a unique `name`"),
            );
        }
        names.push(name);
    }
    Ok(names)
}

pub fn check_topology(layers: &[LayerSpec]) -> Checked<()> {
    check_count(
        "topology",
        "layers",
        layers.len() as u64,
        limits::MAX_LAYERS as u64,
    )?;
    let mut seen = BTreeSet::new();
    for (i, l) in layers.iter().enumerate() {
        let p = format!("topology[{i}]");
        check_name(&format!("{p}.name"), &l.name)?;
        if !seen.insert(l.name.as_str()) {
            return refuse(
                format!("{p}.name"),
                format!(
                    "`{}` is used by an earlier layer; layer names must be unique",
                    l.name
                ),
            );
        }
        if l.concurrency == Some(0) {
            return refuse(format!("{p}.concurrency"), "0 is outside [1, 4294967295]");
        }
        if let Some(c) = l.concurrency {
            check_count(
                &format!("{p}.concurrency"),
                "slots",
                c.into(),
                limits::MAX_SLOTS.into(),
            )?;
        }
        if let Some(d) = &l.service_time {
            check_dist(&format!("{p}.service_time"), d)?;
        }
        if let Some(t) = &l.config {
            for key in ["name", "preset"] {
                if let Some(v) = t.get(key) {
                    if !v.is_str() {
                        return refuse(
                            format!("{p}.config.{key}"),
                            format!("expected a string, found {} `{v}`", v.type_str()),
                        );
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_misses_only() {
        assert_eq!(
            suggest("poison", LOAD_KINDS.iter().copied()).as_deref(),
            Some("poisson")
        );
        assert_eq!(
            suggest("durration", ["name", "duration", "drain"]).as_deref(),
            Some("duration")
        );
        assert_eq!(suggest("zzzz", LOAD_KINDS.iter().copied()), None);
    }

    #[test]
    fn names_are_folder_safe() {
        assert!(check_name("name", "downstream-503_v1.2").is_ok());
        assert!(check_name("name", "").is_err());
        assert!(check_name("name", "a/b").is_err());
        assert!(check_name("name", "..").is_err());
    }
}
