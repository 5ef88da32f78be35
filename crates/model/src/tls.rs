//! What a run over TLS measured and how it was configured: the handshake time as a phase
//! beside connect time (a histogram, so workers, rounds and shards merge exactly), full and
//! resumed handshakes counted, and the settings every report must show (above all
//! `--insecure`, which no report may hide).

use crate::histogram::Latency;
use serde::{Deserialize, Serialize};

/// TLS handshakes of the connections opened in the measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TlsStats {
    /// From the TCP connection being established to the TLS handshake finished.
    #[serde(default)]
    pub handshake: Latency,
    /// Handshakes with a full key exchange and certificate.
    #[serde(default)]
    pub full: u64,
    /// Handshakes that resumed an earlier session (ticket or session id).
    #[serde(default)]
    pub resumed: u64,
}

impl TlsStats {
    /// Counts and histograms add: associative, like every other merge.
    pub fn merge(&mut self, o: &TlsStats) {
        self.handshake.merge(&o.handshake);
        self.full += o.full;
        self.resumed += o.resumed;
    }

    /// No handshake measured (a plain HTTP run, or a file written before TLS existed).
    pub fn is_empty(&self) -> bool {
        self.full == 0 && self.resumed == 0 && self.handshake.hist.is_empty()
    }
}

/// How TLS was set up for a run (`https://` URLs only).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsSettings {
    /// The name sent as SNI and checked against the certificate (from the `Host` header
    /// when one is given, else the URL's host).
    pub server_name: String,
    /// `--insecure`: the server's certificate was NOT verified.
    #[serde(default)]
    pub insecure: bool,
    /// `--cacert`: the file whose certificates were trusted (else the system's roots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacert: Option<String>,
    /// `--cert`: the client certificate presented (mutual TLS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cert: Option<String>,
    /// Session resumption was allowed (off with `--no-tls-resume`).
    #[serde(default)]
    pub resumption: bool,
    /// `--http3`: TLS 1.3 inside QUIC (UDP, ALPN h3), not over TCP.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quic: bool,
}

impl crate::RunConfig {
    /// How connections reached the target, when it was anything but HTTP/1.1 over plain TCP to
    /// the URL's host: HTTP/2 (connections × streams), TLS (and whether the certificate was
    /// verified), a Unix socket, `--connect-to`.
    /// Every report shows this line.
    pub fn transport_note(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(streams) = self.http2_streams {
            let (version, how) = match &self.tls {
                Some(t) if t.quic => ("HTTP/3", "h3 over QUIC"),
                Some(_) => ("HTTP/2", "h2 over TLS"),
                None => ("HTTP/2", "h2c"),
            };
            // The open model opens connections as the streams fill: the cap, not a count.
            let upto = match self.load {
                crate::LoadShape::Open { .. } => "up to ",
                crate::LoadShape::Closed { .. } | crate::LoadShape::FindMax { .. } => "",
            };
            parts.push(format!(
                "{version} ({how}), {upto}{} × {}",
                crate::human::counted(u64::from(self.connections), "connection"),
                crate::human::counted(u64::from(streams), "stream")
            ));
        }
        if let Some(t) = &self.tls {
            let trust = match (&t.cacert, t.insecure) {
                (_, true) => "certificate NOT verified (--insecure)".to_string(),
                (Some(ca), false) => format!("certificate verified against {ca}"),
                (None, false) => "certificate verified against the system roots".to_string(),
            };
            let client = match &t.client_cert {
                Some(c) => format!(", client certificate {c}"),
                None => String::new(),
            };
            let resume = if t.resumption { "on" } else { "off" };
            parts.push(format!(
                "TLS to {}: {trust}{client}, session resumption {resume}",
                t.server_name
            ));
        }
        if let Some(path) = &self.unix_socket {
            parts.push(format!("over the Unix socket {path}"));
        }
        if !self.connect_to.is_empty() {
            parts.push(format!("connect-to {}", self.connect_to.join(", ")));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// `--insecure` was on: the reports raise it as a warning, not a footnote.
    pub fn insecure(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.insecure)
    }
}

impl crate::FindMaxResult {
    /// The transport line of the search's runs (they share one configuration), for its reports,
    /// with "pipelined ×N" when they pipelined (`--pipeline N`).
    pub fn transport_note(&self) -> Option<String> {
        let config = &self.steps.first()?.run.config;
        let parts: Vec<String> = [config.transport_note(), config.pipelined()]
            .into_iter()
            .flatten()
            .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// `--insecure` was on for the search's runs.
    pub fn insecure(&self) -> bool {
        self.steps.first().is_some_and(|s| s.run.config.insecure())
    }
}
