//! `loadbench serve`: the reference backend in the foreground until Ctrl-C or SIGTERM.

use crate::args::ServeArgs;
use crate::UserError;
use anyhow::Result;
use loadbench_upstream::{run_until_signal, ServerConfig, TlsIdentity, UpstreamError};
use std::process::ExitCode;

pub(crate) fn serve(a: ServeArgs) -> Result<ExitCode> {
    let user = |e: UpstreamError| UserError(e.to_string());
    // A failure of the running server is not the user's mistake: exit code 1, not 2.
    let failure = |e: UpstreamError| match e {
        UpstreamError::Runtime(_) => anyhow::anyhow!(e),
        other => anyhow::anyhow!(user(other)),
    };
    let listen = a.listen.parse().map_err(|_| {
        UserError(format!(
            "--listen '{}' is not an address: use IP:PORT, such as 127.0.0.1:8080 or [::1]:8080",
            a.listen
        ))
    })?;
    // The settings' values were parsed by clap; their ranges are checked as the server starts.
    let cfg = ServerConfig {
        listen,
        tls: tls_identity(&a).map_err(user)?,
        h3: !a.no_h3,
        unix: a.unix.clone(),
        ..ServerConfig::default()
    }
    .with_settings(&a.settings);
    run_until_signal(cfg).map_err(failure)?;
    Ok(ExitCode::SUCCESS)
}

/// `--tls`: the given certificate or a new self-signed one, written to `--tls-cert-out`
/// before the server listens.
fn tls_identity(a: &ServeArgs) -> Result<Option<TlsIdentity>, UpstreamError> {
    if !a.tls {
        return Ok(None);
    }
    let id = match (&a.tls_cert, &a.tls_key) {
        (Some(cert), Some(key)) => TlsIdentity::from_files(cert, key)?,
        _ => TlsIdentity::self_signed()?,
    };
    if let Some(out) = &a.tls_cert_out {
        std::fs::write(out, &id.cert_pem).map_err(|e| {
            UpstreamError::Tls(format!(
                "cannot write --tls-cert-out {}: {e}",
                out.display()
            ))
        })?;
    }
    Ok(Some(id))
}
