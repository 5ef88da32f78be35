//! Per-request values (docs/request-values.md): `{{ … }}` in a request's URL path and query,
//! header values and body, each replaced by a value drawn for every request: a sequence
//! number, a random integer or pick, a UUID, the time, the shard, worker or connection
//! number, a column of a data file's row.
//!
//! Compiled once, when the plan resolves: each `{{ … }}` is swapped for a marker before the
//! request is rendered as usual (so the URL, headers and body go through the same checks as a
//! fixed request), and the rendered bytes are cut at the markers into fixed pieces and value
//! slots ([`Compiled`]). A request is then assembled into a connection's buffer with no
//! parsing and, once the buffer has grown, no allocation; a templated body's
//! `Content-Length` follows the assembled body.
//!
//! What a request draws ([`Draw`]) is fixed when it is claimed: its place in the load's
//! sequence `k` and one random number. A request written again (a dead keep-alive connection,
//! a pipelined request after its connection closed) is assembled from the same draw, so it
//! carries the same values and takes no new place in the sequence.
//!
//! The sequence is striped over shards: shard `i` of `N` takes the global places
//! `i, i+N, i+2N, …` (its `k`-th request is place `k·N + i`), and all workers of a process take
//! their `k` from one counter; so no two requests of a load, on any host, share a place, and a
//! run of `-n` requests over `N` shards takes exactly the places `0..n` (the shards' `-n`
//! shares are exactly the places `≡ i mod N` below `n`).

mod assemble;
mod expr;
mod mark;
mod spec;

pub use assemble::{Draw, Scratch, Source};
pub use expr::{is_name, parse as parse_value, Filter, NowFormat, Slot, Value, BUILT_INS};
pub(crate) use mark::Marks;
pub(crate) use spec::{apply_row_budget, compile_plan, mark_spec};

use crate::data::DataFile;
use crate::shard::Shard;
use crate::{invalid, PlanError};
use std::path::PathBuf;
use std::sync::Arc;

/// In which order a data file's rows are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DataOrder {
    /// First to last.
    #[default]
    InOrder,
    /// A random order fixed before the run (every row once per pass; `--seed` repeats it).
    Random,
}

/// How shards share a data file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DataSplit {
    /// Shard `i` of `N` takes the rows `i, i+N, …`: each row goes to one shard.
    #[default]
    Split,
    /// Every shard takes every row.
    Copy,
}

/// What happens when the rows run out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DataEnd {
    /// Start again from the first row.
    #[default]
    Wrap,
    /// The load is each row once: its request count is the rows (this shard's share).
    Stop,
}

/// `--data` and its options, as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataSpec {
    /// The CSV (with a header row) or JSON Lines file.
    pub path: PathBuf,
    /// In order or at random.
    pub order: DataOrder,
    /// Split over shards or copied to each.
    pub split: DataSplit,
    /// Wrap or stop at the end.
    pub end: DataEnd,
}

impl DataSpec {
    /// A file read in order, split over shards, wrapping at its end.
    pub fn new(path: impl Into<PathBuf>) -> DataSpec {
        DataSpec {
            path: path.into(),
            order: DataOrder::default(),
            split: DataSplit::default(),
            end: DataEnd::default(),
        }
    }
}

/// What the values of a load draw from, as given (beside the templates in its requests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValuesSpec {
    /// `--data`: rows for `{{row.COLUMN}}`.
    pub data: Option<DataSpec>,
    /// `--seed`: the random values (and a random row order) repeat from run to run.
    pub seed: Option<u64>,
    /// Which shard of the load this is (set by [`crate::LoadSpec::shard`]): the sequence and
    /// the data rows are striped over the shards.
    pub shard: Shard,
    /// Places of this shard's sequence that earlier runs of the same load took (a bench's
    /// earlier steps, a find-max search's earlier steps): this run goes on after them.
    pub first: u64,
}

impl Default for ValuesSpec {
    fn default() -> Self {
        ValuesSpec {
            data: None,
            seed: None,
            shard: Shard::WHOLE,
            first: 0,
        }
    }
}

/// One piece of an assembled request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Fixed bytes: `lits[from..to]`.
    Lit(u32, u32),
    /// The value of slot `i`.
    Slot(u16),
}

/// A slot's value, resolved for the hot path (a column by index, text by its range).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolved {
    Seq {
        start: i64,
        step: i64,
    },
    Int {
        min: i64,
        span: u64,
    },
    Pick(Vec<(u32, u32)>),
    Uuid,
    Now(NowFormat),
    Shard,
    Worker,
    Conn,
    Row(usize),
    Text(u32, u32),
    /// A flow variable, by index.
    Var(usize),
}

