//! The rest of the Linux surface real programs use: interval timers and alarms, POSIX
//! timers, sleeps and signal waits with timeouts, signalfd, sockets on the run's own loopback
//! network (TCP over IPv4 and IPv6, AF_UNIX path and abstract names), edge-triggered epoll,
//! System V shared memory, semaphores and message queues, MAP_SHARED anonymous memory across
//! fork, memfd_create, splice, tee, vmsplice and sendfile between pipes, files and sockets,
//! the loopback interface as getifaddrs, the SIOCGIF* ioctls and rtnetlink show it, raw IP
//! sockets (ICMP and ICMPv6 echo on loopback, IP_HDRINCL; EPERM without root),
//! credentials (the set*id calls, groups, capget/capset, /proc/self/status), advisory
//! file locks between processes (POSIX record, OFD, flock; F_SETLKW waits, EDEADLK), and a
//! process's settings (umask on new files, prctl, CPU-time clocks, /proc/self/cwd), and
//! guest execs of host programs under `--host-exec` (pipes both ways, 200 kB through a host
//! `wc`, exit statuses, deaths by signal, posix_spawn, an inherited fd 5).
//!
//! Differential: our C programs of tests/guest/surface (built by
//! tests/guest/build-processes.sh into target/guest-surface, or `$ARMADA_GUEST_SURFACE_DIR`)
//! run under `qemu-aarch64` and under `armada run`, twice: on the host's clocks, and under
//! `--deterministic`, where every timer runs on the virtual clock (the programs print
//! relations such as "at least 13 ms passed", which hold on both clocks, never times).
//! stdout, stderr and the exit status must match (tests/common/mod.rs).
//!
//! [`python_http_matches_qemu`]: python3's `http.server` (a threading server) and `urllib`
//! against itself, `socket` over IPv6 and a socketpair, from the Debian sysroot
//! (scripts/sysroot.sh) under `-L`. Go's net/http server and client in one program is
//! `go_nethttp` of the threads suite (tests/threads.rs).

mod common;

use common::Case;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// Builds tests/guest/surface once per test process.
fn programs_dir(test: &str) -> Option<PathBuf> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    common::build_guest_c(
        test,
        &BUILT,
        "ARMADA_GUEST_SURFACE_DIR",
        "guest-surface",
        "surface",
    )
}

/// Each program with its arguments, under both of armada's clocks.
fn cases(dir: &std::path::Path) -> Vec<Case> {
    let programs: &[(&str, &str, &[&str])] = &[
        ("interval timers, alarm, pause", "itimer", &[]),
        ("POSIX timers", "posix_timers", &[]),
        ("loopback TCP, IPv4 and IPv6", "tcp", &[]),
        ("AF_UNIX names, SCM_RIGHTS, seqpacket", "unix_sockets", &[]),
        (
            "SysV shm, semaphores, queues; shared mappings",
            "sysv_ipc",
            &[],
        ),
        ("signalfd", "signalfd", &[]),
        ("edge-triggered epoll", "epoll_edge", &[]),
        ("UDP and AF_UNIX datagrams", "udp", &[]),
        ("splice, tee, vmsplice, sendfile, preadv2", "splice", &[]),
        (
            "lo through getifaddrs, ioctls, rtnetlink",
            "interfaces",
            &[],
        ),
        ("umask, prctl, CPU clocks, /proc/self/cwd", "procattrs", &[]),
        ("raw IP sockets: ICMP echo, IP_HDRINCL", "rawip", &[]),
        ("credentials: set*id, groups, capabilities", "creds", &[]),
        ("SO_PASSCRED, SCM_CREDENTIALS, SO_PEERCRED", "passcred", &[]),
        ("pseudo-terminals: openpty, termios", "pty", &[]),
        ("inotify on the guest's changes", "inotify", &[]),
        (
            "record, OFD and flock locks between processes",
            "locks",
            &[],
        ),
    ];
    let mut v = Vec::new();
    for (name, program, args) in programs {
        for det in [false, true] {
            let mut c = Case::new(
                format!("{name}{}", if det { " (deterministic)" } else { "" }),
                dir.join(program),
            )
            .args(args.iter().copied())
            .expect_status(0);
            if det {
                c = c.armada_arg("--deterministic");
            }
            v.push(c);
        }
    }
    // `--net host`: the same programs on the host's network, as qemu has them
    for (name, program) in [("TCP", "tcp"), ("UDP", "udp")] {
        v.push(
            Case::new(format!("{name} with --net host"), dir.join(program))
                .armada_arg("--net")
                .armada_arg("host")
                .expect_status(0),
        );
    }
    // `--host-exec`: the guest's execs of the host's own programs (echo, tr, wc, sh, sleep)
    // run natively, as qemu-user runs them; only where the host's programs are x86-64, the
    // one host architecture armada knows to run natively
    if cfg!(target_arch = "x86_64") {
        v.push(
            Case::new("exec of host programs (--host-exec)", dir.join("host_exec"))
                .armada_arg("--host-exec")
                .expect_status(0),
        );
    }
    v
}

