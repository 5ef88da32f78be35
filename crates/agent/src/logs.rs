//! The job logs `/log` reads: live progress lines per trigger, kept in memory for the last few
//! triggers only, so an agent that runs jobs for months holds the same memory as after its first.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

/// Logs kept: older ones are dropped (the admin reads a log while its job runs, or soon after).
const KEPT_LOGS: usize = 64;
/// Lines kept per log (an hour of one progress line a second, with room to spare).
const KEPT_LINES: usize = 5000;

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
    /// Starts the log of a trigger, dropping the oldest beyond [`KEPT_LOGS`].
    pub fn open(&self, id: i64) {
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
        if let Some(log) = self.lock().iter_mut().find(|l| l.id == id) {
            if log.lines.len() < KEPT_LINES {
                log.lines.push(line.into());
            }
        }
    }

    /// Appends the final line and marks the log ended.
    pub fn end(&self, id: i64, line: impl Into<String>) {
        if let Some(log) = self.lock().iter_mut().find(|l| l.id == id) {
            log.lines.push(line.into());
            log.ended = true;
        }
    }

    /// Lines from `from` (1-based; below 1 reads from 1) to the end.
    pub fn read(&self, id: i64, from: i64) -> LogSlice {
        let from = from.max(1);
        let logs = self.lock();
        let Some(log) = logs.iter().find(|l| l.id == id) else {
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
}
