//! Flows (docs/flows.md): a named sequence of steps run by each virtual user, each step a
//! request with optional captures (a JSON pointer into the body, a header, a regex group) into
//! variables that later steps use as `{{name}}`, optional checks (status, a text in the body,
//! JSON values) and an optional think time.
//!
//! In: a [`FlowFile`] as written (a `--flow` file, a scenario's `[load.flow]`), typed into a
//! [`FlowSpec`] with every capture and check checked. The plan renders each step like a
//! request of a mix (its values compiled once) and keeps the steps' captures and checks as a
//! [`Flow`]; the engine asks each step to judge its response ([`Step::judge`]).

use crate::values::{Compiled, Draw, Source};
use crate::{invalid, PlanError, RequestSpec};
use loadbench_model::ErrorKind;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// The most steps in one flow (each is one request of the per-step breakdown).
pub const MAX_STEPS: usize = 64;

/// The largest response body a step that captures or checks reads (bytes beyond are not
/// seen by its captures and checks).
pub const MAX_KEPT_RESPONSE: usize = 1 << 20;

/// A flow as written: `name` and `[[steps]]` (a `--flow` file; a scenario's `[load.flow]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowFile {
    /// The flow's name in reports; default `flow`.
    #[serde(default)]
    pub name: Option<String>,
    /// Its steps, in order.
    pub steps: Vec<StepFile>,
}

/// One `[[steps]]` table as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepFile {
    /// The step's name in reports; default `step-N`.
    #[serde(default)]
    pub name: Option<String>,
    /// HTTP method; default `GET`.
    #[serde(default)]
    pub method: Option<String>,
    /// Path and query, appended to the load's URL; default `/`.
    #[serde(default)]
    pub path: Option<String>,
    /// Request headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Request body.
    #[serde(default)]
    pub body: Option<String>,
    /// Variables taken from the answer: `name = "json:/token"`, `"header:X-Token"` or
    /// `"regex:id=(\d+)"`.
    #[serde(default)]
    pub capture: BTreeMap<String, String>,
    /// What the answer must be.
    #[serde(default)]
    pub check: CheckFile,
    /// A pause after the step's answer, before the next step (`"100ms"`).
    #[serde(default)]
    pub think: Option<String>,
}

/// A step's `check` table as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckFile {
    /// The status, or one of several.
    #[serde(default)]
    pub status: Option<StatusFile>,
    /// A text the body must hold (values allowed: `"{{seq}}"`).
    #[serde(default)]
    pub body_contains: Option<String>,
    /// JSON pointer → the value it must point at (a string, a number or a boolean; strings
    /// may hold values).
    #[serde(default)]
    pub json: BTreeMap<String, Scalar>,
}

/// `status = 200` or `status = [200, 201]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum StatusFile {
    /// One status.
    One(u16),
    /// Any of these.
    Any(Vec<u16>),
}

/// A JSON check's expected value as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A number.
    Float(f64),
    /// A string (it may hold values).
    Text(String),
}

impl Scalar {
    /// The value as the JSON text a match compares with (a string without its quotes).
    fn text(&self) -> String {
        match self {
            Scalar::Bool(b) => b.to_string(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Float(f) => {
                serde_json::Number::from_f64(*f).map_or(f.to_string(), |n| n.to_string())
            }
            Scalar::Text(s) => s.clone(),
        }
    }
}

/// How a capture takes its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureSpec {
    /// The value at this JSON pointer of the body (a string without its quotes; anything
    /// else as JSON text).
    Json(String),
    /// This header's value (the first, name in any case).
    Header(String),
    /// The first group of this regular expression's first match in the body.
    Regex(String),
}

