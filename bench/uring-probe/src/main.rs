// bench/uring-probe: an experiment, not part of loadbench. Closed-model HTTP/1.1 keep-alive
// load with io_uring (linked send+recv, or a multishot receive per connection over a
// provided-buffer ring with sends that post no completion) beside a bare epoll loop, to see what
// io_uring could save per request before building it into the engine (issue 12, point 4).
use io_uring::{opcode, squeue, types, IoUring};
use std::io::Write;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

const REQ: &[u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: p\r\n\r\n";

struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
    have: usize,
    sent_at: Instant,
}

fn complete(buf: &[u8]) -> Option<usize> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&buf[..end]).ok()?;
    let cl = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    (buf.len() >= end + cl).then_some(end + cl)
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.get(1).map(String::as_str) == Some("syscall") {
        // What a bare system call costs on this machine: the floor under each send and receive.
        let n = 2_000_000;
        let t = Instant::now();
        for _ in 0..n {
            unsafe { libc::syscall(libc::SYS_getppid) };
        }
        let ns = t.elapsed().as_nanos() as f64 / f64::from(n);
        println!("{ns:.0} ns per system call (getppid, {n} calls)");
        return;
    }
    let (addr, n, secs, mode) = (
        &a[1],
        a[2].parse::<usize>().unwrap(),
        a[3].parse::<u64>().unwrap(),
        a[4].as_str(),
    );
    let mut conns: Vec<Conn> = (0..n)
        .map(|_| {
            let s = TcpStream::connect(addr).unwrap();
            s.set_nodelay(true).unwrap();
            Conn {
                s,
                buf: vec![0; 4096],
                have: 0,
                sent_at: Instant::now(),
            }
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let start = Instant::now();
    let (done, lat) = match mode {
        "epoll" => run_epoll(&mut conns, deadline),
        "multi" => run_multi(&mut conns, deadline),
        _ => run_uring(&mut conns, deadline, mode == "linked"),
    };
    let el = start.elapsed().as_secs_f64();
    println!(
        "{done} requests in {el:.2}s: {:.0} req/s, mean latency {:.1} us",
        done as f64 / el,
        lat / done as f64
    );
}

/// Completed requests, their summed latency, and connections still running.
struct Tally {
    done: u64,
    lat: f64,
    outstanding: usize,
}

impl Tally {
    fn new(conns: usize) -> Tally {
        Tally {
            done: 0,
            lat: 0.0,
            outstanding: conns,
        }
    }

    /// A response completed; whether the connection sends again.
    fn answered(&mut self, c: &Conn, now: Instant, stopping: bool) -> bool {
        self.done += 1;
        self.lat += now.duration_since(c.sent_at).as_secs_f64() * 1e6;
        self.outstanding -= usize::from(stopping);
        !stopping
    }
}

/// Queues one entry, submitting first when the queue is full.
fn push(ring: &mut IoUring, e: squeue::Entry) {
    // SAFETY: every entry points at buffers that live until the run ends.
    unsafe {
        while ring.submission().push(&e).is_err() {
            ring.submit().unwrap();
        }
    }
}

fn run_uring(conns: &mut [Conn], deadline: Instant, linked: bool) -> (u64, f64) {
    let mut ring: IoUring = if std::env::var_os("PLAIN").is_some() {
        IoUring::new(1024).unwrap()
    } else {
        IoUring::builder()
            .setup_coop_taskrun()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(1024)
            .unwrap()
    };
    let mut tally = Tally::new(conns.len());
    // user_data: conn index * 2 + (0 send, 1 recv)
    let queue = |ring: &mut IoUring, c: &mut Conn, i: usize| {
        c.sent_at = Instant::now();
        c.have = 0;
        let fd = types::Fd(c.s.as_raw_fd());
        let send = opcode::Send::new(fd, REQ.as_ptr(), REQ.len() as u32)
            .build()
            .user_data((i * 2) as u64);
        let recv = opcode::Recv::new(fd, c.buf.as_mut_ptr(), c.buf.len() as u32)
            .build()
            .user_data((i * 2 + 1) as u64);
        if linked {
            push(
                ring,
                send.flags(squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS),
            );
            push(ring, recv);
        } else {
            push(ring, send);
        }
    };
    for (i, c) in conns.iter_mut().enumerate() {
        queue(&mut ring, c, i);
    }
    let mut stopping = false;
    while tally.outstanding > 0 {
        ring.submit_and_wait(1).unwrap();
        let cqes: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        let now = Instant::now();
        if now >= deadline {
            stopping = true;
        }
        for (ud, res) in cqes {
            let (i, is_recv) = ((ud / 2) as usize, ud % 2 == 1);
            let c = &mut conns[i];
            assert!(res >= 0, "op failed {res}");
            if !is_recv {
                let fd = types::Fd(c.s.as_raw_fd());
                let recv = opcode::Recv::new(fd, c.buf.as_mut_ptr(), c.buf.len() as u32)
                    .build()
                    .user_data(ud + 1);
                push(&mut ring, recv);
                continue;
            }
            c.have += res as usize;
            if complete(&c.buf[..c.have]).is_some() {
                if tally.answered(c, now, stopping) {
                    queue(&mut ring, c, i);
                }
            } else {
                let fd = types::Fd(c.s.as_raw_fd());
                let at = c.have;
                let recv =
                    opcode::Recv::new(fd, c.buf[at..].as_mut_ptr(), (c.buf.len() - at) as u32)
                        .build()
                        .user_data(ud);
                push(&mut ring, recv);
            }
        }
    }
    (tally.done, tally.lat)
}

fn run_epoll(conns: &mut [Conn], deadline: Instant) -> (u64, f64) {
    let ep = unsafe { libc::epoll_create1(0) };
    for (i, c) in conns.iter_mut().enumerate() {
        c.s.set_nonblocking(true).unwrap();
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLET) as u32,
            u64: i as u64,
        };
        unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, c.s.as_raw_fd(), &mut ev) };
        c.sent_at = Instant::now();
        c.s.write_all(REQ).unwrap();
    }
    let mut evs = vec![libc::epoll_event { events: 0, u64: 0 }; 1024];
    let (mut done, mut lat) = (0u64, 0f64);
    let mut outstanding = conns.len();
    let mut stopping = false;
    while outstanding > 0 {
        let k = unsafe { libc::epoll_wait(ep, evs.as_mut_ptr(), 1024, 100) };
        let now = Instant::now();
        if now >= deadline {
            stopping = true;
        }
        for e in &evs[..k.max(0) as usize] {
            let c = &mut conns[e.u64 as usize];
            loop {
                let r = unsafe {
                    libc::recv(
                        c.s.as_raw_fd(),
                        c.buf[c.have..].as_mut_ptr().cast(),
                        c.buf.len() - c.have,
                        0,
                    )
                };
                if r <= 0 {
                    break;
                }
                c.have += r as usize;
                if complete(&c.buf[..c.have]).is_some() {
                    done += 1;
                    lat += now.duration_since(c.sent_at).as_secs_f64() * 1e6;
                    c.have = 0;
                    if stopping {
                        outstanding -= 1;
                    } else {
                        c.sent_at = Instant::now();
                        unsafe { libc::send(c.s.as_raw_fd(), REQ.as_ptr().cast(), REQ.len(), 0) };
                    }
                    break;
                }
            }
        }
    }
    (done, lat)
}

