//! The scenario loader on arbitrary text: it must never panic; any file it accepts has at
//! least one target and one load.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loadbench_harness::scenario::Scenario;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(s) = Scenario::parse(text, Path::new("/nonexistent/fuzz.toml")) {
        assert!(!s.targets.is_empty());
        assert!(!s.loads.is_empty());
    }
});
