//! A request mix: several requests to one target, each with a weight, so one load can look like
//! real traffic (docs/request-mix.md). The same one-line grammar serves `-u/--url` and the lines
//! of a `--requests` file: `[METHOD] URL [weight=N] [header="Name: value"]... [body=FILE]`.
//! Each request is rendered once, when the plan resolves ([`resolve_mix`]); every URL must share
//! the first one's scheme, host and port (one target, one connection pool).

use crate::request::RequestTemplate;
use crate::target::{Route, Target};
use crate::{invalid, read_body, Body, PlanError, RequestSpec};
use std::path::{Path, PathBuf};

/// The most requests one mix may hold (each keeps its own latency histogram per worker).
pub const MAX_ENDPOINTS: usize = 64;

/// The largest weight of one request.
pub const MAX_WEIGHT: u32 = 1_000_000;

/// One request of a mix, as given: URL, method, headers, body and weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointSpec {
    /// The URL (`http://host:port/path?query`).
    pub url: String,
    /// Method, headers and body.
    pub request: RequestSpec,
    /// Its share of the requests: `weight / sum of weights`.
    pub weight: u32,
}

/// One request of a mix, resolved: its rendered bytes and what the result labels it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The URL, normalized.
    pub url: String,
    /// Its share of the requests: `weight / sum of weights`.
    pub weight: u32,
    /// The request bytes, rendered once.
    pub request: RequestTemplate,
}

/// Reads one request as written on `-u` or on a line of a requests file. `defaults` (from `-m`,
/// `-H`, `--body`) fill in what the line leaves out: its method and body replace them, its
/// headers come after them. A relative `body=` path is taken from `dir`.
pub fn parse_request_line(
    line: &str,
    defaults: &RequestSpec,
    dir: &Path,
) -> Result<EndpointSpec, String> {
    let words = split_words(line)?;
    let mut words = words.into_iter();
    let first = words
        .next()
        .ok_or("no request: write [METHOD] URL [weight=N]")?;
    let mut out = EndpointSpec {
        url: first.clone(),
        request: defaults.clone(),
        weight: 1,
    };
    if !first.contains("://") {
        out.request.method = first;
        out.url = words
            .next()
            .ok_or("a method without a URL: write METHOD URL, e.g. GET http://127.0.0.1:8080/")?;
    }
    for word in words {
        field(&mut out, &word, dir)?;
    }
    Ok(out)
}

/// One `key=value` after the URL.
fn field(out: &mut EndpointSpec, word: &str, dir: &Path) -> Result<(), String> {
    let Some((key, value)) = word.split_once('=') else {
        return Err(format!(
            "'{word}' is not a field: write weight=N, header=\"Name: value\" or body=FILE"
        ));
    };
    match key {
        "weight" => out.weight = weight(value)?,
        "header" => out
            .request
            .headers
            .push(loadbench_units::header(value).map_err(|e| e.to_string())?),
        "body" => out.request.body = Body::File(dir.join(value)),
        _ => {
            return Err(format!(
                "unknown field '{key}': use weight=N, header=\"Name: value\" or body=FILE"
            ))
        }
    }
    Ok(())
}

fn weight(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(w) if (1..=MAX_WEIGHT).contains(&w) => Ok(w),
        _ => Err(format!(
            "weight '{text}' is not a whole number from 1 to {MAX_WEIGHT}: give e.g. weight=3"
        )),
    }
}

/// Splits on blanks; `"…"` quotes blanks (inside it, `\"` and `\\` stand for `"` and `\`), also
/// after `key=`, as in `header="X-Id: 1 2"`.
fn split_words(line: &str) -> Result<Vec<String>, String> {
    let (mut words, mut word, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => (quoted, any) = (!quoted, true),
            '\\' if quoted => word.push(chars.next().ok_or("a line ends with '\\'")?),
            c if c.is_whitespace() && !quoted => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => word.push(c),
        }
    }
    if quoted {
        return Err("a quote '\"' is not closed: close it on the same line".into());
    }
    if any || !word.is_empty() {
        words.push(word);
    }
    Ok(words)
}

/// Reads a requests file: one request per line ([`parse_request_line`]), blank lines and lines
/// starting with `#` skipped. A mistake names `FILE:LINE`.
pub fn read_requests_file(
    path: &Path,
    defaults: &RequestSpec,
) -> Result<Vec<EndpointSpec>, PlanError> {
    let text = crate::InputFile::REQUESTS.read_to_string(path)?;
    let dir = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let e = parse_request_line(line, defaults, &dir)
            .map_err(|e| invalid(format!("{}:{}: {e}", path.display(), i + 1)))?;
        out.push(e);
    }
    if out.is_empty() {
        return Err(invalid(format!(
            "{} holds no request: add lines such as 'GET http://127.0.0.1:8080/ weight=3'",
            path.display()
        )));
    }
    Ok(out)
}

/// Renders every request of a mix once, checking that all share the first one's scheme, host
/// and port (`first`, already parsed). Empty for fewer than two requests: one request is no mix.
pub(crate) fn resolve_mix(
    mix: &[EndpointSpec],
    first: &Target,
    keepalive: bool,
    route: Route<'_>,
) -> Result<Vec<Endpoint>, PlanError> {
    if mix.len() < 2 {
        return Ok(Vec::new());
    }
    if mix.len() > MAX_ENDPOINTS {
        return Err(invalid(format!(
            "{} requests in one mix: at most {MAX_ENDPOINTS}; merge similar ones or split the load",
            mix.len()
        )));
    }
    mix.iter()
        .map(|e| endpoint(e, first, keepalive, route))
        .collect()
}

