//! Writing results so that a crash never leaves half a file: a temp file in the same
//! directory, synced, then renamed over the target. Used for every saved result (a run, a
//! find-max search after every step, a bench run folder after every step).

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

/// Writes `bytes` to `path` atomically, creating its directory when needed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SaveError> {
    let fail = |source| SaveError {
        path: path.to_path_buf(),
        source,
    };
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
}
