//! Reading a scenario file into a validated [`Scenario`]: TOML syntax, then serde's shape
//! (unknown keys with a did-you-mean, wrong types), then [`validate`]'s sense
//! checks, then the builtin target's model file. Every refusal is located in its file.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use super::error::{ErrorKind, ScenarioError};
use super::limits;
use super::model::{ScenarioFile, ServiceModel, TargetFile};
use super::source::SourceMap;
use super::validate::{self, Refusal, TargetChoice};
use super::{ConfigEntry, Scenario, Target};

/// `targets/default.toml`, compiled in so that `builtin = "default"` (or no target at all)
/// works from any directory.
pub const DEFAULT_TARGET: &str = include_str!("../../targets/default.toml");

/// Reads and validates the scenario at `path`.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let text = read_text(path)?;
    parse(path, &text)
}

/// Reads a scenario, target or faults file through the one bounded reader
/// ([`crate::input`]): a regular file of at most [`limits::MAX_FILE_BYTES`], as text.
pub fn read_text(path: &Path) -> Result<String, ScenarioError> {
    use crate::input::{self, InputError};
    let bytes = input::read(path, input::Kind::Scenario).map_err(|e| match e {
        InputError::Io { error, .. } => ScenarioError::unreadable(path, error),
        other => ScenarioError::new(path, Some(1), None, ErrorKind::Invalid(other.reason())),
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let line = line_of_bytes(e.as_bytes(), e.utf8_error().valid_up_to());
        ScenarioError::new(
            path,
            Some(line),
            None,
            ErrorKind::Syntax("the file is not UTF-8 text".into()),
        )
    })
}

