//! armada-gdb: gdb's remote protocol for a program armada runs (`armada run -g PORT`, as
//! `qemu-aarch64 -g PORT`). The protocol is the `gdbstub` crate's; what a stop is, and
//! how breakpoints, watchpoints and steps work on the engine, is
//! `armada_core::runner::debug`'s. docs/debugging.md says how to use it and how it works.

mod arch;
mod target;

pub use arch::{gdb_signal, Aarch64Linux, Regs};
pub use target::Session;

use anyhow::{bail, Context, Result};
use armada_core::runner::{Exit, Lane};
use gdbstub::conn::{Connection, ConnectionExt};
use gdbstub::stub::run_blocking::{self, BlockingEventLoop};
use gdbstub::stub::{DisconnectReason, GdbStub, MultiThreadStopReason};
use gdbstub::target::Target;
use std::path::PathBuf;

/// Where the stub waits for gdb (`-g`'s value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    /// A TCP address: `PORT` is 127.0.0.1:PORT (the stub lets its client read and write
    /// the program's memory, so it is not offered to the network unless a host is named:
    /// `0.0.0.0:PORT`).
    Tcp(String),
    /// A Unix socket (a value with a `/` in it, as qemu-user takes).
    Unix(PathBuf),
}

impl Listen {
    /// Parses `-g`'s value: `PORT`, `HOST:PORT` or a socket path.
    pub fn parse(s: &str) -> Result<Listen> {
        if s.contains('/') {
            return Ok(Listen::Unix(PathBuf::from(s)));
        }
        let (host, port) = match s.rsplit_once(':') {
            Some((h, p)) => (if h.is_empty() { "127.0.0.1" } else { h }, p),
            None => ("127.0.0.1", s),
        };
        match port.parse::<u16>() {
            Ok(p) => Ok(Listen::Tcp(format!("{host}:{p}"))),
            Err(_) => bail!("-g takes a port (1234), HOST:PORT or a Unix socket path, not {s:?}"),
        }
    }
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Tcp(a) => write!(f, "{a}"),
            Listen::Unix(p) => write!(f, "{}", p.display()),
        }
    }
}

type Conn = Box<dyn ConnectionExt<Error = std::io::Error>>;

/// Waits for one gdb connection at `at`; `program` names the program in the hint.
fn accept(at: &Listen, program: &str) -> Result<Conn> {
    let (conn, target): (Conn, String) = match at {
        Listen::Tcp(addr) => {
            let l = std::net::TcpListener::bind(addr).map_err(|e| match e.kind() {
                std::io::ErrorKind::AddrInUse => anyhow::anyhow!(
                    "cannot serve gdb on {addr}: the port is in use (another armada -g, qemu -g or gdbserver?); choose another with -g PORT"
                ),
                _ => anyhow::anyhow!("cannot serve gdb on {addr}: {e}"),
            })?;
            // (port 0: the one the system chose, which the announcement gives)
            let bound = l.local_addr().map_or(addr.clone(), |a| a.to_string());
            let shown = bound.strip_prefix("127.0.0.1").unwrap_or(&bound);
            announce(program, &format!("target remote {shown}"), &bound);
            let (s, _) = l.accept().context("waiting for gdb")?;
            let _ = s.set_nodelay(true);
            (Box::new(s), bound)
        }
        Listen::Unix(path) => {
            if path.exists() {
                bail!(
                    "cannot serve gdb on {}: the file exists (remove it, or choose another path)",
                    path.display()
                );
            }
            let l = std::os::unix::net::UnixListener::bind(path)
                .with_context(|| format!("cannot serve gdb on {}", path.display()))?;
            announce(
                program,
                &format!("target remote {}", path.display()),
                &path.display().to_string(),
            );
            let accepted = l.accept();
            let _ = std::fs::remove_file(path);
            let (s, _) = accepted.context("waiting for gdb")?;
            (Box::new(s), path.display().to_string())
        }
    };
    eprintln!("armada: gdb connected on {target}");
    Ok(conn)
}

fn announce(program: &str, cmd: &str, at: &str) {
    eprintln!("armada: waiting for gdb on {at}: gdb-multiarch {program} -ex '{cmd}'");
}

enum EventLoop {}

impl BlockingEventLoop for EventLoop {
    type Target = Session;
    type Connection = Conn;
    type StopReason = MultiThreadStopReason<u64>;

    fn wait_for_stop_reason(
        target: &mut Session,
        conn: &mut Conn,
    ) -> Result<
        run_blocking::Event<Self::StopReason>,
        run_blocking::WaitForStopReasonError<
            <Session as Target>::Error,
            <Conn as Connection>::Error,
        >,
    > {
        loop {
            if let Some(stop) = target.run_slice() {
                return Ok(run_blocking::Event::TargetStopped(stop));
            }
            // between slices: has gdb sent something (its interrupt)?
            if conn.peek().map(|b| b.is_some()).unwrap_or(true) {
                let byte = conn
                    .read()
                    .map_err(run_blocking::WaitForStopReasonError::Connection)?;
                return Ok(run_blocking::Event::IncomingData(byte));
            }
        }
    }

    fn on_interrupt(target: &mut Session) -> Result<Option<Self::StopReason>, String> {
        Ok(Some(target.interrupted()))
    }
}

/// Runs `lane` (not started yet) under gdb: waits for gdb at `at`, serves it until the
/// program ends or gdb detaches or kills it, and runs the program on to its end after a
/// detach (or a connection that breaks). Returns the lane, ended.
pub fn serve(lane: Lane, max: Option<u64>, at: &Listen, program: &str) -> Result<Lane> {
    let deterministic = lane.program.process.cfg.deterministic;
    let conn = accept(at, program)?;
    if !deterministic {
        eprintln!("armada: (reverse execution needs a deterministic run: armada run --deterministic -g ...)");
    }
    let mut session = Session::new(lane, max);
    let stub = GdbStub::<Session, Conn>::builder(conn)
        .packet_buffer_size(0x4000)
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the gdb stub: {e}"))?;
    let mut killed = false;
    let detached = match stub.run_blocking::<EventLoop>(&mut session) {
        Ok(DisconnectReason::TargetExited(_)) | Ok(DisconnectReason::TargetTerminated(_)) => false,
        Ok(DisconnectReason::Disconnect) => {
            eprintln!("armada: gdb detached; the program runs on");
            true
        }
        Ok(DisconnectReason::Kill) => {
            killed = true;
            false
        }
        Err(e) if e.is_connection_error() => {
            eprintln!("armada: the connection to gdb broke ({e}); the program runs on without it");
            true
        }
        Err(e) => bail!("the gdb stub failed: {e}"),
    };
    let Session { tl, mut dbg, .. } = session;
    // after a look at the past, the program goes on from the present
    let mut lane = tl.into_present();
    if killed {
        lane.exit = Some(Exit::Signal {
            signal: 9,
            message: Some("killed by gdb".to_string()),
        });
    }
    if detached && lane.exit.is_none() {
        lane.debug_detach(&mut dbg);
        lane.run(max);
    }
    Ok(lane)
}
