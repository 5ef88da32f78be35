//! A real Caddy for tests: HTTPS on a free loopback port with its own local CA, and HTTP/3 on
//! the same port over UDP (Caddy serves h3 beside h1 and h2 by default), logging each request
//! as a JSON line we can count by protocol. Stopped on drop.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) struct Caddy {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
}

impl Caddy {
    /// Starts Caddy answering `site` (Caddyfile directives inside the site block, e.g.
    /// `respond "hi" 200`) for `localhost` on a free port.
    pub(crate) fn start(site: &str) -> Caddy {
        for _ in 0..5 {
            if let Some(c) = Self::try_start(site) {
                return c;
            }
        }
        panic!("caddy did not start on a free port after 5 tries");
    }

    fn try_start(site: &str) -> Option<Caddy> {
        let dir = super::tempdir("caddy");
        let port = super::free_port();
        let conf = format!(
            r#"{{
	admin off
	auto_https disable_redirects
	skip_install_trust
	http_port {http}
	https_port {port}
	local_certs
	storage file_system {dir}/data
}}
localhost:{port} {{
	bind 127.0.0.1
	tls internal
	log {{
		output file {dir}/access.log
		format json
	}}
	{site}
}}
"#,
            http = super::free_port(),
            dir = dir.display()
        );
        std::fs::write(dir.join("Caddyfile"), conf).unwrap();
        let child = Command::new("caddy")
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(dir.join("Caddyfile"))
            .env("HOME", &dir)
            .env("XDG_DATA_HOME", dir.join("xdg"))
            .env("XDG_CONFIG_HOME", dir.join("xdg"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("caddy.log")).ok()?)
            .spawn()
            .expect("caddy starts");
        let mut c = Caddy { child, port, dir };
        c.wait_ready().then_some(c)
    }

    /// Ready once the TCP port accepts and the site's certificate is issued (the UDP socket
    /// opens beside the TCP one).
    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            let up = std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok();
            if up && self.root_ca().exists() && self.certificate_issued() {
                std::thread::sleep(Duration::from_millis(200));
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    fn certificate_issued(&self) -> bool {
        let cert = self
            .dir
            .join("data/certificates/local/localhost/localhost.crt");
        cert.exists()
    }

    /// The local CA's root certificate, to pass as `--cacert`.
    pub(crate) fn root_ca(&self) -> PathBuf {
        self.dir.join("data/pki/authorities/local/root.crt")
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.port)
    }

    /// Requests Caddy logged over `proto` (`HTTP/3.0`, `HTTP/2.0`, `HTTP/1.1`), once the
    /// count has stopped moving.
    pub(crate) fn logged(&self, proto: &str) -> u64 {
        let needle = format!("\"proto\":\"{proto}\"");
        let count = || {
            std::fs::read_to_string(self.dir.join("access.log"))
                .map(|t| t.lines().filter(|l| l.contains(&needle)).count() as u64)
                .unwrap_or(0)
        };
        let mut last = count();
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(100));
            let now = count();
            if now == last {
                return now;
            }
            last = now;
        }
        last
    }

    /// Logged requests over `proto` with `status`.
    pub(crate) fn logged_status(&self, proto: &str, status: u16) -> u64 {
        let (p, s) = (
            format!("\"proto\":\"{proto}\""),
            format!("\"status\":{status}"),
        );
        std::fs::read_to_string(self.dir.join("access.log"))
            .map(|t| {
                t.lines()
                    .filter(|l| l.contains(&p) && l.contains(&s))
                    .count() as u64
            })
            .unwrap_or(0)
    }
}

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