fn line_of_bytes(bytes: &[u8], offset: usize) -> usize {
    bytes[..offset.min(bytes.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Validates scenario `text` as if read from `path`. The path appears in messages, and a
/// builtin target is looked up relative to it (`<dir of path>/../targets/`, then `./targets/`).
pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
    let (file, map): (ScenarioFile, _) = deserialize(path, text)?;
    let refused = |r: Refusal| located(path, &map, r);

    check_header(&file).map_err(refused)?;
    let recorded = read_recording(path, &file.load, &map)?;
    let folded = match &recorded {
        Some(super::recording::read::Recorded::Trace { folded, file, .. }) if *folded > 0 => {
            Some(("load.file".to_string(), format!(
                "folded {folded} retries of {} into their first attempts; the replay offers the callers' demand",
                file.display()
            )))
        }
        _ => None,
    };
    let load = validate::check_load(&file.load, file.duration, recorded).map_err(refused)?;
    let choice = validate::check_target(&file.target).map_err(refused)?;
    let wire = validate::check_wire(&file.target, &choice, path).map_err(refused)?;
    validate::check_lengths(&file).map_err(refused)?;
    check_grpc(&load, wire.protocol).map_err(refused)?;
    let (faults, mut recording_notes) = check_faults(path, &file, &map)?;
    recording_notes.extend(folded);
    validate::check_topology(&file.topology).map_err(refused)?;
    if !load.classes.is_empty() && !file.topology.is_empty() {
        return Err(refused(Refusal {
            field: "load.classes".into(),
            message: "request classes are the load generator's own mix in a direct run: a \
                      [[topology]] layer relays whatever reaches it under its own policy"
                .into(),
        }));
    }
    let providers = super::provider::check_providers(&file.providers).map_err(refused)?;
    if !providers.is_empty() && !matches!(choice, TargetChoice::Builtin(_)) {
        return Err(refused(Refusal {
            field: "provider[0]".into(),
            message: "providers live on the built-in target; a scenario with `target.url` cannot have them".into(),
        }));
    }
    let names = validate::check_configs(&file.configs).map_err(refused)?;
    validate::check_work(&load, file.duration, names.len(), 1.0).map_err(refused)?;
    let configs = names
        .into_iter()
        .zip(&file.configs)
        .enumerate()
        .map(|(i, (name, table))| {
            let field_path = format!("configs[{i}]");
            ConfigEntry {
                name,
                table: table.clone(),
                line: map.line(&field_path).unwrap_or(1),
                field_path,
            }
        })
        .collect();

    // A named target file, overlaid field by field by the scenario's `service`.
    let named_model = |name: &str, field: &str| -> Result<ServiceModel, ScenarioError> {
        let base = resolve_target(path, name)
            .map_err(|m| {
                refused(Refusal {
                    field: field.into(),
                    message: m,
                })
            })?
            .load()?;
        Ok(match &file.target.service {
            Some(spec) => base.overlay(spec),
            None => base,
        })
    };
    let target = match choice {
        TargetChoice::Url {
            url,
            host,
            port,
            model,
            upstream_timeout,
        } => Target::Url {
            url,
            host,
            port,
            upstream_timeout,
            dedup: file.target.dedup.clone(),
            model: match model {
                Some(name) => Some(named_model(&name, "target.model")?),
                None => None,
            },
            wire,
        },
        TargetChoice::Builtin(name) => {
            let model = named_model(&name, "target.builtin")?;
            Target::Builtin {
                name,
                model,
                dedup: file.target.dedup.clone(),
                wire,
            }
        }
    };

    Ok(Scenario {
        path: path.to_path_buf(),
        name: file.name,
        description: file.description,
        seed: file.seed,
        duration: file.duration,
        drain: file.drain,
        load,
        target,
        faults,
        topology: file.topology,
        configs,
        gates: file.gates,
        baseline: file.baseline,
        providers,
        recording_notes,
    })
}

/// What a fault series' policies skipped: the field (`faults[i].series`) and what.
type FaultNote = (String, String);

/// The scenario's faults in file order, a `series` fault expanded where it stands into its
/// windows; and what the fault series' policies skipped (`faults[i].series`, what).
fn check_faults(
    path: &Path,
    file: &ScenarioFile,
    map: &SourceMap,
) -> Result<(Vec<super::Fault>, Vec<FaultNote>), ScenarioError> {
    use super::recording::fault_series::{expand, Placement, SeriesError};
    let refused = |r: Refusal| located(path, map, r);
    let mut faults = Vec::new();
    let mut notes = Vec::new();
    let mut expanded = 0usize;
    for (i, f) in file.faults.iter().enumerate() {
        let Some(name) = &f.series else {
            faults.push(validate::check_fault(i, f, file.duration).map_err(refused)?);
            continue;
        };
        let field = format!("faults[{i}].series");
        let series_file = path.parent().unwrap_or(Path::new("")).join(name);
        let content = |e: super::recording::RecordingError| {
            ScenarioError::new(
                &series_file,
                Some(e.line()),
                Some(field.clone()),
                ErrorKind::Invalid(format!("{e} (the fault series of {})", path.display())),
            )
        };
        let bytes =
            crate::input::read(&series_file, crate::input::Kind::Recording).map_err(|e| {
                refused(Refusal {
                    field: field.clone(),
                    message: format!("`{}` cannot be read: {}", series_file.display(), e.reason()),
                })
            })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let line = line_of_bytes(e.as_bytes(), e.utf8_error().valid_up_to());
            content(super::recording::at(line, "text", "is not UTF-8"))
        })?;
        let allowed = file.load.skip_bad_lines.unwrap_or(0);
        let columns = super::recording::columns::parse(&text, allowed).map_err(content)?;
        let place = Placement::of(f, &file.load, file.duration);
        let (windows, gaps) = expand(i, f, &columns, place).map_err(|e| match e {
            SeriesError::Field(r) => refused(r),
            SeriesError::Content(e) => content(e),
        })?;
        expanded += windows.len();
        if expanded > limits::MAX_SERIES_FAULT_WINDOWS {
            return Err(refused(Refusal {
                field,
                message: format!(
                    "the series faults give {expanded} fault windows, above the limit of {}",
                    limits::MAX_SERIES_FAULT_WINDOWS
                ),
            }));
        }
        if columns.skipped > 0 || gaps > 0 {
            notes.push((
                field,
                format!(
                    "{} bad line(s) of {} skipped under load.skip_bad_lines, {gaps} gap(s) read as no fault",
                    columns.skipped,
                    series_file.display()
                ),
            ));
        }
        faults.extend(windows);
    }
    Ok((faults, notes))
}

