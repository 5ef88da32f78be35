//! The guardian: a tiny `/bin/sh` process that kills every target's process group once
//! loadbench is gone, however it went (`SIGKILL` included).
//!
//! Why: `PR_SET_PDEATHSIG` only reaches a target's direct child. When loadbench is killed,
//! processes the target forked (nginx's workers, say) would live on. The guardian holds the
//! read end of a pipe whose write end only loadbench has (close-on-exec, so no target inherits
//! it). loadbench writes `add PGID` when a target starts and `del PGID` once its group is gone;
//! when loadbench dies the kernel closes the write end, the guardian reads end-of-file and sends
//! `SIGKILL` to every group still listed, then exits. The guardian runs in its own process group
//! and ignores `INT`, `TERM` and `HUP`, so Ctrl-C reaches loadbench, which stops the targets
//! gracefully itself.

use std::io::Write;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::Mutex;

const SCRIPT: &str = r#"trap '' INT TERM HUP
g=""
while read -r op id; do
  case "$op" in
    add) g="$g $id" ;;
    del) n=""; for x in $g; do [ "$x" = "$id" ] || n="$n $x"; done; g="$n" ;;
  esac
done
for x in $g; do kill -KILL "-$x" 2>/dev/null; done
"#;

/// The write end of the guardian's pipe, started on first use; `None` if it could not start.
static GUARDIAN: Mutex<Option<Option<ChildStdin>>> = Mutex::new(None);

fn send(line: &str) {
    let mut guard = GUARDIAN.lock().unwrap_or_else(|e| e.into_inner());
    let pipe = guard.get_or_insert_with(start);
    if let Some(stdin) = pipe {
        if stdin.write_all(line.as_bytes()).is_err() {
            *pipe = None;
        }
    }
}

fn start() -> Option<ChildStdin> {
    use std::os::unix::process::CommandExt;
    let child = Command::new("/bin/sh")
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| {
            eprintln!(
                "warning: cannot start the guardian (/bin/sh: {e}); if loadbench is killed, \
                 processes forked by targets may outlive it"
            )
        })
        .ok()?;
    // Never waited for: it exits after loadbench, and init reaps it.
    child.stdin
}

/// Asks the guardian to kill group `pgid` if loadbench dies before [`forget`] is called.
pub fn watch(pgid: u32) {
    send(&format!("add {pgid}\n"));
}

/// The group is gone: the guardian must not signal it (its number may be reused).
pub fn forget(pgid: u32) {
    send(&format!("del {pgid}\n"));
}
