//! A curl command line as one request (`--curl 'curl …'`): split with shell quoting (`shlex`,
//! so a browser's "Copy as cURL" with `\` line continuations works), then curl's options that
//! shape the request are read; options that only change what curl prints or saves are
//! skipped; any other option is refused by name, since it might change the request.

use super::{endpoint, header};
use crate::EndpointSpec;
use base64::Engine as _;

/// One `--curl`: the request, and the connection options curl gave with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurlRequest {
    /// Method, URL, headers and body, weight 1.
    pub endpoint: EndpointSpec,
    /// `-k/--insecure` on an `https://` URL (on `http://` it means nothing, as for curl).
    pub insecure: bool,
    /// `--http2` or `--http2-prior-knowledge`.
    pub http2: bool,
}

/// Options that do not change the request (output, progress, redirects, retries, timeouts):
/// skipped. Those that take a value, and their short forms.
const SKIPPED_WITH_VALUE: &[&str] = &[
    "-o",
    "--output",
    "-w",
    "--write-out",
    "-m",
    "--max-time",
    "--connect-timeout",
    "--retry",
    "--retry-delay",
    "--retry-max-time",
    "-D",
    "--dump-header",
    "--max-redirs",
    "-c",
    "--cookie-jar",
    "--stderr",
    "--trace",
    "--trace-ascii",
    "--output-dir",
];

/// Options without a value that do not change the request: skipped.
const SKIPPED: &[&str] = &[
    "-s",
    "--silent",
    "-S",
    "--show-error",
    "-v",
    "--verbose",
    "-i",
    "--include",
    "-L",
    "--location",
    "--location-trusted",
    "-f",
    "--fail",
    "--fail-with-body",
    "-#",
    "--progress-bar",
    "--no-progress-meter",
    "-N",
    "--no-buffer",
    "-O",
    "--remote-name",
    "-J",
    "--remote-header-name",
    "-g",
    "--globoff",
    "-q",
    "--disable",
    "--http1.1",
    "--create-dirs",
    "--retry-connrefused",
    "--retry-all-errors",
];

/// Short options (one letter after `-`) that take a value; they may be bundled (`-sSX POST`)
/// and their value may be attached (`-XPOST`).
const SHORT_WITH_VALUE: &str = "XHdubAeowmDcFT";

/// What the options said, before the request is built.
#[derive(Default)]
struct Parsed {
    url: Option<String>,
    method: Option<String>,
    head: bool,
    get: bool,
    headers: Vec<(String, String)>,
    data: Vec<String>,
    json: Option<String>,
    user: Option<String>,
    agent: Option<String>,
    referer: Option<String>,
    cookie: Option<String>,
    compressed: bool,
    insecure: bool,
    http2: bool,
}

/// Reads one curl command line (the leading `curl` may be left out). Data options
/// (`-d`, `--data-raw`, `--data-binary`, `--data-urlencode`, `--json`) are read now, `@file`
/// included (relative to the current folder, as for curl).
pub fn parse_curl(command: &str) -> Result<CurlRequest, String> {
    // A `\` line continuation (a browser's "Copy as cURL (bash)") separates words; shlex
    // would keep an empty word for it.
    let joined = command.replace("\\\r\n", " ").replace("\\\n", " ");
    let words = shlex::split(&joined)
        .ok_or("a quote is not closed: close it (the command is read with shell quoting)")?;
    let mut words = words.into_iter().peekable();
    if words.peek().is_some_and(|w| w == "curl") {
        words.next();
    }
    let mut p = Parsed::default();
    let mut only_urls = false;
    while let Some(word) = words.next() {
        if only_urls || !word.starts_with('-') || word == "-" {
            set_url(&mut p, word)?;
        } else if word == "--" {
            only_urls = true;
        } else if word.starts_with("--") {
            long(&mut p, &word, &mut words)?;
        } else {
            short(&mut p, &word, &mut words)?;
        }
    }
    build(p)
}

fn set_url(p: &mut Parsed, url: String) -> Result<(), String> {
    if let Some(first) = &p.url {
        return Err(format!(
            "two URLs ('{first}' and '{url}'): one request per --curl; give --curl again for the next"
        ));
    }
    p.url = Some(url);
    Ok(())
}