/// The recording of a `series` or `trace` load, read and cut. A refusal of its content
/// names the recording, its line and `load.file`; one of a field, the scenario's line.
fn read_recording(
    path: &Path,
    load: &super::model::LoadSection,
    map: &SourceMap,
) -> Result<Option<super::recording::read::Recorded>, ScenarioError> {
    use super::recording::read::{read, ReadError};
    read(path, load).map_err(|e| match e {
        ReadError::Field(r) => located(path, map, r),
        ReadError::Unreadable { file, reason } => located(
            path,
            map,
            Refusal {
                field: "load.file".into(),
                message: format!("`{}` cannot be read: {reason}", file.display()),
            },
        ),
        ReadError::Content { file, error } => ScenarioError::new(
            file,
            Some(error.line()),
            Some("load.file".into()),
            ErrorKind::Invalid(format!("{error} (the recording of {})", path.display())),
        ),
    })
}

/// The scenario's own top-level fields: a folder-safe name, a description and durations
/// within their ceilings.
fn check_header(file: &ScenarioFile) -> Result<(), Refusal> {
    validate::check_name("name", &file.name)?;
    if file.description.len() > limits::MAX_DESCRIPTION_LEN {
        return Err(Refusal {
            field: "description".into(),
            message: format!(
                "is {} bytes long, above the limit of {}",
                file.description.len(),
                limits::MAX_DESCRIPTION_LEN
            ),
        });
    }
    validate::check_duration("duration", file.duration)?;
    if file.drain > validate::MAX_DURATION {
        return Err(Refusal {
            field: "drain".into(),
            message: format!(
                "{} is outside [0s, 24h]",
                super::units::duration::format(file.drain)
            ),
        });
    }
    Ok(())
}

/// gRPC calls need a protocol that carries trailers: the built-in target, the fault proxy
/// in front of a `url` target and topology layers (over HTTP/2 in clear) relay them.
fn check_grpc(load: &super::Load, protocol: super::Protocol) -> Result<(), Refusal> {
    if load.grpc.is_none() {
        return Ok(());
    }
    super::grpc::check_protocol(protocol)
}

/// A target definition file, found on disk or compiled in.
#[derive(Debug, Clone)]
pub struct TargetSource {
    pub path: PathBuf,
    pub text: String,
}

impl TargetSource {
    /// Parses and checks the file; the model is its `service` over [`ServiceModel::default`].
    pub fn load(&self) -> Result<ServiceModel, ScenarioError> {
        parse_target(&self.path, &self.text)
    }
}

/// Finds `targets/<name>.toml`: next to the scenario's folder (`<dir>/../targets/`), then in
/// `./targets/`; `default` is also compiled in.
pub fn resolve_target(scenario_path: &Path, name: &str) -> Result<TargetSource, String> {
    let file = format!("{name}.toml");
    let dir = scenario_path.parent().unwrap_or(Path::new(""));
    let sibling = match dir.parent() {
        Some(up) => up.join("targets"),
        None => dir.join("..").join("targets"),
    };
    let mut tried = Vec::new();
    for candidate in [sibling.join(&file), Path::new("targets").join(&file)] {
        if tried.contains(&candidate) {
            continue;
        }
        if candidate.is_file() {
            return match read_text(&candidate) {
                Ok(text) => Ok(TargetSource {
                    path: candidate,
                    text,
                }),
                Err(e) => Err(format!(
                    "`{}` cannot be read: {}",
                    candidate.display(),
                    e.message()
                )),
            };
        }
        tried.push(candidate);
    }
    if name == "default" {
        return Ok(TargetSource {
            path: PathBuf::from("targets/default.toml"),
            text: DEFAULT_TARGET.to_string(),
        });
    }
    let tried: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
    Err(format!(
        "no target `{name}`: looked for {}; the built-in one is \"default\"",
        tried.join(" and ")
    ))
}

