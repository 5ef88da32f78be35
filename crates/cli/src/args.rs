//! The command line, as clap derive structs: what each subcommand and flag means.

use crate::compare_cmd::CompareFormat;
use crate::output::{any_format, FormatParser};
use crate::values::{self, Percentiles, RateArg, SourceAddrs};
use clap::{Args, Parser, Subcommand};
use loadbench_model::{Gates, Slo};
use loadbench_plan::Schedule;
use loadbench_report::Format;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    name = "loadbench",
    version,
    about = "Benchmark web applications and components: load generator, reference backend, harness",
    propagate_version = true
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Load one URL (wrk/ab/hey style) and report throughput, latency and errors.
    Run(Box<RunArgs>),
    /// Run the reference backend (plaintext, JSON, sizes, delays, status codes, faults).
    Serve(ServeArgs),
    /// Zero-setup first run: start the reference backend (`loadbench serve`, as a process) and,
    /// when nginx is installed, nginx in front of it; benchmark both; keep the report in results/.
    Demo(DemoArgs),
    /// Search the highest rate the target sustains within an SLO (open model, step by step).
    FindMax(Box<FindMaxArgs>),
    /// Run a scenario file: start targets with limits, run loads × rounds, sample CPU and
    /// memory, and compare the targets.
    Bench(BenchArgs),
    /// Re-render a saved result (run, find-max or bench) as text, Markdown, CSV, JSON or HTML.
    Report(ReportArgs),
    /// Compare two saved run results or two bench results: req/s, p50 and p99 with a
    /// significance test; exit 1 on a regression beyond the threshold.
    Compare(CompareArgs),
    /// List the runs kept by --history, show their trend per target × load, or write the
    /// trend charts as one HTML page (docs/history.md).
    History(HistoryCmdArgs),
    /// Merge the results of the shards of one distributed run exactly (histograms added,
    /// series aligned on wall-clock seconds); records the shards, their hosts and start skew.
    Merge(MergeArgs),
    /// Run as an executor of an existing scheduler; each trigger runs one shard of a load.
    #[command(subcommand)]
    Agent(AgentCommand),
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    Completions(crate::manual::CompletionsArgs),
    /// Print the man page of loadbench or of one command, or write them all with --dir.
    Man(crate::manual::ManArgs),
}

#[derive(Debug, Subcommand)]
pub(crate) enum AgentCommand {
    /// An xxl-job executor (xxl-job 2.x to 3.4 and compatible admins): a BEAN job with handler
    /// `loadbench` runs shard broadcastIndex/broadcastTotal of the `run` arguments in its
    /// parameters, e.g. `http://10.0.0.5:8080/ -c 300 -d 60s --start-at 2026-11-24T18:00:00Z`.
    XxlJob(XxlJobArgs),
}

