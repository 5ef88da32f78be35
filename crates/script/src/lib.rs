//! wrk's Lua scripts (`loadbench run --script FILE`, docs/coming-from.md "wrk scripts"), run
//! on LuaJIT as wrk runs them: one state for `setup` and `done`, one per worker thread for
//! `init`, `request`, `response` and `delay`.
//!
//! In: a [`ScriptSpec`] and the resolved [`Plan`]. Out: a [`Session`] whose
//! [`Session::workers`] the engine runs (a script without per-request hooks gives each worker
//! fixed request bytes, so nothing of Lua runs per request), and [`Session::done`] after the
//! run with the merged result. Every mistake in the script is one line (`file:line: …`) before
//! any load.

mod done;
mod hooks;
mod thread;

pub use hooks::{count_requests, ErrorLog, MAX_BATCH};

use hooks::LuaHooks;
use loadbench_engine::script::WorkerScript;
use loadbench_plan::{InputFile, LoadShape, Plan, ScriptSpec};
use mlua::{Function, Lua, Table, Value};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use thread::{Addr, ThreadRef};

/// A script loaded for one run: its setup state and one state per worker.
pub struct Session {
    /// Names the file in messages.
    shown: String,
    /// The state that ran `setup` and runs `done` (wrk's main state).
    main: Lua,
    /// Each worker's state, its thread object and its request formatted at init.
    workers: Vec<Worker>,
    /// The hooks' failures during the load.
    errors: Arc<ErrorLog>,
}

struct Worker {
    lua: Lua,
    thread: ThreadRef,
    request: Vec<u8>,
    head: bool,
    /// What `request()` returned when it was tried before the load: sent first.
    first: Mutex<Option<(Vec<u8>, loadbench_engine::script::Batch)>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("script", &self.shown)
            .field("workers", &self.workers.len())
            .finish()
    }
}

/// A Lua error as one line: `file:line: message` where Lua gives the place.
pub(crate) fn message(e: &mlua::Error) -> String {
    let text = match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => return message(cause),
        other => other.to_string(),
    };
    text.lines().next().unwrap_or_default().trim().to_string()
}

/// Reads and compiles the script without running it: a missing file or a syntax error as one
/// line naming the file (and line). A scenario checks its loads' scripts so when it loads.
pub fn check(spec: &ScriptSpec) -> Result<(), String> {
    let shown = spec.path.display().to_string();
    let source = InputFile::SCRIPT
        .read(&spec.path)
        .map_err(|e| e.to_string())?;
    Lua::new()
        .load(&source[..])
        .set_name(format!("@{shown}"))
        .into_function()
        .map(drop)
        .map_err(|e| format!("--script {shown}: {}", message(&e)))
}

impl Session {
    /// Reads and runs the script for `plan`: its top level in the setup state and in each
    /// worker's state, `setup(thread)` for each worker, `init(args)` in each worker's state,
    /// and one `request()` per worker state, whose result is checked (and then sent first).
    /// Refuses `delay()` in the open model. Every failure is one line naming the file.
    pub fn load(spec: &ScriptSpec, plan: &Plan) -> Result<Session, String> {
        let shown = spec.path.display().to_string();
        let source = InputFile::SCRIPT
            .read(&spec.path)
            .map_err(|e| e.to_string())?;
        let base = Base::of(plan)?;
        let main = state(&source, &shown, &base)?;
        let errors = Arc::new(ErrorLog::default());
        let mut workers = Vec::new();
        for _ in 0..plan.threads.max(1) {
            let lua = state(&source, &shown, &base)?;
            let thread = ThreadRef {
                state: lua.weak(),
                addr: Arc::new(Mutex::new(plan.target.addr)),
                stop: Arc::new(AtomicBool::new(false)),
            };
            let in_lua = |e: mlua::Error| format!("--script {shown}: {}", message(&e));
            let wrk: Table = lua.globals().get("wrk").map_err(in_lua)?;
            wrk.set("thread", thread.clone()).map_err(in_lua)?;
            if let Some(setup) = main
                .globals()
                .get::<Option<Function>>("setup")
                .map_err(in_lua)?
            {
                setup
                    .call::<()>(thread.clone())
                    .map_err(|e| format!("--script {shown}: setup: {}", message(&e)))?;
            }
            let args = lua.create_table().map_err(in_lua)?;
            args.raw_set(0, plan.target.url.as_str()).map_err(in_lua)?;
            for (i, a) in spec.args.iter().enumerate() {
                args.raw_set(i + 1, a.as_str()).map_err(in_lua)?;
            }
            let settle: Function = wrk.get("settle").map_err(in_lua)?;
            let request: mlua::LuaString = settle
                .call(args)
                .map_err(|e| format!("--script {shown}: init: {}", message(&e)))?;
            let request = request.as_bytes().to_vec();
            let head = hooks::count_requests(&request)
                .map_err(|e| format!("--script {shown}: the request wrk.method, wrk.path, wrk.headers and wrk.body make {e}"))?
                .head;
            workers.push(Worker {
                lua,
                thread,
                request,
                head,
                first: Mutex::new(None),
            });
        }
        let session = Session {
            shown,
            main,
            workers,
            errors,
        };
        session.check_hooks(plan)?;
        Ok(session)
    }

