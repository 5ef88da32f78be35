//! wrk's `thread` object: what `setup(thread)` gets for each worker (and what the worker's own
//! state sees as `wrk.thread`): `get`/`set` read and write the worker state's globals,
//! `stop()` asks the worker to stop, `addr` is where its connections go.

use mlua::{Lua, MetaMethod, UserData, UserDataFields, UserDataMethods, Value, WeakLua};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A socket address as Lua sees it (`wrk.lookup`'s results, `thread.addr`); prints as
/// `ip:port`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Addr(pub(crate) SocketAddr);

impl UserData for Addr {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(MetaMethod::ToString, |_, a, ()| Ok(a.0.to_string()));
    }
}

/// An address given from Lua: an [`Addr`] or an `ip:port` string.
pub(crate) fn addr_of(v: &Value) -> mlua::Result<SocketAddr> {
    match v {
        Value::UserData(u) => Ok(u.borrow::<Addr>()?.0),
        Value::String(s) => {
            let text = s.to_str()?.to_string();
            text.to_socket_addrs()
                .ok()
                .and_then(|mut a| a.next())
                .ok_or_else(|| {
                    mlua::Error::runtime(format!(
                        "not an address: '{text}' (give ip:port or a wrk.lookup result)"
                    ))
                })
        }
        other => Err(mlua::Error::runtime(format!(
            "not an address: a {} (give ip:port or a wrk.lookup result)",
            other.type_name()
        ))),
    }
}

/// One worker as its `thread` object: shared between the setup state and the worker.
#[derive(Clone)]
pub(crate) struct ThreadRef {
    /// The worker's own state (weak: the session owns the states).
    pub(crate) state: WeakLua,
    /// Where the worker's connections go.
    pub(crate) addr: Arc<Mutex<SocketAddr>>,
    /// `thread:stop()` was called.
    pub(crate) stop: Arc<AtomicBool>,
}

impl UserData for ThreadRef {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_field_method_get("addr", |_, t| {
            Ok(Addr(*t.addr.lock().unwrap_or_else(|e| e.into_inner())))
        });
        fields.add_field_method_set("addr", |_, t, v: Value| {
            let a = addr_of(&v)?;
            *t.addr.lock().unwrap_or_else(|e| e.into_inner()) = a;
            Ok(())
        });
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("get", |lua, t, name: String| {
            let state = t.state()?;
            let v: Value = state.globals().get(name)?;
            copy(&v, lua, 0)
        });
        methods.add_method("set", |_, t, (name, v): (String, Value)| {
            let state = t.state()?;
            let v = copy(&v, &state, 0)?;
            state.globals().set(name, v)
        });
        methods.add_method("stop", |_, t, ()| {
            t.stop.store(true, Ordering::Relaxed);
            Ok(())
        });
    }
}

impl ThreadRef {
    fn state(&self) -> mlua::Result<Lua> {
        self.state
            .try_upgrade()
            .ok_or_else(|| mlua::Error::runtime("this thread's state is gone"))
    }
}

/// How deep a table copied between two states may nest.
const MAX_DEPTH: usize = 32;

/// `v` of one state as a value of `to` (each state has its own values): nil, booleans,
/// numbers, strings, addresses and tables of them.
pub(crate) fn copy(v: &Value, to: &Lua, depth: usize) -> mlua::Result<Value> {
    Ok(match v {
        Value::Nil => Value::Nil,
        Value::Boolean(b) => Value::Boolean(*b),
        Value::Integer(i) => Value::Integer(*i),
        Value::Number(n) => Value::Number(*n),
        Value::String(s) => Value::String(to.create_string(s.as_bytes())?),
        Value::UserData(u) if u.is::<Addr>() => {
            Value::UserData(to.create_userdata(*u.borrow::<Addr>()?)?)
        }
        Value::Table(t) if depth < MAX_DEPTH => {
            let out = to.create_table()?;
            for pair in t.pairs::<Value, Value>() {
                let (k, v) = pair?;
                out.raw_set(copy(&k, to, depth + 1)?, copy(&v, to, depth + 1)?)?;
            }
            Value::Table(out)
        }
        Value::Table(_) => {
            return Err(mlua::Error::runtime(format!(
                "thread:get/set: a table nested over {MAX_DEPTH} deep"
            )))
        }
        other => {
            return Err(mlua::Error::runtime(format!(
                "thread:get/set passes nil, booleans, numbers, strings and tables, not a {}",
                other.type_name()
            )))
        }
    })
}