#[derive(Debug, Args)]
pub(crate) struct XxlJobArgs {
    /// The admin's base URL with its context path, e.g. http://10.0.0.2:8080/xxl-job-admin
    /// (2.x up to 3.4.0) or http://10.0.0.2:8080 (3.4.1 on).
    #[arg(long)]
    pub admin: String,
    /// The executor group's AppName in the admin.
    #[arg(long)]
    pub app_name: String,
    /// The admin's xxl.job.accessToken; required unless --insecure-no-token. Prefer the
    /// environment variable: a flag is visible to every user of the host in `ps`.
    #[arg(long, env = "LOADBENCH_XXL_JOB_TOKEN", hide_env_values = true)]
    pub access_token: Option<String>,
    /// Run without a token: anyone who reaches --listen can start loads from this host.
    #[arg(long)]
    pub insecure_no_token: bool,
    /// Address the executor endpoints listen on (xxl-job's default executor port is 9999).
    #[arg(long, default_value = "0.0.0.0:9999")]
    pub listen: String,
    /// The address registered at the admin, e.g. http://10.0.0.7:9999/ [default: the listen
    /// address, or the address of the interface that reaches the admin].
    #[arg(long)]
    pub advertise: Option<String>,
    /// Folder for the shard results, one file per trigger: RUNID-shard-I-of-N.json (a shared
    /// volume, so `loadbench merge` finds them all).
    #[arg(long, default_value = "results")]
    pub results_dir: PathBuf,
    /// Also upload each shard result with HTTP PUT: a folder URL ending in / (the file name is
    /// appended) or a template with {run_id}, {shard}, {total}, {file}; checked at start.
    #[arg(long)]
    pub results_url: Option<String>,
    /// This agent's shard I/N when the admin sends no broadcast index (ratchjob sends 0/0 to
    /// every address); a real broadcast's index and total win.
    #[arg(long, value_parser = values::shard)]
    pub shard: Option<loadbench_plan::Shard>,
    /// Folder for the job logs (kept per trigger, the last 200 and at most 7 days), so the
    /// admin's log view works after a restart [default: RESULTS_DIR/logs].
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// The live series of each trigger (docs/metrics.md, "The agent").
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

#[derive(Debug, Args)]
#[command(
    mut_arg("output", |a| a.help("What goes to stdout at the end: text, md (Markdown), csv, json, html or junit")),
    mut_arg("html", |a| a.help("Also write the HTML report to this file, its chart SVGs and PNGs beside it (the run folder always gets report.html)")),
    mut_arg("no_live", |a| a.help("No terminal dashboard: the plain progress bar and round lines instead (the dashboard is shown only when stderr is a terminal)")),
)]
pub(crate) struct BenchArgs {
    /// The scenario file (TOML; every key is documented in docs/scenarios.md).
    pub scenario: PathBuf,
    /// Folder under which the run folder `<timestamp>-<scenario>` is created.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Override every load's measured duration, e.g. 2s.
    #[arg(long)]
    pub duration: Option<String>,
    /// Override every load's warm-up, e.g. 0s.
    #[arg(long)]
    pub warmup: Option<String>,
    /// Override the number of rounds.
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Override the pause between steps, e.g. 0s.
    #[arg(long)]
    pub cooldown: Option<String>,
    #[command(flatten)]
    pub gates: GateArgs,
    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// A result saved by `loadbench run --save` (or `-o json`), `loadbench find-max --save` or
    /// `loadbench bench` (its `result.json`).
    pub result: PathBuf,
    /// text, md (Markdown), csv, json, html or junit; every kind of result renders in each.
    #[arg(short = 'f', long, default_value = "text", value_parser = any_format())]
    pub format: Format,
    /// Write to this file (atomically) instead of stdout; with html, the chart SVGs and PNGs
    /// (PNGs when the system has a font) are written beside it.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// Percentiles of the latency tables, comma-separated [default: those of the run].
    #[arg(long)]
    pub percentiles: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    /// The baseline result: saved by `loadbench run --save` (or `-o json`), or a
    /// `loadbench bench` result.json (then each target × load × level in both is compared
    /// across rounds). Not a find-max result. With --against-history: the result to judge.
    pub base: PathBuf,
    /// The result to judge against the baseline, of the same kind (two runs or two benches).
    #[arg(
        required_unless_present = "against_history",
        conflicts_with = "against_history"
    )]
    pub new: Option<PathBuf>,
    /// Smallest relative change that counts: 5% or 0.05.
    #[arg(long, default_value = "5%")]
    pub threshold: String,
    /// text or md (Markdown, for a pull request).
    #[arg(short = 'f', long, default_value = "text", value_parser = FormatParser::<CompareFormat>::new())]
    pub format: CompareFormat,
    /// Judge even when either result was measured on a busy host (other processes used a
    /// quarter of its cores or more): without it such a comparison exits 3, no verdict.
    #[arg(long)]
    pub ignore_host: bool,
    /// Judge the one result given against the spread of the last --last runs in the history
    /// with these labels (KEY=VALUE, comma-separated, e.g. 'branch=main'; '' for any) and the
    /// same target and load: a regression is outside their 95% prediction interval and
    /// beyond --threshold (docs/history.md).
    #[arg(long, value_name = "LABELS")]
    pub against_history: Option<String>,
    /// With --against-history: how many of the latest matching runs form the spread (at
    /// least 3 are needed for a verdict).
    #[arg(long, default_value_t = 10, requires = "against_history")]
    pub last: usize,
    /// With --against-history: the history database [default: as --history].
    #[arg(long, value_name = "PATH", requires = "against_history")]
    pub db: Option<PathBuf>,
    /// With --against-history: the metrics judged, comma-separated, of rps, p50 and p99.
    #[arg(long, default_value = "rps,p50,p99", requires = "against_history")]
    pub metrics: String,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on (IP:PORT; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// How it answers: threads, delay, body size, status, failures, limits, hiccups.
    #[command(flatten)]
    pub settings: loadbench_upstream::ServeSettings,
    /// Serve HTTPS, and HTTP/3 on the same port number over UDP (unless --no-h3): with a
    /// self-signed certificate for localhost, 127.0.0.1 and ::1 made at start, or the one
    /// given with --tls-cert/--tls-key.
    #[arg(long)]
    pub tls: bool,
    /// With --tls: the certificate chain to serve (PEM); needs --tls-key.
    #[arg(long, value_name = "FILE", requires_all = ["tls", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// With --tls: the private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires_all = ["tls", "tls_cert"])]
    pub tls_key: Option<PathBuf>,
    /// With --tls: write the served certificate (PEM) here, for a client's --cacert.
    #[arg(long, value_name = "FILE", requires = "tls")]
    pub tls_cert_out: Option<PathBuf>,
    /// With --tls: serve no HTTP/3. By default --tls also serves HTTP/3 (QUIC) on the same port
    /// number over UDP, announced by Alt-Svc on the TLS responses.
    #[arg(long, requires = "tls")]
    pub no_h3: bool,
    /// Also listen on this Unix socket (plain HTTP; a stale socket file is replaced).
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// No live progress on stderr.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// Where the result of `run`, `find-max` and `bench` goes and what shows while they run, one
/// struct flattened into each; [`crate::deliver`] is their common start and end. The help below
/// is `run`'s; `find-max` and `bench` word `-o`, `--html` and `--no-live` for themselves
/// (`mut_arg` on their structs).
#[derive(Debug, Args)]
pub(crate) struct OutputArgs {
    /// Output format on stdout: text, json, csv, md (Markdown), html or junit.
    #[arg(short = 'o', long, default_value = "text", value_parser = any_format())]
    pub output: Format,
    /// Also write the result as a self-contained HTML page to this file, its chart SVGs beside it.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Also write a JUnit XML report to this file, one testcase per gate (for CI test
    /// summaries; docs/gates.md).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// No live progress on stderr.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// No terminal dashboard: the plain progress line instead (the dashboard is shown only
    /// when stderr is a terminal).
    #[arg(long)]
    pub no_live: bool,
    #[command(flatten)]
    pub live_web: LiveWebArgs,
    #[command(flatten)]
    pub history: HistoryArgs,
    #[command(flatten)]
    pub metrics: MetricsArgs,
}

/// `--history` and `--label` of `run`, `find-max` and `bench` (docs/history.md).
#[derive(Debug, Args)]
pub(crate) struct HistoryArgs {
    /// Append the finished result to the history database (SQLite): `--history=PATH`, or
    /// `--history` alone for $XDG_DATA_HOME/loadbench/history.sqlite (else
    /// ~/.local/share/loadbench/history.sqlite). See `loadbench history`.
    #[arg(long, value_name = "PATH", num_args = 0..=1, require_equals = true,
          default_missing_value = "")]
    pub history: Option<PathBuf>,
    /// A label the result is filed under in the history, KEY=VALUE (repeatable), e.g.
    /// --label branch=main; git's `commit` and `branch` of the current directory are added
    /// unless given.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = values::label)]
    pub labels: Vec<(String, String)>,
}

