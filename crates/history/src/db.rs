//! The database: opening (checked), the schema, appending and reading.

use crate::entry::{Entry, Figures, Kind};
use crate::labels::{Git, Labels};
use rusqlite::types::Value;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Row, TransactionBehavior};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The schema this loadbench writes (`PRAGMA user_version`). A database with a higher
/// version was written by a newer loadbench and is refused untouched.
pub const SCHEMA_VERSION: i64 = 1;

/// How long a writer waits for another (a second CI job on the same file) before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

const SCHEMA: &str = "
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    recorded_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    load TEXT NOT NULL,
    labels TEXT NOT NULL,
    git_commit TEXT,
    git_branch TEXT,
    rps REAL, p50_us REAL, p99_us REAL, error_ratio REAL, count INTEGER,
    rps_ci_low REAL, rps_ci_high REAL, p99_ci_low REAL, p99_ci_high REAL,
    result TEXT NOT NULL
);
CREATE INDEX runs_series ON runs (target, load);
CREATE TABLE run_labels (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
CREATE INDEX run_labels_kv ON run_labels (key, value);
CREATE TABLE cells (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    target TEXT NOT NULL,
    load TEXT NOT NULL,
    level TEXT NOT NULL,
    rps REAL, p50_us REAL, p99_us REAL, error_ratio REAL, count INTEGER,
    rps_ci_low REAL, rps_ci_high REAL, p99_ci_low REAL, p99_ci_high REAL
);
CREATE INDEX cells_series ON cells (target, load, level);
";

/// Why the history could not be used. [`HistoryError::is_user_error`] tells the user's
/// mistakes (a wrong file: exit 2) from failures.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The file cannot be read or created (a directory, no permission).
    #[error("history database {path}: cannot open it ({detail}): give a readable file with --history=PATH or --db PATH")]
    Unreadable {
        /// The database's path.
        path: PathBuf,
        /// What the system said.
        detail: String,
    },
    /// The file is not a SQLite database.
    #[error("history database {path} is not a SQLite database: give a loadbench history file, or a new path")]
    NotADatabase {
        /// The database's path.
        path: PathBuf,
    },
    /// A SQLite database of something else.
    #[error("history database {path} is a SQLite database of another program (no loadbench tables): give a loadbench history file, or a new path")]
    Foreign {
        /// The database's path.
        path: PathBuf,
    },
    /// Written by a newer loadbench.
    #[error("history database {path} has schema version {found}, newer than this loadbench's {SCHEMA_VERSION}: use a newer loadbench, or a new path")]
    NewerSchema {
        /// The database's path.
        path: PathBuf,
        /// Its `user_version`.
        found: i64,
    },
    /// SQLite failed while reading or writing (a full disk, a lock held too long).
    #[error("history database {path}: {source}")]
    Sqlite {
        /// The database's path.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
}

impl HistoryError {
    /// A wrong file given by the user (exit 2), rather than a failure while using a right one.
    pub fn is_user_error(&self) -> bool {
        !matches!(self, HistoryError::Sqlite { .. })
    }
}

/// Where the history is kept when no path is given: `$XDG_DATA_HOME/loadbench/history.sqlite`,
/// else `$HOME/.local/share/loadbench/history.sqlite`; `None` without either variable.
pub fn default_path() -> Option<PathBuf> {
    let nonempty = |v: &str| {
        std::env::var_os(v)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    };
    let base =
        nonempty("XDG_DATA_HOME").or_else(|| nonempty("HOME").map(|h| h.join(".local/share")))?;
    Some(base.join("loadbench").join("history.sqlite"))
}

/// Which runs to read: all filters must match.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Each label must be present with this value (`branch` and `commit` come from git when
    /// not given as labels).
    pub labels: Labels,
    /// The run's target (URL or scenario name); for [`History::points`], the series' target.
    pub target: Option<String>,
    /// The run's load description; for [`History::points`], the series' load.
    pub load: Option<String>,
    /// The command that produced it.
    pub kind: Option<Kind>,
    /// Only the last N (runs; for points, per series).
    pub last: Option<usize>,
}

