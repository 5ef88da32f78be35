//! The values' part of resolving a plan: the spec's texts marked before the usual rendering,
//! the rendered requests compiled after it, and `--data-end stop`'s request count.

use super::{resolve, Marks};
use crate::{invalid, read_body, Body, LoadSpec, Plan, PlanError, RequestSpec, Stop};

/// A copy of `spec` with every `{{ … }}` of its URLs, header values and bodies (body files
/// read) swapped for markers, found in `marks`.
pub(crate) fn mark_spec(marks: &mut Marks, spec: &LoadSpec) -> Result<LoadSpec, PlanError> {
    let mut out = spec.clone();
    let flow = spec.flow.as_ref();
    let name = |i: usize| match flow {
        Some(f) => format!("{} step '{}': ", f.source, f.steps[i].name),
        None => format!("request {} of the mix: ", i + 1),
    };
    let first = if flow.is_some() {
        name(0)
    } else {
        String::new()
    };
    let from = marks.len();
    mark_request(marks, &mut out.url, &mut out.request, &first)?;
    let mut ranges: Vec<std::ops::Range<usize>> = Vec::with_capacity(out.mix.len() + 1);
    ranges.push(from..marks.len());
    for (i, e) in out.mix.iter_mut().enumerate() {
        let from = marks.len();
        mark_request(marks, &mut e.url, &mut e.request, &name(i))?;
        ranges.push(from..marks.len());
    }
    match flow {
        None => marks.refuse_vars()?,
        Some(f) => {
            // Each step's variables must come from an earlier step's captures.
            let steps = if out.mix.is_empty() {
                &ranges[..1]
            } else {
                &ranges[1..]
            };
            for (i, range) in steps.iter().enumerate() {
                let known: Vec<String> = f.steps[..i]
                    .iter()
                    .flat_map(|s| s.captures.iter().map(|(v, _)| v.clone()))
                    .collect();
                if let Some((var, place)) = marks
                    .vars_in(range.clone())
                    .find(|(v, _)| !known.iter().any(|k| k == v))
                {
                    return Err(crate::flow::undefined_var(var, place, &known));
                }
            }
        }
    }
    Ok(out)
}

fn mark_request(
    marks: &mut Marks,
    url: &mut String,
    req: &mut RequestSpec,
    prefix: &str,
) -> Result<(), PlanError> {
    *url = marks.mark_str(url, &format!("{prefix}the URL '{url}'"))?;
    for (name, value) in &mut req.headers {
        *value = marks.mark_str(value, &format!("{prefix}header '{name}'"))?;
    }
    let place = match &req.body {
        Body::File(p) => format!("{prefix}the body file {}", p.display()),
        _ => format!("{prefix}the body"),
    };
    if let Some(bytes) = read_body(&req.body)? {
        if let std::borrow::Cow::Owned(marked) = marks.mark(&bytes, &place)? {
            req.body = Body::Bytes(marked);
        }
    }
    Ok(())
}

