//! The saved-result reader on arbitrary text: it must never panic, and a result it accepts
//! must survive being written and read again unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loadbench_model::RunResult;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = loadbench_model::saved::SavedResult::from_json(text);
    if let Ok(r) = RunResult::from_json(text) {
        let again = serde_json::to_string(&r).expect("a result read back serializes");
        let back = RunResult::from_json(&again).expect("a result written reads back");
        assert_eq!(back.stats.latency, r.stats.latency);
        assert_eq!(back.stats.requests, r.stats.requests);
        assert_eq!(back.stats.errors, r.stats.errors);
    }
});