/// Gates of `run` and `bench` (docs/gates.md): judged after the load, exit 4 when one fails.
#[derive(Debug, Args)]
#[command(next_help_heading = "Gates (docs/gates.md)")]
pub(crate) struct GateArgs {
    /// Gates that must pass, else exit 4: pNN or mean < DURATION, errors < SHARE% or COUNT,
    /// rps > N, and in a bench TARGET/TARGET > RATIO (relative req/s), comma-separated or
    /// repeated, e.g. 'p99<50ms,errors<0.1%,rps>1000'.
    #[arg(long = "slo", value_name = "GATES", value_parser = values::gates)]
    pub slo: Vec<Gates>,
    /// A gate that cannot be judged (too few responses for its percentile, nothing attempted)
    /// does not fail the run; it is still shown as unjudged.
    #[arg(long)]
    pub slo_allow_unjudged: bool,
}

impl GateArgs {
    /// Every `--slo` as one list; `None` without any.
    pub(crate) fn gates(&self) -> Option<Gates> {
        (!self.slo.is_empty()).then(|| Gates {
            text: self
                .slo
                .iter()
                .map(|g| g.text.as_str())
                .collect::<Vec<_>>()
                .join(","),
            gates: self.slo.iter().flat_map(|g| g.gates.clone()).collect(),
        })
    }
}

/// The live series for Prometheus of `run`, `find-max` and `bench` (docs/metrics.md).
#[derive(Debug, Args)]
pub(crate) struct MetricsArgs {
    /// Serve the live series as Prometheus text at http://ADDR/metrics while the command runs
    /// (ADDR is IP:PORT, port 0 for a free one; the URL goes to stderr). docs/metrics.md lists
    /// the series.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// Allow --metrics-listen on an address other than loopback (the series name the target to
    /// whoever can reach it).
    #[arg(long, requires = "metrics_listen")]
    pub metrics_public: bool,
    /// Push the same series every 5 s (and once at the end) to a Prometheus remote-write
    /// receiver at this http:// URL, labelled with the run id, shard and host; checked with an
    /// empty write before the load. Lost pushes never slow the load; they are counted at the end.
    #[arg(long, value_name = "URL")]
    pub prometheus_remote_write: Option<String>,
    /// How often --prometheus-remote-write pushes, from 1s to 5m.
    #[arg(long, value_name = "DURATION", default_value = "5s",
          value_parser = values::push_interval)]
    pub prometheus_push_interval: std::time::Duration,
}