    /// `delay()` only in the closed model; `request()` tried once in each worker's state.
    fn check_hooks(&self, plan: &Plan) -> Result<(), String> {
        let shown = &self.shown;
        for w in &self.workers {
            let g = w.lua.globals();
            let open = matches!(plan.load, LoadShape::Open { .. });
            if open && g.get::<Option<Function>>("delay").ok().flatten().is_some() {
                return Err(format!(
                    "--script {shown} defines delay(), a wait between a connection's requests, which only the closed model has: leave --rate out or take delay() out of the script"
                ));
            }
            if let Some(f) = g.get::<Option<Function>>("request").ok().flatten() {
                let mut out = Vec::new();
                let batch = hooks::call_request(&f, &mut out).map_err(|e| {
                    // A runtime error names its own line; a wrong result, the function's.
                    match f
                        .info()
                        .line_defined
                        .filter(|_| !e.starts_with(shown.as_str()))
                    {
                        Some(line) => format!("--script {shown}:{line}: request() {e}"),
                        None => format!("--script {shown}: request(): {e}"),
                    }
                })?;
                *w.first.lock().unwrap_or_else(|e| e.into_inner()) = Some((out, batch));
            }
        }
        Ok(())
    }

    /// Each worker's part, in worker order: its request bytes and address, and its hooks
    /// when the script defines `request`, `response` or `delay`.
    pub fn workers(&self) -> Vec<WorkerScript> {
        self.workers
            .iter()
            .map(|w| {
                let g = w.lua.globals();
                let f = |name: &str| g.get::<Option<Function>>(name).ok().flatten();
                let (request, response, delay) = (f("request"), f("response"), f("delay"));
                let any = request.is_some() || response.is_some() || delay.is_some();
                let hooks = any.then(|| {
                    Box::new(LuaHooks {
                        lua: w.lua.clone(),
                        request,
                        response,
                        delay,
                        first: w.first.lock().unwrap_or_else(|e| e.into_inner()).take(),
                        stop: Arc::clone(&w.thread.stop),
                        errors: Arc::clone(&self.errors),
                    }) as Box<dyn loadbench_engine::script::ScriptHooks>
                });
                WorkerScript {
                    request: w.request.clone(),
                    head: w.head,
                    addr: Some(*w.thread.addr.lock().unwrap_or_else(|e| e.into_inner())),
                    hooks,
                }
            })
            .collect()
    }

    /// Whether the script defines `request()`, `response()` or `delay()`: run per request.
    pub fn per_request(&self) -> bool {
        self.workers.iter().any(|w| {
            let g = w.lua.globals();
            ["request", "response", "delay"]
                .iter()
                .any(|n| g.get::<Option<Function>>(*n).ok().flatten().is_some())
        })
    }

    /// The hooks' failures during the load: how many, and the first one's message, as one
    /// line naming the file.
    pub fn errors(&self) -> Option<String> {
        let (n, first) = self.errors.first()?;
        Some(format!(
            "--script {}: {n} call{} failed during the load; the first: {first}",
            self.shown,
            if n == 1 { "" } else { "s" }
        ))
    }

    /// wrk's `done(summary, latency, requests)` in the setup state, with the run's merged
    /// result; nothing when the script has no `done`.
    pub fn done(&self, result: &loadbench_model::RunResult) -> Result<(), String> {
        let in_lua = |e: mlua::Error| format!("--script {}: done: {}", self.shown, message(&e));
        let Some(f) = self
            .main
            .globals()
            .get::<Option<Function>>("done")
            .map_err(in_lua)?
        else {
            return Ok(());
        };
        let (summary, latency, requests) = done::arguments(&self.main, result).map_err(in_lua)?;
        let called = f.call::<()>((summary, latency, requests)).map_err(in_lua);
        // What done printed goes out now, before loadbench's report, whether stdout is a
        // terminal or a pipe (C's stdio buffers a pipe until exit).
        let _ = self.main.load("io.stdout:flush()").exec();
        called
    }
}

