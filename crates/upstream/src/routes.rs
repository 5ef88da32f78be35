//! What each URL answers. A request is resolved to a `Route` (the unit of the statistics), its
//! delay is chosen (path, then `delay=` query, then the server default), and the answer is
//! either a response or a `Fault` that the connection driver carries out on the raw socket.
//! Ordinary answers may also wait for a slot (`max_concurrency`) and for the end of a stall
//! window (hiccup). Answers with nothing to wait for are ready at once, so the plaintext path
//! allocates no future and takes no lock. With `keep_abandoned`, an answer that waits runs as
//! its own task (see `abandon`), so it is finished even if its client leaves.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::header::{
    HeaderName, HeaderValue, ALLOW, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE,
};
use hyper::{Method, Request, Response, StatusCode};
use tokio::time::Instant;

use crate::abandon::Abandoned;
use crate::body::ResponseBody;
use crate::conn::Fault;
use crate::echoed::{EchoLog, Echoed};
use crate::hiccup::{parse_hiccup, Hiccup};
use crate::limit::Limit;
use crate::login::{user_of, Refused, Session, Sessions};
use crate::rng::{Rng, DEFAULT_SEED};
use crate::stats::{Counters, Stats};
use crate::units::{parse_delay, parse_size, percent_decode, DelaySpec};

/// Bodies larger than this (`/bytes`, `/chunked`, `/fault/slow`) are refused with a 400.
pub const MAX_BODY: u64 = 1 << 30;
/// `/echo` refuses request bodies larger than this with a 413.
const ECHO_LIMIT: usize = 16 << 20;
/// `/login` refuses request bodies larger than this with a 413.
const LOGIN_LIMIT: usize = 64 << 10;
const JSON_BODY: &[u8] = br#"{"message":"OK","status":200,"data":1}"#;

/// A route pattern: what `/stats` counts by. `Stats` itself is not counted, so it is last and
/// outside `ALL`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Root,
    Json,
    Bytes,
    Delay,
    Status,
    Chunked,
    Echo,
    Login,
    Me,
    FaultReset,
    FaultClose,
    FaultStall,
    FaultMalformed,
    FaultShort,
    FaultSlow,
    Unmatched,
    /// `/ws`: WebSocket messages echoed (each message counts once; see `ws.rs`).
    Ws,
    /// gRPC calls, at any path (see `grpc.rs`).
    Grpc,
    Stats,
}

impl Route {
    pub(crate) const ALL: [Route; 18] = [
        Route::Root,
        Route::Json,
        Route::Bytes,
        Route::Delay,
        Route::Status,
        Route::Chunked,
        Route::Echo,
        Route::Login,
        Route::Me,
        Route::FaultReset,
        Route::FaultClose,
        Route::FaultStall,
        Route::FaultMalformed,
        Route::FaultShort,
        Route::FaultSlow,
        Route::Unmatched,
        Route::Ws,
        Route::Grpc,
    ];