/// A long option, e.g. `--header 'X: 1'`; a value given as `--opt=value` is refused as curl
/// refuses it.
fn long(p: &mut Parsed, word: &str, rest: &mut impl Iterator<Item = String>) -> Result<(), String> {
    if SKIPPED.contains(&word) {
        return Ok(());
    }
    if SKIPPED_WITH_VALUE.contains(&word) {
        value(word, rest)?;
        return Ok(());
    }
    let short = match word {
        "--request" => 'X',
        "--header" => 'H',
        "--data" | "--data-ascii" => 'd',
        "--user" => 'u',
        "--cookie" => 'b',
        "--user-agent" => 'A',
        "--referer" => 'e',
        "--insecure" => 'k',
        "--get" => 'G',
        "--head" => 'I',
        "--url" => return set_url(p, value(word, rest)?),
        "--data-raw" => {
            p.data.push(value(word, rest)?);
            return Ok(());
        }
        "--data-binary" => {
            let v = value(word, rest)?;
            p.data.push(data_file(&v, false)?);
            return Ok(());
        }
        "--data-urlencode" => {
            let v = value(word, rest)?;
            p.data.push(urlencoded(&v)?);
            return Ok(());
        }
        "--json" => {
            let v = data_file(&value(word, rest)?, false)?;
            p.json.get_or_insert_with(String::new).push_str(&v);
            return Ok(());
        }
        "--compressed" => {
            p.compressed = true;
            return Ok(());
        }
        "--http2" | "--http2-prior-knowledge" => {
            p.http2 = true;
            return Ok(());
        }
        _ => return Err(unknown(word)),
    };
    option(p, short, word, || value(word, rest))
}

/// One or more bundled short options, e.g. `-sS`, `-XPOST`, `-H 'X: 1'`.
fn short(
    p: &mut Parsed,
    word: &str,
    rest: &mut impl Iterator<Item = String>,
) -> Result<(), String> {
    let letters: Vec<char> = word[1..].chars().collect();
    for (i, &c) in letters.iter().enumerate() {
        let flag = format!("-{c}");
        if SHORT_WITH_VALUE.contains(c) {
            let attached: String = letters[i + 1..].iter().collect();
            let mut get = || {
                if attached.is_empty() {
                    value(&flag, rest)
                } else {
                    Ok(attached.clone())
                }
            };
            if SKIPPED_WITH_VALUE.contains(&flag.as_str()) {
                get()?;
            } else {
                option(p, c, &flag, get)?;
            }
            return Ok(());
        }
        if SKIPPED.contains(&flag.as_str()) {
            continue;
        }
        match c {
            'k' | 'G' | 'I' => option(p, c, &flag, || Ok(String::new()))?,
            _ => return Err(unknown(&flag)),
        }
    }
    Ok(())
}

/// The options that shape the request, by their short letter.
fn option(
    p: &mut Parsed,
    c: char,
    flag: &str,
    value: impl FnOnce() -> Result<String, String>,
) -> Result<(), String> {
    match c {
        'X' => p.method = Some(value()?),
        'H' => {
            let v = value()?;
            if v.starts_with('@') {
                return Err(format!(
                    "{flag} '{v}': headers from a file are not read: give each header as -H 'Name: value'"
                ));
            }
            let h = loadbench_units::header(&v).map_err(|e| format!("{flag} {e}"))?;
            p.headers.push(h);
        }
        'd' => {
            let v = value()?;
            p.data.push(data_file(&v, true)?);
        }
        'u' => p.user = Some(value()?),
        'A' => p.agent = Some(value()?),
        'e' => p.referer = Some(value()?),
        'b' => p.cookie = Some(value()?),
        'k' => p.insecure = true,
        'G' => p.get = true,
        'I' => p.head = true,
        _ => return Err(unknown(flag)),
    }
    Ok(())
}

fn value(flag: &str, rest: &mut impl Iterator<Item = String>) -> Result<String, String> {
    rest.next()
        .ok_or_else(|| format!("{flag} needs a value: give it after {flag}"))
}

fn unknown(flag: &str) -> String {
    format!(
        "curl option '{flag}' is not read by --curl and may change the request: remove it, or give the request with -u or --requests-file (docs/request-mix.md lists the options read)"
    )
}

/// `-d`'s value: text, or `@file` read now (`-d` drops the file's line breaks, as curl does).
fn data_file(v: &str, strip_newlines: bool) -> Result<String, String> {
    let Some(path) = v.strip_prefix('@') else {
        return Ok(v.to_string());
    };
    let text = crate::InputFile::BODY
        .named("curl -d @file")
        .read(std::path::Path::new(path))
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8(text).map_err(|_| {
        format!("the data file '{path}' is not UTF-8 text: give the body with --body-file and -u")
    })?;
    Ok(if strip_newlines {
        text.replace(['\r', '\n'], "")
    } else {
        text
    })
}

