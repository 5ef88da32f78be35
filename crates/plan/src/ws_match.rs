//! `--ws-match FIELD` (docs/transport.md, WebSocket): a WebSocket message's answer is the
//! first whole data message whose JSON field FIELD holds the same JSON value as the same
//! field of the message sent; other messages (a server's pushes, broadcasts) are counted
//! apart. FIELD is a top-level key (`id`), a dotted path into nested objects (`meta.id`), or
//! a JSON pointer (`/meta/id`, for keys holding a dot; `~1` is `/`, `~0` is `~`).
//!
//! [`WsMatch::value_of`] reads one field of a message without building the document: every
//! other value is skipped by the parser (`serde::de::IgnoredAny`), so the engine's cost per
//! received message is one pass over its bytes and the matched value alone.

use crate::{invalid, PlanError};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::fmt;

/// Received messages longer than this are not kept, so cannot be matched: each is counted
/// (`stats.ws.unmatched_too_large`) and dropped as it arrives.
pub const MAX_MATCHED: usize = 64 << 10;

/// Path segments at most (a deeper FIELD is refused).
const MAX_DEPTH: usize = 16;

/// Where the id of a message is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WsMatch {
    /// FIELD as given, for messages and the record.
    pub field: String,
    /// Its keys, outermost first.
    path: Vec<String>,
}

/// Why a message has no id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// It is not JSON.
    NotJson,
    /// It is JSON without the field (or not an object where the path goes through).
    NoField,
}

impl WsMatch {
    /// FIELD as `--ws-match` takes it: `id`, `a.b` or `/a/b`.
    pub fn parse(field: &str) -> Result<WsMatch, PlanError> {
        let bad = |why: &str| {
            invalid(format!(
                "--ws-match '{field}': {why}: give a JSON field such as id, a dotted path such as meta.id, or a JSON pointer such as /meta/id"
            ))
        };
        let path: Vec<String> = if let Some(pointer) = field.strip_prefix('/') {
            pointer
                .split('/')
                .map(|s| s.replace("~1", "/").replace("~0", "~"))
                .collect()
        } else {
            field.split('.').map(str::to_string).collect()
        };
        if field.is_empty() || path.iter().any(String::is_empty) {
            return Err(bad("an empty key"));
        }
        if path.len() > MAX_DEPTH {
            return Err(bad(&format!("more than {MAX_DEPTH} keys deep")));
        }
        Ok(WsMatch {
            field: field.to_string(),
            path,
        })
    }

    /// The value of the field in `msg`, a JSON text. Values compare as JSON values
    /// (`serde_json::Value`): a string never equals a number, `17` equals `17`, and an
    /// integer differs from a number written with a fraction or exponent (`17.0`).
    pub fn value_of(&self, msg: &[u8]) -> Result<Value, Miss> {
        let mut de = serde_json::Deserializer::from_slice(msg);
        let found = Seek { path: &self.path }
            .deserialize(&mut de)
            .map_err(|_| Miss::NotJson)?;
        de.end().map_err(|_| Miss::NotJson)?;
        found.ok_or(Miss::NoField)
    }

    /// Checks a message the load sends (the fixed one, or the first rendered): the problem,
    /// as one line naming the fix, when no answer could ever match it.
    pub fn check_sent(&self, msg: &[u8], what: &str) -> Result<(), PlanError> {
        let field = &self.field;
        let shown = shown(msg);
        match self.value_of(msg) {
            Ok(_) => Ok(()),
            Err(Miss::NotJson) => Err(invalid(format!(
                "--ws-match {field}: {what} ({shown}) is not JSON, so its answer cannot be matched by a field: send a JSON object with the field {field}, or leave --ws-match out"
            ))),
            Err(Miss::NoField) => Err(invalid(format!(
                "--ws-match {field}: {what} ({shown}) has no field {field}: add it to the message (e.g. \"{last}\":{{{{seq}}}}), or name the field the server echoes",
                last = self.path.last().map_or("", String::as_str)
            ))),
        }
    }
}