/// One step, typed.
#[derive(Debug, Clone, PartialEq)]
pub struct StepSpec {
    /// Its name in reports.
    pub name: String,
    /// Path and query, appended to the load's URL.
    pub path: String,
    /// Method, headers and body (values and captured variables allowed).
    pub request: RequestSpec,
    /// Variables taken from its answer, in order.
    pub captures: Vec<(String, CaptureSpec)>,
    /// Statuses accepted (empty: any).
    pub status: Vec<u16>,
    /// A text its body must hold.
    pub body_contains: Option<String>,
    /// JSON pointer → the value's expected text.
    pub json: Vec<(String, String)>,
    /// The pause after its answer.
    pub think: Duration,
}

/// A flow, typed: its name and steps.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSpec {
    /// Its name in reports.
    pub name: String,
    /// Where it was written, for errors: `--flow login.toml`, `flow` (a scenario's table,
    /// whose errors the loader places).
    pub source: String,
    /// Its steps, in order.
    pub steps: Vec<StepSpec>,
}

impl StepSpec {
    /// A step `name` sending `method path` with no headers, body, captures, checks or think
    /// time (what a flow built in code starts from).
    pub fn new(name: &str, method: &str, path: &str) -> StepSpec {
        StepSpec {
            name: name.into(),
            path: path.into(),
            request: RequestSpec {
                method: method.into(),
                ..RequestSpec::default()
            },
            captures: Vec::new(),
            status: Vec::new(),
            body_contains: None,
            json: Vec::new(),
            think: Duration::ZERO,
        }
    }
}

impl FlowFile {
    /// Types the flow; `Err` is one line naming the step's key and the fix (`place` names
    /// the file or table, e.g. "--flow checkout.toml").
    pub fn typed(self, place: &str) -> Result<FlowSpec, String> {
        if self.steps.is_empty() {
            return Err(format!(
                "{place} has no steps: add [[steps]] tables (docs/flows.md)"
            ));
        }
        if self.steps.len() > MAX_STEPS {
            return Err(format!(
                "{place} has {} steps: at most {MAX_STEPS}; split the flow",
                self.steps.len()
            ));
        }
        let name = self.name.unwrap_or_else(|| "flow".into());
        let mut seen = std::collections::HashSet::new();
        let mut steps = Vec::new();
        for (i, s) in self.steps.into_iter().enumerate() {
            let step_name = s.name.clone().unwrap_or_else(|| format!("step-{}", i + 1));
            let at = format!("{place} steps[{i}] ({step_name})");
            if !seen.insert(step_name.clone()) {
                return Err(format!(
                    "{at}: a second step named '{step_name}': give each step its own name"
                ));
            }
            steps.push(s.typed(step_name, &at)?);
        }
        Ok(FlowSpec {
            name,
            source: place.to_string(),
            steps,
        })
    }
}

impl StepFile {
    fn typed(self, name: String, at: &str) -> Result<StepSpec, String> {
        let mut captures = Vec::new();
        for (var, how) in self.capture {
            if !crate::values::is_name(&var)
                || crate::values::BUILT_INS.contains(&var.as_str())
                || var == "row"
            {
                return Err(format!(
                    "{at}: capture '{var}' is not a usable name: use letters, digits and _ (not starting with a digit), and none of {}",
                    crate::values::BUILT_INS.join(", ")
                ));
            }
            captures.push((
                var,
                parse_capture(&how).map_err(|e| format!("{at}: capture '{how}': {e}"))?,
            ));
        }
        let status = match self.check.status {
            None => Vec::new(),
            Some(StatusFile::One(s)) => vec![s],
            Some(StatusFile::Any(v)) => v,
        };
        if let Some(bad) = status.iter().find(|s| !(100..=599).contains(*s)) {
            return Err(format!(
                "{at}: check status {bad} is not an HTTP status: give 100 to 599"
            ));
        }
        let mut json = Vec::new();
        for (pointer, want) in self.check.json {
            check_pointer(&pointer).map_err(|e| format!("{at}: check json '{pointer}': {e}"))?;
            json.push((pointer, want.text()));
        }
        let think = match &self.think {
            None => Duration::ZERO,
            Some(t) => loadbench_units::duration(t).map_err(|e| format!("{at}: think: {e}"))?,
        };
        let method = self.method.unwrap_or_else(|| "GET".into());
        Ok(StepSpec {
            name,
            path: self.path.unwrap_or_else(|| "/".into()),
            request: RequestSpec {
                method,
                headers: self.headers.into_iter().collect(),
                body: self
                    .body
                    .map_or(crate::Body::None, |b| crate::Body::Bytes(b.into_bytes())),
            },
            captures,
            status,
            body_contains: self.check.body_contains,
            json,
            think,
        })
    }
}

