//! The host's CPU over a run's window, and who used it: `/proc/stat` for every core,
//! `/proc/self/stat` for the generator, and, when the target listens on this host, the
//! processes owning its listening socket (found through the socket's inode in
//! `/proc/PID/fd`) and their children. Read twice, at the window's edges: nothing runs during
//! the load. What is left over is other processes' CPU, the evidence that a run shared its
//! host (`HostLoad::busy`), as the bench's sampler measures it for a step.

use super::diag;
use loadbench_model::{HostLoad, LocalTarget};
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::Instant;

/// A process across pid reuse: its pid and its start time in ticks since boot.
type ProcKey = (u32, u64);

/// One line of `/proc/PID/stat`, the fields used here.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ProcStat {
    comm: String,
    ppid: u32,
    cpu_ticks: u64,
    start_ticks: u64,
}

/// Parses `/proc/PID/stat`: `pid (comm) state ppid … utime stime … starttime …`. The comm
/// may hold spaces and parentheses, so the fields are counted after its last `)`.
fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // Field 3 (state) is rest[0]: field k is rest[k - 3].
    let num = |k: usize| rest.get(k - 3).and_then(|v| v.parse::<u64>().ok());
    Some(ProcStat {
        comm,
        ppid: u32::try_from(num(4)?).ok()?,
        cpu_ticks: num(14)? + num(15)?,
        start_ticks: num(22)?,
    })
}

fn read_stat(pid: &str) -> Option<ProcStat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Busy and total ticks of all cores together, and the number of cores, from the text of
/// `/proc/stat`. Busy: user, nice, system and steal; iowait counts as idle (as in htop),
/// interrupt and softirq time is left out of busy (on loopback it is the load's own network
/// work) but counts in the total.
fn parse_cores(text: &str) -> Option<(u64, u64, usize)> {
    let all = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = all
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|x| x.parse().ok())
        .collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    let busy = at(0) + at(1) + at(2) + at(7);
    let total: u64 = v.iter().sum();
    let cores = text
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count();
    Some((busy, total, cores))
}

fn read_cores() -> Option<(u64, u64, usize)> {
    parse_cores(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// Every process's stat, by pid.
fn all_processes() -> HashMap<u32, ProcStat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let pid = name.parse::<u32>().ok()?;
            Some((pid, read_stat(&name)?))
        })
        .collect()
}

/// The processes holding one of `inodes` open as a socket.
fn socket_owners(inodes: &HashSet<u32>) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut owners: Vec<u32> = dir
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
                return false;
            };
            fds.filter_map(Result::ok).any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|l| {
                    let l = l.to_string_lossy();
                    l.strip_prefix("socket:[")
                        .and_then(|r| r.strip_suffix(']'))
                        .and_then(|n| n.parse::<u32>().ok())
                        .is_some_and(|n| inodes.contains(&n))
                })
            })
        })
        .collect();
    owners.sort_unstable();
    owners
}

/// `roots` and every descendant of theirs in `procs`, each with its CPU ticks; never this
/// process (the generator, counted on its own) nor what descends from it.
fn tree_ticks(roots: &[u32], procs: &HashMap<u32, ProcStat>) -> HashMap<ProcKey, u64> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (pid, s) in procs {
        children.entry(s.ppid).or_default().push(*pid);
    }
    let mut out = HashMap::new();
    let mut todo: Vec<u32> = roots.to_vec();
    let mut seen = HashSet::from([std::process::id()]);
    while let Some(pid) = todo.pop() {
        if !seen.insert(pid) {
            continue;
        }
        if let Some(s) = procs.get(&pid) {
            out.insert((pid, s.start_ticks), s.cpu_ticks);
        }
        todo.extend(children.get(&pid).into_iter().flatten());
    }
    out
}

/// Ticks used since `before` by the processes in `now` (a process born in the window counts
/// from 0; one that ended in it loses its last ticks).
fn ticks_since(before: &HashMap<ProcKey, u64>, now: &HashMap<ProcKey, u64>) -> u64 {
    now.iter()
        .map(|(k, t)| t.saturating_sub(before.get(k).copied().unwrap_or(0)))
        .sum()
}

