//! `--pipeline N` checked against the rest of the load: HTTP/1.1 pipelining keeps up to N
//! requests written ahead of their responses on each keep-alive connection, in the closed
//! and the open model (`--rate`, `--stages`, find-max). Each mistake is one line naming the
//! fix, found when the plan resolves, before any load starts.

use crate::{invalid, LoadSpec, PlanError};

/// The deepest pipeline accepted: far beyond what servers buffer (nginx reads 1 KiB headers
/// at a time, wrk's scripts use 16), and small enough that a connection's ring stays small.
pub const MAX_PIPELINE: u16 = 1024;

/// The pipeline depth of `spec`: 1 (no pipelining) or a depth the load can use.
pub(crate) fn check(spec: &LoadSpec) -> Result<u16, PlanError> {
    let depth = spec.transport.pipeline;
    if depth == 0 || depth > MAX_PIPELINE {
        return Err(invalid(format!(
            "--pipeline {depth} is out of range: give 1 to {MAX_PIPELINE} requests per connection"
        )));
    }
    if depth == 1 {
        return Ok(1);
    }
    if !spec.keepalive {
        return Err(invalid(
            "--pipeline needs keep-alive connections: leave out --no-keepalive (or --pipeline)",
        ));
    }
    if spec.transport.http2 {
        return Err(invalid(
            "--pipeline is HTTP/1.1 pipelining: with --http2, keep several requests in flight per connection with --streams N instead",
        ));
    }
    Ok(depth)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn spec(depth: u16) -> LoadSpec {
        let mut s = LoadSpec::closed("http://127.0.0.1:1/", 2, Duration::from_secs(1));
        s.transport.pipeline = depth;
        s
    }

    #[test]
    fn depth_one_is_no_pipelining_and_both_models_take_any_depth_in_range() {
        assert_eq!(check(&spec(1)).unwrap(), 1);
        assert_eq!(check(&spec(16)).unwrap(), 16);
        assert_eq!(check(&spec(MAX_PIPELINE)).unwrap(), MAX_PIPELINE);
        let open = LoadSpec {
            transport: spec(8).transport,
            ..LoadSpec::open("http://127.0.0.1:1/", 10.0, Duration::from_secs(1), 4)
        };
        assert_eq!(check(&open).unwrap(), 8);
    }

    #[test]
    fn out_of_range_no_keepalive_and_http2_are_one_line_each() {
        for (s, words) in [
            (spec(0), "give 1 to 1024"),
            (spec(MAX_PIPELINE + 1), "give 1 to 1024"),
            (
                LoadSpec {
                    keepalive: false,
                    ..spec(8)
                },
                "leave out --no-keepalive",
            ),
            (
                {
                    let mut s = spec(8);
                    s.transport.http2 = true;
                    s
                },
                "with --streams N instead",
            ),
        ] {
            let msg = check(&s).unwrap_err().to_string();
            assert!(msg.contains(words) && !msg.contains('\n'), "{msg}");
        }
    }
}
