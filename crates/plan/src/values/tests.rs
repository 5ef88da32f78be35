//! Compiling and assembling requests with values.

use super::*;
use crate::{LoadSpec, Plan, Shard};
use std::sync::atomic::AtomicU64;
use std::time::Duration;

fn plan(url: &str, f: impl FnOnce(&mut LoadSpec)) -> Result<Plan, String> {
    let mut s = LoadSpec::closed(url, 1, Duration::from_secs(1));
    f(&mut s);
    Plan::resolve(&s).map_err(|e| e.to_string())
}

fn requests(p: &Plan, n: usize) -> Vec<String> {
    let values = p.values.as_ref().expect("values");
    let counter = AtomicU64::new(0);
    let mut src = Source::new(values, &counter, 0);
    let mut out = Vec::new();
    (0..n)
        .map(|_| {
            let d = src.draw();
            out.clear();
            src.assemble(0, d, 3, &[], &mut out);
            String::from_utf8(out.clone()).unwrap()
        })
        .collect()
}

#[test]
fn a_fixed_request_has_no_values() {
    let p = plan("http://127.0.0.1:8080/x", |_| {}).unwrap();
    assert!(p.values.is_none());
}

/// A flow draws each iteration's place and judges its answers through the values: it has them
/// even when none of its texts holds a value (the engine once left such a flow's steps all
/// on the first step's endpoint, their checks unjudged).
#[test]
fn a_flow_without_values_still_has_them() {
    let step = |path: &str| crate::StepFile {
        name: None,
        method: None,
        path: Some(path.into()),
        headers: Default::default(),
        body: None,
        capture: Default::default(),
        check: crate::CheckFile {
            status: Some(crate::StatusFile::One(201)),
            ..Default::default()
        },
        think: None,
    };
    let flow = crate::FlowFile {
        name: None,
        steps: vec![step("/a"), step("/b")],
    };
    let flow = flow.typed("test").unwrap();
    let p = plan("http://127.0.0.1:8080", |s| s.flow = Some(flow)).unwrap();
    let values = p.values.as_ref().expect("a flow has values");
    assert_eq!(values.requests.len(), 2);
    assert!(!values.templated(0) && !values.templated(1));
    assert_eq!(p.flow.as_ref().map(|f| f.steps.len()), Some(2));
}

