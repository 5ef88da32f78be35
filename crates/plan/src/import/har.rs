//! A HAR 1.2 file (a browser's or a proxy's recording, "Save all as HAR") as a request mix:
//! every `log.entries[].request`, in order, weight 1 each: its method, URL, headers (less
//! HTTP/2 pseudo-headers, hop-by-hop headers and `Content-Length`, which loadbench writes
//! itself) and `postData.text` (or its `params`, form-encoded, when it has no text).

use super::{endpoint, header};
use crate::{invalid, EndpointSpec, PlanError};
use serde::Deserialize;
use std::path::Path;

#[derive(Deserialize)]
struct Har {
    log: Log,
}

#[derive(Deserialize)]
struct Log {
    #[serde(default)]
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    request: Request,
}

#[derive(Deserialize)]
struct Request {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<Pair>,
    #[serde(default, rename = "postData")]
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
struct Pair {
    name: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
struct PostData {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    params: Vec<Pair>,
}

/// Headers a HAR records that are not the request's to send again: about this one connection
/// (RFC 9110 7.6.1) or written by loadbench from the body.
const DROPPED: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
];

/// Reads a HAR file's requests, in order. Bad JSON, a file that is not HAR, or one without
/// entries is one line naming the file.
pub fn read_har(path: &Path) -> Result<Vec<EndpointSpec>, PlanError> {
    let name = path.display();
    let text = crate::InputFile::HAR.read_to_string(path)?;
    let har: Har = serde_json::from_str(&text).map_err(|e| {
        invalid(format!(
            "--har {name} is not a HAR file ({e}): export it again with \"Save all as HAR\""
        ))
    })?;
    if har.log.entries.is_empty() {
        return Err(invalid(format!(
            "--har {name} holds no request (log.entries is empty): record some traffic and export it again"
        )));
    }
    har.log
        .entries
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            request(e.request).map_err(|e| invalid(format!("--har {name}: entry {i}: {e}")))
        })
        .collect()
}

fn request(r: Request) -> Result<EndpointSpec, String> {
    let headers = r
        .headers
        .iter()
        .filter(|h| !h.name.starts_with(':'))
        .filter(|h| !DROPPED.iter().any(|d| h.name.eq_ignore_ascii_case(d)))
        .map(|h| header(&h.name, &h.value))
        .collect::<Result<Vec<_>, _>>()?;
    let body = match r.post_data {
        Some(PostData { text: Some(t), .. }) => t,
        Some(PostData { text: None, params }) => {
            url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(params.iter().map(|p| (&p.name, &p.value)))
                .finish()
        }
        None => String::new(),
    };
    Ok(endpoint(&r.method, &r.url, headers, body.into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Body;

    fn har(text: &str) -> Result<Vec<EndpointSpec>, String> {
        let dir = std::env::temp_dir().join(format!("lb-har-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{:x}.har", text.len()));
        std::fs::write(&path, text).unwrap();
        let got = read_har(&path).map_err(|e| e.to_string());
        std::fs::remove_file(&path).unwrap();
        got
    }

    #[test]
    fn entries_become_the_mix_in_order_without_pseudo_and_hop_by_hop_headers() {
        let got = har(r#"{"log": {"version": "1.2", "entries": [
            {"request": {"method": "GET", "url": "http://h/a", "headers": [
                {"name": ":authority", "value": "h"}, {"name": "Accept", "value": "text/html"},
                {"name": "Connection", "value": "keep-alive"}, {"name": "X-A", "value": "1"}]},
             "response": {}},
            {"request": {"method": "POST", "url": "http://h/b", "headers": [
                {"name": "content-type", "value": "application/json"},
                {"name": "Content-Length", "value": "7"}],
                "postData": {"mimeType": "application/json", "text": "{\"a\":1}"}}},
            {"request": {"method": "POST", "url": "http://h/c",
                "postData": {"mimeType": "application/x-www-form-urlencoded",
                    "params": [{"name": "q", "value": "a b"}, {"name": "n", "value": "1"}]}}}
        ]}}"#)
        .unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(
            got[0].request.headers,
            [
                ("Accept".into(), "text/html".into()),
                ("X-A".into(), "1".into())
            ]
        );
        assert_eq!((got[0].request.method.as_str(), got[0].weight), ("GET", 1));
        assert_eq!(got[0].request.body, Body::None);
        assert_eq!(got[1].request.method, "POST");
        assert_eq!(got[1].request.headers.len(), 1);
        assert_eq!(got[1].request.body, Body::Bytes(br#"{"a":1}"#.to_vec()));
        assert_eq!(got[2].url, "http://h/c");
        assert_eq!(got[2].request.body, Body::Bytes(b"q=a+b&n=1".to_vec()));
    }

    #[test]
    fn bad_files_are_one_line_naming_the_fix() {
        let e = har("{not json").unwrap_err();
        assert!(e.contains("is not a HAR file") && !e.contains('\n'), "{e}");
        let e = har(r#"{"log": {"entries": []}}"#).unwrap_err();
        assert!(e.contains("holds no request"), "{e}");
        let e = har(r#"{"entries": []}"#).unwrap_err();
        assert!(e.contains("is not a HAR file"), "{e}");
        let bad = r#"{"log": {"entries": [{"request": {"method": "GET", "url": "http://h/",
            "headers": [{"name": "Bad Name", "value": "x"}]}}]}}"#;
        assert!(har(bad).unwrap_err().contains("entry 0"));
        let e = read_har(Path::new("/nonexistent/x.har"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot read --har"), "{e}");
    }
}