/// A run as the history lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    /// The row id (increasing in the order runs were appended).
    pub id: i64,
    /// When the result started (RFC 3339).
    pub time: String,
    /// The command.
    pub kind: Kind,
    /// URL or scenario name.
    pub target: String,
    /// Load description.
    pub load: String,
    /// Labels, with `branch` and `commit`.
    pub labels: Labels,
    /// The git commit of the directory it ran in.
    pub git_commit: Option<String>,
    /// The git branch of the directory it ran in.
    pub git_branch: Option<String>,
    /// Headline figures (a bench's are in its cells).
    pub figures: Figures,
}

/// One point of a trend: a run's figures, or a bench cell's, in the series `target` × `load`.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The run it belongs to.
    pub run_id: i64,
    /// When that run started.
    pub time: String,
    /// Its labels.
    pub labels: Labels,
    /// The series' target: a run's URL, a bench cell's target name.
    pub target: String,
    /// The series' load: a run's load description, a bench cell's `load level`
    /// (`mixed c=10`).
    pub load: String,
    /// The figures.
    pub figures: Figures,
}

/// An open history database.
pub struct History {
    path: PathBuf,
    conn: Connection,
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History").field("path", &self.path).finish()
    }
}

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

impl History {
    /// Opens the database at `path`, creating it (and its folder) when missing. A file that is
    /// not a SQLite database, a database of another program or of a newer schema is refused
    /// before anything is written to it.
    pub fn open(path: &Path) -> Result<History, HistoryError> {
        let unreadable = |detail: String| HistoryError::Unreadable {
            path: path.to_path_buf(),
            detail,
        };
        if path.is_dir() {
            return Err(unreadable("it is a directory".into()));
        }
        if path.exists() {
            let head = read_head(path).map_err(|e| unreadable(e.to_string()))?;
            if !head.is_empty() && head.as_slice() != SQLITE_MAGIC {
                return Err(HistoryError::NotADatabase {
                    path: path.to_path_buf(),
                });
            }
        } else if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| unreadable(e.to_string()))?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn =
            Connection::open_with_flags(path, flags).map_err(|e| unreadable(e.to_string()))?;
        let mut history = History {
            path: path.to_path_buf(),
            conn,
        };
        history.prepare()?;
        Ok(history)
    }

    /// The database's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sqlite(&self) -> impl Fn(rusqlite::Error) -> HistoryError + '_ {
        |source| HistoryError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// Checks the schema version (reading only), then creates the schema on a new file and
    /// turns on WAL.
    fn prepare(&mut self) -> Result<(), HistoryError> {
        let path = self.path.clone();
        self.conn
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(self.sqlite())?;
        let version = self.user_version().map_err(|e| match e {
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
                HistoryError::NotADatabase { path: path.clone() }
            }
            source => HistoryError::Sqlite {
                path: path.clone(),
                source,
            },
        })?;
        if version > SCHEMA_VERSION {
            return Err(HistoryError::NewerSchema {
                path,
                found: version,
            });
        }
        if version == 0 {
            self.create_schema()?;
        }
        // WAL: readers never block the writer, and a writer waits (busy timeout) for another.
        // A file system without shared memory keeps the rollback journal: still safe, since
        // every write is one IMMEDIATE transaction under the busy timeout.
        let _mode: String = self
            .conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(self.sqlite())?;
        self.conn
            .execute_batch("PRAGMA foreign_keys = ON")
            .map_err(self.sqlite())
    }

    fn user_version(&self) -> rusqlite::Result<i64> {
        self.conn.query_row("PRAGMA user_version", [], |r| r.get(0))
    }

    /// The schema, once: another process may be creating it at the same moment, so the version
    /// is read again inside the write transaction.
    fn create_schema(&mut self) -> Result<(), HistoryError> {
        let path = self.path.clone();
        let sqlite = |source| HistoryError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sqlite)?;
        let version: i64 = tx
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sqlite)?;
        if version != 0 {
            return Ok(());
        }
        let tables: i64 = tx
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                [],
                |r| r.get(0),
            )
            .map_err(sqlite)?;
        if tables > 0 {
            return Err(HistoryError::Foreign { path: path.clone() });
        }
        tx.execute_batch(SCHEMA).map_err(sqlite)?;
        tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
            .map_err(sqlite)?;
        tx.commit().map_err(sqlite)
    }

    /// Appends `entry` filed under `labels` and `git` (labels win over git's `branch` and
    /// `commit`), its cells with it, in one transaction. Returns the run's id.
    pub fn append(
        &mut self,
        entry: &Entry,
        labels: &Labels,
        git: &Git,
    ) -> Result<i64, HistoryError> {
        let path = self.path.clone();
        let sqlite = |source| HistoryError::Sqlite {
            path: path.clone(),
            source,
        };
        let all = labels.with_git(git);
        let labels_json = serde_json::to_string(&all.0).unwrap_or_else(|_| "{}".into());
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sqlite)?;
        let mut run: Vec<Value> = vec![
            entry.time.clone().into(),
            entry.kind.name().to_string().into(),
            entry.target.clone().into(),
            entry.load.clone().into(),
            labels_json.into(),
            git.commit.clone().into(),
            git.branch.clone().into(),
        ];
        run.extend(figure_values(&entry.figures));
        run.push(entry.result_json.clone().into());
        tx.execute(
            "INSERT INTO runs (time, kind, target, load, labels, git_commit, git_branch, rps, p50_us, p99_us, error_ratio, count, rps_ci_low, rps_ci_high, p99_ci_low, p99_ci_high, result)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
            rusqlite::params_from_iter(run),
        )
        .map_err(sqlite)?;
        let id = tx.last_insert_rowid();
        for (k, v) in &all.0 {
            tx.execute(
                "INSERT INTO run_labels (run_id, key, value) VALUES (?1, ?2, ?3)",
                params![id, k, v],
            )
            .map_err(sqlite)?;
        }
        for c in &entry.cells {
            let mut cell: Vec<Value> = vec![
                id.into(),
                c.target.clone().into(),
                c.load.clone().into(),
                c.level.clone().into(),
            ];
            cell.extend(figure_values(&c.figures));
            tx.execute(
                "INSERT INTO cells (run_id, target, load, level, rps, p50_us, p99_us, error_ratio, count, rps_ci_low, rps_ci_high, p99_ci_low, p99_ci_high)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                rusqlite::params_from_iter(cell),
            )
            .map_err(sqlite)?;
        }
        tx.commit().map_err(sqlite)?;
        Ok(id)
    }

    /// The runs matching `q`, oldest first (with `last`, the newest N of them).
    pub fn runs(&self, q: &Query) -> Result<Vec<StoredRun>, HistoryError> {
        let mut sql = String::from(
            "SELECT id, time, kind, target, load, labels, git_commit, git_branch, rps, p50_us, p99_us, error_ratio, count, rps_ci_low, rps_ci_high, p99_ci_low, p99_ci_high FROM runs WHERE 1",
        );
        let mut args: Vec<String> = Vec::new();
        if let Some(k) = q.kind {
            args.push(k.name().into());
            sql += &format!(" AND kind = ?{}", args.len());
        }
        if let Some(t) = &q.target {
            args.push(t.clone());
            sql += &format!(" AND target = ?{}", args.len());
        }
        if let Some(l) = &q.load {
            args.push(l.clone());
            sql += &format!(" AND load = ?{}", args.len());
        }
        for (k, v) in &q.labels.0 {
            args.push(k.clone());
            args.push(v.clone());
            sql += &format!(
                " AND EXISTS (SELECT 1 FROM run_labels l WHERE l.run_id = runs.id AND l.key = ?{} AND l.value = ?{})",
                args.len() - 1,
                args.len()
            );
        }
        sql += " ORDER BY id DESC";
        if let Some(n) = q.last {
            sql += &format!(" LIMIT {n}");
        }
        let mut stmt = self.conn.prepare(&sql).map_err(self.sqlite())?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args.iter()), stored_run)
            .map_err(self.sqlite())?;
        let mut runs = rows.collect::<Result<Vec<_>, _>>().map_err(self.sqlite())?;
        runs.reverse();
        Ok(runs)
    }

    /// The points of every series (a run: its URL × load; a bench: each cell's target ×
    /// `load level`) of the runs matching `q`'s kind and labels, oldest first; `q.target` and
    /// `q.load` pick series, `q.last` keeps the newest N points of each.
    pub fn points(&self, q: &Query) -> Result<Vec<Point>, HistoryError> {
        let runs = self.runs(&Query {
            target: None,
            load: None,
            last: None,
            ..q.clone()
        })?;
        let mut points = Vec::new();
        let mut stmt = self
            .conn
            .prepare("SELECT target, load, level, rps, p50_us, p99_us, error_ratio, count, rps_ci_low, rps_ci_high, p99_ci_low, p99_ci_high FROM cells WHERE run_id = ?1 ORDER BY rowid")
            .map_err(self.sqlite())?;
        for run in runs {
            if run.kind != Kind::Bench {
                points.push(Point {
                    run_id: run.id,
                    time: run.time,
                    labels: run.labels,
                    target: run.target,
                    load: run.load,
                    figures: run.figures,
                });
                continue;
            }
            let cells = stmt
                .query_map([run.id], |r| {
                    let load: String = r.get(1)?;
                    let level: String = r.get(2)?;
                    Ok((
                        r.get::<_, String>(0)?,
                        format!("{load} {level}"),
                        figures(r, 3)?,
                    ))
                })
                .map_err(self.sqlite())?;
            for cell in cells {
                let (target, load, figures) = cell.map_err(self.sqlite())?;
                points.push(Point {
                    run_id: run.id,
                    time: run.time.clone(),
                    labels: run.labels.clone(),
                    target,
                    load,
                    figures,
                });
            }
        }
        points.retain(|p| {
            q.target.as_ref().is_none_or(|t| *t == p.target)
                && q.load.as_ref().is_none_or(|l| *l == p.load)
        });
        if let Some(n) = q.last {
            points = last_per_series(points, n);
        }
        Ok(points)
    }

    /// The full result JSON of run `id`, when there is such a run.
    pub fn result_json(&self, id: i64) -> Result<Option<String>, HistoryError> {
        self.conn
            .query_row("SELECT result FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(self.sqlite())
    }
}

