//! One topology layer's state in virtual time: what the plan gives it ([`HopRun`]), what it
//! holds while the run goes ([`Hop`]: its session, service-time sampler, concurrency and
//! counts) and what it counted ([`HopOut`]). How attempts pass through it is `layers`.

use crate::metrics::Recorder;
use crate::policy::RetryConfig;
use crate::scenario::timeline::Sampler;
use crate::scenario::Dist;
use crate::session::Session;

/// Multiplier of the incoming request id in the id a layer sends downstream (the live
/// layer's `REQUEST_ID_STRIDE`).
pub(super) const REQUEST_ID_STRIDE: u64 = 1024;

/// `deadline_ms` of an attempt that carries no deadline header.
pub(super) const NO_DEADLINE: u64 = u64::MAX;

/// One topology layer as the simulation is given it.
pub(crate) struct HopRun<'a> {
    pub name: &'a str,
    pub config: &'a RetryConfig,
    /// Keys the layer client's jitter draws ([`crate::draws::layer_key`]).
    pub draw_key: u64,
    pub propagate_deadline: bool,
    pub service_time: Option<&'a Dist>,
    pub concurrency: Option<u32>,
}

/// One layer while the simulation runs.
pub(super) struct Hop {
    pub session: Session,
    pub draw_key: u64,
    pub propagate_deadline: bool,
    pub(super) service: Option<Sampler>,
    pub(super) concurrency: Option<u32>,
    pub(super) arrivals: u64,
    pub(super) rejected: u64,
    pub(super) in_flight: u64,
    pub(super) peak_in_flight: u64,
}

/// What one layer counted, once the run is over.
pub(crate) struct HopOut {
    pub rec: Recorder,
    pub arrivals: u64,
    /// Arrivals answered 503 at once for the layer's concurrency limit.
    pub rejected: u64,
    pub peak_in_flight: u64,
    /// Attempts whose per-try timeout the (propagated) deadline cut short.
    pub deadline_cut: u64,
}

impl Hop {
    pub(super) fn new(run: &HopRun<'_>) -> Hop {
        Hop {
            session: Session::new(run.name, run.config, false),
            draw_key: run.draw_key,
            propagate_deadline: run.propagate_deadline,
            service: run.service_time.map(Sampler::new),
            concurrency: run.concurrency,
            arrivals: 0,
            rejected: 0,
            in_flight: 0,
            peak_in_flight: 0,
        }
    }

    pub(super) fn finish(self) -> HopOut {
        let deadline_cut = self.session.deadline_cut();
        let (rec, _) = self.session.into_parts();
        HopOut {
            rec,
            arrivals: self.arrivals,
            rejected: self.rejected,
            peak_in_flight: self.peak_in_flight,
            deadline_cut,
        }
    }
}

/// `last_status` of a request that has had no reply yet.
pub(super) const NO_REPLY: u16 = u16::MAX;