/// A request with values, cut into fixed pieces and slots once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    /// Every fixed byte (pieces and texts index into it).
    pub(crate) lits: Vec<u8>,
    /// The request up to its body; without a templated body, the whole request.
    pub(crate) head: Vec<Piece>,
    /// A templated body: assembled first, then `Content-Length` and the blank line follow
    /// the head.
    pub(crate) body: Option<Vec<Piece>>,
    /// Each slot's value and filters.
    pub(crate) slots: Vec<(Resolved, Vec<Filter>)>,
    /// Slots that draw from the random number, in order (each its own draw).
    pub(crate) randoms: u16,
}

/// The values of a resolved load: each request's compiled form (by the mix's index; `None`
/// for a request without values), the data file and how its rows are taken.
#[derive(Debug, Clone)]
pub struct Values {
    /// Per request of the mix (one without a mix).
    pub requests: Vec<Option<Compiled>>,
    /// The data file, read once and shared by the workers.
    pub data: Option<Arc<DataFile>>,
    /// `--data` options.
    pub spec: ValuesSpec,
    /// A random row order (a permutation of the rows), or `None`: in order.
    pub(crate) order: Option<Arc<Vec<u32>>>,
    /// The rows this shard takes per pass.
    pub(crate) rows_share: u64,
    /// The random values' seed.
    pub seed: u64,
}

impl Values {
    /// Whether request `endpoint` has values (is assembled per request).
    #[inline]
    pub fn templated(&self, endpoint: u16) -> bool {
        self.requests
            .get(usize::from(endpoint))
            .is_some_and(Option::is_some)
    }

    /// With `--data-end stop`: the requests this shard sends (each of its rows once).
    pub fn row_budget(&self) -> Option<u64> {
        let d = self.spec.data.as_ref()?;
        (d.end == DataEnd::Stop).then_some(self.rows_share)
    }

    /// The data file's rows.
    pub fn rows(&self) -> usize {
        self.data.as_ref().map_or(0, |d| d.rows())
    }
}

/// Reads the data file, checks every `{{row.COLUMN}}` against it and refuses what cannot
/// work; `requests` are the compiled requests (by the mix's index). `None` when no request
/// has values and no data file is given, unless `flow` (a flow's virtual users draw each
/// iteration's place and judge their answers through the values, even with none written).
pub(crate) fn resolve(
    spec: &ValuesSpec,
    requests: Vec<Option<Compiled>>,
    columns: Vec<String>,
    texts: &mut [&mut Compiled],
    flow: bool,
) -> Result<Option<Values>, PlanError> {
    let any = flow || requests.iter().any(Option::is_some) || !texts.is_empty();
    let Some(d) = &spec.data else {
        if let Some(c) = columns.first() {
            return Err(invalid(format!(
                "{{{{row.{c}}}}} reads a data file, but there is none: give --data FILE (a CSV with a header row, or JSON Lines)"
            )));
        }
        return Ok(any.then(|| Values {
            requests,
            data: None,
            spec: spec.clone(),
            order: None,
            rows_share: 0,
            seed: seed(spec),
        }));
    };
    let data = DataFile::load(&d.path)?;
    let map = columns
        .iter()
        .map(|name| {
            data.column(name)
                .ok_or_else(|| invalid(data.no_such_column(name)))
        })
        .collect::<Result<Vec<usize>, _>>()?;
    let mut requests = requests;
    let all = requests
        .iter_mut()
        .flatten()
        .chain(texts.iter_mut().map(|t| &mut **t));
    for r in all {
        for (slot, _) in &mut r.slots {
            if let Resolved::Row(i) = slot {
                *i = map[*i];
            }
        }
    }
    let rows = data.rows() as u64;
    let shard = spec.shard;
    let rows_share = match d.split {
        DataSplit::Split => shard.share(rows),
        DataSplit::Copy => rows,
    };
    if rows_share == 0 {
        return Err(invalid(format!(
            "--data {} has {rows} rows, none for shard {}/{} with --data-split split: add rows, run fewer shards, or give --data-split copy",
            d.path.display(),
            shard.index(),
            shard.total()
        )));
    }
    let seed = seed(spec);
    let order = (d.order == DataOrder::Random).then(|| Arc::new(permutation(rows as usize, seed)));
    Ok(Some(Values {
        requests,
        data: Some(Arc::new(data)),
        spec: spec.clone(),
        order,
        rows_share,
        seed,
    }))
}

/// `--seed`, or one from the clock.
fn seed(spec: &ValuesSpec) -> u64 {
    spec.seed.unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        assemble::mix64(now.as_nanos() as u64 ^ u64::from(std::process::id()))
    })
}

/// The rows in a random order fixed by `seed` (Fisher–Yates).
fn permutation(n: usize, seed: u64) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n as u32).collect();
    let mut s = seed;
    for i in (1..n).rev() {
        s = s.wrapping_add(assemble::GOLDEN);
        let j = assemble::below(assemble::mix64(s), i as u64 + 1) as usize;
        v.swap(i, j);
    }
    v
}

#[cfg(test)]
mod tests;