/// Compiles the plan's rendered requests (after [`mark_spec`]) and resolves the values
/// against the data file; `None` when the load has neither.
pub(crate) fn compile_plan(
    marks: &mut Marks,
    spec: &LoadSpec,
    plan: &mut Plan,
) -> Result<Option<super::Values>, PlanError> {
    if marks.has_marker_in(&plan.target.authority) {
        return Err(invalid(format!(
            "the URL '{}' has a value in its host: values go in the path, query, headers and body; give a fixed host",
            spec.url
        )));
    }
    let mut columns = Vec::new();
    let requests = if plan.target.websocket {
        vec![compile_ws_message(marks, &plan.request, &mut columns)?]
    } else if plan.mix.is_empty() {
        vec![compile_one(marks, &plan.request, &mut columns)?]
    } else {
        plan.mix
            .iter()
            .map(|e| compile_one(marks, &e.request, &mut columns))
            .collect::<Result<_, _>>()?
    };
    // For the record: URLs and headers as the user wrote them.
    plan.target.url = marks.unmark(&plan.target.url);
    plan.target.path = marks.unmark(&plan.target.path);
    let unmark_all = |r: &mut crate::RequestTemplate| {
        for h in &mut r.headers {
            *h = marks.unmark(h);
        }
    };
    unmark_all(&mut plan.request);
    for e in &mut plan.mix {
        e.url = marks.unmark(&e.url);
        unmark_all(&mut e.request);
    }
    let mut flow = match &spec.flow {
        Some(f) => Some(crate::flow::resolve(f, marks, &mut columns)?),
        None => None,
    };
    let mut texts: Vec<&mut super::Compiled> = flow
        .iter_mut()
        .flat_map(|f| f.steps.iter_mut())
        .flat_map(|s| s.texts_mut())
        .collect();
    let values = resolve(
        &spec.values,
        requests,
        columns,
        &mut texts,
        spec.flow.is_some(),
    )?;
    plan.flow = flow;
    Ok(values)
}

fn compile_one(
    marks: &Marks,
    req: &crate::RequestTemplate,
    columns: &mut Vec<String>,
) -> Result<Option<super::Compiled>, PlanError> {
    if marks.is_empty() {
        return Ok(None);
    }
    let body_at = req.bytes.len() - req.body_len as usize;
    let c = marks.compile(&req.bytes, body_at, columns)?;
    if c.as_ref().is_some_and(|c| c.body.is_some())
        && req
            .headers
            .iter()
            .any(|h| h.to_ascii_lowercase().starts_with("content-length:"))
    {
        return Err(invalid(
            "a body with values changes its length per request: leave the Content-Length header out (loadbench writes it)",
        ));
    }
    Ok(c)
}

/// A WebSocket load's message (the body) with values, compiled alone: each message is
/// assembled from it, framed per message. The upgrade is sent once per connection, so values
/// in the URL's path or query or in a header are refused.
fn compile_ws_message(
    marks: &Marks,
    req: &crate::RequestTemplate,
    columns: &mut Vec<String>,
) -> Result<Option<super::Compiled>, PlanError> {
    let body_at = req.bytes.len() - req.body_len as usize;
    let (head, body) = req.bytes.split_at(body_at);
    if marks.has_marker(head) {
        return Err(invalid(
            "per-request values ({{ … }}) in a WebSocket URL or header: the upgrade is sent once per connection; put the values in the message (--body, --body-file), or give a fixed URL and headers",
        ));
    }
    if !marks.has_marker(body) {
        return Ok(None);
    }
    marks.compile_text(body, columns).map(Some)
}

/// `--data-end stop`: the run is each of this shard's rows once, so its request count is
/// their number; refuses what would break "each row exactly once".
pub(crate) fn apply_row_budget(plan: &mut Plan, spec: &LoadSpec) -> Result<(), PlanError> {
    let Some(rows) = plan.values.as_ref().and_then(super::Values::row_budget) else {
        return Ok(());
    };
    let file = spec
        .values
        .data
        .as_ref()
        .map(|d| d.path.display().to_string())
        .unwrap_or_default();
    if let Stop::Requests(n) = spec.stop {
        return Err(invalid(format!(
            "-n {n} and --data-end stop both set the request count (--data {file} gives {rows}): leave -n out"
        )));
    }
    if !spec.warmup.is_zero() {
        return Err(invalid(format!(
            "--data-end stop sends each row of --data {file} once, but a warm-up would take rows too: leave --warmup out"
        )));
    }
    if let crate::LoadShape::Closed { connections } = spec.load {
        if rows < u64::from(connections) {
            return Err(invalid(format!(
                "--data {file} has {rows} rows for this load and --data-end stop sends each once: fewer than -c {connections}; lower -c to {rows} or below"
            )));
        }
    }
    plan.stop = Stop::Requests(rows);
    Ok(())
}