/// One request of the mix, its connections routed like the first's (`--connect-to`, a Unix
/// socket: its host is then never resolved).
fn endpoint(
    e: &EndpointSpec,
    first: &Target,
    keepalive: bool,
    route: Route<'_>,
) -> Result<Endpoint, PlanError> {
    let target = Target::parse_routed(&e.url, route)?;
    if origin(&target.url) != origin(&first.url) {
        return Err(invalid(format!(
            "'{}' is not on the first URL's scheme, host and port ('{}'): one load has one target; run other targets as separate loads",
            e.url, first.url
        )));
    }
    let body = match &e.request.body {
        Body::File(path) => Some(crate::InputFile::BODY.read(path).map_err(|err| {
            invalid(format!(
                "{} (the body of '{}', relative to the requests file)",
                err, e.url
            ))
        })?),
        other => read_body(other)?,
    };
    let request = RequestTemplate::render(
        &target,
        &e.request.method,
        &e.request.headers,
        body,
        keepalive,
    )?;
    Ok(Endpoint {
        url: target.url,
        weight: e.weight,
        request,
    })
}

fn origin(url: &str) -> Option<url::Origin> {
    url::Url::parse(url).ok().map(|u| u.origin())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Result<EndpointSpec, String> {
        parse_request_line(text, &RequestSpec::default(), Path::new("/d"))
    }

    #[test]
    fn a_url_alone_takes_the_defaults_and_weight_one() {
        let e = line("http://127.0.0.1:8080/a").unwrap();
        assert_eq!(e.url, "http://127.0.0.1:8080/a");
        assert_eq!((e.request.method.as_str(), e.weight), ("GET", 1));
    }

    #[test]
    fn method_weight_headers_and_body_are_read() {
        let e = line(r#"POST http://h/x weight=3 header="X-A: 1 2" header=X-B:\q body=b.json"#)
            .unwrap();
        assert_eq!((e.request.method.as_str(), e.weight), ("POST", 3));
        assert_eq!(
            e.request.headers,
            vec![
                ("X-A".to_string(), "1 2".to_string()),
                ("X-B".to_string(), "\\q".to_string())
            ]
        );
        assert_eq!(e.request.body, Body::File("/d/b.json".into()));
        let q = line(r#"GET http://h/ header="X-Q: say \"hi\"""#).unwrap();
        assert_eq!(q.request.headers[0].1, "say \"hi\"");
    }

    #[test]
    fn mistakes_name_the_fix() {
        let e = |t| line(t).unwrap_err();
        assert!(e("GET").contains("without a URL"));
        assert!(e("http://h/ weight=0").contains("from 1 to"));
        assert!(e("http://h/ weight=x").contains("weight=3"));
        assert!(e("http://h/ colour=red").contains("unknown field 'colour'"));
        assert!(e("http://h/ extra").contains("not a field"));
        assert!(e(r#"http://h/ header="X: 1"#).contains("not closed"));
        assert!(e("http://h/ header=nocolon").contains("Name: value"));
    }

    #[test]
    fn a_file_skips_comments_and_names_the_bad_line() {
        let dir = std::env::temp_dir().join(format!("lb-mix-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("requests.txt");
        std::fs::write(&path, "# mix\n\nhttp://h/a weight=2\n  GET http://h/b\n").unwrap();
        let got = read_requests_file(&path, &RequestSpec::default()).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].weight, 2);
        std::fs::write(&path, "http://h/a\n\nGET http://h/b weight=-1\n").unwrap();
        let e = read_requests_file(&path, &RequestSpec::default()).unwrap_err();
        assert!(e.to_string().contains("requests.txt:3: weight"), "{e}");
        std::fs::write(&path, "# nothing\n").unwrap();
        let e = read_requests_file(&path, &RequestSpec::default()).unwrap_err();
        assert!(e.to_string().contains("holds no request"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_url_must_share_the_first_ones_origin() {
        let spec = |u: &str| EndpointSpec {
            url: u.into(),
            request: RequestSpec::default(),
            weight: 1,
        };
        let first = Target::parse("http://127.0.0.1:8080/a").unwrap();
        let ok = [
            spec("http://127.0.0.1:8080/a"),
            spec("http://127.0.0.1:8080/b?x=1"),
        ];
        let got = resolve_mix(&ok, &first, true, Route::default()).unwrap();
        assert!(got[1].request.bytes.starts_with(b"GET /b?x=1 HTTP/1.1\r\n"));
        let bad = [
            spec("http://127.0.0.1:8080/a"),
            spec("http://127.0.0.1:8081/b"),
        ];
        let e = resolve_mix(&bad, &first, true, Route::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("8081") && e.contains("separate loads"), "{e}");
        assert!(resolve_mix(&ok[..1], &first, true, Route::default())
            .unwrap()
            .is_empty());
        let mut no_body = ok.clone();
        no_body[1].request.body = Body::File("/nonexistent/b.json".into());
        let e = resolve_mix(&no_body, &first, true, Route::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/nonexistent/b.json") && e.contains("/b?x=1"),
            "{e}"
        );
    }
}
