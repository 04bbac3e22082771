//! Which part of a fleet one process runs.
//!
//! A shard runs the client instances whose index is congruent to its own index modulo the
//! shard count, over the same seeded arrival schedule as one process would, keeping only
//! the arrivals those instances send (request `id` belongs to instance `id mod clients`).
//! So the fleet is split and never a budget: every instance, with its budget, breaker and
//! cost ledger, lives in exactly one shard, and the union of the shards' requests is the
//! one-process run's. A fleet of one client has one budget, which two processes cannot
//! share: more shards than clients is refused rather than splitting a budget by request id.

use std::num::NonZeroU32;

use crate::scenario::LoadShape;

/// One shard of `count`: index `index` (below `count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "RawShard")]
pub struct Shard {
    index: u32,
    count: NonZeroU32,
}

#[derive(serde::Deserialize)]
struct RawShard {
    index: u32,
    count: u32,
}

impl TryFrom<RawShard> for Shard {
    type Error = ShardError;
    fn try_from(r: RawShard) -> Result<Shard, ShardError> {
        Shard::new(r.index, r.count)
    }
}

impl Default for Shard {
    /// The whole fleet in one process.
    fn default() -> Self {
        Shard {
            index: 0,
            count: NonZeroU32::MIN,
        }
    }
}

/// Why a shard cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("{0:?}: write the shard as INDEX/COUNT, e.g. 0/4")]
    Malformed(String),
    #[error("the shard count must be at least 1")]
    NoShards,
    #[error("shard index {index} is not below the shard count {count} (indices run 0..{count})")]
    IndexOutOfRange { index: u32, count: u32 },
    #[error(
        "{count} shards for a fleet of {clients} client(s): a shard runs whole client instances \
         and never splits one's budget; set [load] clients to {count} or more, or run fewer shards"
    )]
    MoreShardsThanClients { count: u32, clients: u32 },
    #[error(
        "a closed loop (load.kind = \"closed\") cannot be sharded: its request ids follow the \
         responses, not a schedule every shard can compute"
    )]
    ClosedLoop,
    #[error(
        "a scenario with a topology cannot be sharded: its layers' budgets live in the process \
         that runs them"
    )]
    Topology,
}

impl Shard {
    pub fn new(index: u32, count: u32) -> Result<Shard, ShardError> {
        let count = NonZeroU32::new(count).ok_or(ShardError::NoShards)?;
        if index >= count.get() {
            return Err(ShardError::IndexOutOfRange {
                index,
                count: count.get(),
            });
        }
        Ok(Shard { index, count })
    }

    /// `I/N`, as `--shard` takes it.
    pub fn parse(text: &str) -> Result<Shard, ShardError> {
        let bad = || ShardError::Malformed(text.to_string());
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let i = i.trim().parse().map_err(|_| bad())?;
        let n = n.trim().parse().map_err(|_| bad())?;
        Shard::new(i, n)
    }

    pub fn index(&self) -> u32 {
        self.index
    }

    pub fn count(&self) -> u32 {
        self.count.get()
    }

    /// True when this is the whole fleet (one shard).
    pub fn is_whole(&self) -> bool {
        self.count.get() == 1
    }

    /// Whether this shard sends logical request `id` of a fleet of `clients`.
    #[inline]
    pub fn owns(&self, id: u64, clients: NonZeroU32) -> bool {
        let instance = id % u64::from(clients.get());
        instance % u64::from(self.count.get()) == u64::from(self.index)
    }

    /// Refuses a split the fleet and load cannot carry (see the module's notes).
    pub fn check(
        &self,
        clients: NonZeroU32,
        shape: &LoadShape,
        has_topology: bool,
    ) -> Result<(), ShardError> {
        if self.is_whole() {
            return Ok(());
        }
        if self.count > clients {
            return Err(ShardError::MoreShardsThanClients {
                count: self.count.get(),
                clients: clients.get(),
            });
        }
        if matches!(shape, LoadShape::Closed { .. }) {
            return Err(ShardError::ClosedLoop);
        }
        if has_topology {
            return Err(ShardError::Topology);
        }
        Ok(())
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(x: u32) -> NonZeroU32 {
        NonZeroU32::new(x).unwrap()
    }

    #[test]
    fn parses_and_refuses() {
        assert_eq!(Shard::parse("2/4").unwrap(), Shard::new(2, 4).unwrap());
        assert_eq!(
            Shard::parse("4/4"),
            Err(ShardError::IndexOutOfRange { index: 4, count: 4 })
        );
        assert_eq!(Shard::parse("0/0"), Err(ShardError::NoShards));
        assert!(matches!(Shard::parse("1"), Err(ShardError::Malformed(_))));
        assert!(matches!(
            Shard::parse("-1/2"),
            Err(ShardError::Malformed(_))
        ));
    }

    #[test]
    fn every_request_belongs_to_exactly_one_shard_and_instances_stay_whole() {
        let clients = n(10);
        let shards: Vec<_> = (0..4).map(|i| Shard::new(i, 4).unwrap()).collect();
        for id in 0..1000u64 {
            let owners: Vec<_> = shards.iter().filter(|s| s.owns(id, clients)).collect();
            assert_eq!(owners.len(), 1, "request {id}");
            // Every request of one instance goes to the same shard.
            let same_instance = id + 10;
            assert!(owners[0].owns(same_instance, clients));
        }
    }

    #[test]
    fn a_fleet_smaller_than_the_shard_count_is_refused() {
        let s = Shard::new(0, 2).unwrap();
        let shape = LoadShape::Constant { rate: 10.0 };
        assert_eq!(
            s.check(n(1), &shape, false),
            Err(ShardError::MoreShardsThanClients {
                count: 2,
                clients: 1
            })
        );
        assert!(s.check(n(2), &shape, false).is_ok());
        assert!(Shard::default().check(n(1), &shape, true).is_ok());
    }
}