    pub(crate) fn pattern(self) -> &'static str {
        match self {
            Route::Root => "/",
            Route::Json => "/json",
            Route::Bytes => "/bytes",
            Route::Delay => "/delay",
            Route::Status => "/status",
            Route::Chunked => "/chunked",
            Route::Echo => "/echo",
            Route::Login => "/login",
            Route::Me => "/me",
            Route::FaultReset => "/fault/reset",
            Route::FaultClose => "/fault/close",
            Route::FaultStall => "/fault/stall",
            Route::FaultMalformed => "/fault/malformed",
            Route::FaultShort => "/fault/short",
            Route::FaultSlow => "/fault/slow",
            Route::Unmatched => "unmatched",
            Route::Ws => "/ws",
            Route::Grpc => "grpc",
            Route::Stats => "/stats",
        }
    }

    /// The route and the path parameter after its pattern (`/bytes/1k` -> `(Bytes, "1k")`).
    pub(crate) fn resolve(path: &str) -> (Route, &str) {
        if path == "/" {
            return (Route::Root, "");
        }
        // CONNECT's authority form has an empty path, OPTIONS may have `*`.
        let path = path.strip_prefix('/').unwrap_or(path);
        let (head, param) = path.split_once('/').unwrap_or((path, ""));
        let route = match head {
            "json" if param.is_empty() => Route::Json,
            "bytes" => Route::Bytes,
            "delay" => Route::Delay,
            "status" => Route::Status,
            "chunked" => Route::Chunked,
            "echo" if param.is_empty() => Route::Echo,
            "login" if param.is_empty() => Route::Login,
            "me" if param.is_empty() => Route::Me,
            "stats" => Route::Stats,
            "fault" => return (Self::fault_route(param), ""),
            _ => Route::Unmatched,
        };
        (route, param)
    }

    fn fault_route(name: &str) -> Route {
        match name {
            "reset" => Route::FaultReset,
            "close" => Route::FaultClose,
            "stall" => Route::FaultStall,
            "malformed" => Route::FaultMalformed,
            "short" => Route::FaultShort,
            "slow" => Route::FaultSlow,
            _ => Route::Unmatched,
        }
    }

    fn fault(self) -> Option<Fault> {
        match self {
            Route::FaultReset => Some(Fault::Reset),
            Route::FaultClose => Some(Fault::Close),
            Route::FaultStall => Some(Fault::Stall),
            Route::FaultMalformed => Some(Fault::Malformed),
            Route::FaultShort => Some(Fault::Short),
            _ => None,
        }
    }

    /// Ordinary routes are the ones `fail_rate` may turn into 500s, and the ones the
    /// concurrency limit and hiccups hold back.
    fn is_ordinary(self) -> bool {
        !matches!(self, Route::Stats) && !self.pattern().starts_with("/fault/")
    }
}

/// Server-wide options and state shared by every connection.
#[derive(Debug)]
pub(crate) struct App {
    pub(crate) counters: Counters,
    rng: Rng,
    pub(crate) options: Options,
    /// The slots of `max_concurrency`, when set.
    limit: Option<Arc<Limit>>,
    /// With `keep_abandoned`: answers that wait run on as tasks; their count.
    abandoned: Option<Arc<Abandoned>>,
    /// Server start: hiccup windows are counted from here.
    pub(crate) epoch: Instant,
    /// The first requests `/echo` received (`Server::echoed`).
    pub(crate) echoed: Arc<EchoLog>,
    /// The tokens `/login` issued and their `/me` counts (`Server::logins`).
    pub(crate) sessions: Arc<Sessions>,
}

/// The server options that shape answers (see `ServerConfig`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Options {
    pub(crate) delay: Option<DelaySpec>,
    pub(crate) body_size: Option<u64>,
    pub(crate) status: Option<u16>,
    pub(crate) fail_rate: f64,
    pub(crate) max_concurrency: Option<usize>,
    pub(crate) hiccup: Option<Hiccup>,
    pub(crate) keep_abandoned: bool,
}

/// A request body the routes can read: hyper's (HTTP/1.1, HTTP/2) or an HTTP/3 stream's
/// (`h3.rs`), so every protocol goes through the one [`App::handle`].
pub(crate) trait RequestBody:
    hyper::body::Body<Data = Bytes, Error: std::fmt::Display> + Send + Unpin + 'static
{
}

impl<B> RequestBody for B where
    B: hyper::body::Body<Data = Bytes, Error: std::fmt::Display> + Send + Unpin + 'static
{
}

/// What a request turns into: a response, or a fault for the connection driver.
pub(crate) type Outcome = Result<Response<ResponseBody>, Fault>;

/// The service future: ready at once unless the answer waits (delay, `/echo` body).
pub(crate) enum Reply {
    Ready(Option<Outcome>),
    Later(Pin<Box<dyn Future<Output = Outcome> + Send>>),
}