/// `json:/pointer`, `header:Name` or `regex:PATTERN` (with one group).
fn parse_capture(text: &str) -> Result<CaptureSpec, String> {
    let (how, what) = text
        .split_once(':')
        .ok_or("write json:/pointer, header:Name or regex:PATTERN (with a group)")?;
    match how.trim() {
        "json" => {
            check_pointer(what)?;
            Ok(CaptureSpec::Json(what.to_string()))
        }
        "header" if !what.trim().is_empty() => Ok(CaptureSpec::Header(what.trim().to_string())),
        "header" => Err("no header name: write header:X-Token".into()),
        "regex" => {
            let re = regex::bytes::Regex::new(what).map_err(|e| {
                format!(
                    "not a regular expression ({}): fix the pattern",
                    e.to_string().lines().last().unwrap_or("")
                )
            })?;
            if re.captures_len() < 2 {
                return Err("the pattern has no group: put the part to capture in ( )".into());
            }
            Ok(CaptureSpec::Regex(what.to_string()))
        }
        other => Err(format!(
            "unknown capture '{other}:': write json:/pointer, header:Name or regex:PATTERN"
        )),
    }
}

/// A JSON pointer (RFC 6901): empty (the whole document) or `/`-separated, with `~` only
/// as `~0` or `~1`.
fn check_pointer(p: &str) -> Result<(), String> {
    if !p.is_empty() && !p.starts_with('/') {
        return Err(format!(
            "'{p}' is not a JSON pointer: start it with / (e.g. /{p} or /data/0/id)"
        ));
    }
    let bytes = p.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'~' && !matches!(bytes.get(i + 1), Some(b'0' | b'1')) {
            return Err(format!(
                "'{p}' has a ~ that is not ~0 or ~1: write ~0 for ~ and ~1 for / in a key"
            ));
        }
    }
    Ok(())
}

/// How a capture takes its value, resolved.
#[derive(Debug, Clone)]
pub(crate) enum How {
    Json(String),
    Header(String),
    Regex(regex::bytes::Regex),
}

/// One step's captures and checks, resolved (its request is the plan's mix entry of the same
/// index).
#[derive(Debug, Clone)]
pub struct Step {
    /// Its name.
    pub name: String,
    /// The pause after its answer.
    pub think: Duration,
    pub(crate) captures: Vec<(usize, How)>,
    pub(crate) status: Vec<u16>,
    pub(crate) body_contains: Option<Compiled>,
    pub(crate) json: Vec<(String, Compiled)>,
}

/// A flow, resolved: its steps and its variables (by index).
#[derive(Debug, Clone)]
pub struct Flow {
    /// Its name.
    pub name: String,
    /// Its steps.
    pub steps: Vec<Step>,
    /// Its captured variables, by index.
    pub vars: Vec<String>,
}

/// A complete answer, as a step judges it.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'r> {
    /// Its status.
    pub status: u16,
    /// Its head (status line and headers).
    pub head: &'r [u8],
    /// Its body, de-chunked.
    pub body: &'r [u8],
}

impl Step {
    /// Whether it reads its answer (captures or checks beyond the status).
    pub fn reads_answer(&self) -> bool {
        !self.captures.is_empty() || self.body_contains.is_some() || !self.json.is_empty()
    }

