//! The history of finished results: an embedded SQLite database (docs/history.md) that
//! `run`, `find-max` and `bench` append to with `--history`, and that `loadbench history` and
//! `loadbench compare --against-history` read.
//!
//! - [`Entry`]: what one result puts in the database: its kind, target, load, the headline
//!   [`Figures`] and, for a bench, one [`Cell`] per target × load × level.
//! - [`Labels`] (`--label k=v`) and [`Git`] (the commit and branch of the current directory).
//! - [`History`]: open (checked: an unreadable, foreign or newer database is refused before
//!   anything is written), [`History::append`], [`History::runs`] and [`History::points`].
//! - [`spread`]: is a new value outside the spread of the last N runs?
//!
//! Concurrent writers (two CI jobs on one file) are safe: WAL journal, a busy timeout, and every
//! write in one `BEGIN IMMEDIATE` transaction.

mod db;
mod entry;
mod labels;
pub mod spread;

pub use db::{default_path, History, HistoryError, Point, Query, StoredRun, SCHEMA_VERSION};
pub use entry::{Cell, Entry, Figures, Kind};
pub use labels::{Git, LabelError, Labels};