impl Future for Reply {
    type Output = Outcome;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        match self.get_mut() {
            Reply::Ready(outcome) => Poll::Ready(outcome.take().expect("Reply polled after end")),
            Reply::Later(future) => future.as_mut().poll(cx),
        }
    }
}

impl Reply {
    /// This reply with one more header on its response (a fault stays a fault).
    pub(crate) fn with_header(self, name: HeaderName, value: HeaderValue) -> Reply {
        let add = move |mut response: Response<ResponseBody>| {
            response.headers_mut().insert(name, value);
            response
        };
        match self {
            Reply::Ready(outcome) => Reply::Ready(outcome.map(|o| o.map(add))),
            Reply::Later(future) => Reply::Later(Box::pin(async move { future.await.map(add) })),
        }
    }
}

/// The work left once the route and delay are known.
enum Work {
    Done(Outcome),
    Echo,
    Login,
    Me,
}

/// What an answer waits for, in order: a slot, the delay, then the end of a stall window.
struct Wait<'a> {
    limit: Option<&'a Arc<Limit>>,
    delay: Option<Duration>,
    hiccup: Option<Hiccup>,
    epoch: Instant,
    /// `Some` with `keep_abandoned`: the wait goes on after the client has gone.
    keep: Option<&'a Arc<Abandoned>>,
}

impl Wait<'_> {
    /// Whether a ready answer can go out now: no delay, no open stall window, a free slot
    /// (taken and given back at once, as the answer is complete). Without a limit or a hiccup
    /// this is two `None` checks.
    fn passes_now(&self) -> bool {
        if self.delay.is_some() {
            return false;
        }
        if let Some(hiccup) = self.hiccup {
            if hiccup.window_end(self.epoch, Instant::now()).is_some() {
                return false;
            }
        }
        // A ready answer never overtakes requests queued for a slot.
        self.limit.is_none_or(|limit| limit.pass_now())
    }

    /// The answer after the wait; with `keep_abandoned`, from a task that outlives the client.
    fn then(self, work: impl Future<Output = Outcome> + Send + 'static) -> Reply {
        let Some(keep) = self.keep.cloned() else {
            return Reply::Later(Box::pin(self.serve(work)));
        };
        let answer = keep.keep(self.serve(work));
        Reply::Later(Box::pin(async move {
            let stopped = || text(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
            answer.await.unwrap_or_else(|| Ok(stopped()))
        }))
    }

    /// Waits, runs `work`, waits out any stall window, then answers; the slot is held from
    /// before the delay until the response (with its body) is produced. Times are nominal:
    /// the delay counts from the start the slot gives (see `Limit`), and the slot is given
    /// back as ending at start + delay (+ the time `work` took), or at the end of the stall.
    fn serve(
        self,
        work: impl Future<Output = Outcome> + Send + 'static,
    ) -> impl Future<Output = Outcome> + Send + 'static {
        let Wait {
            limit,
            delay,
            hiccup,
            epoch,
            keep: _,
        } = self;
        let limit = limit.cloned();
        async move {
            let arrived = Instant::now();
            let mut slot = match &limit {
                Some(limit) => Some(limit.acquire(arrived).await),
                None => None,
            };
            let mut end = slot.as_ref().map_or(arrived, |slot| slot.start());
            if let Some(delay) = delay {
                end += delay;
                tokio::time::sleep_until(end).await;
            }
            let working = Instant::now();
            let outcome = work.await;
            end += working.elapsed();
            if let Some(hiccup) = hiccup {
                if let Some(stall_end) = hiccup.wait_out(epoch).await {
                    end = end.max(stall_end);
                }
            }
            if let Some(slot) = &mut slot {
                slot.finish(end);
            }
            outcome
        }
    }
}

impl App {
    pub(crate) fn new(options: Options) -> Self {
        Self {
            counters: Counters::default(),
            rng: Rng::new(DEFAULT_SEED),
            limit: options.max_concurrency.map(|n| Arc::new(Limit::new(n))),
            abandoned: options.keep_abandoned.then(Arc::default),
            options,
            epoch: Instant::now(),
            echoed: Arc::default(),
            sessions: Arc::default(),
        }
    }

