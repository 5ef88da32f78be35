//! The backend's settings as `loadbench serve` takes them and a scenario's `[target.upstream]`
//! names them: one typed struct ([`ServeSettings`]) with its flag parser (clap), its checks and
//! its flag renderer side by side, so that the argv a harness starts a child `loadbench serve`
//! with is always what `serve` parses back (a round-trip test below keeps them so).
//!
//! The keys are the field names (`max_served_conns`), the flags the same in kebab case
//! (`--max-served-conns`).

use std::fmt;

use tokio::sync::Semaphore;

use crate::routes::MAX_BODY;
use crate::{parse_delay, parse_hiccup, parse_size, DelaySpec, Hiccup, ServerConfig};

/// How the backend answers: every setting of `loadbench serve` but where it listens and TLS.
/// `Default` is `serve` without flags. Check a value with [`ServeSettings::check`]; give it to
/// a server with [`ServerConfig::with_settings`], to a child process with
/// [`ServeSettings::to_args`].
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct ServeSettings {
    /// Worker threads [default: number of cores]; 1 runs a single-threaded event loop.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Delay every answer: 20ms, uniform:10ms..50ms, exp:20ms, normal:50ms,10ms.
    #[arg(long, value_parser = flag("--delay", parse_delay))]
    pub delay: Option<DelaySpec>,
    /// Body size of `/` instead of `hello world`, e.g. 1k, 4KiB, 1MiB.
    #[arg(long, value_parser = flag("--body-size", parse_size))]
    pub body_size: Option<u64>,
    /// Status code of `/` instead of 200.
    #[arg(long)]
    pub status: Option<u16>,
    /// Fraction of ordinary answers replaced by a 500, e.g. 0.01.
    #[arg(long, default_value_t = 0.0)]
    pub fail_rate: f64,
    /// Serve at most N requests at once; more wait in line (capacity = N / delay).
    #[arg(long)]
    pub max_concurrency: Option<usize>,
    /// Stall every answer during the first STALL of each EVERY, like a GC pause: 500ms/1s.
    #[arg(long, value_parser = flag("--hiccup", parse_hiccup))]
    pub hiccup: Option<Hiccup>,
    /// Keep working on requests whose client has gone (their wait in line and their delay),
    /// like Tomcat or Go's net/http, so an overload leaves a backlog; counted in /stats.
    #[arg(long)]
    pub keep_abandoned: bool,
    /// Serve at most N connections at once, each holding a worker for its life (like a
    /// thread-per-connection server); the others wait unserved in the accept queue.
    #[arg(long)]
    pub max_served_conns: Option<usize>,
}

/// A setting out of range: which one, why, and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingError {
    /// The setting's key, as a field of [`ServeSettings`] and a key of `[target.upstream]`
    /// (`max_served_conns`); its flag is the same in kebab case.
    pub key: &'static str,
    /// What is wrong, one line (`max served connections must be at least 1`).
    pub problem: String,
    /// What to write instead.
    pub fix: &'static str,
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.problem)
    }
}

impl std::error::Error for SettingError {}

