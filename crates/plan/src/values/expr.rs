//! The text of one value, `{{ … }}`, read into a [`Slot`]: what it draws and how it is
//! written. The grammar (docs/request-values.md):
//!
//! ```text
//! {{ EXPR [| FILTER]... }}
//! EXPR   := seq | seq(START) | seq(START, STEP) | int(MIN, MAX) | pick(A, B, …) | uuid
//!         | now | now(ms) | now(s) | now(rfc3339) | shard | worker | conn | row.COLUMN
//!         | 'text' | "text" | NAME (a flow variable)
//! FILTER := url | json
//! ```

/// How a value is written after it is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// Percent-encoded: every byte but `A-Z a-z 0-9 - . _ ~` (a path segment or query value).
    Url,
    /// Escaped for the inside of a JSON string (`"`, `\` and control characters).
    Json,
}

/// The time formats of `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NowFormat {
    /// RFC 3339 in UTC with milliseconds: `2026-11-27T19:30:15.123Z`.
    Rfc3339,
    /// Milliseconds since the Unix epoch.
    Millis,
    /// Seconds since the Unix epoch.
    Seconds,
}

/// What one value draws.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// The request's place in the load's sequence: `start + step × index`.
    Seq {
        /// The first value.
        start: i64,
        /// The distance between two values.
        step: i64,
    },
    /// A uniformly random integer in `min..=max`.
    Int {
        /// The smallest value.
        min: i64,
        /// The largest value.
        max: i64,
    },
    /// One of these, uniformly at random.
    Pick(Vec<String>),
    /// A random (version 4) UUID.
    Uuid,
    /// The wall-clock time when the request is assembled.
    Now(NowFormat),
    /// The shard's index (0 without `--shard`).
    Shard,
    /// The worker thread's index.
    Worker,
    /// The connection's index within its worker.
    Conn,
    /// A column of the request's row of the data file (`--data`).
    Row(String),
    /// Fixed text (a quoted literal: `{{'{{'}}` writes `{{`).
    Text(String),
    /// A flow variable (captured by an earlier step).
    Var(String),
}

impl Value {
    /// Draws from the request's random number (so a request sent again writes it again).
    pub fn is_random(&self) -> bool {
        matches!(self, Value::Int { .. } | Value::Pick(_) | Value::Uuid)
    }
}

/// One `{{ … }}`: the value and its filters, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// What it draws.
    pub value: Value,
    /// How the drawn text is written.
    pub filters: Vec<Filter>,
}

/// The names a bare word may not take (they are values of their own).
pub const BUILT_INS: [&str; 8] = [
    "seq", "int", "pick", "uuid", "now", "shard", "worker", "conn",
];

const SYNTAX: &str = "the values are seq, seq(START, STEP), int(MIN, MAX), pick(A, B, …), uuid, now, now(ms), now(s), shard, worker, conn, row.COLUMN and 'text', with | url or | json after them (docs/request-values.md)";

/// Reads the text between `{{` and `}}`; `Err` says what is wrong (the caller names where).
pub fn parse(text: &str) -> Result<Slot, String> {
    let mut parts = split_filters(text)?.into_iter();
    let head = parts.next().unwrap_or_default();
    let value = parse_value(head.trim())?;
    let filters = parts
        .map(|f| match f.trim() {
            "url" => Ok(Filter::Url),
            "json" => Ok(Filter::Json),
            other => Err(format!(
                "unknown filter '| {other}': the filters are | url and | json"
            )),
        })
        .collect::<Result<_, _>>()?;
    Ok(Slot { value, filters })
}