    /// Ordinary requests holding a slot, and waiting for one, right now (0 without
    /// `max_concurrency`).
    fn gauges(&self) -> (u64, u64) {
        self.limit.as_ref().map_or((0, 0), |limit| {
            (limit.in_service() as u64, limit.queued() as u64)
        })
    }

    /// The counters, with the `in_service` and `queued` gauges.
    pub(crate) fn snapshot(&self) -> Stats {
        let (in_service, queued) = self.gauges();
        Stats {
            in_service,
            queued,
            abandoned_completed: self.abandoned.as_ref().map_or(0, |a| a.completed()),
            ..self.counters.snapshot()
        }
    }

    /// Zeroes the counters and returns what they held (the gauges are not counters).
    pub(crate) fn reset(&self) -> Stats {
        let (in_service, queued) = self.gauges();
        Stats {
            in_service,
            queued,
            abandoned_completed: self.abandoned.as_ref().map_or(0, |a| a.reset()),
            ..self.counters.reset()
        }
    }

    /// The request just counted came over this protocol (HTTP/1.x has no counter of its own:
    /// it is the rest of the total).
    fn count_protocol(&self, version: hyper::Version) {
        match version {
            hyper::Version::HTTP_2 => self.counters.hit_h2(),
            hyper::Version::HTTP_3 => self.counters.hit_h3(),
            _ => {}
        }
    }

    /// The whole request handling, whatever the protocol: route, count, choose the delay,
    /// answer.
    pub(crate) fn handle(&self, req: Request<impl RequestBody>) -> Reply {
        if crate::grpc::is_grpc(&req) {
            self.counters.hit(Route::Grpc);
            self.count_protocol(req.version());
            return Reply::Later(Box::pin(async { Ok(crate::grpc::answer(req).await) }));
        }
        let (route, param) = Route::resolve(req.uri().path());
        if route == Route::Stats {
            return Reply::Ready(Some(Ok(self.stats(req.method(), param))));
        }
        self.counters.hit(route);
        self.count_protocol(req.version());
        match self.prepare(route, param, req.uri().query()) {
            Ok((wait, Work::Done(outcome))) if wait.passes_now() => Reply::Ready(Some(outcome)),
            Ok((wait, Work::Done(outcome))) => wait.then(async { outcome }),
            Ok((wait, Work::Echo)) => {
                let log = Arc::clone(&self.echoed);
                wait.then(async move { Ok(echo(req, &log).await) })
            }
            Ok((wait, Work::Login)) if req.method() == Method::POST => {
                let sessions = Arc::clone(&self.sessions);
                wait.then(async move { Ok(login(req, &sessions).await) })
            }
            Ok((wait, Work::Login)) => {
                let outcome = Ok(post_only());
                match wait.passes_now() {
                    true => Reply::Ready(Some(outcome)),
                    false => wait.then(async { outcome }),
                }
            }
            Ok((wait, Work::Me)) => {
                let authorization = req.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
                let outcome = Ok(me(self.sessions.authorise(authorization)));
                match wait.passes_now() {
                    true => Reply::Ready(Some(outcome)),
                    false => wait.then(async { outcome }),
                }
            }
            Err(message) => Reply::Ready(Some(Ok(text(StatusCode::BAD_REQUEST, message)))),
        }
    }

    fn prepare(
        &self,
        route: Route,
        param: &str,
        query: Option<&str>,
    ) -> Result<(Wait<'_>, Work), String> {
        let ordinary = route.is_ordinary();
        let wait = Wait {
            limit: self.limit.as_ref().filter(|_| ordinary),
            delay: self.delay(route, param, query)?,
            hiccup: if ordinary { self.hiccup(query)? } else { None },
            epoch: self.epoch,
            keep: self.abandoned.as_ref(),
        };
        if ordinary && self.should_fail() {
            return Ok((wait, Work::Done(Ok(injected_failure()))));
        }
        Ok((wait, self.work(route, param, query)?))
    }

