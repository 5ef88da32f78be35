//! A login flow for tests of captured values: `POST /login` issues a token, `/me` accepts it
//! as `Authorization: Bearer <token>` and counts the authorised requests per token.
//!
//! A token is `t<id>-<16 hex digits>`: `id` counts the logins of this server run (so tokens
//! are unique per run), the hex digits are random (seeded from the clock and the process id,
//! so a token of another run is unknown here). The table is one `Mutex<HashMap>` keyed by
//! `id`: the backend, not the generator, so a lock per `/login` and `/me` is cheap enough. It
//! keeps at most [`TOKENS_KEPT`] tokens: issuing one more forgets the oldest, whose `/me`
//! requests then answer 401 like any unknown token, so a long load of logins stays bounded
//! in memory (about 100 bytes a token).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::rng::Rng;

/// At most this many tokens are kept (the newest); an older one answers 401.
pub const TOKENS_KEPT: u64 = 1_000_000;

/// User names longer than this (in bytes) are cut to it.
const MAX_USER: usize = 256;

/// One issued token as the server keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The user named at login (`anonymous` when none was given).
    pub user: String,
    /// Authorised requests to `/me` with this token so far.
    pub requests: u64,
}

/// What the login routes saw, for tests: every kept token with its user and its count of
/// authorised `/me` requests, and the requests refused with 401.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Logins {
    /// Tokens issued since start (those forgotten past [`TOKENS_KEPT`] included).
    pub issued: u64,
    /// The kept tokens, by token.
    pub tokens: BTreeMap<String, Session>,
    /// `/me` requests answered 401 (no bearer token, or one this server does not know).
    pub unauthorized: u64,
}

impl Logins {
    /// The authorised `/me` requests made with `token`, `None` for a token not kept.
    pub fn requests(&self, token: &str) -> Option<u64> {
        self.tokens.get(token).map(|s| s.requests)
    }

    /// Authorised `/me` requests over all kept tokens.
    pub fn authorised(&self) -> u64 {
        self.tokens.values().map(|s| s.requests).sum()
    }
}

#[derive(Debug)]
struct Entry {
    secret: u64,
    session: Session,
}

/// The token table shared by every connection.
#[derive(Debug)]
pub(crate) struct Sessions {
    next: AtomicU64,
    rng: Rng,
    table: Mutex<HashMap<u64, Entry>>,
    unauthorized: AtomicU64,
}

impl Default for Sessions {
    fn default() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Self {
            next: AtomicU64::new(1),
            rng: Rng::new(nanos ^ u64::from(std::process::id()).rotate_left(32)),
            table: Mutex::default(),
            unauthorized: AtomicU64::new(0),
        }
    }
}

/// Why `/me` refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// No `Authorization: Bearer` header.
    Missing,
    /// A bearer token this server did not issue (or has forgotten).
    Unknown,
}

impl Sessions {
    /// Issues a fresh token for `user`, forgetting the oldest past [`TOKENS_KEPT`].
    pub(crate) fn login(&self, user: String) -> String {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let secret = self.rng.next_u64();
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if id > TOKENS_KEPT {
            table.remove(&(id - TOKENS_KEPT));
        }
        let session = Session { user, requests: 0 };
        table.insert(id, Entry { secret, session });
        token(id, secret)
    }