impl ServeSettings {
    /// Checks the values no parser can refuse alone: the ranges of numbers and the body size.
    /// A server started with settings that pass starts (unless its address or TLS fail).
    pub fn check(&self) -> Result<(), SettingError> {
        let bad = |key, problem: &str, fix| {
            Err(SettingError {
                key,
                problem: problem.to_string(),
                fix,
            })
        };
        let positive =
            |n: Option<usize>| n.is_some_and(|n| !(1..=Semaphore::MAX_PERMITS).contains(&n));
        if self.threads == Some(0) {
            return bad("threads", "threads must be at least 1", "give 1 or more");
        }
        if !(0.0..=1.0).contains(&self.fail_rate) {
            let problem = "fail rate must be between 0 and 1, like 0.01";
            return bad("fail_rate", problem, "give a fraction from 0 to 1");
        }
        if self.status.is_some_and(|s| !(200..=599).contains(&s)) {
            let fix = "give a status from 200 to 599";
            return bad("status", "status must be between 200 and 599", fix);
        }
        if self.body_size.is_some_and(|s| s > MAX_BODY) {
            let fix = "give a size up to 1GiB";
            return bad("body_size", "body size must be at most 1GiB", fix);
        }
        if positive(self.max_concurrency) {
            let problem = "max concurrency must be at least 1";
            return bad(
                "max_concurrency",
                problem,
                "give 1 or more, or leave it out",
            );
        }
        if positive(self.max_served_conns) {
            let problem = "max served connections must be at least 1";
            return bad(
                "max_served_conns",
                problem,
                "give 1 or more, or leave it out",
            );
        }
        if let Some(h) = self.hiccup {
            if let Err(reason) = h.check() {
                let fix = "write STALL/EVERY, a stall above zero and shorter than EVERY: 300ms/1s";
                return bad("hiccup", &format!("hiccup {h}: {reason}"), fix);
            }
        }
        Ok(())
    }

    /// The flags of `loadbench serve` that give these settings, in the order of `serve
    /// --help`; a default setting gives no flag. Parsing them back yields `self`.
    pub fn to_args(&self) -> Vec<String> {
        let text = |n: Option<usize>| n.map(|n| n.to_string());
        let nonzero_rate = (self.fail_rate != 0.0).then(|| self.fail_rate.to_string());
        // (flag, its value); a switch has an empty one.
        let flags = [
            ("threads", text(self.threads)),
            ("delay", self.delay.map(|d| d.to_string())),
            ("body-size", self.body_size.map(|n| n.to_string())),
            ("status", self.status.map(|n| n.to_string())),
            ("fail-rate", nonzero_rate),
            ("max-concurrency", text(self.max_concurrency)),
            ("hiccup", self.hiccup.map(|h| h.to_string())),
            ("keep-abandoned", self.keep_abandoned.then(String::new)),
            ("max-served-conns", text(self.max_served_conns)),
        ];
        let mut args = Vec::new();
        for (name, value) in flags {
            match value {
                Some(v) if v.is_empty() => args.push(format!("--{name}")),
                Some(v) => args.extend([format!("--{name}"), v]),
                None => {}
            }
        }
        args
    }
}

impl ServerConfig {
    /// This configuration with `s`'s settings (threads only when `s` gives them).
    pub fn with_settings(self, s: &ServeSettings) -> ServerConfig {
        ServerConfig {
            threads: s.threads.unwrap_or(self.threads),
            delay: s.delay,
            body_size: s.body_size,
            status: s.status,
            fail_rate: s.fail_rate,
            max_concurrency: s.max_concurrency,
            hiccup: s.hiccup,
            keep_abandoned: s.keep_abandoned,
            max_served_conns: s.max_served_conns,
            ..self
        }
    }

    /// Its settings, as `serve`'s flags would give them.
    pub(crate) fn settings(&self) -> ServeSettings {
        ServeSettings {
            threads: Some(self.threads),
            delay: self.delay,
            body_size: self.body_size,
            status: self.status,
            fail_rate: self.fail_rate,
            max_concurrency: self.max_concurrency,
            hiccup: self.hiccup,
            keep_abandoned: self.keep_abandoned,
            max_served_conns: self.max_served_conns,
        }
    }
}