    /// The `hiccup=` query, else the server's hiccup; windows always count from server start.
    fn hiccup(&self, query: Option<&str>) -> Result<Option<Hiccup>, String> {
        match query_param(query, "hiccup") {
            Some(value) => parse_hiccup(&value).map(Some).map_err(|e| e.to_string()),
            None => Ok(self.options.hiccup),
        }
    }

    /// Path delay for `/delay/{d}`, else the `delay=` query, else the server default.
    fn delay(
        &self,
        route: Route,
        param: &str,
        query: Option<&str>,
    ) -> Result<Option<Duration>, String> {
        let spec = match (route, query_param(query, "delay")) {
            (Route::Delay, _) => Some(parse_delay(param).map_err(|e| e.to_string())?),
            (_, Some(value)) => Some(parse_delay(&value).map_err(|e| e.to_string())?),
            (_, None) => self.options.delay,
        };
        let delay = spec.map(|s| s.sample(&self.rng));
        Ok(delay.filter(|d| !d.is_zero()))
    }

    fn should_fail(&self) -> bool {
        let rate = self.options.fail_rate;
        rate >= 1.0 || (rate > 0.0 && self.rng.next_f64() < rate)
    }

    fn work(&self, route: Route, param: &str, query: Option<&str>) -> Result<Work, String> {
        if let Some(fault) = route.fault() {
            return Ok(Work::Done(Err(fault)));
        }
        let response = match route {
            Route::Root | Route::Delay => self.root(),
            Route::Json => with_type(StatusCode::OK, ResponseBody::from_static(JSON_BODY), json()),
            Route::Bytes => plain(StatusCode::OK, ResponseBody::sized(body_size(param)?)),
            Route::Chunked => plain(StatusCode::OK, ResponseBody::chunked(body_size(param)?)),
            Route::Status => status_response(param)?,
            Route::FaultSlow => slow(query)?,
            Route::Echo => return Ok(Work::Echo),
            Route::Login => return Ok(Work::Login),
            Route::Me => return Ok(Work::Me),
            _ => text(StatusCode::NOT_FOUND, "not found"),
        };
        Ok(Work::Done(Ok(response)))
    }

    /// `/`: `hello world`, or the configured default size and status.
    fn root(&self) -> Response<ResponseBody> {
        let status = self
            .options
            .status
            .and_then(|s| StatusCode::from_u16(s).ok());
        let body = match self.options.body_size {
            Some(size) => ResponseBody::sized(size),
            None => ResponseBody::from_static(b"hello world"),
        };
        plain(status.unwrap_or(StatusCode::OK), body)
    }

    /// `GET /stats` shows the counters; `POST /stats/reset` zeroes them and shows what they held.
    fn stats(&self, method: &Method, param: &str) -> Response<ResponseBody> {
        let stats = match (method, param) {
            (&Method::GET | &Method::HEAD, "") => self.snapshot(),
            (&Method::POST, "reset") => self.reset(),
            (_, "reset") => return text(StatusCode::METHOD_NOT_ALLOWED, "use POST /stats/reset"),
            _ => return text(StatusCode::NOT_FOUND, "not found"),
        };
        let body = ResponseBody::once(Bytes::from(stats.to_json()));
        with_type(StatusCode::OK, body, json())
    }
}

/// The first value of `key` in a query string, percent-decoded.
fn query_param<'a>(query: Option<&'a str>, key: &str) -> Option<std::borrow::Cow<'a, str>> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| percent_decode(v))
}

fn body_size(param: &str) -> Result<u64, String> {
    let size = parse_size(&percent_decode(param)).map_err(|e| e.to_string())?;
    if size > MAX_BODY {
        return Err(format!("size {param:?} is too large: at most 1GiB"));
    }
    Ok(size)
}

