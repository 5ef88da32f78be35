//! An HTTP/2 connection's receive path on arbitrary bytes, as the server's side of the
//! connection after our preface, fed in arbitrary pieces: frame reader, header-block assembly
//! (HEADERS and CONTINUATIONs), HPACK decoder, SETTINGS, GOAWAY, flow control and streams.
//! The first byte picks the read size (1–64 bytes); the second the streams in flight (1–8),
//! whether requests carry a body larger than the flow-control window, and whether a first read
//! brings the server's empty SETTINGS (so half the inputs start on an open connection, its
//! streams sent). It must
//! never panic, its buffers stay within the header-block cap and the frame size, and every
//! request it sent is accounted for exactly once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loadbench_engine::h2::conn::{fuzz::receive, MAX_HEADER_BLOCK};
use loadbench_engine::h2::frame::DEFAULT_MAX_FRAME;

/// The server's first SETTINGS, empty.
const SETTINGS: [u8; 9] = [0, 0, 0, 4, 0, 0, 0, 0, 0];

fuzz_target!(|data: &[u8]| {
    let [split, shape, bytes @ ..] = data else {
        return;
    };
    let piece = usize::from(split % 64) + 1;
    let streams = u32::from(shape & 0x7) + 1;
    let body = shape & 0x8 != 0;
    let first: &[u8] = if shape & 0x10 != 0 { &SETTINGS } else { &[] };
    let got = receive(first, bytes, piece, streams, body);
    assert!(got.fed <= first.len() + bytes.len());
    assert!(
        got.largest_block <= MAX_HEADER_BLOCK,
        "header block of {} bytes",
        got.largest_block
    );
    // A Vec holding at most the cap grows its buffer to at most twice it.
    assert!(got.block_capacity <= 2 * MAX_HEADER_BLOCK, "{got:?}");
    assert!(
        got.payload_capacity <= 2 * DEFAULT_MAX_FRAME as usize,
        "{got:?}"
    );
    // Each send is answered, failed, still in flight, or refused by a GOAWAY (and sent again).
    assert_eq!(
        got.requests + got.failed + got.in_flight + got.goaway_retries,
        got.sent,
        "{got:?}"
    );
});