/// The live web page of `run`, `find-max` and `bench`.
#[derive(Debug, Args)]
pub(crate) struct LiveWebArgs {
    /// Serve the HTML report while the run goes, refreshed every second, on 127.0.0.1 and a
    /// free port (or `--live-web=ADDR`); its URL goes to stderr. The finished page is the
    /// final report.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, require_equals = true,
          default_missing_value = "127.0.0.1:0")]
    pub live_web: Option<String>,
    /// Allow --live-web on an address other than loopback (the page shows the target's URL
    /// and headers to whoever can reach it).
    #[arg(long, requires = "live_web")]
    pub live_web_public: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The URL to load, e.g. http://127.0.0.1:8080/ (or a mix: -u, --requests-file).
    pub url: Option<String>,
    /// Concurrent connections (closed model: one request in flight on each) [default: 50].
    /// With --rate: the connections opened before the schedule starts, and the cap unless
    /// --max-connections is given.
    #[arg(short = 'c', long)]
    pub connections: Option<u32>,
    /// Worker threads [default: number of cores; never more than connections].
    #[arg(short = 't', long)]
    pub threads: Option<u32>,
    /// How long to measure, e.g. 10s, 1m [default: 10s].
    #[arg(short = 'd', long, value_parser = values::duration("-d"))]
    pub duration: Option<Duration>,
    /// Stop after exactly N finished requests in total (completed or failed); N must be at
    /// least -c (every connection needs a request).
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    /// Send traffic for this long first and leave it out of the statistics, e.g. 2s.
    #[arg(long, value_parser = values::duration("--warmup"))]
    pub warmup: Option<Duration>,
    #[command(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    pub out: OutputArgs,
    /// Also save the result as JSON to this file (written atomically).
    #[arg(long)]
    pub save: Option<PathBuf>,
    /// Percentiles of the latency table, comma-separated.
    #[arg(long, default_value = loadbench_plan::DEFAULT_PERCENTILES, value_parser = values::percentiles)]
    pub percentiles: Percentiles,
    /// Open model: send this many requests per second in total, on schedule, whether or not
    /// earlier ones returned (latency counts from each request's intended time). A range
    /// such as 1000..20000 ramps over --ramp.
    #[arg(long, value_parser = values::rate)]
    pub rate: Option<RateArg>,
    /// Open model: ramp linearly across the --rate range over this long, e.g. 60s; the run lasts
    /// that long, or holds the last rate until a longer -d ends.
    #[arg(long, value_parser = values::duration("--ramp"))]
    pub ramp: Option<Duration>,
    /// Open model: stages DURATION@RATE, each held for its duration, e.g. '10s@1000,30s@5000'.
    #[arg(long, value_parser = values::stages)]
    pub stages: Option<Schedule>,
    /// Open model: the most connections (requests in flight) to open [default: -c if given,
    /// else 10000].
    #[arg(long)]
    pub max_connections: Option<u32>,
    /// Open model: each wake-up of the pacer sends every request due by then; wake-ups are
    /// at most this far apart, and sooner once 4 requests are due. The wait is the
    /// generator's own: reported as its delay, not counted in latency (a wait for a busy
    /// connection is); 0: a wake-up per request.
    #[arg(long, value_parser = values::duration("--send-window"))]
    pub send_window: Option<Duration>,
    /// Open model: a send window's batch leaves as soon as this many requests are due
    /// [default: 4]: fewer requests leave at once (less queueing inside a fast target),
    /// more wake-ups. 1: each request at its own time.
    #[arg(long)]
    pub send_batch: Option<u32>,
    /// Open model: the most connects in progress at once, over all threads.
    #[arg(long)]
    pub connect_limit: Option<u32>,
    /// Also write the HdrHistogram interval log (one interval per second) to this file.
    #[arg(long)]
    pub hlog: Option<PathBuf>,
    /// A wrk Lua script that builds the requests, run as wrk runs it: the wrk table,
    /// setup, init, request, response, delay and done (docs/coming-from.md, "wrk scripts").
    #[arg(short = 's', long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// After `--`: the arguments --script's init(args) gets.
    #[arg(last = true, value_name = "SCRIPT_ARGS")]
    pub script_args: Vec<String>,
    #[command(flatten)]
    pub gates: GateArgs,
    #[command(flatten)]
    pub dist: ShardArgs,
}

