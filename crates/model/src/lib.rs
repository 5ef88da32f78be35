//! The loadbench result model.
//!
//! In: measurements recorded by the engine (histograms, counters, per-second points).
//! Out: serde types that *are* the JSON schema (docs/result-schema.md), and one associative
//! `merge` per type, used for per-worker, per-round and per-shard aggregation alike. A saved
//! file of any kind (run, find-max, bench) is read back through [`SavedResult::from_json`], the
//! one schema-version check.
//! Neighbours: the engine fills it, reports read it. No I/O here.

pub mod bench;
pub mod bench_stats;
pub mod body;
pub mod diagnose;
pub mod endpoints;
pub mod errors;
pub mod evidence;
pub mod find_max;
pub mod flows;
pub mod gate;
pub mod grpc;
pub mod h2;
pub mod histogram;
pub mod hlog;
pub mod human;
pub mod load;
pub mod nothing;
pub mod phases;
pub mod pool;
pub mod queueing;
pub mod reasons;
pub mod resources;
pub mod result;
pub mod saved;
pub mod series;
pub mod shard;
pub mod shortfall;
pub mod starved;
pub mod stats;
pub mod tls;
mod upgrade;
pub mod why;
pub mod ws;

pub use bench::{
    AppliedLimits, BenchCell, BenchLoad, BenchResult, BenchRound, BenchTarget, BottleneckCounts,
    CellPercentile, RelativeSpeed, ScenarioInfo, TargetProfile,
};
pub use body::BodySizes;
pub use endpoints::{merge_endpoints, url_path, EndpointStats};
pub use errors::{ErrorCounts, ErrorKind, StatusCounts};
pub use evidence::{
    CgroupEvidence, EphemeralPorts, HostLoad, KernelEvidence, LocalTarget, OomKill, PortSockets,
    StepEvidence, TargetEvidence, TargetExit, TcpCounters, ThreadShare,
};
pub use find_max::{
    FailReason, FindMaxResult, FindMaxStep, Recovery, SearchParams, SearchPhase, Slo, SloCondition,
    SloOp, SloStat, SloValue, StopReason, Verdict,
};
pub use flows::{merge_flow, FlowStats};
pub use gate::{BenchGates, Gate, GateMetric, GateOp, GateOutcome, GateReport, GateVerdict, Gates};
pub use grpc::{grpc_code_name, GrpcStats, GRPC_CODES};
pub use h2::{H2Stats, ProtocolCounts};
pub use histogram::{Histo, Latency, LatencySummary, Percentile, STANDARD_PERCENTILES};
pub use hlog::interval_log;
pub use load::{LoadShape, RateSegment, DEFAULT_MAX_CONNECTIONS};
pub use nothing::{Held, NothingCompleted};
pub use phases::RequestPhases;
pub use pool::PoolCounts;
pub use reasons::{ErrorReason, ErrorReasons, Reason, ReasonCounts, ReopenReason, ReopenReasons};
pub use resources::{
    Bottleneck, Mark, ResourceSummary, Sample, SampleError, Samples, TargetSample, Window,
};
pub use result::ValuesRecord;
pub use result::{
    HostInfo, RemoteWriteCounts, ResultKind, RunConfig, RunResult, Stats, Summary,
    OLDEST_SCHEMA_VERSION, SCHEMA_VERSION,
};
pub use saved::{InvalidResult, ResultReadError, SavedResult};
pub use series::{SecondCounts, Series, SeriesPoint};
pub use shard::{merge_shards, MergeError, ShardRun, ShardStart};
pub use shortfall::{Cause, GeneratorTime, Shortfall};
pub use starved::{PerConnection, Starvation, StarvedCause};
pub use stats::{Spread, Welch};
pub use tls::{TlsSettings, TlsStats};
pub use why::{Finding, FindingKind, Why};
pub use ws::{WsIdle, WsStats};