/// Multishot receive with a provided-buffer ring: one armed receive per connection for the whole
/// run; sends go out with SKIP_SUCCESS (no completion unless they fail).
fn run_multi(conns: &mut [Conn], deadline: Instant) -> (u64, f64) {
    let mut ring: IoUring = IoUring::builder()
        .setup_coop_taskrun()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(1024)
        .unwrap();
    const ENTRIES: u16 = 512;
    const BUF: usize = 2048;
    let ring_mem = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            ENTRIES as usize * 16,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_ANONYMOUS | libc::MAP_PRIVATE,
            -1,
            0,
        )
    } as *mut u8;
    let mut bufs = vec![0u8; ENTRIES as usize * BUF];
    let base = bufs.as_mut_ptr();
    let set = |bid: u16, slot: u16| unsafe {
        let e = ring_mem.add((slot & (ENTRIES - 1)) as usize * 16);
        (e as *mut u64).write(base.add(bid as usize * BUF) as u64);
        (e.add(8) as *mut u32).write(BUF as u32);
        (e.add(12) as *mut u16).write(bid);
    };
    let tail_ptr = unsafe { ring_mem.add(14) as *const std::sync::atomic::AtomicU16 };
    let mut tail: u16 = 0;
    for b in 0..ENTRIES {
        set(b, tail);
        tail = tail.wrapping_add(1);
    }
    unsafe { (*tail_ptr).store(tail, std::sync::atomic::Ordering::Release) };
    unsafe {
        ring.submitter()
            .register_buf_ring_with_flags(ring_mem as u64, ENTRIES, 0, 0)
            .unwrap()
    };
    let send = |ring: &mut IoUring, c: &mut Conn, i: usize| {
        c.sent_at = Instant::now();
        c.have = 0;
        let fd = types::Fd(c.s.as_raw_fd());
        let e = opcode::Send::new(fd, REQ.as_ptr(), REQ.len() as u32)
            .build()
            .user_data((i * 2) as u64)
            .flags(squeue::Flags::SKIP_SUCCESS);
        push(ring, e);
    };
    for (i, c) in conns.iter_mut().enumerate() {
        let fd = types::Fd(c.s.as_raw_fd());
        push(
            &mut ring,
            opcode::RecvMulti::new(fd, 0)
                .build()
                .user_data((i * 2 + 1) as u64),
        );
        send(&mut ring, c, i);
    }
    let mut tally = Tally::new(conns.len());
    let mut stopping = false;
    let mut cqes = Vec::with_capacity(1024);
    while tally.outstanding > 0 {
        ring.submit_and_wait(1).unwrap();
        cqes.clear();
        cqes.extend(
            ring.completion()
                .map(|c| (c.user_data(), c.result(), c.flags())),
        );
        let now = Instant::now();
        if now >= deadline {
            stopping = true;
        }
        for &(ud, res, flags) in &cqes {
            let i = (ud / 2) as usize;
            assert!(res >= 0 && ud % 2 == 1, "op failed {res} ud {ud}");
            assert!(io_uring::cqueue::more(flags), "multishot ended");
            let bid = io_uring::cqueue::buffer_select(flags).unwrap();
            let c = &mut conns[i];
            let data = &bufs[bid as usize * BUF..][..res as usize];
            c.buf[c.have..c.have + data.len()].copy_from_slice(data);
            c.have += data.len();
            set(bid, tail);
            tail = tail.wrapping_add(1);
            if complete(&c.buf[..c.have]).is_some() && tally.answered(c, now, stopping) {
                send(&mut ring, c, i);
            }
        }
        unsafe { (*tail_ptr).store(tail, std::sync::atomic::Ordering::Release) };
    }
    (tally.done, tally.lat)
}