/// Whether `ip` is an address of this host (a UDP socket can bind to it).
fn is_local(ip: IpAddr) -> bool {
    ip.is_loopback() || UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// Where the target runs, as far as this host can tell.
#[derive(Debug)]
enum Target {
    /// On another host: none of this host's CPU is its.
    Remote,
    /// On this host, in these processes (and their children).
    Local { roots: Vec<u32>, name: String },
    /// In this process (a library caller serving its own target): its CPU is the
    /// generator's figure.
    Ours,
    /// On this host but not found (a unix socket, another user's process, another network
    /// namespace): its CPU is among the others'.
    Unknown,
}

fn find_target(addr: SocketAddr, unix_socket: bool) -> Target {
    if unix_socket {
        return Target::Unknown;
    }
    if !is_local(addr.ip()) {
        return Target::Remote;
    }
    let port = addr.port();
    let inodes: HashSet<u32> = diag::dump_families(&[port], true, diag::LISTENERS)
        .map(|(all, _)| all)
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s.state == diag::LISTEN && s.local_port == port && s.inode != 0)
        .map(|s| s.inode)
        .collect();
    if inodes.is_empty() {
        return Target::Unknown;
    }
    let me = std::process::id();
    let owners = socket_owners(&inodes);
    let roots: Vec<u32> = owners.iter().copied().filter(|p| *p != me).collect();
    match (roots.first(), owners.contains(&me)) {
        (Some(first), _) => Target::Local {
            name: read_stat(&first.to_string()).map_or_else(String::new, |s| s.comm),
            roots,
        },
        (None, true) => Target::Ours,
        (None, false) => Target::Unknown,
    }
}

/// Reads the host's CPU at [`HostWatch::start`] and at [`HostWatch::finish`].
#[derive(Debug)]
pub struct HostWatch {
    started: Instant,
    cores: Option<(u64, u64, usize)>,
    own: u64,
    target: Target,
    target_ticks: HashMap<ProcKey, u64>,
}

impl HostWatch {
    /// Finds the target's processes (when `addr` is this host's) and reads every counter.
    pub fn start(addr: SocketAddr, unix_socket: bool) -> HostWatch {
        let target = find_target(addr, unix_socket);
        let target_ticks = match &target {
            Target::Local { roots, .. } => tree_ticks(roots, &all_processes()),
            _ => HashMap::new(),
        };
        HostWatch {
            started: Instant::now(),
            cores: read_cores(),
            own: read_stat("self").map_or(0, |s| s.cpu_ticks),
            target,
            target_ticks,
        }
    }

