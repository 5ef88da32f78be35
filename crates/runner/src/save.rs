//! Writing results so that a crash never leaves half a file: a temp file in the same
//! directory, synced, then renamed over the target. Used for every saved result (a run, a
//! find-max search after every step, a bench run folder after every step). When the final
//! write fails after the run (its folder removed meanwhile, a full disk),
//! [`write_or_fallback`] puts the result somewhere else rather than lose what was measured.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A result file that could not be written; the message names the path and what to check.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}; check the path and free space", path.display())]
pub struct SaveError {
    /// The file that was to be written.
    pub path: PathBuf,
    /// Why it could not be.
    pub source: std::io::Error,
}

/// Writes `bytes` to `path` atomically, creating its directory when needed. A path that
/// exists and is neither a file nor a directory (`/dev/stdout`, a FIFO, `/dev/full`) is written
/// into as it is: renaming a file over it would replace the device.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SaveError> {
    let fail = |source| SaveError {
        path: path.to_path_buf(),
        source,
    };
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return write_in_place(path, bytes).map_err(fail);
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(fail)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e)
    })
}

fn write_in_place(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.write_all(bytes)?;
    f.flush()
}

/// A result whose own path could not be written, and where it went instead. Its message is
/// the one line the CLI prints: the failed path, the reason and the fallback.
#[derive(Debug)]
pub struct Fallback {
    /// Why the result's own path failed.
    pub failed: SaveError,
    /// Where the result went instead, or why no fallback could be written either.
    pub saved_to: Result<PathBuf, SaveError>,
}

impl std::fmt::Display for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (path, reason) = (self.failed.path.display(), &self.failed.source);
        match &self.saved_to {
            Ok(to) => write!(
                f,
                "cannot write {path} ({reason}): the result was saved to {} instead",
                to.display()
            ),
            Err(e) => write!(
                f,
                "cannot write {path} ({reason}), nor a fallback ({e}): the result is only printed"
            ),
        }
    }
}

impl std::error::Error for Fallback {}

/// Writes `bytes` to `path` atomically; when that fails, to `loadbench-<kind>-<timestamp>.json`
/// in the current directory, else in the temp directory. `Err` says where the result went.
pub fn write_or_fallback(path: &Path, kind: &str, bytes: &[u8]) -> Result<(), Box<Fallback>> {
    let failed = match write_atomic(path, bytes) {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    let name = format!("loadbench-{kind}-{}.json", stamp());
    let mut saved_to = Err(failed_copy(&failed));
    for dir in [PathBuf::from("."), std::env::temp_dir()] {
        let to = free_name(&dir, &name);
        saved_to = write_atomic(&to, bytes).map(|()| to);
        if saved_to.is_ok() {
            break;
        }
    }
    Err(Box::new(Fallback { failed, saved_to }))
}

fn failed_copy(e: &SaveError) -> SaveError {
    SaveError {
        path: e.path.clone(),
        source: std::io::Error::new(e.source.kind(), e.source.to_string()),
    }
}

/// `dir/name`, or `dir/<stem>-2.json`, `-3`, … when that exists already.
fn free_name(dir: &Path, name: &str) -> PathBuf {
    let stem = name.trim_end_matches(".json");
    let mut to = dir.join(name);
    let mut n = 1;
    while to.exists() {
        n += 1;
        to = dir.join(format!("{stem}-{n}.json"));
    }
    to
}

/// The current UTC time as `20261124T172713`, for file and folder names.
pub fn stamp() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_whole_files_and_names_the_path_on_failure() {
        let dir = std::env::temp_dir().join(format!("lb-save-{}", std::process::id()));
        let path = dir.join("sub/r.json");
        write_atomic(&path, b"{}").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
        let e = write_atomic(Path::new("/proc/version/x.json"), b"{}").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot write /proc/version/x.json"),
            "{e}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_device_is_written_into_and_never_replaced() {
        let Ok(meta) = std::fs::metadata("/dev/full") else {
            return;
        };
        assert!(!meta.is_file());
        let e = write_atomic(Path::new("/dev/full"), b"{}").unwrap_err();
        assert_eq!(e.source.raw_os_error(), Some(28), "ENOSPC: {e}");
        assert!(
            !std::fs::metadata("/dev/full").unwrap().is_file(),
            "still a device"
        );
        write_atomic(Path::new("/dev/null"), b"{}").unwrap();
        assert!(
            !std::fs::metadata("/dev/null").unwrap().is_file(),
            "still a device"
        );
    }

    #[test]
    fn fallback_names_the_failed_path_and_where_the_result_went() {
        let fb = write_or_fallback(Path::new("/proc/version/x.json"), "test", b"{}").unwrap_err();
        let to = fb.saved_to.as_ref().unwrap().clone();
        assert_eq!(std::fs::read(&to).unwrap(), b"{}");
        let name = to.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("loadbench-test-"), "{name}");
        let line = fb.to_string();
        assert!(
            line.starts_with("cannot write /proc/version/x.json ("),
            "{line}"
        );
        assert!(
            line.ends_with(&format!("saved to {} instead", to.display())),
            "{line}"
        );
        std::fs::remove_file(to).unwrap();
    }
}
