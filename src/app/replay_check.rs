//! `stormrig replay-check`: simulate a scenario that replays a recorded incident and say,
//! per config, whether it reproduces the downstream arrivals the incident recorded
//! ([`crate::report::retrodiction`]).

use std::path::Path;

use super::{AppError, Exit};
use crate::plan;
use crate::report::retrodiction;

pub(super) fn replay_check(
    scenario: &Path,
    recorded: &Path,
    bucket_s: u64,
    tolerance: f64,
    json: bool,
) -> Result<Exit, AppError> {
    if bucket_s == 0 || bucket_s > 3600 {
        return Err(AppError::bad(format!(
            "--bucket-s {bucket_s}: must be in [1, 3600] seconds"
        )));
    }
    if !(tolerance.is_finite() && tolerance > 0.0) {
        return Err(AppError::bad(format!(
            "--tolerance {tolerance}: must be a finite percentage above 0"
        )));
    }
    let plan = plan::load(scenario).map_err(AppError::bad)?;
    let per_second = retrodiction::read_recorded(recorded).map_err(AppError::bad)?;
    let out = crate::sim::run(&plan, &Default::default()).map_err(AppError::bad)?;
    let check = retrodiction::compare(&per_second, &out.result, bucket_s, tolerance);
    if json {
        let text = serde_json::to_string_pretty(&check).map_err(AppError::failed)?;
        super::out::line(text)?;
    } else {
        super::out::say(retrodiction::text(&check))?;
    }
    Ok(if check.reproduced_by.is_some() {
        Exit::Ok
    } else {
        Exit::GateFailed
    })
}
