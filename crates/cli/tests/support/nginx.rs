//! A real nginx for tests: one worker, no daemon, on a free loopback port, with its own prefix
//! directory and an access log we can count. Stopped on drop.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) struct Nginx {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
}

impl Nginx {
    /// Starts nginx serving `hello world` at `/` and the given extra `location` blocks.
    pub(crate) fn start(extra_locations: &str) -> Nginx {
        Self::start_with("", extra_locations)
    }

    /// Starts nginx serving HTTPS with these `ssl_*` directives (certificate and key paths at
    /// least) in its server block.
    pub(crate) fn start_tls(ssl_directives: &str) -> Nginx {
        Self::start_with(&format!("ssl;\n    {ssl_directives}"), "")
    }

    /// Starts nginx whose `listen` line ends with `listen_tail` (options such as `http2;` or
    /// `ssl http2;`, then any server directives), with `extra` in its server block.
    pub(crate) fn start_with(listen_tail: &str, extra: &str) -> Nginx {
        Self::start_logging("", listen_tail, extra)
    }

    /// As [`Nginx::start_with`], with the access log in `log_format` (nginx variables, e.g.
    /// `'$status $request_length'`; empty: the default format).
    pub(crate) fn start_logging(log_format: &str, listen_tail: &str, extra: &str) -> Nginx {
        for _ in 0..5 {
            if let Some(n) = Self::try_start(log_format, listen_tail, extra) {
                return n;
            }
        }
        panic!("nginx did not start on a free port after 5 tries");
    }

    fn try_start(log_format: &str, listen_tail: &str, extra: &str) -> Option<Nginx> {
        let dir = super::tempdir("nginx");
        let port = super::free_port();
        let listen = match listen_tail {
            "" => format!("{port};"),
            tail => format!("{port} {tail}"),
        };
        let access_log = match log_format {
            "" => format!("access_log {}/access.log;", dir.display()),
            f => format!(
                "log_format lb {f};\n  access_log {}/access.log lb;",
                dir.display()
            ),
        };
        let conf = format!(
            r#"worker_processes 1;
daemon off;
master_process off;
user root;
error_log {dir}/error.log warn;
pid {dir}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
  {access_log}
  client_body_temp_path {dir};
  proxy_temp_path {dir};
  fastcgi_temp_path {dir};
  uwsgi_temp_path {dir};
  scgi_temp_path {dir};
  keepalive_requests 1000000;
  server {{
    listen 127.0.0.1:{listen}
    location = / {{ return 200 "hello world"; }}
    {extra}
  }}
}}
"#,
            dir = dir.display()
        );
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let child = Command::new("nginx")
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        let mut n = Nginx { child, port, dir };
        n.wait_ready().then_some(n)
    }

    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub(crate) fn https_url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// Requests nginx logged, once the count has stopped moving.
    pub(crate) fn logged_requests(&self) -> u64 {
        let count = || {
            std::fs::read_to_string(self.dir.join("access.log"))
                .map(|t| t.lines().count() as u64)
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

    /// Lines of the access log, for checking what was sent.
    pub(crate) fn log_lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("access.log"))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
