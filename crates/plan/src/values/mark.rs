//! Finding the `{{ … }}` in a request's texts, swapping each for a marker before the request
//! is rendered, and cutting the rendered bytes at the markers ([`Marks::compile`]).

use super::expr::{self, Slot, Value};
use super::{Compiled, Piece, Resolved};
use crate::{invalid, PlanError};
use std::borrow::Cow;

/// A marker's fixed start and end: letters and digits only, so a URL parser, the header
/// checks and the request's rendering leave it as it is.
const HEAD: &[u8] = b"Lbv7q";
const TAIL: &[u8] = b"q7vbL";
/// Digits of a marker's number.
const DIGITS: usize = 5;
const LEN: usize = HEAD.len() + DIGITS + TAIL.len();
/// The most values one load's requests may hold.
const MAX_SLOTS: usize = 10_000;

/// The values found in one load's requests, each with where it was written.
#[derive(Debug, Default)]
pub(crate) struct Marks {
    /// Each value, where it was written, and its text between the braces.
    slots: Vec<(Slot, String, String)>,
    /// A flow's variables, by index (a `{{name}}` compiles to its index).
    pub(crate) vars: Vec<String>,
}

/// Where a `{{` sits in a text: its line and column (1-based), for texts of several lines.
fn line_col(text: &[u8], at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
    (line, col)
}

