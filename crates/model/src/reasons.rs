//! Why requests failed, one level below the error class: which malformation made a response
//! unreadable (a bad status line, a head over 64 KiB, a bad chunk size, …). A fixed enum of
//! reasons with a counter each, so memory stays bounded however many errors a run sees, and
//! counts merge exactly across workers, rounds and shards (docs/reliability.md, "Error reasons").
//! The same for why connections were re-opened ([`ReopenReason`]), counted only on a reconnect;
//! both are counted by one generic [`ReasonCounts`].

use crate::errors::ErrorKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A fixed set of reasons with a dense index, counted by [`ReasonCounts`].
pub trait Reason: Copy + Ord + 'static {
    /// Every reason, in the order of [`Reason::index`].
    const ALL: &'static [Self];
    /// Dense index, for a fixed-size counter array in the engine.
    fn index(self) -> usize;
    /// Human wording for reports.
    fn describe(self) -> &'static str;
}

/// Counts by reason. Only reasons that occurred are present, so the JSON is a small object
/// (`{"bad_chunk_size":118}`), and counts merge exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ReasonCounts<R: Reason>(pub BTreeMap<R, u64>);

/// Why requests failed, below the error class.
pub type ErrorReasons = ReasonCounts<ErrorReason>;
/// Why connections were re-opened.
pub type ReopenReasons = ReasonCounts<ReopenReason>;

impl<R: Reason> Default for ReasonCounts<R> {
    fn default() -> Self {
        ReasonCounts(BTreeMap::new())
    }
}

impl<R: Reason> ReasonCounts<R> {
    /// Counts `n` more of `reason` (a zero count adds no key).
    pub fn add(&mut self, reason: R, n: u64) {
        if n > 0 {
            *self.0.entry(reason).or_insert(0) += n;
        }
    }

    /// Adds the other counts, reason by reason.
    pub fn merge(&mut self, other: &Self) {
        other.0.iter().for_each(|(&r, &n)| self.add(r, n));
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// All counts together.
    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }

    /// From a dense array indexed by [`Reason::index`] (one entry per reason in `R::ALL`).
    pub fn from_array(counts: &[u64]) -> Self {
        debug_assert_eq!(counts.len(), R::ALL.len());
        let mut out = Self::default();
        R::ALL.iter().for_each(|&r| out.add(r, counts[r.index()]));
        out
    }