/// One shard of a distributed load (docs/distributed.md).
#[derive(Debug, Args)]
#[command(next_help_heading = "Distributed load (docs/distributed.md)")]
pub(crate) struct ShardArgs {
    /// Run shard I of N (0-based, e.g. 0/3): an exact share of -c, -n, the rate and
    /// --max-connections; `loadbench merge` adds the shards' results up.
    #[arg(long, value_parser = values::shard)]
    pub shard: Option<loadbench_plan::Shard>,
    /// Take the shard index from JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) and the count
    /// from --shard-count or LOADBENCH_SHARD_COUNT; --start-at and --run-id default to
    /// LOADBENCH_START_AT and LOADBENCH_RUN_ID.
    #[arg(long, conflicts_with = "shard")]
    pub shard_from_env: bool,
    /// The number of shards, with --shard-from-env.
    #[arg(long, requires = "shard_from_env")]
    pub shard_count: Option<u32>,
    /// Start the load at this wall-clock instant, the same for every shard: RFC 3339
    /// (2026-11-24T18:00:00Z) or unix seconds; at most 24 h ahead.
    #[arg(long)]
    pub start_at: Option<String>,
    /// Start this long after the trigger (0 to 24h, e.g. 10s): in an xxl-job job's parameters,
    /// every shard of one broadcast starts at the same instant (docs/distributed.md); on the
    /// command line, this long after the current whole second.
    #[arg(long, conflicts_with = "start_at", allow_hyphen_values = true)]
    pub start_in: Option<String>,
    /// The id of the distributed run, the same for every shard [default: from --start-at].
    #[arg(long)]
    pub run_id: Option<String>,
    /// Save the shard's result JSON in this folder as RUNID-shard-I-of-N.json (a shared volume).
    #[arg(long)]
    pub results_dir: Option<PathBuf>,
    /// Also upload the shard's result with HTTP PUT: a folder URL ending in / (the file name
    /// is appended) or a template with {run_id}, {shard}, {total}, {file}; retried, the local
    /// copy kept.
    #[arg(long)]
    pub results_url: Option<String>,
}

/// `loadbench merge`.
#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// The shard results (`run --shard … --save`), or merges of some of them; or one folder
    /// holding RUNID-shard-I-of-N.json files (one run id, or pick one with --run-id).
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// With a folder: the run whose shards to merge [default: the only run id in the folder].
    #[arg(long)]
    pub run_id: Option<String>,
    /// With a folder: wait until all N shards of the run are there (complete files), then merge.
    #[arg(long)]
    pub wait: Option<u32>,
    /// How long --wait waits before giving up (exit 1, naming the missing shards).
    #[arg(long, default_value = "5m", value_parser = values::duration("--timeout"), requires = "wait")]
    pub timeout: Duration,
    /// Write the merged result (JSON) to this file [default: stdout].
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// No summary lines on stderr.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Fail (exit 1, nothing written) when a shard of the run is missing, instead of merging
    /// what is there with a warning: for CI.
    #[arg(long)]
    pub require_all: bool,
}

#[derive(Debug, Args)]
#[command(
    mut_arg("output", |a| a.help("Output format on stdout: text, json, csv (one row per step), md (Markdown), html or junit")),
    mut_arg("html", |a| a.help("Also write the result as a self-contained HTML page to this file at the end, its chart SVGs beside it")),
    mut_arg("no_live", |a| a.help("No terminal dashboard: the plain step lines and progress bar instead (the dashboard is shown only when stderr is a terminal)")),
)]
pub(crate) struct FindMaxArgs {
    /// The URL to load, e.g. http://127.0.0.1:8080/ (or a mix: -u, --requests-file).
    pub url: Option<String>,
    /// Required. Conditions on latency from the intended send time, all of which must hold:
    /// pNN<DUR, pNN<=DUR or mean<DUR, comma-separated, e.g. 'p50<10ms,p99.9<200ms'.
    #[arg(long, value_parser = values::slo)]
    pub slo: Option<Slo>,
    /// Largest share of attempts that may fail or get a non-2xx/3xx status: 0.1% or 0.001.
    #[arg(long, default_value = "0.1%", value_parser = values::share("--max-errors", "0.1%"))]
    pub max_errors: f64,
    /// Measured time of each step.
    #[arg(long, default_value = "10s", value_parser = values::duration("--step-duration"))]
    pub step_duration: Duration,
    /// Unmeasured traffic at the step's rate before each step's measurement.
    #[arg(long, default_value = "1s", value_parser = values::duration("--warmup"))]
    pub warmup: Duration,
    /// The first rate tried, requests per second (doubled while steps pass).
    #[arg(long, default_value = "100", value_parser = values::positive_rate("--start-rate"))]
    pub start_rate: f64,
    /// The highest rate tried; the search stops when it passes.
    #[arg(long, default_value = "1000000", value_parser = values::positive_rate("--max-rate"))]
    pub max_rate: f64,
    /// Stop bisecting when (lowest fail - highest pass) / highest pass is below this: 5% or 0.05.
    #[arg(long, default_value = "5%", value_parser = values::share("--precision", "5%"))]
    pub precision: f64,
    /// After a failed step, wait at most this long for the target to answer single requests
    /// about as fast as before the search (its backlog worked off) before the next step.
    #[arg(long, default_value = "60s", value_parser = values::duration("--recovery-timeout"))]
    pub recovery_timeout: Duration,
    /// The most steps to run.
    #[arg(long, default_value_t = 20)]
    pub max_steps: u32,
    /// Worker threads [default: number of cores].
    #[arg(short = 't', long)]
    pub threads: Option<u32>,
    #[command(flatten)]
    pub request: RequestArgs,
    /// The most connections (requests in flight) to open.
    #[arg(long, default_value_t = loadbench_plan::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: u32,
    #[command(flatten)]
    pub out: OutputArgs,
    /// Also save the result as JSON to this file, rewritten atomically after every step.
    #[arg(long)]
    pub save: Option<PathBuf>,
}

