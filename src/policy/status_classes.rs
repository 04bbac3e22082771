//! A config's classes of plain HTTP statuses, worked out once per client.
//!
//! Nearly every outcome a client classifies is a bare status (no error code, no gRPC
//! status), and [`RetryOn::classify`] answers those by walking the config's pattern lists;
//! a storm classifies one per attempt. Its answer for a bare status depends on the status
//! alone, so a table of it, built from `classify` itself, gives the same class for a look-up.

use super::outcome::{AttemptOutcome, Classified, OutcomeClass, Response, RetryOn};

/// Statuses the table covers (every status a config may name is below it).
const STATUSES: usize = 600;

/// The class of each bare status below [`STATUSES`] under one config's [`RetryOn`].
#[derive(Debug, Clone)]
pub(super) struct StatusClasses {
    table: Box<[OutcomeClass]>,
}

impl StatusClasses {
    pub(super) fn new(retry_on: &RetryOn) -> StatusClasses {
        StatusClasses {
            table: (0..STATUSES as u16)
                .map(|s| {
                    retry_on
                        .classify(&AttemptOutcome::Response(Response::status(s)))
                        .class
                })
                .collect(),
        }
    }

    /// What `retry_on.classify(outcome)` says, `retry_on` being the config the table was
    /// built from.
    #[inline]
    pub(super) fn classify(&self, retry_on: &RetryOn, outcome: &AttemptOutcome<'_>) -> Classified {
        if let AttemptOutcome::Response(Response {
            status,
            error_code: None,
            grpc_status: None,
            should_retry: None,
            retry_after: None,
            ..
        }) = outcome
        {
            if let Some(&class) = self.table.get(usize::from(*status)) {
                return Classified {
                    class,
                    timeout: false,
                    never_sent: false,
                };
            }
        }
        retry_on.classify(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{preset, preset_names, GrpcStatus};

    /// Every preset's table agrees with its classifier on every status, bare or not.
    #[test]
    fn the_table_answers_as_the_classifier_does() {
        for name in preset_names() {
            let on = &preset(name).unwrap().retry_on;
            let table = StatusClasses::new(on);
            for status in 0..700u16 {
                let outcomes = [
                    Response::status(status),
                    Response {
                        error_code: Some("ThrottlingException"),
                        ..Response::status(status)
                    },
                    Response {
                        grpc_status: Some(GrpcStatus::Unavailable),
                        ..Response::status(status)
                    },
                ];
                for r in outcomes {
                    let o = AttemptOutcome::Response(r);
                    assert_eq!(table.classify(on, &o), on.classify(&o), "{name} {status}");
                }
            }
        }
    }
}