    /// Judges an answer: the checks first (`CheckFailed`), then the captures into `vars`
    /// (`CaptureMissing`, and the variable is left as it was).
    pub fn judge(
        &self,
        a: Answer<'_>,
        src: &mut Source<'_>,
        draw: Draw,
        conn: u32,
        vars: &mut [Vec<u8>],
        scratch: &mut Vec<u8>,
    ) -> Result<(), ErrorKind> {
        if !self.status.is_empty() && !self.status.contains(&a.status) {
            return Err(ErrorKind::CheckFailed);
        }
        if let Some(want) = &self.body_contains {
            scratch.clear();
            src.assemble_text(want, draw, conn, vars, scratch);
            if memchr::memmem::find(a.body, scratch).is_none() {
                return Err(ErrorKind::CheckFailed);
            }
        }
        let needs_json =
            !self.json.is_empty() || self.captures.iter().any(|(_, h)| matches!(h, How::Json(_)));
        let doc: Option<serde_json::Value> = needs_json
            .then(|| serde_json::from_slice(a.body).ok())
            .flatten();
        for (pointer, want) in &self.json {
            scratch.clear();
            src.assemble_text(want, draw, conn, vars, scratch);
            let got = doc.as_ref().and_then(|d| d.pointer(pointer));
            if !got.is_some_and(|v| json_text_eq(v, scratch)) {
                return Err(ErrorKind::CheckFailed);
            }
        }
        for (var, how) in &self.captures {
            let out = &mut vars[*var];
            let found = match how {
                How::Json(p) => doc.as_ref().and_then(|d| d.pointer(p)).map(|v| {
                    out.clear();
                    match v {
                        serde_json::Value::String(s) => out.extend_from_slice(s.as_bytes()),
                        other => out.extend_from_slice(other.to_string().as_bytes()),
                    }
                }),
                How::Header(name) => header(a.head, name).map(|v| {
                    out.clear();
                    out.extend_from_slice(v);
                }),
                How::Regex(re) => re.captures(a.body).and_then(|c| c.get(1)).map(|m| {
                    out.clear();
                    out.extend_from_slice(m.as_bytes());
                }),
            };
            if found.is_none() {
                return Err(ErrorKind::CaptureMissing);
            }
        }
        Ok(())
    }
}

/// Whether JSON value `v` reads as `text` (a string without its quotes).
fn json_text_eq(v: &serde_json::Value, text: &[u8]) -> bool {
    match v {
        serde_json::Value::String(s) => s.as_bytes() == text,
        other => other.to_string().as_bytes() == text,
    }
}

/// The first value of header `name` in a response head.
fn header<'h>(head: &'h [u8], name: &str) -> Option<&'h [u8]> {
    head.split(|&b| b == b'\n').skip(1).find_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = line.iter().position(|&b| b == b':')?;
        line[..colon]
            .trim_ascii()
            .eq_ignore_ascii_case(name.as_bytes())
            .then(|| line[colon + 1..].trim_ascii())
    })
}

/// Splits a raw HTTP/1.1 response (its final head after any 1xx, then the body) and
/// de-chunks a chunked body into `body`; returns the head.
pub fn split_answer<'r>(raw: &'r [u8], body: &mut Vec<u8>) -> &'r [u8] {
    let mut rest = raw;
    loop {
        let Some(end) = memchr::memmem::find(rest, b"\r\n\r\n") else {
            body.clear();
            return rest;
        };
        let head = &rest[..end];
        let interim = head.len() > 12 && head[9] == b'1' && !head.starts_with(b"HTTP/1.1 101");
        if interim {
            rest = &rest[end + 4..];
            continue;
        }
        let raw_body = &rest[end + 4..];
        body.clear();
        let chunked = header(head, "transfer-encoding")
            .is_some_and(|v| v.windows(7).any(|w| w.eq_ignore_ascii_case(b"chunked")));
        if chunked {
            dechunk(raw_body, body);
        } else {
            body.extend_from_slice(raw_body);
        }
        return head;
    }
}