/// The request and connection options `run` and `find-max` share.
#[derive(Debug, Args)]
pub(crate) struct RequestArgs {
    /// A request of a mix (repeatable; with the URL argument, that is the first):
    /// '[METHOD] URL [weight=N] [header="Name: value"]... [body=FILE]', e.g.
    /// -u 'http://127.0.0.1:8080/ weight=3' -u 'POST http://127.0.0.1:8080/echo body=b.json'.
    /// Sent in proportion to the weights (default 1); all on one scheme, host and port; the
    /// report breaks the results down per request (docs/request-mix.md).
    #[arg(short = 'u', long = "url", value_name = "REQUEST")]
    pub urls: Vec<String>,
    /// A request mix from a file: one request per line as for -u; blank lines and lines
    /// starting with # are skipped; body= paths are relative to the file. -m, -H and --body
    /// apply to every request (a line's method and body replace them, its headers add to them).
    #[arg(long = "requests-file", value_name = "FILE")]
    pub requests_file: Option<PathBuf>,
    /// A request of the mix as a curl command line (repeatable), e.g.
    /// --curl "curl -X POST -H 'Content-Type: application/json' -d @order.json http://127.0.0.1:8080/orders":
    /// its URL, method, headers, data, -u, -A, -e, -b, --compressed, -k and --http2; an option
    /// that may change the request and is not read is refused (docs/request-mix.md).
    #[arg(long = "curl", value_name = "'curl …'")]
    pub curls: Vec<String>,
    /// A request mix from a HAR 1.2 file (a browser's "Save all as HAR"): every entry's
    /// method, URL, headers and postData, in order, weight 1 each.
    #[arg(long = "har", value_name = "FILE")]
    pub har: Option<PathBuf>,
    /// A flow of steps run by every connection as one virtual user, from a TOML file: `name`
    /// and `[[steps]]` with method, path (appended to the URL), headers, body, `capture`
    /// (`token = "json:/token"`, `"header:X-Token"`, `"regex:id=(\d+)"`), `check` (`status`,
    /// `body_contains`, `json`) and `think` (docs/flows.md). Closed model, HTTP/1.1.
    #[arg(long, value_name = "FILE")]
    pub flow: Option<PathBuf>,
    /// A request mix from a vegeta targets file, http format ('METHOD URL' lines, header
    /// lines, '@body-file' lines) or JSON lines, weight 1 each.
    #[arg(long = "targets", value_name = "FILE")]
    pub targets: Option<PathBuf>,
    /// HTTP method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Request header 'Name: value' (repeatable); a Host header overrides the URL's host.
    #[arg(short = 'H', long = "header", value_parser = values::header)]
    pub headers: Vec<(String, String)>,
    /// Request body.
    #[arg(long)]
    pub body: Option<String>,
    /// Request body read from a file.
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// grpc:// URLs: the .proto file that defines the service (parsed at run time, its
    /// imports looked up beside it); without it, the server's reflection service is asked.
    /// --body (or --body-file) is the request message as JSON.
    #[arg(long, value_name = "FILE")]
    pub proto: Option<PathBuf>,
    /// grpc:// URLs: the unary or server-streaming method each call invokes, pkg.Service/Method.
    #[arg(long, value_name = "SERVICE/METHOD")]
    pub grpc_method: Option<String>,
    /// Open a new TCP connection for every request (like ab without -k).
    #[arg(long)]
    pub no_keepalive: bool,
    /// Per-request timeout; a request that takes longer counts as a timeout and its connection is replaced.
    #[arg(long, default_value = "10s", value_parser = values::duration("--timeout"))]
    pub timeout: Duration,
    /// Timeout for establishing a TCP connection.
    #[arg(long, default_value = "5s", value_parser = values::duration("--connect-timeout"))]
    pub connect_timeout: Duration,
    /// Bind new connections to these local addresses, round-robin: a range or comma list of
    /// the target's family, e.g. 127.0.0.2-127.0.0.9. Against a loopback target this
    /// multiplies the ephemeral ports (no addr_not_available with --no-keepalive at high rates).
    #[arg(long, value_parser = values::source_addrs)]
    pub source_addrs: Option<SourceAddrs>,
    /// TLS, Unix socket and --connect-to.
    #[command(flatten)]
    pub transport: TransportArgs,
    /// Where per-request values come from: --data, --seed.
    #[command(flatten)]
    pub values: ValuesArgs,
}