    /// The reasons `keep` accepts, most frequent first: `bad chunk size 118, head over 64 KiB
    /// 2`; `None` when none was counted.
    fn describe_where(&self, keep: impl Fn(R) -> bool) -> Option<String> {
        let mut of: Vec<(R, u64)> = self
            .0
            .iter()
            .filter(|(&r, _)| keep(r))
            .map(|(&r, &n)| (r, n))
            .collect();
        of.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let parts: Vec<String> = of
            .iter()
            .map(|(r, n)| format!("{} {n}", r.describe()))
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// A reason under one [`ErrorKind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorReason {
    /// Malformed: the status line is not `HTTP/1.x <3-digit code> [reason]`.
    BadStatusLine,
    /// Malformed: a header line without a colon or name, or folded.
    BadHeaderLine,
    /// Malformed: a Content-Length that is not a number or overflows.
    BadContentLength,
    /// Malformed: Content-Length values that disagree.
    ConflictingContentLength,
    /// Malformed: a chunk-size line that is not hex digits, overflows or is over 64 KiB.
    BadChunkSize,
    /// Malformed: chunk data not followed by its line end.
    BadChunkFraming,
    /// Malformed: the header (or trailer) block is over 64 KiB.
    #[serde(rename = "head_over_64_kib")]
    HeadOver64KiB,
    /// Malformed: an HTTP/2 frame broke the framing rules (size, stream, order), or the server
    /// did not speak HTTP/2 at all.
    H2Frame,
    /// Malformed: an HTTP/2 header block HPACK could not decode, or without `:status`.
    H2Hpack,
    /// RST_STREAM with NO_ERROR (0x0).
    #[serde(rename = "rst_stream_no_error")]
    RstNoError,
    /// RST_STREAM with PROTOCOL_ERROR (0x1).
    #[serde(rename = "rst_stream_protocol_error")]
    RstProtocolError,
    /// RST_STREAM with INTERNAL_ERROR (0x2).
    #[serde(rename = "rst_stream_internal_error")]
    RstInternalError,
    /// RST_STREAM with FLOW_CONTROL_ERROR (0x3).
    #[serde(rename = "rst_stream_flow_control_error")]
    RstFlowControlError,
    /// RST_STREAM with SETTINGS_TIMEOUT (0x4).
    #[serde(rename = "rst_stream_settings_timeout")]
    RstSettingsTimeout,
    /// RST_STREAM with STREAM_CLOSED (0x5).
    #[serde(rename = "rst_stream_stream_closed")]
    RstStreamClosed,
    /// RST_STREAM with FRAME_SIZE_ERROR (0x6).
    #[serde(rename = "rst_stream_frame_size_error")]
    RstFrameSizeError,
    /// RST_STREAM with REFUSED_STREAM (0x7).
    #[serde(rename = "rst_stream_refused_stream")]
    RstRefusedStream,
    /// RST_STREAM with CANCEL (0x8).
    #[serde(rename = "rst_stream_cancel")]
    RstCancel,
    /// RST_STREAM with COMPRESSION_ERROR (0x9).
    #[serde(rename = "rst_stream_compression_error")]
    RstCompressionError,
    /// RST_STREAM with CONNECT_ERROR (0xa).
    #[serde(rename = "rst_stream_connect_error")]
    RstConnectError,
    /// RST_STREAM with ENHANCE_YOUR_CALM (0xb).
    #[serde(rename = "rst_stream_enhance_your_calm")]
    RstEnhanceYourCalm,
    /// RST_STREAM with INADEQUATE_SECURITY (0xc).
    #[serde(rename = "rst_stream_inadequate_security")]
    RstInadequateSecurity,
    /// RST_STREAM with HTTP_1_1_REQUIRED (0xd).
    #[serde(rename = "rst_stream_http_1_1_required")]
    RstHttp11Required,
    /// RST_STREAM with an unknown code.
    #[serde(rename = "rst_stream_other")]
    RstOther,
    /// GOAWAY with NO_ERROR (0x0).
    #[serde(rename = "goaway_no_error")]
    GoawayNoError,
    /// GOAWAY with PROTOCOL_ERROR (0x1).
    #[serde(rename = "goaway_protocol_error")]
    GoawayProtocolError,
    /// GOAWAY with INTERNAL_ERROR (0x2).
    #[serde(rename = "goaway_internal_error")]
    GoawayInternalError,
    /// GOAWAY with FLOW_CONTROL_ERROR (0x3).
    #[serde(rename = "goaway_flow_control_error")]
    GoawayFlowControlError,
    /// GOAWAY with SETTINGS_TIMEOUT (0x4).
    #[serde(rename = "goaway_settings_timeout")]
    GoawaySettingsTimeout,
    /// GOAWAY with STREAM_CLOSED (0x5).
    #[serde(rename = "goaway_stream_closed")]
    GoawayStreamClosed,
    /// GOAWAY with FRAME_SIZE_ERROR (0x6).
    #[serde(rename = "goaway_frame_size_error")]
    GoawayFrameSizeError,
    /// GOAWAY with REFUSED_STREAM (0x7).
    #[serde(rename = "goaway_refused_stream")]
    GoawayRefusedStream,
    /// GOAWAY with CANCEL (0x8).
    #[serde(rename = "goaway_cancel")]
    GoawayCancel,
    /// GOAWAY with COMPRESSION_ERROR (0x9).
    #[serde(rename = "goaway_compression_error")]
    GoawayCompressionError,
    /// GOAWAY with CONNECT_ERROR (0xa).
    #[serde(rename = "goaway_connect_error")]
    GoawayConnectError,
    /// GOAWAY with ENHANCE_YOUR_CALM (0xb).
    #[serde(rename = "goaway_enhance_your_calm")]
    GoawayEnhanceYourCalm,
    /// GOAWAY with INADEQUATE_SECURITY (0xc).
    #[serde(rename = "goaway_inadequate_security")]
    GoawayInadequateSecurity,
    /// GOAWAY with HTTP_1_1_REQUIRED (0xd).
    #[serde(rename = "goaway_http_1_1_required")]
    GoawayHttp11Required,
    /// GOAWAY with an unknown code.
    #[serde(rename = "goaway_other")]
    GoawayOther,
    /// Connect error: an HTTP/2 connection broke the framing rules before it opened (a bad
    /// SETTINGS frame, a frame out of order during the preface).
    #[serde(rename = "h2_bad_preface")]
    H2BadPreface,
    /// Connect error: the server sent GOAWAY on a connection before any request could be
    /// opened on it (it refuses connections at the HTTP/2 level).
    #[serde(rename = "h2_goaway_at_open")]
    H2GoawayAtOpen,
    /// Connect error: the server's SETTINGS_MAX_CONCURRENT_STREAMS stayed 0 for `--timeout`
    /// after the connection opened: no request could be sent on it.
    #[serde(rename = "h2_zero_streams")]
    H2ZeroStreams,
    /// Connect error: the server answered the WebSocket upgrade with something other than
    /// `101` and the right `Sec-WebSocket-Accept` (and a subprotocol that was offered).
    WsUpgradeRefused,
    /// Connect error: no whole answer to the WebSocket upgrade within `--connect-timeout`.
    WsUpgradeTimeout,
    /// Connect error: the server closed the connection before it answered the upgrade.
    WsUpgradeClosed,
    /// Malformed (`--http3`): an HTTP/3 frame broke the framing rules, or a response stream
    /// ended without a final `:status`.
    H3Frame,
    /// Malformed (`--http3`): a QPACK field section that could not be decoded (or referred to
    /// the dynamic table, which we never allow).
    Qpack,
    /// Closed before the response was complete (`--http3`): the request was above the
    /// server's GOAWAY stream id once more after it had been sent again on a new connection
    /// (the server did not process it).
    H3GoawayRefused,
    /// `--http3`: the server reset the request stream with `H3_NO_ERROR` (0x100).
    H3ResetNoError,
    /// `--http3`: the server reset the request stream with `H3_GENERAL_PROTOCOL_ERROR` (0x101).
    H3ResetGeneralProtocolError,
    /// `--http3`: the server reset the request stream with `H3_INTERNAL_ERROR` (0x102).
    H3ResetInternalError,
    /// `--http3`: the server reset the request stream with `H3_STREAM_CREATION_ERROR` (0x103).
    H3ResetStreamCreationError,
    /// `--http3`: the server reset the request stream with `H3_CLOSED_CRITICAL_STREAM` (0x104).
    H3ResetClosedCriticalStream,
    /// `--http3`: the server reset the request stream with `H3_FRAME_UNEXPECTED` (0x105).
    H3ResetFrameUnexpected,
    /// `--http3`: the server reset the request stream with `H3_FRAME_ERROR` (0x106).
    H3ResetFrameError,
    /// `--http3`: the server reset the request stream with `H3_EXCESSIVE_LOAD` (0x107).
    H3ResetExcessiveLoad,
    /// `--http3`: the server reset the request stream with `H3_ID_ERROR` (0x108).
    H3ResetIdError,
    /// `--http3`: the server reset the request stream with `H3_SETTINGS_ERROR` (0x109).
    H3ResetSettingsError,
    /// `--http3`: the server reset the request stream with `H3_MISSING_SETTINGS` (0x10a).
    H3ResetMissingSettings,
    /// `--http3`: the server reset the request stream with `H3_REQUEST_REJECTED` (0x10b).
    H3ResetRequestRejected,
    /// `--http3`: the server reset the request stream with `H3_REQUEST_CANCELLED` (0x10c).
    H3ResetRequestCancelled,
    /// `--http3`: the server reset the request stream with `H3_REQUEST_INCOMPLETE` (0x10d).
    H3ResetRequestIncomplete,
    /// `--http3`: the server reset the request stream with `H3_MESSAGE_ERROR` (0x10e).
    H3ResetMessageError,
    /// `--http3`: the server reset the request stream with `H3_CONNECT_ERROR` (0x10f).
    H3ResetConnectError,
    /// `--http3`: the server reset the request stream with `H3_VERSION_FALLBACK` (0x110).
    H3ResetVersionFallback,
    /// `--http3`: the server reset the request stream with `QPACK_DECOMPRESSION_FAILED` (0x200).
    H3ResetQpackDecompressionFailed,
    /// `--http3`: the server reset the request stream with `QPACK_ENCODER_STREAM_ERROR` (0x201).
    H3ResetQpackEncoderStreamError,
    /// `--http3`: the server reset the request stream with `QPACK_DECODER_STREAM_ERROR` (0x202).
    H3ResetQpackDecoderStreamError,
    /// `--http3`: the server reset the request stream with a code HTTP/3 does not define.
    H3ResetOther,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_NO_ERROR` (0x100) while the request was in flight.
    H3CloseNoError,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_GENERAL_PROTOCOL_ERROR` (0x101) while the request was in flight.
    H3CloseGeneralProtocolError,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_INTERNAL_ERROR` (0x102) while the request was in flight.
    H3CloseInternalError,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_STREAM_CREATION_ERROR` (0x103) while the request was in flight.
    H3CloseStreamCreationError,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_CLOSED_CRITICAL_STREAM` (0x104) while the request was in flight.
    H3CloseClosedCriticalStream,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_FRAME_UNEXPECTED` (0x105) while the request was in flight.
    H3CloseFrameUnexpected,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_FRAME_ERROR` (0x106) while the request was in flight.
    H3CloseFrameError,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_EXCESSIVE_LOAD` (0x107) while the request was in flight.
    H3CloseExcessiveLoad,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_ID_ERROR` (0x108) while the request was in flight.
    H3CloseIdError,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_SETTINGS_ERROR` (0x109) while the request was in flight.
    H3CloseSettingsError,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_MISSING_SETTINGS` (0x10a) while the request was in flight.
    H3CloseMissingSettings,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_REQUEST_REJECTED` (0x10b) while the request was in flight.
    H3CloseRequestRejected,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_REQUEST_CANCELLED` (0x10c) while the request was in flight.
    H3CloseRequestCancelled,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_REQUEST_INCOMPLETE` (0x10d) while the request was in flight.
    H3CloseRequestIncomplete,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_MESSAGE_ERROR` (0x10e) while the request was in flight.
    H3CloseMessageError,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_CONNECT_ERROR` (0x10f) while the request was in flight.
    H3CloseConnectError,
    /// `--http3`: the server closed the QUIC connection with the HTTP/3 code `H3_VERSION_FALLBACK` (0x110) while the request was in flight.
    H3CloseVersionFallback,
    /// `--http3`: the server closed the QUIC connection with `QPACK_DECOMPRESSION_FAILED` (0x200).
    H3CloseQpackDecompressionFailed,
    /// `--http3`: the server closed the QUIC connection with `QPACK_ENCODER_STREAM_ERROR` (0x201).
    H3CloseQpackEncoderStreamError,
    /// `--http3`: the server closed the QUIC connection with `QPACK_DECODER_STREAM_ERROR` (0x202).
    H3CloseQpackDecoderStreamError,
    /// `--http3`: the server closed the QUIC connection with an application code HTTP/3 does not define.
    H3CloseOther,
    /// `--http3`: the server closed the QUIC connection with the transport error `NO_ERROR` (0x0).
    QuicCloseNoError,
    /// `--http3`: the server closed the QUIC connection with the transport error `INTERNAL_ERROR` (0x1).
    QuicCloseInternalError,
    /// `--http3`: the server closed the QUIC connection with the transport error `CONNECTION_REFUSED` (0x2).
    QuicCloseConnectionRefused,
    /// `--http3`: the server closed the QUIC connection with the transport error `FLOW_CONTROL_ERROR` (0x3).
    QuicCloseFlowControlError,
    /// `--http3`: the server closed the QUIC connection with the transport error `STREAM_LIMIT_ERROR` (0x4).
    QuicCloseStreamLimitError,
    /// `--http3`: the server closed the QUIC connection with the transport error `STREAM_STATE_ERROR` (0x5).
    QuicCloseStreamStateError,
    /// `--http3`: the server closed the QUIC connection with the transport error `FINAL_SIZE_ERROR` (0x6).
    QuicCloseFinalSizeError,
    /// `--http3`: the server closed the QUIC connection with the transport error `FRAME_ENCODING_ERROR` (0x7).
    QuicCloseFrameEncodingError,
    /// `--http3`: the server closed the QUIC connection with the transport error `TRANSPORT_PARAMETER_ERROR` (0x8).
    QuicCloseTransportParameterError,
    /// `--http3`: the server closed the QUIC connection with the transport error `CONNECTION_ID_LIMIT_ERROR` (0x9).
    QuicCloseConnectionIdLimitError,
    /// `--http3`: the server closed the QUIC connection with the transport error `PROTOCOL_VIOLATION` (0xa).
    QuicCloseProtocolViolation,
    /// `--http3`: the server closed the QUIC connection with the transport error `INVALID_TOKEN` (0xb).
    QuicCloseInvalidToken,
    /// `--http3`: the server closed the QUIC connection with the transport error `APPLICATION_ERROR` (0xc).
    QuicCloseApplicationError,
    /// `--http3`: the server closed the QUIC connection with the transport error `CRYPTO_BUFFER_EXCEEDED` (0xd).
    QuicCloseCryptoBufferExceeded,
    /// `--http3`: the server closed the QUIC connection with the transport error `KEY_UPDATE_ERROR` (0xe).
    QuicCloseKeyUpdateError,
    /// `--http3`: the server closed the QUIC connection with the transport error `AEAD_LIMIT_REACHED` (0xf).
    QuicCloseAeadLimitReached,
    /// `--http3`: the server closed the QUIC connection with the transport error `NO_VIABLE_PATH` (0x10).
    QuicCloseNoViablePath,
    /// `--http3`: the server closed the QUIC connection with a TLS alert (`CRYPTO_ERROR`, 0x100–0x1ff).
    QuicCloseCryptoError,
    /// `--http3`: the server closed the QUIC connection with a transport code QUIC does not define.
    QuicCloseOther,
    /// `--http3`: the QUIC connection went quiet past its idle timeout (no packet from the
    /// server, its keep-alives included).
    QuicIdleTimeout,
    /// `--http3`: the server reset the QUIC connection with a stateless reset (it had lost
    /// the connection's state, e.g. after a restart).
    QuicStatelessReset,
    /// `--http3`: the server broke the QUIC protocol, so loadbench closed the connection.
    QuicBroken,
    /// `--http3`: the connection was lost otherwise (a version negotiation, no connection ids
    /// left).
    QuicLost,
    /// Read timeout (`ws://`, `--ws-match`): no message with the sent message's id came within
    /// `--timeout` (others may have: `stats.ws.unmatched`).
    WsNoMatch,
}

/// The names of the HTTP/3 codes 0x100 to 0x110 and QPACK's 0x200 to 0x202, then an unknown code's, in the order of the `H3Reset…` and `H3Close…` reasons.
const H3_CODE_NAMES: [&str; 21] = [
    "H3_NO_ERROR",
    "H3_GENERAL_PROTOCOL_ERROR",
    "H3_INTERNAL_ERROR",
    "H3_STREAM_CREATION_ERROR",
    "H3_CLOSED_CRITICAL_STREAM",
    "H3_FRAME_UNEXPECTED",
    "H3_FRAME_ERROR",
    "H3_EXCESSIVE_LOAD",
    "H3_ID_ERROR",
    "H3_SETTINGS_ERROR",
    "H3_MISSING_SETTINGS",
    "H3_REQUEST_REJECTED",
    "H3_REQUEST_CANCELLED",
    "H3_REQUEST_INCOMPLETE",
    "H3_MESSAGE_ERROR",
    "H3_CONNECT_ERROR",
    "H3_VERSION_FALLBACK",
    "QPACK_DECOMPRESSION_FAILED",
    "QPACK_ENCODER_STREAM_ERROR",
    "QPACK_DECODER_STREAM_ERROR",
    "unknown code",
];

/// The names of the QUIC transport codes 0x00 to 0x10, then `CRYPTO_ERROR`'s and an unknown code's, in the order of the `QuicClose…` reasons.
const QUIC_CODE_NAMES: [&str; 19] = [
    "NO_ERROR (transport)",
    "INTERNAL_ERROR (transport)",
    "CONNECTION_REFUSED (transport)",
    "FLOW_CONTROL_ERROR (transport)",
    "STREAM_LIMIT_ERROR (transport)",
    "STREAM_STATE_ERROR (transport)",
    "FINAL_SIZE_ERROR (transport)",
    "FRAME_ENCODING_ERROR (transport)",
    "TRANSPORT_PARAMETER_ERROR (transport)",
    "CONNECTION_ID_LIMIT_ERROR (transport)",
    "PROTOCOL_VIOLATION (transport)",
    "INVALID_TOKEN (transport)",
    "APPLICATION_ERROR (transport)",
    "CRYPTO_BUFFER_EXCEEDED (transport)",
    "KEY_UPDATE_ERROR (transport)",
    "AEAD_LIMIT_REACHED (transport)",
    "NO_VIABLE_PATH (transport)",
    "CRYPTO_ERROR (a TLS alert)",
    "unknown transport code",
];

impl ErrorReason {
    /// Every reason, in the order of [`ErrorReason::index`].
    pub const ALL: [ErrorReason; 114] = [
        ErrorReason::BadStatusLine,
        ErrorReason::BadHeaderLine,
        ErrorReason::BadContentLength,
        ErrorReason::ConflictingContentLength,
        ErrorReason::BadChunkSize,
        ErrorReason::BadChunkFraming,
        ErrorReason::HeadOver64KiB,
        ErrorReason::H2Frame,
        ErrorReason::H2Hpack,
        ErrorReason::RstNoError,
        ErrorReason::RstProtocolError,
        ErrorReason::RstInternalError,
        ErrorReason::RstFlowControlError,
        ErrorReason::RstSettingsTimeout,
        ErrorReason::RstStreamClosed,
        ErrorReason::RstFrameSizeError,
        ErrorReason::RstRefusedStream,
        ErrorReason::RstCancel,
        ErrorReason::RstCompressionError,
        ErrorReason::RstConnectError,
        ErrorReason::RstEnhanceYourCalm,
        ErrorReason::RstInadequateSecurity,
        ErrorReason::RstHttp11Required,
        ErrorReason::RstOther,
        ErrorReason::GoawayNoError,
        ErrorReason::GoawayProtocolError,
        ErrorReason::GoawayInternalError,
        ErrorReason::GoawayFlowControlError,
        ErrorReason::GoawaySettingsTimeout,
        ErrorReason::GoawayStreamClosed,
        ErrorReason::GoawayFrameSizeError,
        ErrorReason::GoawayRefusedStream,
        ErrorReason::GoawayCancel,
        ErrorReason::GoawayCompressionError,
        ErrorReason::GoawayConnectError,
        ErrorReason::GoawayEnhanceYourCalm,
        ErrorReason::GoawayInadequateSecurity,
        ErrorReason::GoawayHttp11Required,
        ErrorReason::GoawayOther,
        ErrorReason::H2BadPreface,
        ErrorReason::H2GoawayAtOpen,
        ErrorReason::H2ZeroStreams,
        ErrorReason::WsUpgradeRefused,
        ErrorReason::WsUpgradeTimeout,
        ErrorReason::WsUpgradeClosed,
        ErrorReason::H3Frame,
        ErrorReason::Qpack,
        ErrorReason::H3GoawayRefused,
        ErrorReason::H3ResetNoError,
        ErrorReason::H3ResetGeneralProtocolError,
        ErrorReason::H3ResetInternalError,
        ErrorReason::H3ResetStreamCreationError,
        ErrorReason::H3ResetClosedCriticalStream,
        ErrorReason::H3ResetFrameUnexpected,
        ErrorReason::H3ResetFrameError,
        ErrorReason::H3ResetExcessiveLoad,
        ErrorReason::H3ResetIdError,
        ErrorReason::H3ResetSettingsError,
        ErrorReason::H3ResetMissingSettings,
        ErrorReason::H3ResetRequestRejected,
        ErrorReason::H3ResetRequestCancelled,
        ErrorReason::H3ResetRequestIncomplete,
        ErrorReason::H3ResetMessageError,
        ErrorReason::H3ResetConnectError,
        ErrorReason::H3ResetVersionFallback,
        ErrorReason::H3ResetQpackDecompressionFailed,
        ErrorReason::H3ResetQpackEncoderStreamError,
        ErrorReason::H3ResetQpackDecoderStreamError,
        ErrorReason::H3ResetOther,
        ErrorReason::H3CloseNoError,
        ErrorReason::H3CloseGeneralProtocolError,
        ErrorReason::H3CloseInternalError,
        ErrorReason::H3CloseStreamCreationError,
        ErrorReason::H3CloseClosedCriticalStream,
        ErrorReason::H3CloseFrameUnexpected,
        ErrorReason::H3CloseFrameError,
        ErrorReason::H3CloseExcessiveLoad,
        ErrorReason::H3CloseIdError,
        ErrorReason::H3CloseSettingsError,
        ErrorReason::H3CloseMissingSettings,
        ErrorReason::H3CloseRequestRejected,
        ErrorReason::H3CloseRequestCancelled,
        ErrorReason::H3CloseRequestIncomplete,
        ErrorReason::H3CloseMessageError,
        ErrorReason::H3CloseConnectError,
        ErrorReason::H3CloseVersionFallback,
        ErrorReason::H3CloseQpackDecompressionFailed,
        ErrorReason::H3CloseQpackEncoderStreamError,
        ErrorReason::H3CloseQpackDecoderStreamError,
        ErrorReason::H3CloseOther,
        ErrorReason::QuicCloseNoError,
        ErrorReason::QuicCloseInternalError,
        ErrorReason::QuicCloseConnectionRefused,
        ErrorReason::QuicCloseFlowControlError,
        ErrorReason::QuicCloseStreamLimitError,
        ErrorReason::QuicCloseStreamStateError,
        ErrorReason::QuicCloseFinalSizeError,
        ErrorReason::QuicCloseFrameEncodingError,
        ErrorReason::QuicCloseTransportParameterError,
        ErrorReason::QuicCloseConnectionIdLimitError,
        ErrorReason::QuicCloseProtocolViolation,
        ErrorReason::QuicCloseInvalidToken,
        ErrorReason::QuicCloseApplicationError,
        ErrorReason::QuicCloseCryptoBufferExceeded,
        ErrorReason::QuicCloseKeyUpdateError,
        ErrorReason::QuicCloseAeadLimitReached,
        ErrorReason::QuicCloseNoViablePath,
        ErrorReason::QuicCloseCryptoError,
        ErrorReason::QuicCloseOther,
        ErrorReason::QuicIdleTimeout,
        ErrorReason::QuicStatelessReset,
        ErrorReason::QuicBroken,
        ErrorReason::QuicLost,
        ErrorReason::WsNoMatch,
    ];