/// The first 60 characters of a message, for an error line.
fn shown(msg: &[u8]) -> String {
    let text = String::from_utf8_lossy(msg);
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match one_line.char_indices().nth(60) {
        Some((at, _)) => format!("'{}…'", &one_line[..at]),
        None => format!("'{one_line}'"),
    }
}

/// Seeks the value at `path` in what is deserialized: `Some` when found.
struct Seek<'p> {
    path: &'p [String],
}

impl<'de> DeserializeSeed<'de> for Seek<'_> {
    type Value = Option<Value>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        if self.path.is_empty() {
            return Value::deserialize(d).map(Some);
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seek<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let Some((key, rest)) = self.path.split_first() else {
            return Ok(None);
        };
        let mut found = None;
        while let Some(is) = map.next_key_seed(KeyIs(key))? {
            if is && found.is_none() {
                found = map.next_value_seed(Seek { path: rest })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// Whether a map's key is the one sought (compared as it is read, never kept).
struct KeyIs<'k>(&'k str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_field_is_read_at_the_top_through_a_dotted_path_or_a_pointer() {
        let m = WsMatch::parse("id").unwrap();
        assert_eq!(m.value_of(br#"{"a":[1,{"id":9}],"id":17}"#), Ok(json!(17)));
        assert_eq!(m.value_of(br#"{"id":"17"}"#), Ok(json!("17")));
        assert_ne!(m.value_of(br#"{"id":"17"}"#), m.value_of(br#"{"id":17}"#));
        assert_ne!(m.value_of(br#"{"id":17.0}"#), m.value_of(br#"{"id":17}"#));
        assert_eq!(
            m.value_of(br#"{"id":"a\u0062"}"#),
            m.value_of(br#"{ "id" : "ab" }"#),
            "escapes and spaces do not matter"
        );
        assert_eq!(m.value_of(br#"{"push":1}"#), Err(Miss::NoField));
        assert_eq!(m.value_of(b"[1,2]"), Err(Miss::NoField));
        assert_eq!(m.value_of(b"17"), Err(Miss::NoField));
        assert_eq!(m.value_of(b"hello"), Err(Miss::NotJson));
        assert_eq!(m.value_of(br#"{"id":1} x"#), Err(Miss::NotJson));
        assert_eq!(m.value_of(br#"{"id":1"#), Err(Miss::NotJson));

        let dotted = WsMatch::parse("meta.id").unwrap();
        let msg = br#"{"meta":{"t":[true,null],"id":{"k":"v"}},"id":1}"#;
        assert_eq!(dotted.value_of(msg), Ok(json!({"k": "v"})));
        assert_eq!(dotted.value_of(br#"{"meta":3}"#), Err(Miss::NoField));
        let pointer = WsMatch::parse("/a.b/c~1d").unwrap();
        assert_eq!(pointer.value_of(br#"{"a.b":{"c/d":5}}"#), Ok(json!(5)));
    }

    #[test]
    fn bad_fields_and_unmatchable_messages_name_the_fix() {
        for bad in ["", "a..b", "/", "a."] {
            let e = WsMatch::parse(bad).unwrap_err().to_string();
            assert!(e.contains("give a JSON field"), "{bad}: {e}");
        }
        let m = WsMatch::parse("id").unwrap();
        assert!(m.check_sent(br#"{"id":1}"#, "the message").is_ok());
        let e = m
            .check_sent(b"hello", "the message")
            .unwrap_err()
            .to_string();
        assert!(e.contains("'hello') is not JSON"), "{e}");
        let e = m
            .check_sent(br#"{"m":"x"}"#, "the message")
            .unwrap_err()
            .to_string();
        assert!(e.contains("has no field id"), "{e}");
        let long = format!("{{\"m\":\"{}\"}}", "x".repeat(200));
        let e = m.check_sent(long.as_bytes(), "the message").unwrap_err();
        assert!(e.to_string().contains("xxx…'"), "{e}");
    }
}