/// `--data-urlencode`: `content`, `=content`, `name=content`, `@file` or `name@file` (the
/// first `=`, else the first `@`, splits), the content percent-encoded.
fn urlencoded(v: &str) -> Result<String, String> {
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let Some(i) = v.find('=').or_else(|| v.find('@')) else {
        return Ok(enc(v));
    };
    let (name, rest) = (&v[..i], &v[i + 1..]);
    let content = if v[i..].starts_with('@') {
        data_file(&format!("@{rest}"), false)?
    } else {
        rest.to_string()
    };
    Ok(match name {
        "" => enc(&content),
        name => format!("{name}={}", enc(&content)),
    })
}

/// The headers curl adds for `-u`, `-A`, `-e`, `-b` and `--compressed`.
fn derived_headers(p: &Parsed) -> Result<Vec<(&'static str, String)>, String> {
    let mut derived = Vec::new();
    if let Some(user) = &p.user {
        if !user.contains(':') {
            return Err(format!(
                "-u '{user}' has no password (curl would ask for it): write -u user:password"
            ));
        }
        let token = base64::engine::general_purpose::STANDARD.encode(user);
        derived.push(("Authorization", format!("Basic {token}")));
    }
    if let Some(agent) = p.agent.clone() {
        derived.push(("User-Agent", agent));
    }
    if let Some(referer) = &p.referer {
        derived.push(("Referer", referer.trim_end_matches(";auto").to_string()));
    }
    if let Some(cookie) = p.cookie.clone() {
        if !cookie.contains('=') {
            return Err(format!(
                "-b '{cookie}' names a cookie file, which --curl does not read: give the cookies as -b 'name=value; name2=value2'"
            ));
        }
        derived.push(("Cookie", cookie));
    }
    if p.compressed {
        derived.push(("Accept-Encoding", "deflate, gzip".to_string()));
    }
    Ok(derived)
}

