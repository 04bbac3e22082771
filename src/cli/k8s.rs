//! `stormrig k8s`: manifests for a sharded storm.

use std::path::PathBuf;

use clap::Args;

/// `stormrig k8s`: the manifests of a sharded run, each pod a shard.
#[derive(Debug, Args)]
pub struct K8sArgs {
    /// The scenario file; it goes into the ConfigMap whole.
    pub scenario: PathBuf,
    /// Shards: pods of the Indexed Job, each running the client instances whose index is
    /// its JOB_COMPLETION_INDEX mod N (at most the scenario's load.clients).
    #[arg(long)]
    pub shards: u32,
    /// Container image holding the stormrig binary (on its PATH).
    #[arg(long)]
    pub image: String,
    /// Namespace of every object.
    #[arg(long, default_value = "default")]
    pub namespace: String,
    /// The common start, this long after the manifests are printed: apply them within it
    /// (a pod that starts more than 5 s after it refuses to run, exit 2).
    #[arg(long, default_value = "60s")]
    pub start_delay: String,
    /// Size of the PersistentVolumeClaim the shards write their run directories to and
    /// the merge Job reads them from.
    #[arg(long, default_value = "1Gi")]
    pub storage: String,
    /// StorageClass of that claim; it must offer ReadWriteMany (e.g. NFS, CephFS, EFS).
    /// Default: the cluster's default class.
    #[arg(long)]
    pub storage_class: Option<String>,
    /// How shard pods spread over nodes: `soft` prefers distinct nodes but schedules anyway
    /// when they are full; `strict` never lets one node hold two more shards than another
    /// (a pod left pending past the common start refuses to run).
    #[arg(long, value_enum, default_value_t = SpreadArg::Soft)]
    pub spread: SpreadArg,
    /// How long finished Jobs and their pods (with their logs) are kept before the cluster
    /// deletes them (`ttlSecondsAfterFinished`); the results stay on the claim.
    #[arg(long, default_value = "24h")]
    pub ttl: String,
}

/// `--spread`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SpreadArg {
    Soft,
    Strict,
}