/// A clap value parser from one of this crate's parsers; its message starts with the flag, so
/// the one line the user sees names it (`--delay: invalid delay "soon": …`).
fn flag<T: 'static, E: fmt::Display + 'static>(
    name: &'static str,
    parse: fn(&str) -> Result<T, E>,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static {
    move |text| parse(text).map_err(|e| format!("{name}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::time::Duration;

    /// `serve`'s settings alone, as `loadbench serve` flattens them.
    #[derive(Debug, Parser)]
    struct Serve {
        #[command(flatten)]
        settings: ServeSettings,
    }

    fn parse(args: &[String]) -> Result<ServeSettings, clap::Error> {
        let argv = std::iter::once("serve".to_string()).chain(args.iter().cloned());
        Serve::try_parse_from(argv).map(|s| s.settings)
    }

    #[test]
    fn rendered_flags_parse_back_to_the_same_settings() {
        let ms = Duration::from_millis;
        let delays = [
            DelaySpec::Fixed(ms(7)),
            DelaySpec::Uniform {
                low: ms(1),
                high: Duration::from_micros(5500),
            },
            DelaySpec::Exp { mean: ms(20) },
            DelaySpec::Normal {
                mean: ms(50),
                stddev: Duration::from_nanos(10_001),
            },
        ];
        let mut cases = vec![ServeSettings::default()];
        for (i, delay) in delays.into_iter().enumerate() {
            cases.push(ServeSettings {
                threads: Some(i + 1),
                delay: Some(delay),
                body_size: Some(1_000_000 + i as u64),
                status: Some(404),
                fail_rate: 0.1 + 0.2 * i as f64,
                max_concurrency: Some(4),
                hiccup: Some(Hiccup {
                    every: Duration::from_secs(1),
                    stall: ms(300 + i as u64),
                }),
                keep_abandoned: i % 2 == 0,
                max_served_conns: Some(8 * (i + 1)),
            });
        }
        for s in cases {
            s.check().unwrap();
            let args = s.to_args();
            assert_eq!(parse(&args).unwrap(), s, "{args:?}");
        }
        assert!(ServeSettings::default().to_args().is_empty());
    }

    #[test]
    fn a_server_config_gives_back_its_settings() {
        let s = ServeSettings {
            threads: Some(2),
            delay: Some(DelaySpec::Fixed(Duration::from_millis(3))),
            max_served_conns: Some(1),
            keep_abandoned: true,
            ..ServeSettings::default()
        };
        let cfg = ServerConfig::ephemeral().with_settings(&s);
        assert_eq!(cfg.settings(), s);
        let unset = ServerConfig::ephemeral().with_settings(&ServeSettings::default());
        assert_eq!(unset.threads, 1, "threads stay as they were unless given");
    }

    #[test]
    fn out_of_range_values_name_their_key() {
        let one_second_stall = Hiccup {
            every: Duration::from_secs(1),
            stall: Duration::from_secs(1),
        };
        type Set = fn(&mut ServeSettings);
        let cases: [(Set, &str); 8] = [
            (|s| s.threads = Some(0), "threads"),
            (|s| s.fail_rate = 1.5, "fail_rate"),
            (|s| s.fail_rate = f64::NAN, "fail_rate"),
            (|s| s.status = Some(700), "status"),
            (|s| s.body_size = Some(MAX_BODY + 1), "body_size"),
            (|s| s.max_concurrency = Some(0), "max_concurrency"),
            (|s| s.max_served_conns = Some(0), "max_served_conns"),
            (|s| s.keep_abandoned = true, ""),
        ];
        for (set, key) in cases {
            let mut s = ServeSettings::default();
            set(&mut s);
            match s.check() {
                Ok(()) => assert_eq!(key, "", "{s:?} should be refused"),
                Err(e) => {
                    assert_eq!(e.key, key, "{e}");
                    assert!(!e.problem.is_empty() && !e.fix.is_empty(), "{e:?}");
                }
            }
        }
        let stalled = ServeSettings {
            hiccup: Some(one_second_stall),
            ..ServeSettings::default()
        };
        assert_eq!(stalled.check().unwrap_err().key, "hiccup");
    }

    #[test]
    fn bad_flag_values_are_refused_naming_the_flag() {
        for (flag, value) in [
            ("--delay", "bogus"),
            ("--hiccup", "x"),
            ("--body-size", "huge"),
        ] {
            let e = parse(&[flag.to_string(), value.to_string()]).unwrap_err();
            let source = std::error::Error::source(&e).map(ToString::to_string);
            let source = source.unwrap_or_default();
            assert!(source.starts_with(&format!("{flag}: invalid ")), "{source}");
        }
    }
}