/// What per-request values (`{{seq}}`, `{{row.id}}`, … in the URL, headers and body) draw
/// from (docs/request-values.md).
#[derive(Debug, Args)]
pub(crate) struct ValuesArgs {
    /// Rows for {{row.COLUMN}} in the URL, headers and body: a CSV file with a header row
    /// (.csv) or JSON Lines (.jsonl, .ndjson); each request takes the next row.
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
    /// --data: take the rows in file order, or in a random order fixed before the run
    /// (each row once per pass; --seed repeats it).
    #[arg(
        long,
        value_enum,
        value_name = "ORDER",
        default_value = "in-order",
        requires = "data"
    )]
    pub data_order: DataOrderArg,
    /// --data with --shard: split (shard I of N takes rows I, I+N, …) or copy (every shard
    /// takes every row).
    #[arg(
        long,
        value_enum,
        value_name = "SPLIT",
        default_value = "split",
        requires = "data"
    )]
    pub data_split: DataSplitArg,
    /// --data: at the last row, wrap to the first, or stop: the run is each row once (its
    /// request count is the rows; no -n, -d or --warmup with it).
    #[arg(
        long,
        value_enum,
        value_name = "END",
        default_value = "wrap",
        requires = "data"
    )]
    pub data_end: DataEndArg,
    /// Seed of the random values ({{int(…)}}, {{pick(…)}}, {{uuid}}) and of --data-order
    /// random, so a run repeats them; without it each run draws new ones.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

/// `--data-order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum DataOrderArg {
    /// First row to last.
    InOrder,
    /// A random order fixed before the run.
    Random,
}

/// `--data-split`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum DataSplitArg {
    /// Shard I of N takes rows I, I+N, ….
    Split,
    /// Every shard takes every row.
    Copy,
}

/// `--data-end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum DataEndArg {
    /// Start again at the first row.
    Wrap,
    /// Each row once: the run's request count is the rows.
    Stop,
}

impl ValuesArgs {
    /// The typed values spec (whole load: `--shard` stripes it later).
    pub(crate) fn spec(&self) -> loadbench_plan::ValuesSpec {
        use loadbench_plan::{DataEnd, DataOrder, DataSpec, DataSplit};
        loadbench_plan::ValuesSpec {
            data: self.data.as_ref().map(|path| DataSpec {
                path: path.clone(),
                order: match self.data_order {
                    DataOrderArg::InOrder => DataOrder::InOrder,
                    DataOrderArg::Random => DataOrder::Random,
                },
                split: match self.data_split {
                    DataSplitArg::Split => DataSplit::Split,
                    DataSplitArg::Copy => DataSplit::Copy,
                },
                end: match self.data_end {
                    DataEndArg::Wrap => DataEnd::Wrap,
                    DataEndArg::Stop => DataEnd::Stop,
                },
            }),
            seed: self.seed,
            ..Default::default()
        }
    }

    /// `--data-end stop`: the rows set the run's length.
    pub(crate) fn stops_at_end(&self) -> bool {
        self.data.is_some() && self.data_end == DataEndArg::Stop
    }
}