/// A chunked body's data (the engine's parser validated it; a cut-off one gives what it has).
fn dechunk(mut b: &[u8], out: &mut Vec<u8>) {
    loop {
        let Some(eol) = memchr::memmem::find(b, b"\r\n") else {
            return;
        };
        let size_text = b[..eol].split(|&c| c == b';').next().unwrap_or_default();
        let Some(size) = std::str::from_utf8(size_text)
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
        else {
            return;
        };
        if size == 0 {
            return;
        }
        let data = &b[eol + 2..];
        let take = size.min(data.len());
        out.extend_from_slice(&data[..take]);
        if take < size || data.len() < size + 2 {
            return;
        }
        b = &data[size + 2..];
    }
}

/// A flow's steps as a load's requests: the load's `url` joined with each step's path.
pub(crate) fn step_url(base: &str, path: &str) -> String {
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    let base = base.trim_end_matches('/');
    // A base with a query keeps it off: a step's path brings its own.
    let base = base
        .split_once('?')
        .map_or(base, |(b, _)| b.trim_end_matches('/'));
    format!("{base}{path}")
}

/// A flow variable used before any earlier step captures it.
pub(crate) fn undefined_var(name: &str, place: &str, defined: &[String]) -> PlanError {
    let known = if defined.is_empty() {
        "no earlier step captures any".to_string()
    } else {
        format!("earlier steps capture {}", defined.join(", "))
    };
    invalid(format!(
        "{place}: '{{{{{name}}}}}' is not defined: {known}; capture it in an earlier step (capture = {{ {name} = \"json:/{name}\" }}) or use a value (docs/request-values.md)"
    ))
}

/// A flow's variables, in the order of their first capture.
pub(crate) fn var_names(f: &FlowSpec) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (v, _) in f.steps.iter().flat_map(|s| &s.captures) {
        if !out.contains(v) {
            out.push(v.clone());
        }
    }
    out
}

/// Expands a load with a flow into a load whose mix is the steps (the plan renders each like a
/// request of a mix); refuses what a flow cannot combine with.
pub(crate) fn expand(spec: &crate::LoadSpec) -> Result<Option<crate::LoadSpec>, PlanError> {
    // Closed model: `-c` virtual users; open model: the rate starts iterations.
    let Some(f) = &spec.flow else {
        return Ok(None);
    };
    if !spec.mix.is_empty() {
        return Err(invalid(
            "a flow and a request mix (-u, --requests-file, --curl, --har, --targets) both given: a flow's steps are its requests; give one of them",
        ));
    }
    if let crate::LoadShape::FindMax { .. } = spec.load {
        return Err(invalid(
            "find-max runs open loads of single requests for now, not a flow: run the flow with run --rate or in a bench (docs/flows.md)",
        ));
    }
    if spec.transport.http2 || spec.transport.http3 {
        return Err(invalid(
            "a flow runs over HTTP/1.1 for now (its captures read the answers' headers): leave out --http2 or --http3 (docs/flows.md)",
        ));
    }
    if spec.transport.pipeline > 1 {
        return Err(invalid(
            "a flow's virtual user sends one step at a time: leave out --pipeline",
        ));
    }
    let mut out = spec.clone();
    let first = &f.steps[0];
    out.url = step_url(&spec.url, &first.path);
    out.request = first.request.clone();
    if f.steps.len() > 1 {
        out.mix = f
            .steps
            .iter()
            .map(|s| crate::EndpointSpec {
                url: step_url(&spec.url, &s.path),
                request: s.request.clone(),
                weight: 1,
            })
            .collect();
    }
    Ok(Some(out))
}