    /// Dense index, for a fixed-size counter array in the engine.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The error class this reason explains.
    pub fn kind(self) -> ErrorKind {
        let i = self.index();
        if self == ErrorReason::WsNoMatch {
            return ErrorKind::ReadTimeout;
        }
        if i >= ErrorReason::H3_CLOSE_FIRST {
            return ErrorKind::QuicClosed;
        }
        if i >= ErrorReason::H3_RESET_FIRST {
            return ErrorKind::H3StreamReset;
        }
        if i >= ErrorReason::H3_FIRST {
            return match self {
                ErrorReason::H3Frame | ErrorReason::Qpack => ErrorKind::MalformedResponse,
                _ => ErrorKind::ClosedBeforeResponseComplete,
            };
        }
        if i >= ErrorReason::CONNECT_FIRST {
            ErrorKind::ConnectError
        } else if i >= ErrorReason::GOAWAY_FIRST {
            ErrorKind::H2Goaway
        } else if i >= ErrorReason::RST_FIRST {
            ErrorKind::H2RstStream
        } else {
            ErrorKind::MalformedResponse
        }
    }

    /// Index of the first RST_STREAM code (the codes follow in order, unknown last).
    const RST_FIRST: usize = ErrorReason::RstNoError as usize;
    /// Index of the first GOAWAY code.
    const GOAWAY_FIRST: usize = ErrorReason::GoawayNoError as usize;
    /// Index of the first reason under `connect_error` (after the GOAWAY codes).
    const CONNECT_FIRST: usize = ErrorReason::H2BadPreface as usize;
    /// Index of the first HTTP/3 reason (after the `connect_error` ones).
    const H3_FIRST: usize = ErrorReason::H3Frame as usize;
    /// Index of the first HTTP/3 stream reset code (`H3_NO_ERROR`; the HTTP/3 codes follow in
    /// order, then QPACK's three, then an unknown code).
    const H3_RESET_FIRST: usize = ErrorReason::H3ResetNoError as usize;
    /// Index of the first reason under `quic_closed`: the HTTP/3 codes of a connection close,
    /// in the order of the resets', then the QUIC transport codes, then the other ends.
    const H3_CLOSE_FIRST: usize = ErrorReason::H3CloseNoError as usize;
    /// Index of the first QUIC transport code (`NO_ERROR`; 0x00 to 0x10 follow in order, then
    /// `CRYPTO_ERROR`, then an unknown code).
    const QUIC_CLOSE_FIRST: usize = ErrorReason::QuicCloseNoError as usize;