/// The newest `n` points of each series, still oldest first.
fn last_per_series(points: Vec<Point>, n: usize) -> Vec<Point> {
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut kept: Vec<Point> = points
        .into_iter()
        .rev()
        .filter(|p| {
            let count = seen.entry((p.target.clone(), p.load.clone())).or_default();
            *count += 1;
            *count <= n
        })
        .collect();
    kept.reverse();
    kept
}

/// The figure columns in their order: rps, p50, p99, error ratio, count, the two CIs.
fn figure_values(f: &Figures) -> [Value; 9] {
    [
        f.requests_per_sec.into(),
        f.p50_us.into(),
        f.p99_us.into(),
        f.error_ratio.into(),
        f.count.map(|c| i64::try_from(c).unwrap_or(i64::MAX)).into(),
        f.rps_ci.map(|c| c.0).into(),
        f.rps_ci.map(|c| c.1).into(),
        f.p99_ci.map(|c| c.0).into(),
        f.p99_ci.map(|c| c.1).into(),
    ]
}

fn read_head(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut head = Vec::with_capacity(16);
    std::fs::File::open(path)?.take(16).read_to_end(&mut head)?;
    Ok(head)
}

fn stored_run(r: &Row<'_>) -> rusqlite::Result<StoredRun> {
    let kind: String = r.get(2)?;
    let labels: String = r.get(5)?;
    let labels: BTreeMap<String, String> = serde_json::from_str(&labels).unwrap_or_default();
    Ok(StoredRun {
        id: r.get(0)?,
        time: r.get(1)?,
        kind: Kind::parse(&kind).unwrap_or(Kind::Run),
        target: r.get(3)?,
        load: r.get(4)?,
        labels: Labels(labels),
        git_commit: r.get(6)?,
        git_branch: r.get(7)?,
        figures: figures(r, 8)?,
    })
}