impl Marks {
    /// Whether any value was found.
    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Values found so far (marking a request's texts between two calls gives its range).
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The flow variables (`{{name}}`) among the values `range`, with where.
    pub(crate) fn vars_in(
        &self,
        range: std::ops::Range<usize>,
    ) -> impl Iterator<Item = (&str, &str)> {
        self.slots[range]
            .iter()
            .filter_map(|(s, place, _)| match &s.value {
                Value::Var(v) => Some((v.as_str(), place.as_str())),
                _ => None,
            })
    }

    /// A text with values (a flow's check), cut into pieces like a request without a body.
    pub(crate) fn compile_text(
        &self,
        bytes: &[u8],
        columns: &mut Vec<String>,
    ) -> Result<Compiled, PlanError> {
        let mut c = Compiled {
            lits: Vec::new(),
            head: Vec::new(),
            body: None,
            slots: Vec::new(),
            randoms: 0,
        };
        c.head = self.cut(bytes, &mut c, columns)?;
        Ok(c)
    }

    /// The flow variables (`{{name}}`) used, with where.
    pub(crate) fn vars(&self) -> impl Iterator<Item = (&str, &str)> {
        self.slots
            .iter()
            .filter_map(|(s, place, _)| match &s.value {
                Value::Var(v) => Some((v.as_str(), place.as_str())),
                _ => None,
            })
    }

    /// `text` with each `{{ … }}` swapped for a marker; `place` names it in errors ("the
    /// URL", "header X-Id", "the body file orders.json"). Borrowed when it has none.
    pub(crate) fn mark<'t>(
        &mut self,
        text: &'t [u8],
        place: &str,
    ) -> Result<Cow<'t, [u8]>, PlanError> {
        if memchr::memmem::find(text, b"{{").is_none() {
            return Ok(Cow::Borrowed(text));
        }
        if memchr::memmem::find(text, HEAD).is_some() {
            return Err(invalid(format!(
                "{place} holds '{}', which loadbench reserves for its values: change that text",
                String::from_utf8_lossy(HEAD)
            )));
        }
        let mut out = Vec::with_capacity(text.len());
        let mut rest = 0;
        while let Some(open) = memchr::memmem::find(&text[rest..], b"{{").map(|i| i + rest) {
            out.extend_from_slice(&text[rest..open]);
            let (line, col) = line_col(text, open);
            let at = if line > 1 || text.contains(&b'\n') {
                format!("{place}, line {line} column {col}")
            } else {
                format!("{place}, column {col}")
            };
            let close = close_of(text, open + 2).ok_or_else(|| {
                invalid(format!(
                    "{at}: a {{{{ without its }}}}: close it, or write {{{{'{{{{'}}}} for a literal {{{{"
                ))
            })?;
            let inner = std::str::from_utf8(&text[open + 2..close])
                .map_err(|_| invalid(format!("{at}: the value is not UTF-8 text")))?;
            let slot = expr::parse(inner).map_err(|e| invalid(format!("{at}: {e}")))?;
            if self.slots.len() >= MAX_SLOTS {
                return Err(invalid(format!(
                    "{at}: more than {MAX_SLOTS} values in one load's requests: use fewer"
                )));
            }
            out.extend_from_slice(HEAD);
            out.extend_from_slice(format!("{:0DIGITS$}", self.slots.len()).as_bytes());
            out.extend_from_slice(TAIL);
            self.slots.push((slot, at, inner.to_string()));
            rest = close + 2;
        }
        out.extend_from_slice(&text[rest..]);
        Ok(Cow::Owned(out))
    }

    /// [`Marks::mark`] for UTF-8 text.
    pub(crate) fn mark_str(&mut self, text: &str, place: &str) -> Result<String, PlanError> {
        let marked = self.mark(text.as_bytes(), place)?;
        // Markers are ASCII and the text was UTF-8: so is the result.
        Ok(String::from_utf8_lossy(&marked).into_owned())
    }

    /// Cuts a rendered request (`bytes`, its body starting at `body_at`) at its markers; `None`
    /// when it holds none. `templated_body`: the body has markers, so the head's
    /// `Content-Length` line is dropped (it is written per request). Row columns are kept
    /// by name in `columns` (resolved against the data file later).
    pub(crate) fn compile(
        &self,
        bytes: &[u8],
        body_at: usize,
        columns: &mut Vec<String>,
    ) -> Result<Option<Compiled>, PlanError> {
        if memchr::memmem::find(bytes, HEAD).is_none() {
            return Ok(None);
        }
        let (head, body) = bytes.split_at(body_at);
        let templated_body = memchr::memmem::find(body, HEAD).is_some();
        let mut c = Compiled {
            lits: Vec::new(),
            head: Vec::new(),
            body: None,
            slots: Vec::new(),
            randoms: 0,
        };
        if templated_body {
            // The head without its blank line and its Content-Length (written per request).
            let head = &head[..head.len() - 2];
            let kept = drop_content_length(head);
            c.head = self.cut(&kept, &mut c, columns)?;
            c.body = Some(self.cut(body, &mut c, columns)?);
        } else {
            c.head = self.cut(bytes, &mut c, columns)?;
        }
        Ok(Some(c))
    }

    /// Pieces of `bytes`: fixed runs and the slots of its markers.
    fn cut(
        &self,
        bytes: &[u8],
        c: &mut Compiled,
        columns: &mut Vec<String>,
    ) -> Result<Vec<Piece>, PlanError> {
        let mut pieces = Vec::new();
        let mut rest = 0;
        let lit = |c: &mut Compiled, part: &[u8], pieces: &mut Vec<Piece>| {
            if !part.is_empty() {
                let from = c.lits.len() as u32;
                c.lits.extend_from_slice(part);
                pieces.push(Piece::Lit(from, c.lits.len() as u32));
            }
        };
        while let Some(at) = memchr::memmem::find(&bytes[rest..], HEAD).map(|i| i + rest) {
            lit(c, &bytes[rest..at], &mut pieces);
            let n: usize = std::str::from_utf8(&bytes[at + HEAD.len()..at + HEAD.len() + DIGITS])
                .ok()
                .and_then(|d| d.parse().ok())
                .filter(|&n: &usize| n < self.slots.len())
                .ok_or_else(|| {
                    invalid("a value's marker was changed while rendering the request: report this")
                })?;
            let (slot, _, _) = &self.slots[n];
            let resolved = resolve_slot(&slot.value, c, columns, &self.vars);
            if slot.value.is_random() {
                c.randoms += 1;
            }
            c.slots.push((resolved, slot.filters.clone()));
            pieces.push(Piece::Slot((c.slots.len() - 1) as u16));
            rest = at + LEN;
        }
        lit(c, &bytes[rest..], &mut pieces);
        Ok(pieces)
    }

    /// Where each value was written, for a value the load cannot draw (a flow variable in a
    /// load without flows).
    pub(crate) fn refuse_vars(&self) -> Result<(), PlanError> {
        match self.vars().next() {
            Some((name, place)) => Err(invalid(format!(
                "{place}: '{{{{{name}}}}}' is not a value: a captured variable exists only in a flow's later steps; the values are seq, int(MIN, MAX), pick(…), uuid, now, shard, worker, conn and row.COLUMN (docs/request-values.md)"
            ))),
            None => Ok(()),
        }
    }

    /// Whether `text` holds a value's marker (the host check).
    pub(crate) fn has_marker_in(&self, text: &str) -> bool {
        self.has_marker(text.as_bytes())
    }

    /// Whether `bytes` hold a value's marker.
    pub(crate) fn has_marker(&self, bytes: &[u8]) -> bool {
        memchr::memmem::find(bytes, HEAD).is_some()
    }

    /// `text` with each marker back to the `{{ … }}` it stands for (a URL or header for the
    /// record).
    pub(crate) fn unmark(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(std::str::from_utf8(HEAD).unwrap_or_default()) {
            let n = rest
                .get(at + HEAD.len()..at + HEAD.len() + DIGITS)
                .and_then(|d| d.parse::<usize>().ok())
                .filter(|&n| n < self.slots.len() && rest.len() >= at + LEN);
            let Some(n) = n else {
                out.push_str(&rest[..at + HEAD.len()]);
                rest = &rest[at + HEAD.len()..];
                continue;
            };
            out.push_str(&rest[..at]);
            out.push_str("{{");
            out.push_str(&self.slots[n].2);
            out.push_str("}}");
            rest = &rest[at + LEN..];
        }
        out.push_str(rest);
        out
    }
}