/// Splits at the `|`s that are outside quotes.
fn split_filters(text: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut quote = None;
    let mut from = 0;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '|') => {
                out.push(&text[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    if quote.is_some() {
        return Err(format!("'{text}' has an unclosed quote: close it"));
    }
    out.push(&text[from..]);
    Ok(out)
}

fn parse_value(text: &str) -> Result<Value, String> {
    if text.is_empty() {
        return Err(format!("an empty {{{{ }}}}: {SYNTAX}"));
    }
    if let Some(t) = quoted(text) {
        return Ok(Value::Text(t?));
    }
    let (name, args) = call(text)?;
    let ints = || whole_numbers(text, args.as_deref().unwrap_or_default());
    let count = args.as_ref().map_or(0, Vec::len);
    match (name, count) {
        ("seq", 0..=2) => {
            let n = ints()?;
            Ok(Value::Seq {
                start: n.first().copied().unwrap_or(1),
                step: n.get(1).copied().unwrap_or(1),
            })
        }
        ("int", 2) => int_range(text, &ints()?),
        ("pick", 1..) => pick_items(&args.unwrap_or_default()),
        ("uuid", 0) if args.is_none() => Ok(Value::Uuid),
        ("now", 0) if args.is_none() => Ok(Value::Now(NowFormat::Rfc3339)),
        ("now", 1) => now_format(text, &args.unwrap_or_default()[0]),
        ("shard", 0) if args.is_none() => Ok(Value::Shard),
        ("worker", 0) if args.is_none() => Ok(Value::Worker),
        ("conn", 0) if args.is_none() => Ok(Value::Conn),
        ("seq" | "int" | "pick" | "uuid" | "now" | "shard" | "worker" | "conn", _) => {
            Err(format!("'{text}' has the wrong arguments: {SYNTAX}"))
        }
        _ if args.is_some() => Err(format!("unknown value '{text}': {SYNTAX}")),
        _ => match name.strip_prefix("row.") {
            Some(col) if !col.is_empty() => Ok(Value::Row(col.to_string())),
            _ if is_name(name) => Ok(Value::Var(name.to_string())),
            _ => Err(format!("unknown value '{text}': {SYNTAX}")),
        },
    }
}

/// `name(args)` split into the name and its arguments (`None`: no parentheses).
fn call(text: &str) -> Result<(&str, Option<Vec<String>>), String> {
    match text.split_once('(') {
        Some((name, rest)) => {
            let inner = rest.trim_end().strip_suffix(')').ok_or_else(|| {
                format!(
                    "'{text}' opens a ( it does not close: write {}(…)",
                    name.trim()
                )
            })?;
            Ok((name.trim(), Some(split_args(inner)?)))
        }
        None => Ok((text, None)),
    }
}

fn whole_numbers(text: &str, args: &[String]) -> Result<Vec<i64>, String> {
    args.iter()
        .map(|a| {
            a.trim()
                .parse::<i64>()
                .map_err(|_| format!("'{text}': '{}' is not a whole number", a.trim()))
        })
        .collect()
}

fn int_range(text: &str, n: &[i64]) -> Result<Value, String> {
    if n[0] > n[1] {
        return Err(format!(
            "'{text}': the range's min {} is above its max {}: write int(MIN, MAX) with MIN ≤ MAX",
            n[0], n[1]
        ));
    }
    Ok(Value::Int {
        min: n[0],
        max: n[1],
    })
}

fn pick_items(args: &[String]) -> Result<Value, String> {
    let items = args
        .iter()
        .map(|a| match quoted(a.trim()) {
            Some(t) => t,
            None => Ok(a.trim().to_string()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Value::Pick(items))
}

fn now_format(text: &str, arg: &str) -> Result<Value, String> {
    match arg.trim() {
        "ms" => Ok(Value::Now(NowFormat::Millis)),
        "s" => Ok(Value::Now(NowFormat::Seconds)),
        "rfc3339" => Ok(Value::Now(NowFormat::Rfc3339)),
        other => Err(format!(
            "'{text}': unknown time format '{other}': write now, now(ms), now(s) or now(rfc3339)"
        )),
    }
}

/// A flow variable's name: a letter or `_`, then letters, digits and `_`.
pub fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `'text'` or `"text"` without its quotes; `None` when `s` is not quoted.
fn quoted(s: &str) -> Option<Result<String, String>> {
    let q = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    Some(match s[1..].strip_suffix(q) {
        Some(inner) if !inner.contains(q) => Ok(inner.to_string()),
        _ => Err(format!("'{s}' is not one quoted text: write '…' or \"…\"")),
    })
}

/// The arguments between the parentheses, split at commas outside quotes.
fn split_args(inner: &str) -> Result<Vec<String>, String> {
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut quote = None;
    let mut cur = String::new();
    for c in inner.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                cur.push(c);
            }
            (Some(q), _) if c == q => {
                quote = None;
                cur.push(c);
            }
            (None, ',') => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    if quote.is_some() {
        return Err(format!("'({inner})' has an unclosed quote: close it"));
    }
    out.push(cur);
    if out.iter().any(|a| a.trim().is_empty()) {
        return Err(format!(
            "'({inner})' has an empty argument: remove the extra comma"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Value {
        parse(text).unwrap().value
    }

    #[test]
    fn reads_every_value() {
        assert_eq!(v("seq"), Value::Seq { start: 1, step: 1 });
        assert_eq!(
            v(" seq(1000) "),
            Value::Seq {
                start: 1000,
                step: 1
            }
        );
        assert_eq!(v("seq(0, -2)"), Value::Seq { start: 0, step: -2 });
        assert_eq!(v("int(1, 100)"), Value::Int { min: 1, max: 100 });
        assert_eq!(
            v("pick(book, 'a, b', \"c\")"),
            Value::Pick(vec!["book".into(), "a, b".into(), "c".into()])
        );
        assert_eq!(v("uuid"), Value::Uuid);
        assert_eq!(v("now"), Value::Now(NowFormat::Rfc3339));
        assert_eq!(v("now(ms)"), Value::Now(NowFormat::Millis));
        assert_eq!(v("now(s)"), Value::Now(NowFormat::Seconds));
        assert_eq!(v("shard"), Value::Shard);
        assert_eq!(v("worker"), Value::Worker);
        assert_eq!(v("conn"), Value::Conn);
        assert_eq!(v("row.user id"), Value::Row("user id".into()));
        assert_eq!(v("'{{'"), Value::Text("{{".into()));
        assert_eq!(v("token"), Value::Var("token".into()));
        let s = parse("row.name | url | json").unwrap();
        assert_eq!(s.filters, vec![Filter::Url, Filter::Json]);
        assert_eq!(parse("pick('a|b')").unwrap().filters, vec![]);
    }

    #[test]
    fn mistakes_name_the_fix() {
        let e = |t: &str| parse(t).unwrap_err();
        assert!(
            e("int(5, 1)").contains("min 5 is above its max 1"),
            "{}",
            e("int(5, 1)")
        );
        assert!(e("int(1)").contains("wrong arguments"));
        assert!(e("int(a, 2)").contains("'a' is not a whole number"));
        assert!(e("uuid(4)").contains("wrong arguments"));
        assert!(e("now(h)").contains("unknown time format 'h'"));
        assert!(e("rand(1, 2)").contains("unknown value 'rand(1, 2)'"));
        assert!(e("row.").contains("unknown value"));
        assert!(e("a-b").contains("unknown value"));
        assert!(e("seq | upper").contains("unknown filter '| upper'"));
        assert!(e("'open").contains("unclosed quote"));
        assert!(e("pick(a,,b)").contains("empty argument"));
        assert!(e("seq(1").contains("does not close"));
        assert!(e("  ").contains("an empty {{ }}"));
    }
}