/// `/status/{code}`: any code from 200 to 599, with its reason phrase as the body.
fn status_response(param: &str) -> Result<Response<ResponseBody>, String> {
    let status = param
        .parse::<u16>()
        .ok()
        .filter(|c| (200..=599).contains(c))
        .and_then(|c| StatusCode::from_u16(c).ok())
        .ok_or_else(|| format!("status {param:?} is not a code from 200 to 599"))?;
    let reason = status.canonical_reason().unwrap_or("");
    let body = match status {
        StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED => ResponseBody::from_static(b""),
        _ => ResponseBody::from_static(reason.as_bytes()),
    };
    Ok(plain(status, body))
}

/// `/fault/slow?bps=N&size=S`: `size` (default 1 KiB) bytes at `bps` (default 1 KiB) per second.
fn slow(query: Option<&str>) -> Result<Response<ResponseBody>, String> {
    let size = query_param(query, "size").map_or(Ok(1024), |s| body_size(&s))?;
    let bps = match query_param(query, "bps") {
        Some(s) => parse_size(&s).map_err(|e| e.to_string())?,
        None => 1024,
    };
    if bps == 0 {
        return Err("bps must be at least 1".into());
    }
    Ok(plain(StatusCode::OK, ResponseBody::slow(size, bps)))
}

fn injected_failure() -> Response<ResponseBody> {
    text(
        StatusCode::INTERNAL_SERVER_ERROR,
        "injected failure (--fail-rate)",
    )
}

fn text(status: StatusCode, message: impl Into<String>) -> Response<ResponseBody> {
    plain(status, ResponseBody::once(Bytes::from(message.into())))
}

fn plain(status: StatusCode, body: ResponseBody) -> Response<ResponseBody> {
    with_type(status, body, HeaderValue::from_static("text/plain"))
}

fn json() -> HeaderValue {
    HeaderValue::from_static("application/json")
}

fn with_type(
    status: StatusCode,
    body: ResponseBody,
    content_type: HeaderValue,
) -> Response<ResponseBody> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, content_type);
    response
}

