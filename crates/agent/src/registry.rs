//! Staying in the admin's executor list: register every 30 s (the admin drops an executor 90 s
//! after its last beat) and remove the registration on shutdown, so the admin stops sending
//! triggers at once instead of failing them for up to 90 s.

use crate::client;
use crate::jobs::Agent;
use crate::protocol;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Between registrations.
const BEAT: Duration = Duration::from_secs(30);

/// Registers until `shutdown`, then unregisters. Says on stderr when registering starts or
/// stops working (not every 30 s).
pub(crate) fn keep_registered(agent: &Agent, address: &str, shutdown: &AtomicBool) {
    let body = protocol::registry(&agent.config.app_name, address);
    let mut last_ok: Option<bool> = None;
    while !shutdown.load(Ordering::Relaxed) {
        let outcome = client::post(&agent.admin, "/api/registry", agent.token(), &body);
        match (&outcome, last_ok) {
            (Ok(_), Some(true)) | (Err(_), Some(false)) => {}
            (Ok(_), _) => eprintln!("loadbench agent: registered at {}", agent.config.admin),
            (Err(e), _) => {
                eprintln!("loadbench agent: registering failed, retrying every 30s: {e}")
            }
        }
        last_ok = Some(outcome.is_ok());
        let since = Instant::now();
        while since.elapsed() < BEAT && !shutdown.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    match client::post(&agent.admin, "/api/registryRemove", agent.token(), &body) {
        Ok(_) => eprintln!("loadbench agent: registration removed"),
        Err(e) => eprintln!("loadbench agent: removing the registration failed: {e}"),
    }
}
