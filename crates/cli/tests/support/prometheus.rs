//! A real Prometheus server for tests (Debian's `prometheus` package): on a free loopback port,
//! its own config and TSDB directory, a 1 s scrape interval, the remote-write receiver on.
//! Queried through its HTTP API. Killed on drop.

use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) struct Prometheus {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
}

impl Prometheus {
    /// Starts Prometheus scraping `targets` (`127.0.0.1:PORT`, their `/metrics`) every second;
    /// waits until it is ready (at most 90 s on a busy machine).
    pub(crate) fn start(targets: &[String]) -> Prometheus {
        let dir = super::tempdir("prometheus");
        let port = super::free_port();
        let targets: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: loadbench\n    scrape_interval: 1s\n    \
             scrape_timeout: 1s\n    static_configs:\n      - targets: [{}]\n",
            targets.join(", ")
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg("--web.enable-remote-write-receiver")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus starts");
        let p = Prometheus { child, port, dir };
        let until = Instant::now() + Duration::from_secs(90);
        while get(port, "/-/ready").is_none_or(|(status, _)| status != 200) {
            assert!(
                Instant::now() < until,
                "prometheus not ready in 90 s: {}",
                p.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        // Prometheus applies its targets a few seconds after the start (its scrape manager
        // syncs every 5 s): wait for the first scrape (of nothing yet, so "down").
        while !targets.is_empty()
            && get(port, "/api/v1/targets").is_none_or(|(_, body)| {
                body.contains("\"health\":\"unknown\"") || !body.contains("\"health\"")
            })
        {
            assert!(
                Instant::now() < until,
                "prometheus did not scrape in 90 s: {}",
                p.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        p
    }

    /// The remote-write URL.
    pub(crate) fn write_url(&self) -> String {
        format!("http://127.0.0.1:{}/api/v1/write", self.port)
    }

    /// Prometheus's own log (its warnings and errors) and its scrape targets' state.
    pub(crate) fn log(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default();
        let notable: Vec<&str> = log.lines().filter(|l| !l.contains("level=info")).collect();
        let targets = get(self.port, "/api/v1/targets").map(|(_, b)| b);
        let up = self.query("max_over_time(scrape_samples_scraped[10m])");
        let ups = self.query("sum_over_time(up[10m])");
        format!(
            "{}\ntargets: {targets:?}\nsamples scraped: {up:?}; scrapes up: {ups:?}",
            notable.join("\n")
        )
    }

    /// An instant query's result vector: each element's labels and value (`None` when the
    /// query failed).
    pub(crate) fn query(&self, q: &str) -> Option<Vec<(Value, f64)>> {
        let (status, body) = get(self.port, &format!("/api/v1/query?query={}", encode(q)))?;
        let v: Value = serde_json::from_str(&body).ok()?;
        if status != 200 || v["status"] != "success" {
            return None;
        }
        let result = v["data"]["result"].as_array()?;
        result
            .iter()
            .map(|r| {
                let value = r["value"][1].as_str()?.parse::<f64>().ok()?;
                Some((r["metric"].clone(), value))
            })
            .collect()
    }

    /// A query's single value (`None` when empty or failed).
    pub(crate) fn value(&self, q: &str) -> Option<f64> {
        self.query(q)?.first().map(|(_, v)| *v)
    }

    /// Polls `q` until its single value is `want` (at most `secs`); returns the last value seen.
    pub(crate) fn settle(&self, q: &str, want: f64, secs: u64) -> Option<f64> {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            let v = self.value(q);
            if v == Some(want) || Instant::now() >= until {
                return v;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Kills the server at once (SIGKILL), as a crash would.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Percent-encodes a query string value.
fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `GET path` on 127.0.0.1:`port`: the status and the body (`None` when it cannot connect).
pub(crate) fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw);
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Some((status, body))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}