    /// The reason for an HTTP/2 error `code` under RST_STREAM (`goaway` false) or GOAWAY.
    pub fn h2_code(goaway: bool, code: u32) -> ErrorReason {
        let first = if goaway {
            ErrorReason::GOAWAY_FIRST
        } else {
            ErrorReason::RST_FIRST
        };
        let known = ErrorReason::GOAWAY_FIRST - ErrorReason::RST_FIRST - 1;
        let offset = usize::try_from(code).map_or(known, |c| c.min(known));
        ErrorReason::ALL[first + offset]
    }

    /// The reason for an HTTP/3 application error `code` (RFC 9114, 8.1; RFC 9204, 6): a
    /// request stream's reset (`close` false) or the connection's close.
    pub fn h3_code(close: bool, code: u64) -> ErrorReason {
        let first = if close {
            ErrorReason::H3_CLOSE_FIRST
        } else {
            ErrorReason::H3_RESET_FIRST
        };
        // 17 HTTP/3 codes from 0x100, 3 QPACK codes from 0x200, then the unknown one.
        let offset = match code {
            0x100..=0x110 => code - 0x100,
            0x200..=0x202 => code - 0x200 + 17,
            _ => 20,
        };
        ErrorReason::ALL[first + offset as usize]
    }

    /// The reason for a QUIC transport error `code` the server closed the connection with
    /// (RFC 9000, 20.1).
    pub fn quic_code(code: u64) -> ErrorReason {
        let offset = match code {
            0x00..=0x10 => code,
            0x100..=0x1ff => 17,
            _ => 18,
        };
        ErrorReason::ALL[ErrorReason::QUIC_CLOSE_FIRST + offset as usize]
    }