/// The scenario's text with its `[target]` pointed at a real service at `url`: the
/// built-in model (`builtin`, `service`) and its `tls` switch go (a `url` target says TLS
/// with `https://`); the protocol, dedup, model and every other table stay, so a shipped
/// scenario is rehearsed unchanged against the user's own service, through the counting
/// fault proxy. A text that is not TOML is returned as it is, for the parser to name
/// what is wrong.
pub fn with_target_url(text: &str, url: &str) -> String {
    let Ok(mut doc) = text.parse::<toml_edit::DocumentMut>() else {
        return text.to_string();
    };
    let target = doc
        .entry("target")
        .or_insert_with(toml_edit::table)
        .as_table_like_mut();
    let Some(target) = target else {
        return text.to_string();
    };
    for key in ["builtin", "service", "tls"] {
        target.remove(key);
    }
    target.insert("url", toml_edit::value(url));
    doc.to_string()
}

/// Parses a target definition file (`targets/*.toml`) into its service model.
pub fn parse_target(path: &Path, text: &str) -> Result<ServiceModel, ScenarioError> {
    let (file, map): (TargetFile, _) = deserialize(path, text)?;
    validate::check_service_spec("service", &file.service).map_err(|r| located(path, &map, r))?;
    Ok(ServiceModel::default().overlay(&file.service))
}

fn located(path: &Path, map: &SourceMap, r: Refusal) -> ScenarioError {
    ScenarioError::new(
        path,
        Some(map.line(&r.field).unwrap_or(1)),
        Some(r.field),
        ErrorKind::Invalid(r.message),
    )
}

/// toml_edit's reason, or where it has none (a control byte in a comment gives an empty
/// message), the character at the error and its column.
fn syntax_reason(text: &str, message: &str, span: Option<std::ops::Range<usize>>) -> String {
    let message = message.trim();
    if !message.is_empty() {
        return message.to_string();
    }
    let start = span.map_or(0, |s| s.start);
    let (Some(before), Some(after)) = (text.get(..start), text.get(start..)) else {
        return "the text is not TOML".into();
    };
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    match after.chars().next() {
        Some(c) if c.is_control() => format!(
            "column {column}: control character U+{:04X} is not allowed in TOML, not even \
             in a comment",
            u32::from(c)
        ),
        Some(c) => format!("column {column}: unexpected {c:?}"),
        None => format!("column {column}: the file ends too early"),
    }
}

/// TOML syntax first (so a syntax error is reported as such), then serde's shape, from one
/// parse of the file (which also gives the map of its lines).
pub fn deserialize<T: DeserializeOwned>(
    path: &Path,
    text: &str,
) -> Result<(T, SourceMap), ScenarioError> {
    let doc = toml_edit::ImDocument::parse(text.to_string()).map_err(|e| {
        let line = e
            .span()
            .map(|s| super::source::LineIndex::new(text).line(s.start))
            .unwrap_or(1);
        ScenarioError::new(
            path,
            Some(line),
            None,
            ErrorKind::Syntax(syntax_reason(text, e.message(), e.span())),
        )
    })?;
    let map = SourceMap::of(text, &doc);
    let value = super::shape::from_document::<T>(doc, &map).map_err(|s| {
        // The field's own line when it is written, else where serde pointed, else its table.
        let line = map
            .line_exact(&s.field)
            .or(s.span.as_ref().map(|span| map.line_at(span.start)))
            .or(map.line(&s.field))
            .unwrap_or(1);
        ScenarioError::new(path, Some(line), Some(s.field), s.kind)
    })?;
    Ok((value, map))
}
