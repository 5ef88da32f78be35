//! vegeta's targets as a request mix (`--targets FILE`), weight 1 each, in order. The format
//! is told by the first line that is not blank and not a `#` comment: `{` starts the JSON
//! format (one object per line: `method`, `url`, `header` as name → list of values, `body`
//! base64), anything else the http format:
//!
//! ```text
//! GET http://127.0.0.1:8080/a
//! X-Account-ID: 8675309
//!
//! POST http://127.0.0.1:8080/things
//! Content-Type: application/json
//! @things.json
//! ```
//!
//! A `METHOD URL` line starts a target; `Name: value` lines after it are its headers and an
//! `@path` line its body file (read now; a relative path is taken from the current folder,
//! as vegeta does). Blank lines between targets and `#` comments are skipped.

use super::{endpoint, header};
use crate::{invalid, EndpointSpec, PlanError};
use base64::Engine as _;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Reads a vegeta targets file, either format. A mistake names `FILE:LINE`.
pub fn read_vegeta_targets(path: &Path) -> Result<Vec<EndpointSpec>, PlanError> {
    let name = path.display();
    let text = crate::InputFile::TARGETS.read_to_string(path)?;
    let lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.starts_with('#'));
    let json = lines
        .clone()
        .find(|(_, l)| !l.is_empty())
        .is_some_and(|(_, l)| l.starts_with('{'));
    let targets = if json {
        lines
            .filter(|(_, l)| !l.is_empty())
            .map(|(n, l)| json_target(l).map_err(|e| (n, e)))
            .collect::<Result<Vec<_>, _>>()
    } else {
        http_targets(lines)
    }
    .map_err(|(n, e)| invalid(format!("--targets {name}:{n}: {e}")))?;
    if targets.is_empty() {
        return Err(invalid(format!(
            "--targets {name} holds no target: add lines such as 'GET http://127.0.0.1:8080/'"
        )));
    }
    Ok(targets)
}