/// A flow's steps resolved: captures to variable indices, checks compiled (values and
/// earlier steps' variables allowed in their texts).
pub(crate) fn resolve(
    f: &FlowSpec,
    marks: &mut crate::values::Marks,
    columns: &mut Vec<String>,
) -> Result<Flow, PlanError> {
    let vars = var_names(f);
    let index = |v: &str| vars.iter().position(|x| x == v).unwrap_or(0);
    let mut steps = Vec::new();
    for (i, s) in f.steps.iter().enumerate() {
        let known: Vec<String> = f.steps[..i]
            .iter()
            .flat_map(|s| s.captures.iter().map(|(v, _)| v.clone()))
            .collect();
        let mut text = |t: &str, what: &str| -> Result<Compiled, PlanError> {
            let place = format!("{} step '{}': check {what}", f.source, s.name);
            let from = marks.len();
            let marked = marks.mark(t.as_bytes(), &place)?.into_owned();
            if let Some((var, at)) = marks
                .vars_in(from..marks.len())
                .find(|(v, _)| !known.iter().any(|k| k == v))
            {
                return Err(undefined_var(var, at, &known));
            }
            marks.compile_text(&marked, columns)
        };
        let body_contains = match &s.body_contains {
            Some(t) => Some(text(t, "body_contains")?),
            None => None,
        };
        let json = s
            .json
            .iter()
            .map(|(p, want)| Ok((p.clone(), text(want, &format!("json '{p}'"))?)))
            .collect::<Result<Vec<_>, PlanError>>()?;
        let captures = s
            .captures
            .iter()
            .map(|(v, how)| {
                let how = match how {
                    CaptureSpec::Json(p) => How::Json(p.clone()),
                    CaptureSpec::Header(h) => How::Header(h.clone()),
                    // Checked when typed.
                    CaptureSpec::Regex(r) => {
                        How::Regex(regex::bytes::Regex::new(r).map_err(|e| invalid(e.to_string()))?)
                    }
                };
                Ok((index(v), how))
            })
            .collect::<Result<Vec<_>, PlanError>>()?;
        steps.push(Step {
            name: s.name.clone(),
            think: s.think,
            captures,
            status: s.status.clone(),
            body_contains,
            json,
        });
    }
    Ok(Flow {
        name: f.name.clone(),
        steps,
        vars,
    })
}

impl Step {
    /// Its check texts, for the data file's columns to be resolved in them.
    pub(crate) fn texts_mut(&mut self) -> impl Iterator<Item = &mut Compiled> {
        self.body_contains
            .iter_mut()
            .chain(self.json.iter_mut().map(|(_, c)| c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_split_and_dechunk() {
        let mut body = Vec::new();
        let raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Token: abc \r\n\r\n4\r\n{\"a\"\r\n3;x=1\r\n:1}\r\n0\r\n\r\n";
        let head = split_answer(raw, &mut body);
        assert_eq!(body, b"{\"a\":1}");
        assert_eq!(header(head, "x-token"), Some(&b"abc"[..]));
        assert!(head.starts_with(b"HTTP/1.1 200"));
        let head = split_answer(
            b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
            &mut body,
        );
        assert_eq!(body, b"ok");
        assert_eq!(header(head, "content-length"), Some(&b"2"[..]));
    }

    #[test]
    fn captures_and_checks_are_checked_when_typed() {
        assert_eq!(
            parse_capture("json:/token").unwrap(),
            CaptureSpec::Json("/token".into())
        );
        assert_eq!(
            parse_capture("header: X-Token").unwrap(),
            CaptureSpec::Header("X-Token".into())
        );
        assert!(parse_capture("json:token")
            .unwrap_err()
            .contains("start it with /"));
        assert!(parse_capture("json:/a~2b")
            .unwrap_err()
            .contains("~0 or ~1"));
        assert!(parse_capture("regex:id=\\d+")
            .unwrap_err()
            .contains("no group"));
        assert!(parse_capture("regex:(")
            .unwrap_err()
            .contains("not a regular expression"));
        assert!(parse_capture("xpath://a")
            .unwrap_err()
            .contains("unknown capture 'xpath:'"));
        assert!(parse_capture("token")
            .unwrap_err()
            .contains("write json:/pointer"));
    }

    #[test]
    fn step_urls_join_the_base() {
        assert_eq!(step_url("http://h:1/", "/login"), "http://h:1/login");
        assert_eq!(step_url("http://h:1/api", "me"), "http://h:1/api/me");
        assert_eq!(step_url("http://h:1/?x=1", "/me"), "http://h:1/me");
    }
}