    /// Counts one request with the `Authorization` header `authorization`: its token and the
    /// session after counting it, or why it is refused (counted as unauthorised).
    pub(crate) fn authorise(
        &self,
        authorization: Option<&[u8]>,
    ) -> Result<(String, Session), Refused> {
        let result = self.find(authorization);
        if result.is_err() {
            self.unauthorized.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    fn find(&self, authorization: Option<&[u8]>) -> Result<(String, Session), Refused> {
        let value = authorization
            .and_then(|v| std::str::from_utf8(v).ok())
            .ok_or(Refused::Missing)?;
        let (scheme, given) = value.trim().split_once(' ').ok_or(Refused::Missing)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(Refused::Missing);
        }
        let (id, secret) = parse_token(given.trim()).ok_or(Refused::Unknown)?;
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        match table.get_mut(&id) {
            Some(entry) if entry.secret == secret => {
                entry.session.requests += 1;
                Ok((token(id, secret), entry.session.clone()))
            }
            _ => Err(Refused::Unknown),
        }
    }

    pub(crate) fn snapshot(&self) -> Logins {
        let table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        let tokens = (table.iter())
            .map(|(&id, e)| (token(id, e.secret), e.session.clone()))
            .collect();
        Logins {
            issued: self.next.load(Ordering::Relaxed) - 1,
            tokens,
            unauthorized: self.unauthorized.load(Ordering::Relaxed),
        }
    }
}

fn token(id: u64, secret: u64) -> String {
    format!("t{id}-{secret:016x}")
}

fn parse_token(token: &str) -> Option<(u64, u64)> {
    let (id, secret) = token.strip_prefix('t')?.split_once('-')?;
    if secret.len() != 16 || id.starts_with('+') || secret.starts_with('+') {
        return None;
    }
    Some((id.parse().ok()?, u64::from_str_radix(secret, 16).ok()?))
}

/// The user a login body names: a JSON object's `"user"` string, else a form's `user=NAME`,
/// else (or when empty) `anonymous`; cut to 256 bytes.
pub(crate) fn user_of(body: &[u8]) -> String {
    let from_json = || match serde_json::from_slice::<serde_json::Value>(body).ok()? {
        serde_json::Value::Object(map) => map.get("user")?.as_str().map(str::to_string),
        _ => None,
    };
    let from_form = || {
        let text = std::str::from_utf8(body).ok()?;
        let value = (text.trim().split('&'))
            .filter_map(|pair| pair.split_once('='))
            .find(|(k, _)| *k == "user")?
            .1;
        Some(crate::units::percent_decode(value).into_owned())
    };
    let mut user = from_json()
        .or_else(from_form)
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "anonymous".to_string());
    if user.len() > MAX_USER {
        let mut end = MAX_USER;
        while !user.is_char_boundary(end) {
            end -= 1;
        }
        user.truncate(end);
    }
    user
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_come_from_json_or_a_form_else_anonymous() {
        assert_eq!(user_of(br#"{"user":"ann","x":1}"#), "ann");
        assert_eq!(user_of(b"a=1&user=bo+b%21"), "bo b!");
        assert_eq!(user_of(br#"{"user":5}"#), "anonymous");
        assert_eq!(user_of(b"user="), "anonymous");
        assert_eq!(user_of(b""), "anonymous");
        assert_eq!(user_of(b"\xff\xfe"), "anonymous");
        let long = format!("user={}", "é".repeat(200));
        assert_eq!(user_of(long.as_bytes()).len(), 256);
    }

    #[test]
    fn tokens_are_unique_and_counted_per_token() {
        let sessions = Sessions::default();
        let (a, b) = (sessions.login("a".into()), sessions.login("b".into()));
        assert_ne!(a, b);
        let bearer = |t: &str| format!("Bearer {t}");
        for n in 1..=3 {
            let (t, s) = sessions.authorise(Some(bearer(&a).as_bytes())).unwrap();
            assert_eq!(
                (t.as_str(), s.user.as_str(), s.requests),
                (a.as_str(), "a", n)
            );
        }
        assert_eq!(
            sessions.authorise(Some(format!("bearer {b}").as_bytes())),
            Ok((
                b.clone(),
                Session {
                    user: "b".into(),
                    requests: 1
                }
            ))
        );
        let (id, secret) = parse_token(&a).unwrap();
        let forged = token(id, secret ^ 1);
        assert_eq!(
            sessions.authorise(Some(bearer(&forged).as_bytes())),
            Err(Refused::Unknown)
        );
        assert_eq!(sessions.authorise(None), Err(Refused::Missing));
        assert_eq!(
            sessions.authorise(Some(format!("Basic {a}").as_bytes())),
            Err(Refused::Missing)
        );
        let logins = sessions.snapshot();
        assert_eq!((logins.issued, logins.unauthorized), (2, 3));
        assert_eq!(
            (logins.requests(&a), logins.requests(&b)),
            (Some(3), Some(1))
        );
        assert_eq!(logins.authorised(), 4);
    }

    #[test]
    fn only_the_newest_tokens_are_kept() {
        let sessions = Sessions::default();
        let first = sessions.login("old".into());
        // Pretend the table is full: the next id forgets the first.
        sessions.next.store(TOKENS_KEPT + 1, Ordering::Relaxed);
        let newest = sessions.login("new".into());
        let logins = sessions.snapshot();
        assert_eq!(logins.requests(&first), None);
        assert_eq!(logins.requests(&newest), Some(0));
        assert_eq!(logins.tokens.len(), 1);
    }
}
