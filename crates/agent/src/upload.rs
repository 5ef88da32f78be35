//! `--results-url`: each shard's result sent home with HTTP PUT (nginx's `dav_methods PUT`,
//! WebDAV, an object store's presigned URL), with bounded retries; the local copy stays.
//!
//! The URL is a folder when it ends in `/` (the file name `RUNID-shard-I-of-N.json` is
//! appended), else a template whose `{run_id}`, `{shard}`, `{total}` and `{file}` are filled in
//! (a URL with none of them is used as it is, e.g. one presigned URL). Plain `http://` only.
//! hyper's HTTP/1 client speaks the HTTP; this module only picks the URL and retries.

use std::time::Duration;

/// Attempts per upload; the waits between them double from [`FIRST_BACKOFF`].
pub const ATTEMPTS: u32 = 4;
/// The wait after the first failed attempt.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// How long one attempt may take (connect, send, answer).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// A checked `--results-url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultsUrl {
    text: String,
}

/// Where one shard's result goes.
#[derive(Debug, Clone, Copy)]
pub struct Naming<'a> {
    /// The run id.
    pub run_id: &'a str,
    /// The shard index.
    pub shard: u32,
    /// The number of shards.
    pub total: u32,
    /// The local file name (`RUNID-shard-I-of-N.json`).
    pub file: &'a str,
}

impl ResultsUrl {
    /// Checks the form: `http://host[:port]/path…` (one line naming the fix).
    pub fn parse(text: &str) -> Result<ResultsUrl, String> {
        let rest = text.strip_prefix("http://").ok_or_else(|| {
            format!("--results-url {text}: give a plain http:// URL, e.g. http://10.0.0.2:8080/results/ (https is not spoken yet)")
        })?;
        let authority = rest.split('/').next().unwrap_or("");
        if authority.is_empty() || rest.contains(char::is_whitespace) {
            return Err(format!("--results-url {text}: the URL has no host"));
        }
        Ok(ResultsUrl {
            text: text.to_string(),
        })
    }

    /// The URL one shard's result is PUT to.
    pub fn for_shard(&self, n: Naming<'_>) -> String {
        if self.text.ends_with('/') {
            return format!("{}{}", self.text, n.file);
        }
        self.text
            .replace("{run_id}", n.run_id)
            .replace("{shard}", &n.shard.to_string())
            .replace("{total}", &n.total.to_string())
            .replace("{file}", n.file)
    }

    /// `host:port` of the URL (port 80 by default).
    pub fn authority(&self) -> String {
        authority_of(&self.text)
    }

    /// Checks that the host answers TCP connects (before any load): one line naming it.
    pub fn check_reachable(&self) -> Result<(), String> {
        use std::net::ToSocketAddrs;
        let authority = self.authority();
        let addr = authority
            .to_socket_addrs()
            .map_err(|e| format!("--results-url {}: {authority}: {e}", self.text))?
            .next()
            .ok_or_else(|| format!("--results-url {}: {authority} has no address", self.text))?;
        std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(3))
            .map(drop)
            .map_err(|e| {
                format!(
                    "--results-url {}: {authority} cannot be reached ({e}): start the server or fix the URL",
                    self.text
                )
            })
    }
}

fn authority_of(url: &str) -> String {
    let rest = url.strip_prefix("http://").unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or("");
    let has_port = if authority.starts_with('[') {
        authority.contains("]:")
    } else {
        authority.contains(':')
    };
    if has_port {
        authority.to_string()
    } else {
        format!("{authority}:80")
    }
}

/// PUTs `body` to `url`, retrying up to [`ATTEMPTS`] times with doubling waits; a 2xx answer is
/// success. The error names the URL, the attempts and the last failure.
pub fn put_with_retries(url: &str, body: &str) -> Result<(), String> {
    let mut wait = FIRST_BACKOFF;
    let mut last = String::new();
    for attempt in 1..=ATTEMPTS {
        match put(url, body.to_string()) {
            Ok(()) => return Ok(()),
            Err(e) => last = e,
        }
        if attempt < ATTEMPTS {
            std::thread::sleep(wait);
            wait *= 2;
        }
    }
    Err(format!(
        "upload to {url} failed after {ATTEMPTS} attempts: {last}"
    ))
}

/// One PUT through hyper's HTTP/1 client on a fresh connection.
fn put(url: &str, body: String) -> Result<(), String> {
    let authority = authority_of(url);
    let uri: hyper::Uri = url.parse().map_err(|e| format!("bad URL ({e})"))?;
    let path = uri
        .path_and_query()
        .map_or("/", hyper::http::uri::PathAndQuery::as_str)
        .to_string();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let exchange = async {
            let stream = tokio::net::TcpStream::connect(&authority)
                .await
                .map_err(|e| format!("{authority}: {e}"))?;
            let io = hyper_util::rt::TokioIo::new(stream);
            let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
                .await
                .map_err(|e| e.to_string())?;
            tokio::spawn(conn);
            let request = hyper::Request::put(path)
                .header(hyper::header::HOST, authority.as_str())
                .header(hyper::header::CONTENT_TYPE, "application/json")
                .header(hyper::header::CONTENT_LENGTH, body.len())
                .body(body)
                .map_err(|e| e.to_string())?;
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| e.to_string())?;
            let status = response.status();
            if status.is_success() {
                Ok(())
            } else {
                Err(format!("HTTP status {status}"))
            }
        };
        tokio::time::timeout(ATTEMPT_TIMEOUT, exchange)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {} s", ATTEMPT_TIMEOUT.as_secs())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_gets_the_file_name_and_a_template_its_fields() {
        let n = Naming {
            run_id: "job7-1795543200",
            shard: 1,
            total: 3,
            file: "job7-1795543200-shard-1-of-3.json",
        };
        let folder = ResultsUrl::parse("http://127.0.0.1:8080/dav/").unwrap();
        assert_eq!(
            folder.for_shard(n),
            "http://127.0.0.1:8080/dav/job7-1795543200-shard-1-of-3.json"
        );
        let t = ResultsUrl::parse("http://h/r/{run_id}/{shard}-{total}.json?sig=x").unwrap();
        assert_eq!(t.for_shard(n), "http://h/r/job7-1795543200/1-3.json?sig=x");
        assert_eq!(t.authority(), "h:80");
        assert!(ResultsUrl::parse("https://h/")
            .unwrap_err()
            .contains("http://"));
        assert!(ResultsUrl::parse("http:///x")
            .unwrap_err()
            .contains("no host"));
    }
}
