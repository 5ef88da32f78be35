//! The executor's HTTP endpoints, served by hyper on a one-thread tokio runtime: every call is
//! a small JSON POST answered at once (loads run on their own threads), so one thread is plenty.

use crate::jobs::Agent;
use crate::protocol::{self, JobIdParam, LogParam, TriggerParam};
use crate::AgentError;
use hyper::body::{Body as _, Incoming};
use hyper::{Request, Response};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::convert::Infallible;
use std::net::TcpListener;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The largest request body read (a trigger with a long parameter line is a few KiB).
const MAX_BODY: usize = 1 << 20;

/// Serves until `shutdown` is raised (checked every 100 ms).
pub(crate) fn serve(
    listener: TcpListener,
    agent: Arc<Agent>,
    shutdown: &AtomicBool,
) -> Result<(), AgentError> {
    let addr = listener
        .local_addr()
        .map_err(|source| listen_error(&agent, source))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| AgentError::Listen { addr, source })?;
    listener
        .set_nonblocking(true)
        .map_err(|source| AgentError::Listen { addr, source })?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener)
            .map_err(|source| AgentError::Listen { addr, source })?;
        while !shutdown.load(Ordering::Relaxed) {
            let Ok(accepted) =
                tokio::time::timeout(Duration::from_millis(100), listener.accept()).await
            else {
                continue;
            };
            if let Ok((stream, _)) = accepted {
                tokio::spawn(connection(stream, Arc::clone(&agent)));
            }
        }
        Ok(())
    })
}

fn listen_error(agent: &Agent, source: std::io::Error) -> AgentError {
    AgentError::Listen {
        addr: agent.config.listen,
        source,
    }
}

async fn connection(stream: tokio::net::TcpStream, agent: Arc<Agent>) {
    let service = hyper::service::service_fn(move |req| answer(req, Arc::clone(&agent)));
    let io = hyper_util::rt::TokioIo::new(stream);
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(io, service)
        .await;
}

async fn answer(req: Request<Incoming>, agent: Arc<Agent>) -> Result<Response<String>, Infallible> {
    let path = req.uri().path().to_string();
    let token = req
        .headers()
        .get("XXL-JOB-ACCESS-TOKEN")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let reply = match read_body(req.into_body()).await {
        Ok(body) => dispatch(&agent, &path, token.as_deref(), &body),
        Err(e) => protocol::fail(e),
    };
    let response = Response::builder()
        .header("Content-Type", "application/json;charset=UTF-8")
        .body(reply.to_string())
        .unwrap_or_default();
    Ok(response)
}

async fn read_body(mut body: Incoming) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame.map_err(|e| format!("the request body could not be read: {e}"))?;
        if let Ok(data) = frame.into_data() {
            out.extend_from_slice(&data);
        }
        if out.len() > MAX_BODY {
            return Err(format!("the request body is over {MAX_BODY} bytes"));
        }
    }
    Ok(out)
}

/// Token first (as xxl-job does), then the operation named by the path's last segment (the
/// registered address may carry a path prefix).
fn dispatch(agent: &Arc<Agent>, path: &str, token: Option<&str>, body: &[u8]) -> Value {
    if agent.token().is_some_and(|want| token != Some(want)) {
        return protocol::wrong_token();
    }
    let op = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    let result = match op {
        "beat" => Ok(protocol::ok()),
        "idleBeat" => parse::<JobIdParam>(body).map(|p| agent.idle_beat(&p)),
        "run" => parse::<TriggerParam>(body).map(|t| agent.trigger(t)),
        "kill" => parse::<JobIdParam>(body).map(|p| agent.kill(&p)),
        "log" => parse::<LogParam>(body).map(|p| agent.log(&p)),
        _ => Err(format!("invalid request, uri-mapping({path}) not found.")),
    };
    result.unwrap_or_else(protocol::fail)
}

fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    let body = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}".as_slice()
    } else {
        body
    };
    serde_json::from_slice(body)
        .map_err(|e| format!("the request body is not the expected JSON: {e}"))
}