#[test]
fn c_programs_match_qemu() {
    const TEST: &str = "surface c_programs_match_qemu";
    let Some(dir) = programs_dir(TEST) else {
        return;
    };
    common::run_suite("surface-c", cases(&dir));
}

const PYTHON_HTTP: &str = r#"
import http.server, threading, urllib.request, urllib.error, socket, json
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({'path': self.path, 'ua': self.headers.get('User-Agent', '')[:6]}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        data = self.rfile.read(int(self.headers['Content-Length']))
        self.send_response(201)
        self.end_headers()
        self.wfile.write(data.upper())
    def log_message(self, *a):
        pass
srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
port = srv.server_address[1]
threading.Thread(target=srv.serve_forever, daemon=True).start()
for p in ['/', '/hello?x=1', '/a/b/c']:
    with urllib.request.urlopen(f'http://127.0.0.1:{port}{p}') as r:
        print(r.status, r.headers['Content-Type'], r.read().decode())
req = urllib.request.Request(f'http://localhost:{port}/post', data=b'posted body', method='POST')
with urllib.request.urlopen(req) as r:
    print(r.status, r.read())
try:
    urllib.request.urlopen('http://127.0.0.1:1/')
except urllib.error.URLError as e:
    print('closed port:', type(e.reason).__name__)
a, b = socket.socketpair()
a.sendall(b'pair')
print('socketpair:', b.recv(10))
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.bind(('::1', 0))
s.listen()
c = socket.create_connection(('::1', s.getsockname()[1]))
conn, addr = s.accept()
c.sendall(b'v6')
print('ipv6:', conn.recv(10), addr[0])
srv.shutdown()
print('done')
"#;

#[test]
fn python_http_matches_qemu() {
    const TEST: &str = "surface python_http_matches_qemu";
    if !common::require_tools(TEST, &[common::qemu_bin()]) {
        return;
    }
    common::require_armada(TEST);
    let sysroot =
        match common::debian_sysroot(&["usr/bin/python3", "usr/lib/python3.11/http/server.py"]) {
            Ok(d) => d,
            Err(e) => {
                common::unavailable(TEST, &e);
                return;
            }
        };
    let mut cases = Vec::new();
    for det in [false, true] {
        let mut c = Case::new(
            format!(
                "python3 http.server + urllib{}",
                if det { " (deterministic)" } else { "" }
            ),
            sysroot.join("usr/bin/python3"),
        )
        .arg("-c")
        .arg(PYTHON_HTTP)
        .sysroot(&sysroot)
        .expect_status(0);
        if det {
            c = c.armada_arg("--deterministic");
        }
        cases.push(c);
    }
    common::run_suite("surface-python", cases);
}

/// Runs `armada run ARMADA_ARGS PROGRAM ARGS` of a surface program in a fresh directory.
fn armada_alone(
    test: &str,
    armada_args: &[&str],
    program: &str,
    args: &[&str],
) -> Option<common::RunOutput> {
    let dir = programs_dir(test)?;
    let work = common::workspace_root()
        .join("target/test-work")
        .join(program)
        .join(args.join("-"));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("work dir");
    let mut cmd = Command::new(common::armada_bin());
    cmd.arg("run")
        .args(common::tier_args())
        .args(armada_args)
        .arg(dir.join(program))
        .args(args)
        .current_dir(&work)
        .env_clear()
        .envs(common::tier_env())
        .envs(common::base_env(&work));
    Some(common::run_process(cmd, b"", common::default_timeout()).expect("armada runs"))
}

/// `prog 3>out 4<in` from a shell: the guest finds fds 3 and 4 as qemu's guest does, and
/// writes through 3 to the host's file.
#[test]
fn host_fds_beyond_stdio_reach_the_guest() {
    const TEST: &str = "surface host_fds_beyond_stdio_reach_the_guest";
    let Some(dir) = programs_dir(TEST) else {
        return;
    };
    common::require_armada(TEST);
    let work = common::workspace_root().join("target/test-work/surface-inherited-fds");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("work dir");
    std::fs::write(work.join("in"), "four\n").expect("input");
    let program = dir.join("inherited_fds");
    let mut outs = Vec::new();
    for (side, runner) in [
        ("qemu", vec![common::qemu_bin()]),
        (
            "armada",
            std::iter::once(common::armada_bin().into_os_string())
                .chain(std::iter::once("run".into()))
                .chain(common::tier_args())
                .collect(),
        ),
    ] {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(format!("exec \"$@\" 3>out.{side} 4<in 5>&-"))
            .arg("sh")
            .args(&runner)
            .arg(&program)
            .current_dir(&work)
            .envs(common::tier_env());
        let out = common::run_process(cmd, b"", common::default_timeout()).expect("runs");
        let written = std::fs::read_to_string(work.join(format!("out.{side}"))).unwrap_or_default();
        outs.push((
            side,
            out.status,
            String::from_utf8_lossy(&out.stdout).into_owned(),
            written,
        ));
    }
    let (q, a) = (&outs[0], &outs[1]);
    assert_eq!(
        (a.1, &a.2, &a.3),
        (q.1, &q.2, &q.3),
        "{TEST}: armada (status, stdout, fd 3's file) differ from qemu's"
    );
    assert_eq!(
        q.3, "three\n",
        "{TEST}: qemu's guest should have written fd 3"
    );
}

/// armada only (qemu would wait forever): a semop that nothing can release is reported as a
/// deadlock naming the syscall, and the run ends as SIGKILL would (137); so is a wait that
/// only a periodic timer whose signal is ignored could end, on the virtual clock (which
/// would otherwise run on forever).
#[test]
fn deadlocks_are_reported() {
    const TEST: &str = "surface deadlocks_are_reported";
    let Some(out) = armada_alone(TEST, &[], "sysv_ipc", &["deadlock"]) else {
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status, 137,
        "{TEST}: status {}; stderr:\n{err}",
        out.status_text
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "waiting forever\n");
    assert!(
        err.contains("deadlock") && (err.contains("semop") || err.contains("semtimedop")),
        "{TEST}: the report should name the deadlock and the semop; stderr:\n{err}"
    );
    let Some(out) = armada_alone(TEST, &["--deterministic"], "itimer", &["ignored"]) else {
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status, 137,
        "{TEST}: status {}; stderr:\n{err}",
        out.status_text
    );
    assert!(
        err.contains("deadlock") && err.contains("a timer is armed"),
        "{TEST}: the report should say the timer wakes nobody; stderr:\n{err}"
    );
}

/// armada only (under qemu these are the host's files): with --deterministic, /proc and
/// /sys describe the machine uname, sysinfo and sched_getaffinity describe, and an arm64
/// /proc/cpuinfo; the same under --root, where the host's /proc is out of view. Without it
/// the machine's CPUs are the host's while the guest's affinity is one CPU (a lane runs
/// its tasks one at a time: docs/architecture.md), as for a process pinned with taskset.
#[test]
fn machine_files_agree_with_the_syscalls() {
    const TEST: &str = "surface machine_files_agree_with_the_syscalls";
    if !common::require_tools(TEST, &["dpkg-deb".into()]) {
        return;
    }
    common::require_armada(TEST);
    let deb = match common::find_deb(&common::deps_dir(), "busybox-static") {
        Some(d) => d,
        None => {
            common::unavailable(
                TEST,
                "busybox-static arm64 .deb not found (scripts/test downloads it)",
            );
            return;
        }
    };
    let busybox = common::extract(&deb)
        .expect("extract busybox")
        .join("bin/busybox");
    let script =
        "uname -r; cat /proc/sys/kernel/osrelease; nproc; grep -c ^processor /proc/cpuinfo; \
                  grep ^CPU.implementer /proc/cpuinfo | head -n 1; \
                  awk '/MemTotal/ {print $2 * 1024}' /proc/meminfo; cat /proc/uptime | cut -d. -f1";
    let work = common::workspace_root().join("target/test-work/surface-machine");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("work dir");
    let run = |deterministic: bool| {
        let mut cmd = Command::new(common::armada_bin());
        cmd.arg("run").args(common::tier_args());
        if deterministic {
            cmd.arg("--deterministic");
        }
        cmd.arg(&busybox)
            .args(["sh", "-c", script])
            .current_dir(&work)
            .env_clear()
            .envs(common::tier_env())
            .envs(common::base_env(&work));
        let out = common::run_process(cmd, b"", common::default_timeout()).expect("armada runs");
        assert_eq!(
            out.status,
            0,
            "{TEST}: {}\n{}",
            out.status_text,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = run(true);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 7, "{TEST}: output:\n{text}");
    assert_eq!(
        lines[0], lines[1],
        "uname -r and /proc/sys/kernel/osrelease differ"
    );
    assert_eq!(
        (lines[2], lines[3]),
        ("1", "1"),
        "nproc and /proc/cpuinfo's processors: one virtual core"
    );
    assert!(
        lines[4].ends_with("0x41"),
        "an arm64 cpuinfo names its implementer: {}",
        lines[4]
    );
    // sysinfo's total (8 GiB under --deterministic)
    assert_eq!(lines[5], (8u64 << 30).to_string(), "MemTotal");
    // the virtual clock's uptime starts at 100 s
    assert_eq!(lines[6], "100", "uptime");

    // the host's clock: the host's CPUs in /proc/cpuinfo, one in the guest's affinity
    let text = run(false);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 7, "{TEST}: output:\n{text}");
    let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(lines[2], "1", "nproc (the guest's affinity) is one CPU");
    assert_eq!(
        lines[3],
        host_cpus.to_string(),
        "/proc/cpuinfo lists the host's CPUs"
    );
}
