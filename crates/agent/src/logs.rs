//! The job logs `/log` reads: live progress lines per trigger, kept in memory for the last few
//! triggers only, so an agent that runs jobs for months holds the same memory as after its first.
//! With a folder ([`Logs::on_disk`], the agent's `--data-dir`), each trigger's lines also go to
//! `<logId>.log` there, so `/log` still answers after the agent restarts; the folder keeps the
//! newest [`KEPT_FILES`] logs no older than [`KEPT_AGE`], each at most [`KEPT_LINES`] lines of at
//! most [`MAX_LINE`] bytes (about 20 MB in all at worst).

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

/// Logs kept: older ones are dropped (the admin reads a log while its job runs, or soon after).
pub const KEPT_LOGS: usize = 64;
/// Lines kept per log (an hour of one progress line a second, with room to spare).
pub const KEPT_LINES: usize = 5000;
/// Log files kept on disk.
pub const KEPT_FILES: usize = 200;
/// The oldest log file kept on disk.
pub const KEPT_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// The longest line written to disk (bytes); longer ones are cut.
pub const MAX_LINE: usize = 4096;

#[derive(Debug)]
struct Log {
    id: i64,
    lines: Vec<String>,
    ended: bool,
}

/// The logs of the last [`KEPT_LOGS`] triggers, by log id.
#[derive(Debug, Default)]
pub struct Logs {
    logs: Mutex<VecDeque<Log>>,
    dir: Option<PathBuf>,
}

/// A slice of a log as `/log` answers it: 1-based line numbers, lines joined with `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSlice {
    /// The first line asked for.
    pub from: i64,
    /// The last line returned (`from - 1` when none).
    pub to: i64,
    /// Those lines, each ending in `\n`.
    pub content: String,
    /// True once the trigger has finished (or the log is unknown).
    pub is_end: bool,
}

