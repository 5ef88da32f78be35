//! The one way loadbench opens a file the user gives it as input: a scenario, a saved result,
//! a flow, a requests file, a data file, a body file, an import (`--har`, `--targets`, a
//! `--curl` command's `-d @FILE`), a certificate or a config template. [`InputFile::open`] refuses what is not
//! a regular file (a FIFO would block forever waiting for a writer, a device such as
//! `/dev/zero` never ends, a directory is not read) and a file over the kind's cap, before a
//! byte is read; [`InputFile::read`] then reads at most the cap, so a file that grows while it
//! is read is refused too. Every refusal is one line naming the file, the problem and the fix.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// What a file is read as: how messages name it and the most it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputFile {
    /// How messages name the file's role: `scenario`, `--flow`, `result`, ….
    pub what: &'static str,
    /// The most bytes it may hold.
    pub max_bytes: u64,
    /// What to do with a file over `max_bytes`.
    pub too_big_fix: &'static str,
}

/// The fix for a file no loadbench writes or reads at that size: most likely the wrong file.
const WRONG_FILE: &str = "check that it is the right file (README, \"Input files\")";

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

impl InputFile {
    /// A `bench` scenario (TOML): a few KiB in practice.
    pub const SCENARIO: InputFile = InputFile::new("scenario", MIB, WRONG_FILE);
    /// A target's `template_file` in a scenario.
    pub const TEMPLATE: InputFile = InputFile::new("template_file", MIB, WRONG_FILE);
    /// A saved result for `report`, `compare` and `merge`: a 5 s run is 13 KiB, a bench of 18
    /// runs 0.5 MiB; the per-second series adds about 0.8 KiB a second, some 70 MiB a day, so the
    /// limit holds a run of three days.
    pub const RESULT: InputFile = InputFile::new("result", 256 * MIB, WRONG_FILE);
    /// A `--flow` file (TOML), at most [`crate::MAX_STEPS`] steps.
    pub const FLOW: InputFile = InputFile::new("--flow", MIB, WRONG_FILE);
    /// A `--requests-file`, one request a line, at most [`crate::MAX_ENDPOINTS`] of them.
    pub const REQUESTS: InputFile = InputFile::new("--requests-file", 16 * MIB, WRONG_FILE);
    /// A `--data` file (CSV or JSON Lines), streamed row by row; its cells are addressed by
    /// 4-byte offsets.
    pub const DATA: InputFile =
        InputFile::new("--data", u32::MAX as u64, "split it or keep fewer rows");
    /// A request body read from a file (`--body-file`, a requests file's or an import's
    /// `@FILE`): sent whole with every request, so held in memory.
    pub const BODY: InputFile = InputFile::new("body file", 256 * MIB, WRONG_FILE);
    /// A HAR archive (`--har`); bodies included.
    pub const HAR: InputFile = InputFile::new("--har", 256 * MIB, WRONG_FILE);
    /// A vegeta targets file (`--targets`).
    pub const TARGETS: InputFile = InputFile::new("--targets", 16 * MIB, WRONG_FILE);
    /// A wrk Lua script (`--script`): a few KiB in practice.
    pub const SCRIPT: InputFile = InputFile::new("--script", 16 * MIB, WRONG_FILE);
    /// A `.proto` file (`--proto`): the services and messages of a gRPC load.
    pub const PROTO: InputFile = InputFile::new("--proto", 16 * MIB, WRONG_FILE);
    /// A PEM certificate or key (`--cacert`, `--cert`, `--key`).
    pub const PEM: InputFile = InputFile::new("certificate", MIB, WRONG_FILE);

    const fn new(what: &'static str, max_bytes: u64, too_big_fix: &'static str) -> InputFile {
        InputFile {
            what,
            max_bytes,
            too_big_fix,
        }
    }

    /// The same limits, named in messages as `what` (the flag that gave the file).
    pub const fn named(self, what: &'static str) -> InputFile {
        InputFile { what, ..self }
    }

    /// Opens `path` for reading when it is a regular file within the cap. A FIFO, a device
    /// or a directory is refused without opening it (opening a FIFO blocks until a writer
    /// comes).
    pub fn open(self, path: &Path) -> Result<File, InputError> {
        let cannot = |e: std::io::Error| self.cannot_read(path, &e);
        let meta = std::fs::metadata(path).map_err(cannot)?;
        self.check(path, &meta)?;
        let file = File::open(path).map_err(cannot)?;
        // The path may have been replaced between the two looks: check what was opened.
        self.check(path, &file.metadata().map_err(cannot)?)?;
        Ok(file)
    }