/// One target being read in the http format.
struct Open {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Open {
    fn done(self) -> EndpointSpec {
        endpoint(&self.method, &self.url, self.headers, self.body)
    }
}

fn http_targets<'a>(
    lines: impl Iterator<Item = (usize, &'a str)>,
) -> Result<Vec<EndpointSpec>, (usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<Open> = None;
    for (n, line) in lines {
        if line.is_empty() {
            out.extend(open.take().map(Open::done));
            continue;
        }
        match open.as_mut() {
            Some(t) if line.starts_with('@') => {
                if !t.body.is_empty() {
                    return Err((n, "a second body line: give one @file per target".into()));
                }
                let file = &line[1..];
                t.body = crate::InputFile::BODY.read(Path::new(file)).map_err(|e| {
                    (
                        n,
                        format!("{e} (relative to the current folder, as for vegeta)"),
                    )
                })?;
            }
            Some(t) if !starts_target(line) => {
                let (name, value) = line.split_once(':').ok_or((
                    n,
                    format!("'{line}' is neither 'METHOD URL', a 'Name: value' header nor an @body-file line"),
                ))?;
                t.headers.push(header(name, value).map_err(|e| (n, e))?);
            }
            _ => {
                out.extend(open.take().map(Open::done));
                let (method, url) = target_line(line).map_err(|e| (n, e))?;
                open = Some(Open {
                    method,
                    url,
                    headers: Vec::new(),
                    body: Vec::new(),
                });
            }
        }
    }
    out.extend(open.map(Open::done));
    Ok(out)
}

/// `METHOD URL`: a word of letters, then a URL with a scheme.
fn starts_target(line: &str) -> bool {
    target_line(line).is_ok()
}

fn target_line(line: &str) -> Result<(String, String), String> {
    let mut words = line.split_whitespace();
    let (Some(method), Some(url), None) = (words.next(), words.next(), words.next()) else {
        return Err(format!(
            "'{line}' is not a target: write METHOD URL, e.g. GET http://127.0.0.1:8080/"
        ));
    };
    if !method.bytes().all(|b| b.is_ascii_alphabetic()) || !url.contains("://") {
        return Err(format!(
            "'{line}' is not a target: write METHOD URL, e.g. GET http://127.0.0.1:8080/"
        ));
    }
    Ok((method.to_string(), url.to_string()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonTarget {
    method: String,
    url: String,
    #[serde(default)]
    header: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    body: Option<String>,
}

/// One line of the JSON format.
fn json_target(line: &str) -> Result<EndpointSpec, String> {
    let t: JsonTarget = serde_json::from_str(line).map_err(|e| {
        format!(
            "not a vegeta JSON target ({e}): write {{\"method\": \"GET\", \"url\": \"http://…\"}}"
        )
    })?;
    let mut headers = Vec::new();
    for (name, values) in &t.header {
        for v in values {
            headers.push(header(name, v)?);
        }
    }
    let body = match &t.body {
        Some(b) => base64::engine::general_purpose::STANDARD
            .decode(b)
            .map_err(|e| format!("body is not base64 ({e}): encode it, e.g. with base64 -w0"))?,
        None => Vec::new(),
    };
    Ok(endpoint(&t.method, &t.url, headers, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Body;

    fn targets(text: &str) -> Result<Vec<EndpointSpec>, String> {
        let dir = std::env::temp_dir().join(format!("lb-vegeta-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{:x}.txt", text.len()));
        std::fs::write(&path, text).unwrap();
        let got = read_vegeta_targets(&path).map_err(|e| e.to_string());
        std::fs::remove_file(&path).unwrap();
        got
    }

    #[test]
    fn the_http_format_with_headers_bodies_and_comments() {
        let dir = std::env::temp_dir().join(format!("lb-vegeta-body-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let body = dir.join("thing.json");
        std::fs::write(&body, "{\"x\": 1}\n").unwrap();
        let text = format!(
            "# targets\nGET http://h/a\nX-Account-ID: 8675309\n\n\nDELETE http://h/r\nAuthorization: Token A:B\nX-B: 2\nPOST http://h/things\n@{}\n",
            body.display()
        );
        let got = targets(&text).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].request.method, "GET");
        assert_eq!(
            got[0].request.headers,
            [("X-Account-ID".into(), "8675309".into())]
        );
        assert_eq!(got[1].request.method, "DELETE");
        assert_eq!(
            got[1].request.headers[0],
            ("Authorization".into(), "Token A:B".into())
        );
        assert_eq!(got[1].request.headers.len(), 2);
        assert_eq!((got[2].url.as_str(), got[2].weight), ("http://h/things", 1));
        assert_eq!(got[2].request.body, Body::Bytes(b"{\"x\": 1}\n".to_vec()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_json_format() {
        let got = targets(
            "{\"method\": \"POST\", \"url\": \"http://h/p\", \"header\": {\"X-A\": [\"1\", \"2\"]}, \"body\": \"aGk=\"}\n\n{\"method\":\"GET\",\"url\":\"http://h/\"}\n",
        )
        .unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0].request.headers,
            [("X-A".into(), "1".into()), ("X-A".into(), "2".into())]
        );
        assert_eq!(got[0].request.body, Body::Bytes(b"hi".to_vec()));
        assert_eq!(got[1].request.body, Body::None);
    }

    #[test]
    fn mistakes_name_the_file_and_line() {
        let e = |t: &str| targets(t).unwrap_err();
        assert!(e("GET http://h/\nnot a header\n").contains(".txt:2: 'not a header'"));
        assert!(e("http://h/\n").contains(":1:"));
        assert!(e("GET http://h/\n@/nonexistent/b\n").contains("/nonexistent/b"));
        assert!(e("# only\n\n").contains("holds no target"));
        assert!(e("{\"method\": \"GET\"}\n").contains(":1: not a vegeta JSON target"));
        assert!(e("{\"method\":\"GET\",\"url\":\"http://h/\",\"body\":\"%%\"}").contains("base64"));
        assert!(!e("{\"method\": \"GET\"}\n").contains('\n'));
    }
}