impl Logs {
    /// Logs also kept in `dir` (created if missing); an error names the folder.
    pub fn on_disk(dir: &Path) -> Result<Logs, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("--data-dir {}: {e}", dir.display()))?;
        Ok(Logs {
            logs: Mutex::default(),
            dir: Some(dir.to_path_buf()),
        })
    }

    fn file(&self, id: i64) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(format!("{id}.log")))
    }

    /// Appends `line` to the log's file (failures to write a log are not the job's failure).
    fn write(&self, id: i64, line: &str) {
        let Some(path) = self.file(id) else { return };
        let mut cut = line.replace('\n', " ");
        if cut.len() > MAX_LINE {
            let mut end = MAX_LINE;
            while !cut.is_char_boundary(end) {
                end -= 1;
            }
            cut.truncate(end);
        }
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
        {
            let _ = writeln!(f, "{cut}");
        }
    }

    /// Notes on disk that trigger `id` (fired at `log_date_time` ms) runs, until [`Logs::done`]:
    /// an agent that starts again finds what it lost ([`Logs::lost`]).
    pub fn running(&self, id: i64, log_date_time: i64) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::write(dir.join(format!("{id}.running")), log_date_time.to_string());
        }
    }

    /// The trigger has called back: nothing is lost if the agent stops now.
    pub fn done(&self, id: i64) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_file(dir.join(format!("{id}.running")));
        }
    }

    /// Triggers that were running when a former agent stopped without calling back (killed,
    /// crashed, the host rebooted): (log id, `logDateTime`). Each gets `line` at the end of its
    /// log and is forgotten.
    pub fn lost(&self, line: &str) -> Vec<(i64, i64)> {
        let Some(dir) = &self.dir else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut lost = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".running").and_then(|i| i.parse().ok()) else {
                continue;
            };
            let at = std::fs::read_to_string(entry.path())
                .ok()
                .and_then(|t| t.trim().parse().ok())
                .unwrap_or(0);
            self.write(id, line);
            let _ = std::fs::remove_file(entry.path());
            lost.push((id, at));
        }
        lost.sort_unstable();
        lost
    }

    /// Drops log files beyond [`KEPT_FILES`] (oldest first) or older than [`KEPT_AGE`].
    fn prune(&self) {
        let Some(dir) = &self.dir else { return };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut files: Vec<(SystemTime, PathBuf)> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        files.sort();
        let now = SystemTime::now();
        let excess = files.len().saturating_sub(KEPT_FILES);
        for (i, (modified, path)) in files.iter().enumerate() {
            let old = now
                .duration_since(*modified)
                .is_ok_and(|age| age > KEPT_AGE);
            if i < excess || old {
                let _ = std::fs::remove_file(path);
            }
        }
    }

    /// Starts the log of a trigger, dropping the oldest beyond [`KEPT_LOGS`].
    pub fn open(&self, id: i64) {
        if let Some(path) = self.file(id) {
            let _ = std::fs::remove_file(path);
            self.prune();
        }
        let mut logs = self.lock();
        logs.retain(|l| l.id != id);
        if logs.len() == KEPT_LOGS {
            logs.pop_front();
        }
        logs.push_back(Log {
            id,
            lines: Vec::new(),
            ended: false,
        });
    }

    /// Appends a line (beyond [`KEPT_LINES`], only the final line of a log is kept).
    pub fn push(&self, id: i64, line: impl Into<String>) {
        let line = line.into();
        let kept = match self.lock().iter_mut().find(|l| l.id == id) {
            Some(log) if log.lines.len() < KEPT_LINES => {
                log.lines.push(line.clone());
                true
            }
            _ => false,
        };
        if kept {
            self.write(id, &line);
        }
    }

    /// Appends the final line and marks the log ended.
    pub fn end(&self, id: i64, line: impl Into<String>) {
        let line = line.into();
        let kept = match self.lock().iter_mut().find(|l| l.id == id) {
            Some(log) => {
                log.lines.push(line.clone());
                log.ended = true;
                true
            }
            // A log of a former agent (see `lost`): on disk only.
            None => self.file(id).is_some_and(|f| f.exists()),
        };
        if kept {
            self.write(id, &line);
        }
    }

    /// A log from before this agent started, from its file: ended (nothing runs it now).
    fn read_file(&self, id: i64, from: i64) -> Option<LogSlice> {
        let text = std::fs::read_to_string(self.file(id)?).ok()?;
        let skip = usize::try_from(from - 1).unwrap_or(usize::MAX);
        let lines: Vec<&str> = text.lines().skip(skip).collect();
        Some(LogSlice {
            from,
            to: from - 1 + lines.len() as i64,
            content: lines.iter().map(|l| format!("{l}\n")).collect(),
            is_end: true,
        })
    }

    /// Lines from `from` (1-based; below 1 reads from 1) to the end.
    pub fn read(&self, id: i64, from: i64) -> LogSlice {
        let from = from.max(1);
        let logs = self.lock();
        let Some(log) = logs.iter().find(|l| l.id == id) else {
            drop(logs);
            if let Some(slice) = self.read_file(id, from) {
                return slice;
            }
            return LogSlice {
                from,
                to: from - 1,
                content: format!("no log {id} on this agent (it keeps the last {KEPT_LOGS})\n"),
                is_end: true,
            };
        };
        let skip = usize::try_from(from - 1).unwrap_or(usize::MAX);
        let lines: Vec<&String> = log.lines.iter().skip(skip).collect();
        LogSlice {
            from,
            to: from - 1 + lines.len() as i64,
            content: lines.iter().map(|l| format!("{l}\n")).collect(),
            is_end: log.ended,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Log>> {
        self.logs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_from_a_line_on_and_forgets_the_oldest_logs() {
        let logs = Logs::default();
        logs.open(1);
        logs.push(1, "a");
        logs.push(1, "b");
        let s = logs.read(1, 2);
        assert_eq!(
            (s.from, s.to, s.content.as_str(), s.is_end),
            (2, 2, "b\n", false)
        );
        logs.end(1, "done");
        assert!(logs.read(1, 1).is_end);
        for id in 2..=(KEPT_LOGS as i64 + 1) {
            logs.open(id);
        }
        assert!(logs.read(1, 1).content.starts_with("no log 1"));
        assert_eq!(logs.lock().len(), KEPT_LOGS);
    }

    #[test]
    fn a_log_on_disk_is_read_by_a_new_agent_and_old_files_are_dropped() {
        let dir = std::env::temp_dir().join(format!("lb-logs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let first = Logs::on_disk(&dir).unwrap();
        first.open(7);
        first.push(7, "a");
        first.push(7, "b\nc");
        first.end(7, "done");
        drop(first);
        let restarted = Logs::on_disk(&dir).unwrap();
        let s = restarted.read(7, 2);
        assert_eq!(
            (s.from, s.to, s.content.as_str(), s.is_end),
            (2, 3, "b c\ndone\n", true)
        );
        for id in 100..(100 + KEPT_FILES as i64 + 5) {
            restarted.open(id);
            restarted.push(id, "x");
        }
        let files = std::fs::read_dir(&dir).unwrap().count();
        assert!(files <= KEPT_FILES + 1, "{files}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