#[test]
fn the_sequence_fills_path_query_header_and_body_with_its_length() {
    let p = plan(
        "http://127.0.0.1:8080/orders/{{seq}}?w={{worker}}&c={{conn}}",
        |s| {
            s.request.method = "POST".into();
            s.request
                .headers
                .push(("X-Id".into(), "id-{{seq(100, 10)}}".into()));
            s.request.body = crate::Body::Bytes(br#"{"id":{{seq}},"n":"{{'{{'}}"}"#.to_vec());
        },
    )
    .unwrap();
    assert_eq!(
        p.target.url,
        "http://127.0.0.1:8080/orders/{{seq}}?w={{worker}}&c={{conn}}"
    );
    assert_eq!(p.request.headers, vec!["X-Id: id-{{seq(100, 10)}}"]);
    let r = requests(&p, 3);
    assert!(
        r[0].starts_with("POST /orders/1?w=0&c=3 HTTP/1.1\r\n"),
        "{}",
        r[0]
    );
    assert!(r[0].contains("X-Id: id-100\r\n"), "{}", r[0]);
    assert!(
        r[0].ends_with("Content-Length: 17\r\n\r\n{\"id\":1,\"n\":\"{{\"}"),
        "{}",
        r[0]
    );
    assert!(r[2].starts_with("POST /orders/3?"), "{}", r[2]);
    assert!(r[2].contains("X-Id: id-120\r\n"));
    assert_eq!(r[0].matches("Content-Length").count(), 1);
}

#[test]
fn shards_stripe_the_sequence_and_n_covers_each_place_once() {
    let mut seen = Vec::new();
    for i in 0..3 {
        let mut s = LoadSpec::closed("http://127.0.0.1:1/{{seq}}", 3, Duration::from_secs(1));
        s.stop = crate::Stop::Requests(10);
        let s = s.shard(Shard::new(i, 3).unwrap()).unwrap();
        let p = Plan::resolve(&s).unwrap();
        let crate::Stop::Requests(n) = p.stop else {
            panic!()
        };
        for r in requests(&p, n as usize) {
            let id: u64 = r.split(' ').nth(1).unwrap()[1..].parse().unwrap();
            seen.push(id);
        }
    }
    seen.sort_unstable();
    assert_eq!(seen, (1..=10).collect::<Vec<u64>>());
}

#[test]
fn random_values_stay_in_their_range_and_repeat_with_a_seed() {
    let make = |seed| {
        plan(
            "http://127.0.0.1:1/p/{{int(-2, 2)}}/{{pick(a, 'b c')}}/{{uuid}}",
            |s| s.values.seed = Some(seed),
        )
        .unwrap()
    };
    let a = requests(&make(7), 400);
    assert_eq!(a, requests(&make(7), 400));
    assert_ne!(a, requests(&make(8), 400));
    let mut ints = std::collections::BTreeSet::new();
    let mut picks = std::collections::BTreeSet::new();
    for r in &a {
        // The pick 'b c' has a space: the request line then holds it raw.
        let parts: Vec<&str> = r[4..].split('/').collect();
        ints.insert(parts[2].parse::<i64>().unwrap());
        picks.insert(parts[3].to_string());
    }
    assert_eq!(ints, (-2..=2).collect());
    assert_eq!(
        picks,
        ["a".to_string(), "b c".to_string()].into_iter().collect()
    );
    let uuid = a[0][4..]
        .split('/')
        .nth(4)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert_eq!(uuid.len(), 36);
    assert_eq!(&uuid[14..15], "4");
    assert!(matches!(&uuid[19..20], "8" | "9" | "a" | "b"), "{uuid}");
}

#[test]
fn filters_encode_for_urls_and_json() {
    let p = plan("http://127.0.0.1:1/?q={{'a b/ü' | url}}", |s| {
        s.request
            .headers
            .push(("X-J".into(), "{{'say \"hi\"\\' | json}}".into()));
    });
    let p = p.unwrap();
    let r = &requests(&p, 1)[0];
    assert!(r.starts_with("GET /?q=a%20b%2F%C3%BC HTTP/1.1"), "{r}");
    assert!(r.contains("X-J: say \\\"hi\\\"\\\\\r\n"), "{r}");
}

#[test]
fn the_time_is_rfc3339_utc() {
    let mut out = Vec::new();
    assemble::rfc3339(&mut out, 1_795_808_415_123);
    assert_eq!(String::from_utf8(out).unwrap(), "2026-11-27T19:40:15.123Z");
    let mut out = Vec::new();
    assemble::rfc3339(&mut out, 951_782_400_000);
    assert_eq!(String::from_utf8(out).unwrap(), "2000-02-29T00:00:00.000Z");
}

#[test]
fn bad_values_are_refused_with_where_and_the_fix() {
    let e = plan("http://127.0.0.1:1/{{int(9, 1)}}", |_| {}).unwrap_err();
    assert!(
        e.contains("the URL") && e.contains("min 9 is above its max 1"),
        "{e}"
    );
    let e = plan("http://127.0.0.1:1/", |s| {
        s.request.body = crate::Body::Bytes(b"{\n  \"a\": {{nope}}\n}".to_vec());
    })
    .unwrap_err();
    assert!(
        e.starts_with("the body, line 2 column 8: '{{nope}}' is not a value"),
        "{e}"
    );
    let e = plan("http://127.0.0.1:1/{{seq", |_| {}).unwrap_err();
    assert!(e.contains("a {{ without its }}"), "{e}");
    let e = plan("http://{{pick(a,b)}}:1/", |_| {}).unwrap_err();
    assert!(!e.is_empty());
    let e = plan("http://127.0.0.1:1/{{row.id}}", |_| {}).unwrap_err();
    assert!(e.contains("give --data FILE"), "{e}");
    let e = plan("http://127.0.0.1:1/", |s| {
        s.request.method = "POST".into();
        s.request
            .headers
            .push(("Content-Length".into(), "3".into()));
        s.request.body = crate::Body::Bytes(b"{{seq}}".to_vec());
    })
    .unwrap_err();
    assert!(e.contains("leave the Content-Length header out"), "{e}");
}