/// How connections reach the target (docs/transport.md).
#[derive(Debug, Args)]
pub(crate) struct TransportArgs {
    /// https:// and wss:// only: do NOT verify the server's certificate (every report says so). No `-k`:
    /// ab's `-k` means keep-alive.
    #[arg(long)]
    pub insecure: bool,
    /// https:// and wss:// only: trust the CA certificates in this PEM file instead of the system's.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// https:// and wss:// only: client certificate (PEM, chain allowed) for mutual TLS; needs --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// https:// and wss:// only: the private key (PEM) of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// https:// and wss:// only: no TLS session resumption (every new connection makes a full handshake).
    #[arg(long)]
    pub no_tls_resume: bool,
    /// Connect to this Unix socket instead of the URL's host; the http:// URL still gives
    /// the Host header and the path (curl's convention).
    #[arg(long, value_name = "PATH")]
    pub unix_socket: Option<PathBuf>,
    /// HOST1:PORT1:HOST2:PORT2: connect to HOST2:PORT2 where the URL says HOST1:PORT1; Host
    /// and SNI stay the URL's (curl's convention; repeatable, first match wins).
    #[arg(long = "connect-to", value_name = "HOST1:PORT1:HOST2:PORT2", value_parser = values::connect_to)]
    pub connect_to: Vec<loadbench_plan::ConnectTo>,
    /// Speak HTTP/2: h2 through ALPN for https:// URLs, h2c with prior knowledge for http://
    /// (docs/transport.md). With --rate, due requests take free streams first, then new
    /// connections.
    #[arg(long)]
    pub http2: bool,
    /// Speak HTTP/3 over QUIC (UDP, ALPN h3) to an https:// URL; TLS flags as for HTTPS
    /// (docs/transport.md). Streams and --rate as with --http2.
    #[arg(long)]
    pub http3: bool,
    /// --http2 or --http3: requests (streams) in flight on each connection [default: 1].
    #[arg(long, value_name = "N")]
    pub streams: Option<u32>,
    /// HTTP/1.1 pipelining: keep up to N requests written ahead of their responses on each
    /// keep-alive connection; each request's latency counts from its own write (closed
    /// model) or its intended time (--rate, --stages, find-max).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub pipeline: u16,
    /// ws:// and wss:// only: besides the -c active connections, hold N more that upgrade and
    /// then send nothing (pings answered) until the run ends; counted apart in every report
    /// (docs/transport.md, WebSocket). Needs -c 1 or more.
    #[arg(long = "ws-idle", value_name = "N", default_value_t = 0)]
    pub ws_idle: u32,
    /// ws:// and wss:// only: a message's answer is the first message whose JSON field FIELD
    /// (a key, a dotted path a.b, or a JSON pointer /a/b) equals the sent message's; other
    /// messages are counted as unmatched (docs/transport.md, WebSocket).
    #[arg(long = "ws-match", value_name = "FIELD")]
    pub ws_match: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::Cli;

    /// clap's own checks of the command definition (clashing flags, bad defaults, ...), which
    /// otherwise only fire when the broken subcommand is parsed.
    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}

/// `loadbench history`: the runs kept by `--history`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct HistoryCmdArgs {
    #[command(subcommand)]
    pub view: Option<HistoryView>,
    #[command(flatten)]
    pub filter: HistoryFilter,
}

/// What `loadbench history` shows besides the list of runs.
#[derive(Debug, Subcommand)]
pub(crate) enum HistoryView {
    /// A table per target × load (a bench: per target × load × level): req/s with its 95%
    /// confidence interval, p50, p99 and errors of each run, oldest first.
    Trend(HistoryFilter),
    /// Write one self-contained HTML page with the trend charts of each target × load: req/s,
    /// p50, p99 (with each run's 95% confidence interval where it has one) and errors.
    Html(HistoryHtmlArgs),
    /// Print the whole result JSON of one kept run (by its id in the list), for
    /// `loadbench report` or `loadbench compare`.
    Show(HistoryShowArgs),
}

/// `loadbench history show`.
#[derive(Debug, Args)]
pub(crate) struct HistoryShowArgs {
    /// The run's id, as `loadbench history` lists it.
    pub id: i64,
    /// The history database [default: as --history].
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

/// `loadbench history html`.
#[derive(Debug, Args)]
pub(crate) struct HistoryHtmlArgs {
    /// The HTML file to write (atomically).
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    #[command(flatten)]
    pub filter: HistoryFilter,
}

/// Which runs `loadbench history` reads.
#[derive(Debug, Args, Clone)]
pub(crate) struct HistoryFilter {
    /// The history database [default: $XDG_DATA_HOME/loadbench/history.sqlite, else
    /// ~/.local/share/loadbench/history.sqlite].
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Only runs with this label, KEY=VALUE (repeatable; `branch` and `commit` are git's
    /// unless the run was given them as labels).
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = values::label)]
    pub labels: Vec<(String, String)>,
    /// Only this target: a run's URL or a bench's scenario name (trend and html: the series'
    /// target, a bench cell's target name).
    #[arg(long)]
    pub target: Option<String>,
    /// Only this load, as the list shows it, e.g. 'closed c=50'.
    #[arg(long)]
    pub load: Option<String>,
    /// Only results of this command: run, find-max or bench.
    #[arg(long, value_parser = values::history_kind)]
    pub kind: Option<loadbench_history::Kind>,
    /// Only the last N runs (trend and html: the last N of each series).
    #[arg(long)]
    pub last: Option<usize>,
}
