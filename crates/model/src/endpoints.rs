//! Per-endpoint statistics of a request mix (docs/request-mix.md): for each request of the mix,
//! its label (index, method, URL, weight) and what it got (requests, status codes, errors by
//! class, latency). They sit beside the run's totals and merge exactly like them, across
//! workers, rounds and shards, matched by index.

use crate::errors::{ErrorCounts, StatusCounts};
use crate::histogram::Latency;
use serde::{Deserialize, Serialize};

/// One request of a mix and what it measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndpointStats {
    /// Its place in the mix, from 0 (the order of `-u` flags or of the requests file's lines).
    pub index: u32,
    /// A flow's step: its name (docs/flows.md); absent for a request of a mix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// HTTP method, upper-case.
    pub method: String,
    /// The URL, normalized.
    pub url: String,
    /// Its share of the requests: `weight / sum of the weights`.
    pub weight: u32,
    /// Complete responses received, whatever their status.
    pub requests: u64,
    /// Requests that produced no complete response, by class.
    pub errors: ErrorCounts,
    /// Complete responses by status code.
    pub status: StatusCounts,
    /// From the intended send time to the last byte of the response, as the run's `latency`.
    pub latency: Latency,
}

impl EndpointStats {
    /// Adds the other's counts and histogram; the label is kept (taken from `other` when this
    /// one has none yet).
    pub fn merge(&mut self, other: &EndpointStats) {
        if self.url.is_empty() {
            self.name.clone_from(&other.name);
            self.method.clone_from(&other.method);
            self.url.clone_from(&other.url);
            self.weight = other.weight;
        }
        self.requests += other.requests;
        self.errors.merge(&other.errors);
        self.status.merge(&other.status);
        self.latency.merge(&other.latency);
    }

    /// Path and query of the URL (what a table shows: the scheme, host and port are the run's).
    pub fn path(&self) -> &str {
        url_path(&self.url)
    }

    /// Requests attempted: completed plus failed.
    pub fn attempts(&self) -> u64 {
        self.requests + self.errors.total()
    }
}

/// Path and query of `url`: what follows the scheme, host and port (`/` when nothing does).
pub fn url_path(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.find('/').map_or("/", |i| &rest[i..])
}

/// Merges `other` into `mine` endpoint by endpoint (matched by index; one missing on either
/// side is taken as it is), keeping them in index order.
pub fn merge_endpoints(mine: &mut Vec<EndpointStats>, other: &[EndpointStats]) {
    for o in other {
        match mine.iter_mut().find(|m| m.index == o.index) {
            Some(m) => m.merge(o),
            None => mine.push(o.clone()),
        }
    }
    mine.sort_by_key(|e| e.index);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::ErrorKind;

    fn endpoint(index: u32, requests: u64, ns: &[u64]) -> EndpointStats {
        let mut e = EndpointStats {
            index,
            method: "GET".into(),
            url: format!("http://127.0.0.1:8080/e{index}?q=1"),
            weight: index + 1,
            requests,
            ..Default::default()
        };
        e.status.add(200, requests);
        e.errors.add(ErrorKind::Reset, 1);
        for &v in ns {
            e.latency.hist.record_ns(v);
        }
        e
    }

    #[test]
    fn merging_adds_by_index_whatever_the_order_or_grouping() {
        let a = vec![endpoint(0, 3, &[1_000, 2_000]), endpoint(1, 1, &[9_000])];
        let b = vec![endpoint(1, 2, &[5_000])];
        let c = vec![endpoint(0, 1, &[7_000]), endpoint(2, 4, &[3_000])];
        let mut left = a.clone();
        merge_endpoints(&mut left, &b);
        merge_endpoints(&mut left, &c);
        let mut bc = b.clone();
        merge_endpoints(&mut bc, &c);
        let mut right = a.clone();
        merge_endpoints(&mut right, &bc);
        assert_eq!(left, right);
        let mut from_empty = Vec::new();
        merge_endpoints(&mut from_empty, &c);
        merge_endpoints(&mut from_empty, &b);
        merge_endpoints(&mut from_empty, &a);
        assert_eq!(from_empty, left);
        let counts: Vec<(u32, u64, u64)> = left
            .iter()
            .map(|e| (e.index, e.requests, e.errors.total()))
            .collect();
        assert_eq!(counts, vec![(0, 4, 2), (1, 3, 2), (2, 4, 1)]);
        assert_eq!(left[0].latency.hist.len(), 3);
        assert_eq!(left[1].status.0.get(&200), Some(&3));
    }

    #[test]
    fn the_path_is_what_follows_the_host() {
        assert_eq!(endpoint(0, 0, &[]).path(), "/e0?q=1");
        let bare = EndpointStats {
            url: "http://h:1".into(),
            ..Default::default()
        };
        assert_eq!(bare.path(), "/");
    }
}