    /// The whole file, checked as [`InputFile::open`] does and read up to the cap.
    pub fn read(self, path: &Path) -> Result<Vec<u8>, InputError> {
        let file = self.open(path)?;
        let mut bytes = Vec::new();
        file.take(self.max_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| self.cannot_read(path, &e))?;
        if bytes.len() as u64 > self.max_bytes {
            return Err(self.too_big(path, None));
        }
        Ok(bytes)
    }

    /// The whole file as UTF-8 text (see [`InputFile::read`]).
    pub fn read_to_string(self, path: &Path) -> Result<String, InputError> {
        String::from_utf8(self.read(path)?).map_err(|_| InputError {
            problem: format!("{} {} is not UTF-8 text", self.what, path.display()),
            fix: "give a text file (UTF-8)".into(),
        })
    }

    fn check(self, path: &Path, meta: &std::fs::Metadata) -> Result<(), InputError> {
        if !meta.is_file() {
            return Err(InputError {
                problem: format!(
                    "{} {} is {}, not a regular file",
                    self.what,
                    path.display(),
                    file_kind(meta)
                ),
                fix: if meta.is_dir() {
                    "give a file in it".into()
                } else {
                    "give a regular file (copy what the pipe or device holds into one first)".into()
                },
            });
        }
        if meta.len() > self.max_bytes {
            return Err(self.too_big(path, Some(meta.len())));
        }
        Ok(())
    }

    fn too_big(self, path: &Path, size: Option<u64>) -> InputError {
        let size = size.map_or("grew past its limit".into(), |n| format!("is {}", bytes(n)));
        InputError {
            problem: format!(
                "{} {} {size}, over the limit of {}",
                self.what,
                path.display(),
                bytes(self.max_bytes)
            ),
            fix: self.too_big_fix.into(),
        }
    }

    fn cannot_read(self, path: &Path, e: &std::io::Error) -> InputError {
        InputError {
            problem: format!("cannot read {} {}: {e}", self.what, path.display()),
            fix: "check the path and its permissions".into(),
        }
    }
}

/// What the file is, for the message: `a FIFO (named pipe)`, `a directory`, ….
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// `1.0 MiB`, `4.0 GiB`, `512 B`.
fn bytes(n: u64) -> String {
    match n {
        n if n >= GIB => format!("{:.1} GiB", n as f64 / GIB as f64),
        n if n >= MIB => format!("{:.1} MiB", n as f64 / MIB as f64),
        n if n >= KIB => format!("{:.1} KiB", n as f64 / KIB as f64),
        n => format!("{n} B"),
    }
}

/// A file refused or unreadable: the problem (naming the file) and the fix, one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// What is wrong, naming the file and its role.
    pub problem: String,
    /// What to do about it.
    pub fix: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; {}", self.problem, self.fix)
    }
}

impl std::error::Error for InputError {}

impl From<InputError> for crate::PlanError {
    fn from(e: InputError) -> Self {
        crate::invalid(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("loadbench-input-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_device_a_directory_and_a_missing_file_are_refused_before_reading() {
        let zero = InputFile::SCENARIO
            .read(Path::new("/dev/zero"))
            .unwrap_err();
        assert_eq!(
            zero.to_string(),
            "scenario /dev/zero is a character device, not a regular file; give a regular file \
             (copy what the pipe or device holds into one first)"
        );
        let d = dir("dir");
        let e = InputFile::FLOW.read(&d).unwrap_err();
        assert!(
            e.problem.ends_with("is a directory, not a regular file"),
            "{e}"
        );
        let e = InputFile::RESULT.read(&d.join("nope.json")).unwrap_err();
        assert!(e.problem.starts_with("cannot read result "), "{e}");
        assert_eq!(e.fix, "check the path and its permissions");
    }

    #[test]
    fn a_file_over_the_cap_is_refused_by_its_size_and_one_at_the_cap_is_read() {
        let d = dir("cap");
        let small = InputFile::new("test", 4, WRONG_FILE);
        std::fs::write(d.join("four"), b"1234").unwrap();
        assert_eq!(small.read(&d.join("four")).unwrap(), b"1234");
        std::fs::write(d.join("five"), b"12345").unwrap();
        assert_eq!(
            small.read(&d.join("five")).unwrap_err().problem,
            format!(
                "test {} is 5 B, over the limit of 4 B",
                d.join("five").display()
            )
        );
        std::fs::write(d.join("latin1"), [0xe9]).unwrap();
        let e = InputFile::SCENARIO
            .read_to_string(&d.join("latin1"))
            .unwrap_err();
        assert!(e.problem.ends_with("is not UTF-8 text"), "{e}");
    }

    #[test]
    fn sizes_read_in_their_unit() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(MIB), "1.0 MiB");
        assert_eq!(bytes(256 * MIB), "256.0 MiB");
        assert_eq!(bytes(4 * GIB), "4.0 GiB");
    }
}