    /// Human wording for the reasons from `H3GoawayRefused` on: an HTTP/3, QPACK or QUIC
    /// code's name from its table, else the reason's own words.
    fn describe_h3(self) -> &'static str {
        let i = self.index();
        let table = |first: usize, names: &'static [&'static str]| {
            i.checked_sub(first).and_then(|at| names.get(at)).copied()
        };
        let code = table(ErrorReason::QUIC_CLOSE_FIRST, &QUIC_CODE_NAMES)
            .or_else(|| table(ErrorReason::H3_CLOSE_FIRST, &H3_CODE_NAMES))
            .or_else(|| table(ErrorReason::H3_RESET_FIRST, &H3_CODE_NAMES));
        if let Some(name) = code {
            return name;
        }
        match self {
            ErrorReason::H3GoawayRefused => {
                "above the server's GOAWAY again after being sent anew (not processed)"
            }
            ErrorReason::QuicIdleTimeout => "idle timeout (nothing from the server for 30 s)",
            ErrorReason::QuicStatelessReset => "stateless reset by the server",
            ErrorReason::QuicBroken => "the server broke QUIC (loadbench closed the connection)",
            ErrorReason::QuicLost => "lost otherwise (version negotiation, no connection ids left)",
            _ => "unknown reason",
        }
    }

    /// Human wording for reports.
    pub fn describe(self) -> &'static str {
        match self {
            ErrorReason::BadStatusLine => "bad status line",
            ErrorReason::BadHeaderLine => "header line without colon",
            ErrorReason::BadContentLength => "bad Content-Length",
            ErrorReason::ConflictingContentLength => "conflicting Content-Length",
            ErrorReason::BadChunkSize => "bad chunk size",
            ErrorReason::BadChunkFraming => "bad chunk framing",
            ErrorReason::HeadOver64KiB => "head over 64 KiB",
            ErrorReason::H2Frame => "bad HTTP/2 frame",
            ErrorReason::H2Hpack => "bad HPACK header block",
            ErrorReason::RstNoError => "NO_ERROR",
            ErrorReason::RstProtocolError => "PROTOCOL_ERROR",
            ErrorReason::RstInternalError => "INTERNAL_ERROR",
            ErrorReason::RstFlowControlError => "FLOW_CONTROL_ERROR",
            ErrorReason::RstSettingsTimeout => "SETTINGS_TIMEOUT",
            ErrorReason::RstStreamClosed => "STREAM_CLOSED",
            ErrorReason::RstFrameSizeError => "FRAME_SIZE_ERROR",
            ErrorReason::RstRefusedStream => "REFUSED_STREAM",
            ErrorReason::RstCancel => "CANCEL",
            ErrorReason::RstCompressionError => "COMPRESSION_ERROR",
            ErrorReason::RstConnectError => "CONNECT_ERROR",
            ErrorReason::RstEnhanceYourCalm => "ENHANCE_YOUR_CALM",
            ErrorReason::RstInadequateSecurity => "INADEQUATE_SECURITY",
            ErrorReason::RstHttp11Required => "HTTP_1_1_REQUIRED",
            ErrorReason::RstOther => "unknown code",
            ErrorReason::GoawayNoError => "NO_ERROR",
            ErrorReason::GoawayProtocolError => "PROTOCOL_ERROR",
            ErrorReason::GoawayInternalError => "INTERNAL_ERROR",
            ErrorReason::GoawayFlowControlError => "FLOW_CONTROL_ERROR",
            ErrorReason::GoawaySettingsTimeout => "SETTINGS_TIMEOUT",
            ErrorReason::GoawayStreamClosed => "STREAM_CLOSED",
            ErrorReason::GoawayFrameSizeError => "FRAME_SIZE_ERROR",
            ErrorReason::GoawayRefusedStream => "REFUSED_STREAM",
            ErrorReason::GoawayCancel => "CANCEL",
            ErrorReason::GoawayCompressionError => "COMPRESSION_ERROR",
            ErrorReason::GoawayConnectError => "CONNECT_ERROR",
            ErrorReason::GoawayEnhanceYourCalm => "ENHANCE_YOUR_CALM",
            ErrorReason::GoawayInadequateSecurity => "INADEQUATE_SECURITY",
            ErrorReason::GoawayHttp11Required => "HTTP_1_1_REQUIRED",
            ErrorReason::GoawayOther => "unknown code",
            ErrorReason::H2BadPreface => "bad HTTP/2 frame before the connection opened",
            ErrorReason::H2GoawayAtOpen => {
                "GOAWAY before any request (the server refused the connection)"
            }
            ErrorReason::H2ZeroStreams => {
                "SETTINGS_MAX_CONCURRENT_STREAMS 0 (no request could be sent)"
            }
            ErrorReason::WsUpgradeRefused => {
                "WebSocket upgrade refused (no 101, or a wrong Sec-WebSocket-Accept or subprotocol)"
            }
            ErrorReason::WsUpgradeTimeout => "no answer to the WebSocket upgrade in time",
            ErrorReason::WsUpgradeClosed => "closed before answering the WebSocket upgrade",
            ErrorReason::H3Frame => "bad HTTP/3 frame, or no :status",
            ErrorReason::Qpack => "bad QPACK field section",
            ErrorReason::WsNoMatch => "no message with the --ws-match id in time",
            // HTTP/3's and QUIC's own.
            _ => self.describe_h3(),
        }
    }
}