/// The request curl would send.
fn build(p: Parsed) -> Result<CurlRequest, String> {
    let mut derived = derived_headers(&p)?;
    let mut url = p
        .url
        .ok_or("no URL: write e.g. --curl 'curl http://127.0.0.1:8080/'")?;
    if !url.contains("://") {
        return Err(format!(
            "'{url}' has no scheme: write the full URL, e.g. http://{url}"
        ));
    }
    let mut headers = p.headers;
    let has =
        |hs: &[(String, String)], name: &str| hs.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    let mut body = p.data.join("&");
    if let Some(json) = p.json {
        if !body.is_empty() {
            body.push('&');
        }
        body.push_str(&json);
        derived.push(("Content-Type", "application/json".into()));
        derived.push(("Accept", "application/json".into()));
    } else if !body.is_empty() && !p.get {
        derived.push(("Content-Type", "application/x-www-form-urlencoded".into()));
    }
    if p.get && !body.is_empty() {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(&std::mem::take(&mut body));
    }
    for (name, value) in derived {
        if !has(&headers, name) {
            headers.push(header(name, &value)?);
        }
    }
    let method = match (p.method, p.head, body.is_empty()) {
        (Some(m), _, _) => m,
        (None, true, _) => "HEAD".into(),
        (None, false, false) => "POST".into(),
        (None, false, true) => "GET".into(),
    };
    let tls = url
        .get(..8)
        .is_some_and(|s| s.eq_ignore_ascii_case("https://"));
    Ok(CurlRequest {
        endpoint: endpoint(&method, &url, headers, body.into_bytes()),
        insecure: p.insecure && tls,
        http2: p.http2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Body;

    fn curl(cmd: &str) -> CurlRequest {
        parse_curl(cmd).unwrap_or_else(|e| panic!("{cmd}: {e}"))
    }

    fn headers(r: &CurlRequest) -> Vec<(&str, &str)> {
        let h = &r.endpoint.request.headers;
        h.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect()
    }

    fn body(r: &CurlRequest) -> &[u8] {
        match &r.endpoint.request.body {
            Body::Bytes(b) => b,
            Body::None => b"",
            Body::File(p) => panic!("a file body {p:?}"),
        }
    }

    #[test]
    fn a_plain_get() {
        let r = curl("curl http://h:1/a?b=1");
        assert_eq!(r.endpoint.url, "http://h:1/a?b=1");
        assert_eq!(r.endpoint.request.method, "GET");
        assert!(headers(&r).is_empty() && body(&r).is_empty());
        assert_eq!((r.insecure, r.http2, r.endpoint.weight), (false, false, 1));
    }

    #[test]
    fn a_browser_copy_as_curl_with_continuations() {
        let r = curl(
            "curl 'https://h/api' \\\n  -H 'accept: text/html' \\\n  -H \"X-Q: a b\" \\\n  -b 'sid=1; t=2' -A 'Moz/5' -e http://h/ --compressed -k --http2",
        );
        assert_eq!(
            headers(&r),
            [
                ("accept", "text/html"),
                ("X-Q", "a b"),
                ("User-Agent", "Moz/5"),
                ("Referer", "http://h/"),
                ("Cookie", "sid=1; t=2"),
                ("Accept-Encoding", "deflate, gzip"),
            ]
        );
        assert!(r.insecure && r.http2);
        assert!(
            !curl("curl -k http://h/").insecure,
            "-k means nothing on http://"
        );
    }

    #[test]
    fn data_makes_a_form_post_and_joins_with_ampersands() {
        let r = curl("curl -d a=1 --data-raw '@b=2' http://h/");
        assert_eq!(r.endpoint.request.method, "POST");
        assert_eq!(body(&r), b"a=1&@b=2");
        assert_eq!(
            headers(&r),
            [("Content-Type", "application/x-www-form-urlencoded")]
        );
        let own = curl("curl -XPUT -H 'content-type: text/plain' -d x http://h/");
        assert_eq!(own.endpoint.request.method, "PUT");
        assert_eq!(headers(&own), [("content-type", "text/plain")]);
        let get = curl("curl -G -d a=1 --data-urlencode 'q=x y' http://h/p?z=0");
        assert_eq!(get.endpoint.url, "http://h/p?z=0&a=1&q=x+y");
        assert_eq!(get.endpoint.request.method, "GET");
        assert!(body(&get).is_empty());
    }

    #[test]
    fn json_user_head_and_bundled_short_options() {
        let r = curl(r#"curl -sSL --json '{"a":1}' -u 'al:p w' http://h/"#);
        assert_eq!(r.endpoint.request.method, "POST");
        assert_eq!(body(&r), br#"{"a":1}"#);
        assert_eq!(
            headers(&r),
            [
                ("Authorization", "Basic YWw6cCB3"),
                ("Content-Type", "application/json"),
                ("Accept", "application/json"),
            ]
        );
        assert_eq!(curl("curl -I http://h/").endpoint.request.method, "HEAD");
        let skipped = curl("curl -o out.html -w '%{http_code}' -m 5 -v http://h/");
        assert!(headers(&skipped).is_empty());
    }

    #[test]
    fn data_files_are_read_now() {
        let dir = std::env::temp_dir().join(format!("lb-curl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("b.txt");
        std::fs::write(&file, "x=1\ny=2\n").unwrap();
        let f = file.display();
        assert_eq!(body(&curl(&format!("curl -d @{f} http://h/"))), b"x=1y=2");
        let binary = curl(&format!("curl --data-binary @{f} http://h/"));
        assert_eq!(body(&binary), b"x=1\ny=2\n");
        let e = parse_curl("curl -d @/nonexistent/b http://h/").unwrap_err();
        assert!(e.contains("/nonexistent/b"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn mistakes_are_one_line_naming_the_fix() {
        let e = |c: &str| parse_curl(c).unwrap_err();
        assert!(e("curl -F a=@x http://h/").contains("'-F'"));
        assert!(e("curl --proxy p:1 http://h/").contains("'--proxy'"));
        assert!(e("curl 'http://h/").contains("not closed"));
        assert!(e("curl -H").contains("-H needs a value"));
        assert!(e("curl -s").contains("no URL"));
        assert!(e("curl http://a/ http://b/").contains("give --curl again"));
        assert!(e("curl -u al http://h/").contains("user:password"));
        assert!(e("curl -b jar.txt http://h/").contains("cookie file"));
        assert!(e("curl h:1/").contains("no scheme"));
        assert!(e("curl -H nocolon http://h/").contains("Name: value"));
        for c in ["curl -F a=@x http://h/", "curl -u al http://h/"] {
            assert!(!e(c).contains('\n'));
        }
    }
}