    /// Reads the counters again; `None` when `/proc/stat` cannot be read.
    pub fn finish(self) -> Option<HostLoad> {
        let (busy0, total0, _) = self.cores?;
        let (busy1, total1, cores) = read_cores()?;
        let total = total1.saturating_sub(total0);
        let wall = self.started.elapsed().as_secs_f64();
        if total == 0 || cores == 0 || wall <= 0.0 {
            return None;
        }
        let hz = procfs::ticks_per_second() as f64;
        let in_cores = |ticks: u64| ticks as f64 / hz / wall;
        let host_cores = cores as f64;
        let busy_cores = busy1.saturating_sub(busy0) as f64 / total as f64 * host_cores;
        let own = read_stat("self").map_or(self.own, |s| s.cpu_ticks);
        let generator_cores = in_cores(own.saturating_sub(self.own));
        let (target, others_known) = match self.target {
            Target::Remote | Target::Ours => (None, true),
            Target::Unknown => (None, false),
            Target::Local { roots, name } => {
                let now = tree_ticks(&roots, &all_processes());
                let t = LocalTarget {
                    name,
                    processes: now.len() as u32,
                    cores: in_cores(ticks_since(&self.target_ticks, &now)),
                };
                (Some(t), true)
            }
        };
        let target_cores = target.as_ref().map_or(0.0, |t| t.cores);
        Some(HostLoad {
            host_cores,
            busy_cores,
            generator_cores,
            other_cores: (busy_cores - generator_cores - target_cores).max(0.0),
            target,
            others_known,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn stat_fields_are_counted_after_the_last_parenthesis() {
        let text = "4242 (my (odd) name) S 17 4242 4242 0 -1 4194560 500 0 0 0 \
                    120 30 0 0 20 0 3 0 98765 123456 789 18446744073709551615";
        let s = parse_stat(text).expect("parses");
        assert_eq!(s.comm, "my (odd) name");
        assert_eq!((s.ppid, s.cpu_ticks, s.start_ticks), (17, 150, 98765));
        assert_eq!(parse_stat("4242 (x) S"), None, "a cut line is refused");
    }

    #[test]
    fn cores_leave_interrupts_out_of_busy_and_count_every_core() {
        let text = "cpu  100 10 50 800 40 5 15 20 0 0\n\
                    cpu0 50 5 25 400 20 3 7 10 0 0\n\
                    cpu1 50 5 25 400 20 2 8 10 0 0\n\
                    intr 12345\n";
        let (busy, total, cores) = parse_cores(text).expect("parses");
        assert_eq!((busy, total, cores), (180, 1040, 2));
    }

    #[test]
    fn a_tree_holds_the_roots_and_their_descendants_only() {
        let p = |ppid, start, cpu| ProcStat {
            comm: String::new(),
            ppid,
            cpu_ticks: cpu,
            start_ticks: start,
        };
        let procs = HashMap::from([
            (10, p(1, 100, 5)),
            (11, p(10, 101, 7)),
            (12, p(11, 102, 11)),
            (20, p(1, 103, 1000)),
        ]);
        let tree = tree_ticks(&[10], &procs);
        assert_eq!(tree.len(), 3);
        assert_eq!(tree.values().sum::<u64>(), 23);
        // A process that ran 4 ticks in the window, and one born in it with 7.
        let before = HashMap::from([((10, 100), 1), ((11, 101), 7)]);
        let now = HashMap::from([((10, 100), 5), ((11, 101), 7), ((13, 104), 7)]);
        assert_eq!(ticks_since(&before, &now), 11);
    }

    #[test]
    fn a_listener_of_this_process_is_ours_and_a_port_without_one_is_unknown() {
        let l = TcpListener::bind("127.0.0.1:0").expect("listener");
        let addr = l.local_addr().expect("addr");
        assert!(matches!(find_target(addr, false), Target::Ours));
        drop(l);
        assert!(matches!(find_target(addr, false), Target::Unknown));
        assert!(matches!(find_target(addr, true), Target::Unknown));
    }

    #[test]
    fn another_process_listening_on_the_port_is_the_target_and_its_cpu_is_counted() {
        // A child process that listens and then spins: python3 is on every test host.
        let l = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = l.local_addr().expect("addr").port();
        drop(l);
        let script = format!(
            "import socket,time\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n\
             s.bind(('127.0.0.1',{port}))\ns.listen()\nprint('up',flush=True)\n\
             end=time.time()+20\nwhile time.time()<end: pass\n"
        );
        let mut child = std::process::Command::new("python3")
            .args(["-c", &script])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
            &mut line,
        )
        .expect("the child says it listens");
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
        let watch = HostWatch::start(addr, false);
        std::thread::sleep(std::time::Duration::from_millis(600));
        let load = watch.finish().expect("/proc/stat reads");
        let _ = child.kill();
        let _ = child.wait();
        let t = load
            .target
            .as_ref()
            .expect("the child is found as the target");
        assert_eq!((t.name.as_str(), t.processes), ("python3", 1));
        // Spinning, it ran whenever it got a CPU: on a loaded host at least some share.
        assert!(t.cores > 0.0, "{load:?}");
        assert!(load.others_known);
        assert!(load.other_cores >= 0.0 && load.busy_cores <= load.host_cores + 0.01);
    }
}