impl Reason for ErrorReason {
    const ALL: &'static [Self] = &ErrorReason::ALL;
    fn index(self) -> usize {
        ErrorReason::index(self)
    }
    fn describe(self) -> &'static str {
        ErrorReason::describe(self)
    }
}

impl ErrorReasons {
    /// The reasons under `kind`, most frequent first: `bad chunk size 118, head over 64 KiB 2`;
    /// `None` when none was counted.
    pub fn describe(&self, kind: ErrorKind) -> Option<String> {
        self.describe_where(|r| r.kind() == kind)
    }
}

/// Why a connection was closed and a new one opened for the next request, when the server
/// (not `--no-keepalive`) decided it. Counted only on a reconnect, never per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReopenReason {
    /// The response carried `Connection: close`.
    ConnectionClose,
    /// The response could not leave the connection open: HTTP/1.0 without `Connection:
    /// keep-alive`, a body delimited by the close, or `101 Switching Protocols`.
    NotReusable,
    /// The server closed the connection right after a complete response, without saying so
    /// with `Connection: close`.
    ClosedAfterResponse,
    /// Bytes followed the end of the response (a `Content-Length` shorter than the body): the
    /// connection cannot be read in step any more, so it was closed.
    ExtraBytes,
    /// An idle keep-alive connection was closed by the server, noticed before reuse
    /// (`stale_closes`).
    ClosedWhileIdle,
    /// A request was written into a keep-alive connection the server had already closed and
    /// was sent again on a new one (`stale_retries`).
    StaleRetry,
    /// The response came before the request's body was all written (a server that answers
    /// after the head): the rest was not sent, so the connection could not be reused.
    AnsweredBeforeBody,
}