/// `/echo`: the request as JSON — `method`, `path`, `query` (or null), `version`, `headers`
/// (an object; repeated headers joined with `, `), `body` (UTF-8, lossy) and `body_len`.
async fn echo(req: Request<impl RequestBody>, log: &EchoLog) -> Response<ResponseBody> {
    let (parts, body) = req.into_parts();
    let body = match read_body(body).await {
        Ok(body) => body,
        Err(e) => return text(StatusCode::PAYLOAD_TOO_LARGE, e),
    };
    log.keep(|| Echoed {
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().map(str::to_string),
        headers: (parts.headers.iter())
            .map(|(n, v)| {
                (
                    n.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: body.clone(),
    });
    let mut headers = serde_json::Map::new();
    for (name, value) in &parts.headers {
        let value = String::from_utf8_lossy(value.as_bytes());
        match headers.get_mut(name.as_str()) {
            Some(serde_json::Value::String(prev)) => {
                prev.push_str(", ");
                prev.push_str(&value);
            }
            _ => drop(headers.insert(name.as_str().into(), value.into())),
        }
    }
    let echoed = serde_json::json!({
        "method": parts.method.as_str(),
        "path": parts.uri.path(),
        "query": parts.uri.query(),
        "version": format!("{:?}", parts.version),
        "headers": headers,
        "body": String::from_utf8_lossy(&body),
        "body_len": body.len(),
    });
    with_type(
        StatusCode::OK,
        ResponseBody::once(echoed.to_string().into()),
        json(),
    )
}

/// `POST /login`: a fresh token for the user the body names (see `login::user_of`), as
/// `{"token":…,"user":…}` and in `X-Token`.
async fn login(req: Request<impl RequestBody>, sessions: &Sessions) -> Response<ResponseBody> {
    let body = match read_limited(req.into_body(), LOGIN_LIMIT, "/login: at most 64KiB").await {
        Ok(body) => body,
        Err(e) => return text(StatusCode::PAYLOAD_TOO_LARGE, e),
    };
    let user = user_of(&body);
    let token = sessions.login(user.clone());
    let answer = serde_json::json!({ "token": token, "user": user });
    let mut response = json_response(StatusCode::OK, &answer);
    if let Ok(value) = HeaderValue::from_str(&token) {
        response.headers_mut().insert("x-token", value);
    }
    response
}

/// `/login` with another method than POST: 405 naming the one it takes.
fn post_only() -> Response<ResponseBody> {
    let answer = serde_json::json!({ "error": "use POST /login" });
    let mut response = json_response(StatusCode::METHOD_NOT_ALLOWED, &answer);
    (response.headers_mut()).insert(ALLOW, HeaderValue::from_static("POST"));
    response
}

/// `/me` (any method): the token's user and its authorised requests so far, or a 401.
fn me(authorised: Result<(String, Session), Refused>) -> Response<ResponseBody> {
    let (challenge, error) = match authorised {
        Ok((token, session)) => {
            let answer = serde_json::json!({
                "user": session.user,
                "token": token,
                "requests": session.requests,
            });
            return json_response(StatusCode::OK, &answer);
        }
        Err(Refused::Missing) => ("Bearer", "missing bearer token"),
        Err(Refused::Unknown) => ("Bearer error=\"invalid_token\"", "unknown token"),
    };
    let answer = serde_json::json!({ "error": error });
    let mut response = json_response(StatusCode::UNAUTHORIZED, &answer);
    (response.headers_mut()).insert(WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    response
}

fn json_response(status: StatusCode, value: &serde_json::Value) -> Response<ResponseBody> {
    with_type(status, ResponseBody::once(value.to_string().into()), json())
}

async fn read_body(body: impl RequestBody) -> Result<Vec<u8>, String> {
    read_limited(body, ECHO_LIMIT, "/echo: at most 16MiB").await
}

/// The whole request body, or an error once it passes `limit` bytes.
pub(crate) async fn read_limited(
    mut body: impl RequestBody,
    limit: usize,
    what: &str,
) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let frame = frame.map_err(|e| format!("cannot read the request body: {e}"))?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > limit {
                return Err(format!("request body too large for {what}"));
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_to_patterns_and_parameters() {
        let cases = [
            ("/", Route::Root, ""),
            ("/json", Route::Json, ""),
            ("/bytes/1k", Route::Bytes, "1k"),
            ("/delay/uniform:1ms..2ms", Route::Delay, "uniform:1ms..2ms"),
            ("/status/418", Route::Status, "418"),
            ("/fault/reset", Route::FaultReset, ""),
            ("/login", Route::Login, ""),
            ("/me", Route::Me, ""),
            ("/me/x", Route::Unmatched, "x"),
            ("/fault/nope", Route::Unmatched, ""),
            ("/stats/reset", Route::Stats, "reset"),
            ("/json/extra", Route::Unmatched, "extra"),
            ("/nothing", Route::Unmatched, ""),
            ("", Route::Unmatched, ""),
            ("*", Route::Unmatched, ""),
        ];
        for (path, route, param) in cases {
            assert_eq!(Route::resolve(path), (route, param), "{path}");
        }
    }

    #[test]
    fn query_params_are_found_and_decoded() {
        let query = Some("a=1&delay=exp%3A20ms&size=1k");
        assert_eq!(query_param(query, "delay").unwrap(), "exp:20ms");
        assert_eq!(query_param(query, "size").unwrap(), "1k");
        assert!(query_param(query, "bps").is_none());
        assert!(query_param(None, "delay").is_none());
    }

    #[test]
    fn fault_routes_are_not_ordinary() {
        assert!(Route::Json.is_ordinary() && Route::Unmatched.is_ordinary());
        assert!(!Route::FaultSlow.is_ordinary() && !Route::Stats.is_ordinary());
    }
}