/// The wrk table's starting values, from the plan.
struct Base {
    scheme: &'static str,
    host: String,
    port: Option<u16>,
    path: String,
    method: String,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
}

impl Base {
    /// The URL's parts, and the method, headers (`-H`) and body (`--body`) of the plan's
    /// rendered request, but Host and Content-Length (wrk settles those itself).
    fn of(plan: &Plan) -> Result<Base, String> {
        let t = &plan.target;
        let port = url::Url::parse(&t.url).ok().and_then(|u| u.port());
        let bytes = &plan.request.bytes;
        let end = memchr::memmem::find(bytes, b"\r\n\r\n").unwrap_or(bytes.len());
        let head = String::from_utf8_lossy(&bytes[..end]);
        let mut lines = head.split("\r\n");
        let method = lines
            .next()
            .and_then(|l| l.split(' ').next())
            .unwrap_or("GET")
            .to_string();
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
            .filter(|(n, _)| {
                !n.eq_ignore_ascii_case("host") && !n.eq_ignore_ascii_case("content-length")
            })
            .collect();
        let body = bytes
            .get(end + 4..)
            .filter(|b| !b.is_empty())
            .map(<[u8]>::to_vec);
        Ok(Base {
            scheme: if t.tls { "https" } else { "http" },
            host: t.host.clone(),
            port,
            path: t.path.clone(),
            method,
            headers,
            body,
        })
    }
}

/// A new state with the wrk table and the script's top level run.
fn state(source: &[u8], shown: &str, base: &Base) -> Result<Lua, String> {
    let lua = Lua::new();
    let fail = |e: mlua::Error| format!("--script {shown}: {}", message(&e));
    let wrk = wrk_table(&lua, base).map_err(fail)?;
    let prelude = lua
        .load(include_str!("prelude.lua"))
        .set_name("=loadbench wrk table")
        .into_function()
        .map_err(fail)?;
    prelude.call::<()>(wrk.clone()).map_err(fail)?;
    lua.globals().set("wrk", wrk).map_err(fail)?;
    lua.load(source)
        .set_name(format!("@{shown}"))
        .exec()
        .map_err(fail)?;
    Ok(lua)
}

/// The wrk table's fields and its Rust functions (`lookup`, `connect`).
fn wrk_table(lua: &Lua, base: &Base) -> mlua::Result<Table> {
    let wrk = lua.create_table()?;
    wrk.set("scheme", base.scheme)?;
    wrk.set("host", base.host.as_str())?;
    wrk.set("port", base.port)?;
    wrk.set("method", base.method.as_str())?;
    wrk.set("path", base.path.as_str())?;
    let headers = lua.create_table()?;
    for (n, v) in &base.headers {
        headers.set(n.as_str(), v.as_str())?;
    }
    wrk.set("headers", headers)?;
    if let Some(b) = &base.body {
        wrk.set("body", lua.create_string(b)?)?;
    }
    wrk.set(
        "lookup",
        lua.create_function(|lua, (host, service): (String, Value)| {
            let service = match service {
                Value::Integer(i) => i.to_string(),
                Value::Number(n) => n.to_string(),
                Value::String(s) => s.to_str()?.to_string(),
                _ => "80".into(),
            };
            let port: u16 = match service.as_str() {
                "http" => 80,
                "https" => 443,
                s => s.parse().map_err(|_| {
                    mlua::Error::runtime(format!("wrk.lookup: unknown service '{s}'"))
                })?,
            };
            let out = lua.create_table()?;
            let found: Vec<SocketAddr> = (host.as_str(), port)
                .to_socket_addrs()
                .map(Iterator::collect)
                .unwrap_or_default();
            for (i, a) in found.into_iter().enumerate() {
                out.raw_set(i + 1, Addr(a))?;
            }
            Ok(out)
        })?,
    )?;
    wrk.set(
        "connect",
        lua.create_function(|_, addr: Value| {
            let a = thread::addr_of(&addr)?;
            Ok(std::net::TcpStream::connect_timeout(&a, std::time::Duration::from_secs(2)).is_ok())
        })?,
    )?;
    Ok(wrk)
}