impl ReopenReason {
    /// Every reason, in the order of [`ReopenReason::index`].
    pub const ALL: [ReopenReason; 7] = [
        ReopenReason::ConnectionClose,
        ReopenReason::NotReusable,
        ReopenReason::ClosedAfterResponse,
        ReopenReason::ExtraBytes,
        ReopenReason::ClosedWhileIdle,
        ReopenReason::StaleRetry,
        ReopenReason::AnsweredBeforeBody,
    ];

    /// Dense index, for a fixed-size counter array in the engine.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Human wording for reports.
    pub fn describe(self) -> &'static str {
        match self {
            ReopenReason::ConnectionClose => "Connection: close",
            ReopenReason::NotReusable => "HTTP/1.0 or body ended by close",
            ReopenReason::ClosedAfterResponse => {
                "closed after the response without Connection: close"
            }
            ReopenReason::ExtraBytes => {
                "bytes after the body (Content-Length shorter than the body)"
            }
            ReopenReason::ClosedWhileIdle => "closed while idle",
            ReopenReason::StaleRetry => "request resent after writing into a closed connection",
            ReopenReason::AnsweredBeforeBody => "answered before the request body was all sent",
        }
    }
}

impl Reason for ReopenReason {
    const ALL: &'static [Self] = &ReopenReason::ALL;
    fn index(self) -> usize {
        ReopenReason::index(self)
    }
    fn describe(self) -> &'static str {
        ReopenReason::describe(self)
    }
}

