//! A raw TCP server for tests: one thread per connection, counting what its `serve` function
//! says it read. The engine's tests and the CLI's (through `raw.rs`, by `#[path]`) share it.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A raw server on 127.0.0.1: `serve` runs in a thread of its own for each connection, with
/// the shared count and stop flag; stopped on drop.
pub(crate) struct RawListener {
    pub(crate) addr: SocketAddr,
    pub(crate) count: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl RawListener {
    pub(crate) fn start<F>(serve: F) -> RawListener
    where
        F: Fn(TcpStream, &AtomicU64, &AtomicBool) + Send + Sync + Copy + 'static,
    {
        RawListener::bind("127.0.0.1:0", serve).unwrap()
    }

    /// [`RawListener::start`] on `bind`.
    pub(crate) fn bind<F>(bind: &str, serve: F) -> std::io::Result<RawListener>
    where
        F: Fn(TcpStream, &AtomicU64, &AtomicBool) + Send + Sync + Copy + 'static,
    {
        let listener = TcpListener::bind(bind)?;
        let addr = listener.local_addr()?;
        let count = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (Arc::clone(&count), Arc::clone(&stop));
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (c, s) = (Arc::clone(&c), Arc::clone(&s));
                std::thread::spawn(move || serve(conn, &c, &s));
            }
        });
        Ok(RawListener { addr, count, stop })
    }

    /// The server's count once it stopped moving (what is in transit is read by then).
    pub(crate) fn settled(&self) -> u64 {
        settled(&self.count)
    }
}

/// `count` once it stopped moving for 50 ms (at most a second's wait).
pub(crate) fn settled(count: &AtomicU64) -> u64 {
    {
        let mut last = count.load(Ordering::SeqCst);
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(50));
            let now = count.load(Ordering::SeqCst);
            if now == last {
                return now;
            }
            last = now;
        }
        last
    }
}

impl Drop for RawListener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr);
    }
}