/// The figure columns from `at` on: rps, p50, p99, error ratio, count, the two CIs.
fn figures(r: &Row<'_>, at: usize) -> rusqlite::Result<Figures> {
    let pair = |a: Option<f64>, b: Option<f64>| a.zip(b);
    Ok(Figures {
        requests_per_sec: r.get(at)?,
        p50_us: r.get(at + 1)?,
        p99_us: r.get(at + 2)?,
        error_ratio: r.get(at + 3)?,
        count: r.get::<_, Option<i64>>(at + 4)?.map(|c| c.max(0) as u64),
        rps_ci: pair(r.get(at + 5)?, r.get(at + 6)?),
        p99_ci: pair(r.get(at + 7)?, r.get(at + 8)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(target: &str, rps: f64) -> Entry {
        Entry {
            kind: Kind::Run,
            time: "2026-11-28T00:00:00Z".into(),
            target: target.into(),
            load: "closed c=2".into(),
            figures: Figures {
                requests_per_sec: Some(rps),
                p50_us: Some(100.0),
                ..Figures::default()
            },
            cells: Vec::new(),
            result_json: "{}".into(),
        }
    }

    #[test]
    fn appended_runs_read_back_filtered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/h.sqlite");
        let mut h = History::open(&path).unwrap();
        let main = Labels::from_pairs([("branch".into(), "main".into())]);
        let git = Git {
            commit: Some("c1".into()),
            branch: Some("topic".into()),
        };
        for i in 0..4 {
            h.append(&entry("http://a/", f64::from(i)), &main, &git)
                .unwrap();
        }
        h.append(&entry("http://b/", 9.0), &Labels::default(), &git)
            .unwrap();
        drop(h);
        let h = History::open(&path).unwrap();
        assert_eq!(h.runs(&Query::default()).unwrap().len(), 5);
        let q = Query {
            labels: main.clone(),
            last: Some(2),
            ..Query::default()
        };
        let runs = h.runs(&q).unwrap();
        let rps: Vec<_> = runs.iter().map(|r| r.figures.requests_per_sec).collect();
        assert_eq!(rps, [Some(2.0), Some(3.0)]);
        assert_eq!(runs[0].labels.0["commit"], "c1");
        assert_eq!(runs[0].git_branch.as_deref(), Some("topic"));
        let topic = Query {
            labels: Labels::from_pairs([("branch".into(), "topic".into())]),
            ..Query::default()
        };
        assert_eq!(h.runs(&topic).unwrap()[0].target, "http://b/");
        let b = Query {
            target: Some("http://b/".into()),
            ..Query::default()
        };
        assert_eq!(h.points(&b).unwrap().len(), 1);
    }

    #[test]
    fn a_newer_schema_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.sqlite");
        drop(History::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA journal_mode = DELETE; PRAGMA user_version = 7")
            .unwrap();
        drop(conn);
        let before = std::fs::read(&path).unwrap();
        let e = History::open(&path).unwrap_err();
        assert!(
            matches!(e, HistoryError::NewerSchema { found: 7, .. }),
            "{e}"
        );
        assert!(e.is_user_error());
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn other_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "not a database at all").unwrap();
        let e = History::open(&text).unwrap_err();
        assert!(matches!(e, HistoryError::NotADatabase { .. }), "{e}");
        assert_eq!(
            std::fs::read_to_string(&text).unwrap(),
            "not a database at all"
        );
        let foreign = dir.path().join("other.sqlite");
        Connection::open(&foreign)
            .unwrap()
            .execute_batch("CREATE TABLE t (x)")
            .unwrap();
        let e = History::open(&foreign).unwrap_err();
        assert!(matches!(e, HistoryError::Foreign { .. }), "{e}");
        let e = History::open(dir.path()).unwrap_err();
        assert!(matches!(e, HistoryError::Unreadable { .. }), "{e}");
    }

    #[test]
    fn eight_writers_at_once_lose_no_row() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.sqlite");
        let start = std::sync::Barrier::new(8);
        std::thread::scope(|s| {
            for w in 0..8 {
                let (path, start) = (&path, &start);
                s.spawn(move || {
                    start.wait();
                    // Each writer creates or opens the file itself, as a CI job would.
                    let mut h = History::open(path).unwrap();
                    let mine = Labels::from_pairs([("writer".into(), w.to_string())]);
                    for i in 0..25 {
                        h.append(&entry("http://a/", f64::from(i)), &mine, &Git::default())
                            .unwrap();
                    }
                });
            }
        });
        let h = History::open(&path).unwrap();
        assert_eq!(h.runs(&Query::default()).unwrap().len(), 200);
        for w in 0..8 {
            let q = Query {
                labels: Labels::from_pairs([("writer".into(), w.to_string())]),
                ..Query::default()
            };
            assert_eq!(h.runs(&q).unwrap().len(), 25, "writer {w}");
        }
        let check: String = h
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
    }
}
