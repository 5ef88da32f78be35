//! The HTTP/1.1 response reader on arbitrary bytes, fed in arbitrary pieces (the first byte
//! picks the piece size, as the network would split a response): it must never panic, and what
//! it reports must be consistent with what it was given.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loadbench_engine::http1::{Progress, ResponseParser};

fuzz_target!(|data: &[u8]| {
    let Some((&split, bytes)) = data.split_first() else {
        return;
    };
    let piece = usize::from(split % 64) + 1;
    let mut parser = ResponseParser::new();
    parser.reset(split & 0x80 != 0);
    for chunk in bytes.chunks(piece) {
        match parser.feed(chunk) {
            Ok(Progress::Complete { .. }) => {
                let status = parser.status();
                assert!((100..=999).contains(&status), "status {status}");
                assert!(parser.body_bytes() <= bytes.len() as u64);
                return;
            }
            Ok(_) => {}
            Err(_) => return,
        }
    }
    let _ = parser.on_eof();
});