impl ReopenReasons {
    /// Most frequent first: `Connection: close 118, closed while idle 2`; `None` when empty.
    pub fn describe(&self) -> Option<String> {
        self.describe_where(|_| true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h2_codes_map_to_their_class_and_name() {
        let r = ErrorReason::h2_code(false, 7);
        assert_eq!(r, ErrorReason::RstRefusedStream);
        assert_eq!(r.kind(), ErrorKind::H2RstStream);
        assert_eq!(r.describe(), "REFUSED_STREAM");
        let g = ErrorReason::h2_code(true, 0);
        assert_eq!(
            (g, g.kind()),
            (ErrorReason::GoawayNoError, ErrorKind::H2Goaway)
        );
        assert_eq!(ErrorReason::h2_code(true, 0x99), ErrorReason::GoawayOther);
        assert_eq!(
            ErrorReason::h2_code(false, 13),
            ErrorReason::RstHttp11Required
        );
        assert_eq!(ErrorReason::H2Frame.kind(), ErrorKind::MalformedResponse);
        assert_eq!(
            ErrorReason::h2_code(true, u32::MAX),
            ErrorReason::GoawayOther
        );
        assert_eq!(ErrorReason::H2BadPreface.kind(), ErrorKind::ConnectError);
        assert_eq!(ErrorReason::H2ZeroStreams.kind(), ErrorKind::ConnectError);
        assert_eq!(
            ErrorReason::WsUpgradeRefused.kind(),
            ErrorKind::ConnectError
        );
        assert_eq!(ErrorReason::WsUpgradeClosed.kind(), ErrorKind::ConnectError);
        let json = serde_json::to_string(&ErrorReason::RstRefusedStream).unwrap();
        assert_eq!(json, r#""rst_stream_refused_stream""#);
    }

    /// Every HTTP/3 and QUIC code lands on the reason of that name, under its class, and the
    /// dense order of `ALL` is the enum's.
    #[test]
    fn h3_and_quic_codes_map_to_their_class_and_name() {
        for (i, r) in ErrorReason::ALL.iter().enumerate() {
            assert_eq!(r.index(), i, "{r:?}");
        }
        let r = ErrorReason::h3_code(false, 0x102);
        assert_eq!(r, ErrorReason::H3ResetInternalError);
        assert_eq!(
            (r.kind(), r.describe()),
            (ErrorKind::H3StreamReset, "H3_INTERNAL_ERROR")
        );
        assert_eq!(
            ErrorReason::h3_code(false, 0x10b),
            ErrorReason::H3ResetRequestRejected
        );
        assert_eq!(
            ErrorReason::h3_code(false, 0x110),
            ErrorReason::H3ResetVersionFallback
        );
        let q = ErrorReason::h3_code(false, 0x200);
        assert_eq!(q.describe(), "QPACK_DECOMPRESSION_FAILED");
        assert_eq!(
            ErrorReason::h3_code(false, 0x202),
            ErrorReason::H3ResetQpackDecoderStreamError
        );
        assert_eq!(
            ErrorReason::h3_code(false, 0x111),
            ErrorReason::H3ResetOther
        );
        assert_eq!(ErrorReason::h3_code(false, 0), ErrorReason::H3ResetOther);
        assert_eq!(ErrorReason::H3ResetOther.kind(), ErrorKind::H3StreamReset);
        let c = ErrorReason::h3_code(true, 0x107);
        assert_eq!(c, ErrorReason::H3CloseExcessiveLoad);
        assert_eq!(
            (c.kind(), c.describe()),
            (ErrorKind::QuicClosed, "H3_EXCESSIVE_LOAD")
        );
        assert_eq!(
            ErrorReason::h3_code(true, u64::MAX),
            ErrorReason::H3CloseOther
        );
        let t = ErrorReason::quic_code(0x0a);
        assert_eq!(t, ErrorReason::QuicCloseProtocolViolation);
        assert_eq!(t.describe(), "PROTOCOL_VIOLATION (transport)");
        assert_eq!(
            ErrorReason::quic_code(0x10),
            ErrorReason::QuicCloseNoViablePath
        );
        assert_eq!(
            ErrorReason::quic_code(0x128),
            ErrorReason::QuicCloseCryptoError
        );
        assert_eq!(ErrorReason::quic_code(0x11), ErrorReason::QuicCloseOther);
    }

    #[test]
    fn quic_transport_codes_and_ends_are_under_quic_closed() {
        let t = ErrorReason::quic_code(0x0a);
        for r in [
            t,
            ErrorReason::QuicIdleTimeout,
            ErrorReason::QuicStatelessReset,
            ErrorReason::QuicLost,
        ] {
            assert_eq!(r.kind(), ErrorKind::QuicClosed, "{r:?}");
        }
        assert_eq!(ErrorReason::Qpack.kind(), ErrorKind::MalformedResponse);
        assert_eq!(
            ErrorReason::H3GoawayRefused.kind(),
            ErrorKind::ClosedBeforeResponseComplete
        );
        let json = serde_json::to_string(&ErrorReason::H3CloseNoError).unwrap();
        assert_eq!(json, r#""h3_close_no_error""#);
    }

    #[test]
    fn reopen_reasons_merge_and_read_most_frequent_first() {
        let mut counts = [0u64; ReopenReason::ALL.len()];
        counts[ReopenReason::ClosedWhileIdle.index()] = 2;
        counts[ReopenReason::ConnectionClose.index()] = 100;
        let mut a = ReopenReasons::from_array(&counts);
        let mut b = ReopenReasons::default();
        b.add(ReopenReason::ConnectionClose, 18);
        a.merge(&b);
        assert_eq!(
            a.describe().as_deref(),
            Some("Connection: close 118, closed while idle 2")
        );
        assert_eq!(a.total(), 120);
        assert_eq!(ReopenReasons::default().describe(), None);
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, r#"{"connection_close":118,"closed_while_idle":2}"#);
    }

    #[test]
    fn reasons_merge_and_read_most_frequent_first() {
        let mut counts = [0u64; ErrorReason::ALL.len()];
        counts[ErrorReason::HeadOver64KiB.index()] = 2;
        counts[ErrorReason::BadChunkSize.index()] = 100;
        let mut a = ErrorReasons::from_array(&counts);
        let mut b = ErrorReasons::default();
        b.add(ErrorReason::BadChunkSize, 18);
        a.merge(&b);
        assert_eq!(
            a.describe(ErrorKind::MalformedResponse).as_deref(),
            Some("bad chunk size 118, head over 64 KiB 2")
        );
        assert_eq!(a.describe(ErrorKind::ReadTimeout), None);
        assert_eq!(a.0.len(), 2, "no entry for reasons that did not occur");
    }
}
