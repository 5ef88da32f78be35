//! A scenario load at one of its levels, as the plan's typed [`LoadSpec`]: the level's shape
//! as it is, the load's request (or mix), keep-alive, TLS, transport and pacing settings, and
//! the target's URL with the load's path. Nothing is turned back into text on the way.

use super::{RequestSpec as ScenarioRequest, ScenarioLoad};
use loadbench_plan::{Body, EndpointSpec, LoadShape, LoadSpec, RequestSpec, Schedule};
use std::time::Duration;

impl ScenarioLoad {
    /// Measures each step for `duration` instead (the command line's `--duration`): the open
    /// levels' schedules, made at load for the file's duration, are made again for the new one,
    /// so the engine, the saved levels and the step's config all say the same length.
    pub fn set_duration(&mut self, duration: Duration) {
        self.duration = duration;
        for level in &mut self.levels {
            if let LoadShape::Open { schedule, .. } = level {
                *schedule = Schedule::constant(schedule.rate_at(0.0), duration);
            }
        }
    }

    /// The plan's load of `level` (one of [`ScenarioLoad::levels`]) against the target at
    /// `base_url`, measured for the load's `duration` after its `warmup`; threads are the
    /// plan's default (one per core) until the caller sets them.
    pub fn spec(&self, level: &LoadShape<Schedule>, base_url: &str) -> LoadSpec {
        let req = &self.request;
        let mut spec = LoadSpec {
            load: level.clone(),
            pacing: self.pacing,
            warmup: self.warmup,
            keepalive: self.keepalive,
            source_addrs: self.source_addrs.clone(),
            values: self.values.clone(),
            flow: self.flow.clone(),
            script: self.script.clone(),
            request: match &self.grpc {
                Some(call) => RequestSpec {
                    method: "POST".into(),
                    body: Body::Bytes(call.framed.clone()),
                    ..request_spec(req)
                },
                None => request_spec(req),
            },
            mix: self
                .requests
                .iter()
                .map(|r| EndpointSpec {
                    url: join_url(base_url, &r.path),
                    request: request_spec(&r.request()),
                    weight: r.weight,
                })
                .collect(),
            ..LoadSpec::closed(&join_url(base_url, &self.path()), 1, self.duration)
        };
        let t = &mut spec.transport;
        t.insecure = self.tls.insecure;
        t.cacert = self.tls.cacert.clone();
        t.tls_resume = self.tls.resume;
        if let Some((cert, key)) = &self.tls.client {
            t.cert = Some(cert.clone());
            t.key = Some(key.clone());
        }
        t.pipeline = self.pipeline;
        t.ws_match = self.ws_match.clone();
        t.http3 = self.tls.http3;
        t.http2 = self.http2.is_some() && !t.http3;
        t.streams = self.http2;
        spec
    }
}

impl ScenarioLoad {
    /// The request's path: a gRPC call's method, else `request.path`.
    fn path(&self) -> String {
        match &self.grpc {
            Some(call) => format!("/{}", call.method),
            None => self.request.path.clone(),
        }
    }
}

/// A scenario's request as the plan's.
fn request_spec(req: &ScenarioRequest) -> RequestSpec {
    RequestSpec {
        method: req.method.clone(),
        headers: req
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        body: req
            .body
            .clone()
            .map_or(Body::None, |b| Body::Bytes(b.into_bytes())),
    }
}

/// `http://host:port` + `/path` without doubling or dropping the slash.
fn join_url(base: &str, path: &str) -> String {
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    format!("{}{path}", base.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_duration_remakes_the_open_levels_schedules() {
        let text = "name = \"s\"\n[[target]]\nname = \"b\"\nkind = \"upstream\"\n\
                    [[load]]\nmodel = \"open\"\ntargets = [\"b\"]\nrate = [100, 300]\n\
                    duration = \"10s\"\n";
        let mut s = Scenario::parse(text, Path::new("s.toml")).unwrap();
        let load = &mut s.loads[0];
        load.set_duration(Duration::from_secs(1));
        assert_eq!(load.duration, Duration::from_secs(1));
        let rates: Vec<(f64, Duration)> = load
            .levels
            .iter()
            .map(|l| match l {
                LoadShape::Open { schedule, .. } => (schedule.rate_at(0.0), schedule.duration()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            rates,
            [
                (100.0, Duration::from_secs(1)),
                (300.0, Duration::from_secs(1))
            ]
        );
    }
    use crate::scenario::Scenario;
    use loadbench_plan::Stop;
    use std::path::Path;
    use std::time::Duration;

    #[test]
    fn urls_join_with_one_slash() {
        assert_eq!(join_url("http://h:1", "/x"), "http://h:1/x");
        assert_eq!(join_url("http://h:1/", "x"), "http://h:1/x");
        assert_eq!(join_url("http://h:1/", "/"), "http://h:1/");
    }

    #[test]
    fn each_level_is_the_specs_shape() {
        let text = r#"
name = "s"
[[target]]
name = "a"
kind = "upstream"
[[load]]
model = "open"
targets = ["a"]
rate = [100, 250]
max_connections = 40
duration = "3s"
send_window = "2ms"
[load.request]
path = "x"
"#;
        let s = Scenario::parse(text, Path::new("s.toml")).unwrap();
        let load = &s.loads[0];
        let spec = load.spec(&load.levels[1], "http://127.0.0.1:9/");
        assert_eq!(spec.url, "http://127.0.0.1:9/x");
        assert_eq!(spec.stop, Stop::Duration(Duration::from_secs(3)));
        assert_eq!(spec.pacing.send_window, Duration::from_millis(2));
        let LoadShape::Open {
            schedule,
            max_connections,
        } = &spec.load
        else {
            panic!("an open level: {:?}", spec.load)
        };
        assert_eq!((schedule.rate_at(1.0), *max_connections), (250.0, 40));
        assert_eq!(schedule.duration(), Duration::from_secs(3));
    }
}