/// The first `}}` after `from` outside quotes.
fn close_of(text: &[u8], from: usize) -> Option<usize> {
    let mut quote = None;
    let mut i = from;
    while i + 1 < text.len() {
        let b = text[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'\'' || b == b'"' => quote = Some(b),
            None if b == b'}' && text[i + 1] == b'}' => return Some(i),
            None => {}
        }
        i += 1;
    }
    None
}

/// The head without its `Content-Length:` line (the one the rendering added).
fn drop_content_length(head: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(head.len());
    for line in head.split_inclusive(|&b| b == b'\n') {
        if line.len() > 15 && line[..15].eq_ignore_ascii_case(b"content-length:") {
            continue;
        }
        out.extend_from_slice(line);
    }
    out
}

fn resolve_slot(
    v: &Value,
    c: &mut Compiled,
    columns: &mut Vec<String>,
    vars: &[String],
) -> Resolved {
    let text = |c: &mut Compiled, s: &str| {
        let from = c.lits.len() as u32;
        c.lits.extend_from_slice(s.as_bytes());
        (from, c.lits.len() as u32)
    };
    match v {
        Value::Seq { start, step } => Resolved::Seq {
            start: *start,
            step: *step,
        },
        Value::Int { min, max } => Resolved::Int {
            min: *min,
            span: max.abs_diff(*min).wrapping_add(1),
        },
        Value::Pick(items) => Resolved::Pick(items.iter().map(|s| text(c, s)).collect()),
        Value::Uuid => Resolved::Uuid,
        Value::Now(f) => Resolved::Now(*f),
        Value::Shard => Resolved::Shard,
        Value::Worker => Resolved::Worker,
        Value::Conn => Resolved::Conn,
        Value::Row(name) => {
            let i = columns.iter().position(|c| c == name).unwrap_or_else(|| {
                columns.push(name.clone());
                columns.len() - 1
            });
            Resolved::Row(i)
        }
        Value::Text(s) => {
            let (a, b) = text(c, s);
            Resolved::Text(a, b)
        }
        // Checked before compiling: a flow's variable (refused outside a flow).
        Value::Var(name) => match vars.iter().position(|v| v == name) {
            Some(i) => Resolved::Var(i),
            None => Resolved::Text(0, 0),
        },
    }
}
