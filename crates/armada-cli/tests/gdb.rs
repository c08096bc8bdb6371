//! `armada run -g`: Debian's gdb-multiarch, a real client, drives the stub in batch mode on
//! tests/guest/debug/debuggee.c, built here (static, and dynamically linked against Debian's
//! cross sysroot): breakpoints at a function and an address, steps, registers and vector
//! registers, memory reads and writes, watchpoints, threads, a fault, abort(), a signal to a
//! handler, detach and kill; then what a bad client does (a port in use, a client that leaves mid-packet,
//! random bytes) must end with a clear message or a finished program, never a panic.
//!
//! Needs gdb-multiarch and aarch64-linux-gnu-gcc (scripts/test installs both); without
//! them the tests skip loudly, or fail under CI / ARMADA_TEST_STRICT.

mod common;

use common::{armada_bin, require_tools, unavailable};
use std::ffi::OsString;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The cross sysroot the dynamic build links against (Debian's libc6-arm64-cross).
const CROSS_SYSROOT: &str = "/usr/aarch64-linux-gnu";

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/guest/debug/debuggee.c")
}

/// The debuggee, built once per test process: (static, dynamic).
fn built(test: &str) -> Option<&'static (PathBuf, PathBuf)> {
    static BUILT: OnceLock<Result<(PathBuf, PathBuf), String>> = OnceLock::new();
    if !require_tools(
        test,
        &[
            OsString::from("gdb-multiarch"),
            OsString::from("aarch64-linux-gnu-gcc"),
        ],
    ) {
        return None;
    }
    let r = BUILT.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gdb-debuggee");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        // the static one at a fixed address; the dynamic one position-independent, as
        // distributions ship programs
        for (name, link) in [("debuggee", "-static"), ("debuggee-dyn", "-pie")] {
            let bin = dir.join(name);
            let mut cmd = Command::new("aarch64-linux-gnu-gcc");
            cmd.args(["-g", "-O0", "-pthread", link, "-o"])
                .arg(&bin)
                .arg(src());
            let o = cmd.output().map_err(|e| e.to_string())?;
            if !o.status.success() {
                return Err(String::from_utf8_lossy(&o.stderr).into_owned());
            }
            out.push(bin);
        }
        Ok((out[0].clone(), out[1].clone()))
    });
    match r {
        Ok(p) => Some(p),
        Err(e) => panic!("{test}: building {} failed:\n{e}", src().display()),
    }
}

/// A program under `armada run -g 127.0.0.1:0`, once it waits for gdb.
struct Debuggee {
    child: Child,
    addr: String,
    /// What armada printed on stderr up to and with the announcement.
    stderr_head: String,
    stderr: Option<std::thread::JoinHandle<String>>,
}

fn start(extra: &[&str], program: &Path, args: &[&str]) -> Debuggee {
    let mut child = Command::new(armada_bin())
        .arg("run")
        .args(extra)
        .args(["-g", "127.0.0.1:0"])
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("armada starts");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut head = String::new();
    let Some(addr) = common::gdb_address(&mut err, &mut head) else {
        let _ = child.kill();
        panic!("armada ended before waiting for gdb:\n{head}");
    };
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    Debuggee {
        child,
        addr,
        stderr_head: head,
        stderr: Some(stderr),
    }
}

impl Debuggee {
    /// Waits (at most a minute) for armada to end: its status, stdout and stderr.
    fn finish(mut self) -> (ExitStatus, String, String) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("armada did not end within a minute of the session");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut out = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let err = self.stderr_head.clone() + &self.stderr.take().unwrap().join().unwrap();
        (status, out, err)
    }
}

/// Runs gdb-multiarch in batch mode on `program` against `d`, with `cmds` after
/// `target remote`; returns what it printed (stdout and stderr).
fn gdb(d: &Debuggee, program: &Path, before: &[&str], cmds: &[&str]) -> String {
    let mut cmd = Command::new("gdb-multiarch");
    cmd.args([
        "-batch",
        "-nx",
        "-ex",
        "set pagination off",
        "-ex",
        "set confirm off",
    ]);
    for c in before {
        cmd.args(["-ex", c]);
    }
    cmd.arg("-ex")
        .arg(format!("target remote {}", d.addr))
        .arg(program);
    for c in cmds {
        cmd.args(["-ex", c]);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gdb-multiarch starts");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("gdb-multiarch did not finish within two minutes");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

fn has(out: &str, want: &str) {
    assert!(
        out.contains(want),
        "expected {want:?} in gdb's output:\n{out}"
    );
}

#[test]
fn breakpoints_steps_registers_memory_and_watchpoints() {
    let Some((prog, _)) = built("gdb breakpoints") else {
        return;
    };
    // the address of add's first instruction, for a breakpoint at an address
    let d = start(&[], prog, &[]);
    let out = gdb(
        &d,
        prog,
        &[],
        &[
            "break *add",
            "break add",
            "continue",
            "info registers pc",
            "continue",
            "info registers x0 x1",
            "bt",
            "finish",
            "next",
            "watch watched",
            "continue",
            "continue",
            "delete",
            "stepi",
            "print/x $v5.q.u",
            "print $v5.b.u[3]",
            "set var watched = 1234",
            "print/x $tpidr != 0",
            "x/2xw &watched",
            "rwatch watched",
            "continue",
            "delete",
            "continue",
        ],
    );
    has(&out, "Breakpoint 1, add (");
    has(&out, "<add>");
    has(&out, "Breakpoint 2, add (a=2, b=3) at");
    has(&out, "x0             0x2");
    has(&out, "x1             0x3");
    has(&out, "#1  0x");
    has(&out, " in main (");
    has(&out, "Value returned is $1 = 5");
    has(&out, "Hardware watchpoint 3: watched");
    has(&out, "Old value = 0\nNew value = 5");
    has(&out, "Old value = 5\nNew value = 35");
    has(&out, "= {0x2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a}");
    has(&out, "= 42");
    has(&out, "= 0x1");
    has(&out, ":\t0x000004d2\t0x00000000");
    has(&out, "Hardware read watchpoint 4: watched\n\nValue = 1234");
    has(&out, "exited normally");
    let (status, stdout, stderr) = d.finish();
    assert!(status.success(), "{status:?}\n{stderr}");
    // the write from gdb reached the program
    assert_eq!(stdout, "sum 5 watched 1234 counter 0\n", "{stderr}");
}

#[test]
fn threads_faults_and_abort_stop_as_on_linux() {
    let Some((prog, _)) = built("gdb threads") else {
        return;
    };
    let d = start(&["--deterministic"], prog, &["threads"]);
    let out = gdb(
        &d,
        prog,
        &[],
        &[
            "break in_thread",
            "continue",
            "info threads",
            "print id",
            "continue",
            "print id",
            "thread 1",
            "bt",
            "delete",
            "continue",
        ],
    );
    has(&out, "hit Breakpoint 1, in_thread (id=1)");
    has(&out, "hit Breakpoint 1, in_thread (id=2)");
    assert!(
        out.matches("Thread ").count() >= 6,
        "three threads listed:\n{out}"
    );
    has(&out, "in main (");
    has(&out, "exited normally");
    let (status, stdout, _) = d.finish();
    assert!(status.success());
    assert_eq!(stdout, "sum 5 watched 35 counter 203\n");

    // a fault stops the program before its signal; continuing delivers it
    let d = start(&[], prog, &["segv"]);
    let out = gdb(&d, prog, &[], &["continue", "bt", "x/i $pc", "continue"]);
    has(&out, "Program received signal SIGSEGV, Segmentation fault.");
    has(&out, "debuggee.c:81");
    has(&out, "str\t");
    has(&out, "Program terminated with signal SIGSEGV");
    let (status, _, stderr) = d.finish();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{stderr}");

    // abort(): the signal its own tgkill sends stops it inside raise, with the stack
    let d = start(&[], prog, &["abort"]);
    let out = gdb(&d, prog, &[], &["continue", "bt", "continue"]);
    has(&out, "Program received signal SIGABRT, Aborted.");
    has(&out, "in abort ()");
    has(&out, "in main (");
    has(&out, "Program terminated with signal SIGABRT");
    let (status, _, _) = d.finish();
    assert_eq!(status.signal(), Some(libc::SIGABRT));

    // a signal on its way to a handler stops the program; continuing runs the handler
    // (gdb shows its frame over the signal frame), `signal 0` drops it
    let d = start(&[], prog, &["usr1"]);
    let out = gdb(
        &d,
        prog,
        &[],
        &["break on_usr1", "continue", "continue", "bt", "continue"],
    );
    has(
        &out,
        "Program received signal SIGUSR1, User defined signal 1.",
    );
    has(&out, "Breakpoint 1, on_usr1 (sig=10)");
    has(&out, "<signal handler called>");
    has(&out, "in raise ()");
    let (status, stdout, _) = d.finish();
    assert!(status.success());
    assert_eq!(stdout, "sum 5 watched 35 counter 10\n");
    let d = start(&[], prog, &["usr1"]);
    let out = gdb(&d, prog, &[], &["continue", "signal 0"]);
    has(&out, "Program received signal SIGUSR1");
    has(&out, "exited normally");
    let (_, stdout, _) = d.finish();
    assert_eq!(stdout, "sum 5 watched 35 counter 0\n");
}

/// gdb is not told of forks as events: armada says which process it follows (the parent),
/// and a breakpoint in code only the child runs does not stop it.
#[test]
fn a_fork_says_which_process_gdb_follows() {
    let Some((prog, _)) = built("gdb fork") else {
        return;
    };
    let d = start(&[], prog, &["fork"]);
    let out = gdb(
        &d,
        prog,
        &[],
        &[
            "break add",
            "break after_fork",
            "continue",
            "continue",
            "print status",
            "continue",
        ],
    );
    // the parent's call of add, then after_fork with the child's status: the child's call
    // of add (after the fork) did not stop
    has(&out, "Breakpoint 1, add (a=2, b=3)");
    has(&out, "Breakpoint 2, after_fork (status=7)");
    assert!(!out.contains("add (a=40"), "the child stopped:\n{out}");
    has(&out, "$1 = 7");
    has(&out, "exited normally");
    let (status, stdout, stderr) = d.finish();
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, "sum 5 watched 35 counter 7\n");
    assert_eq!(
        stderr.matches("gdb follows process").count(),
        1,
        "armada says it once:\n{stderr}"
    );
    assert!(stderr.contains("follow-fork-mode parent"), "{stderr}");
}

/// A signal from another process that would end the followed process stops it first, as
/// under ptrace: continuing delivers it, `signal 0` drops it (its wait goes on).
#[test]
fn a_fatal_signal_from_another_process_stops_first() {
    let Some((prog, _)) = built("gdb term") else {
        return;
    };
    let d = start(&[], prog, &["term"]);
    let out = gdb(&d, prog, &[], &["continue", "continue"]);
    has(&out, "Program received signal SIGTERM, Terminated.");
    has(&out, "Program terminated with signal SIGTERM");
    let (status, _, stderr) = d.finish();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{stderr}");

    let d = start(&[], prog, &["term"]);
    let out = gdb(&d, prog, &[], &["continue", "signal 0"]);
    has(&out, "Program received signal SIGTERM");
    has(&out, "exited normally");
    let (status, stdout, stderr) = d.finish();
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, "sum 5 watched 35 counter 1\n");
}

#[test]
fn dynamically_linked_detach_and_kill() {
    let Some((_, dynamic)) = built("gdb dynamic") else {
        return;
    };
    if !Path::new(CROSS_SYSROOT)
        .join("lib/ld-linux-aarch64.so.1")
        .exists()
    {
        unavailable("gdb dynamic", "no cross sysroot at /usr/aarch64-linux-gnu");
        return;
    }
    let sysroot = format!("set sysroot {CROSS_SYSROOT}");
    let d = start(&["-L", CROSS_SYSROOT], dynamic, &[]);
    let out = gdb(
        &d,
        dynamic,
        &[&sysroot],
        &[
            "break add",
            "continue",
            "bt",
            "info sharedlibrary",
            "break printf",
            "continue",
            "bt 2",
            "detach",
        ],
    );
    has(&out, "Breakpoint 1, add (a=2, b=3) at");
    has(&out, "libc.so.6");
    has(&out, "in printf ()");
    has(&out, "detached");
    let (status, stdout, stderr) = d.finish();
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, "sum 5 watched 35 counter 0\n");
    assert!(
        stderr.contains("gdb detached; the program runs on"),
        "{stderr}"
    );

    let d = start(&["-L", CROSS_SYSROOT], dynamic, &[]);
    let out = gdb(&d, dynamic, &[&sysroot], &["break add", "continue", "kill"]);
    has(&out, "Breakpoint 1, add");
    let (status, stdout, _) = d.finish();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    assert_eq!(stdout, "");
}

#[test]
fn reverse_execution_under_deterministic() {
    let Some((prog, _)) = built("gdb reverse") else {
        return;
    };
    let d = start(&["--deterministic"], prog, &[]);
    let out = gdb(
        &d,
        prog,
        &[],
        &[
            "break after_stores",
            "continue",
            "print watched",
            "watch watched",
            // who last wrote it? the store of s * 7, then the store of s
            "reverse-continue",
            "x/i $pc",
            "print watched",
            "reverse-continue",
            "reverse-continue",
            // forward again through the past: the same writes, no output twice
            "continue",
            "print watched",
            // back over that store: the old value again
            "delete",
            "reverse-stepi",
            "print watched",
            "reverse-finish",
            "continue",
        ],
    );
    has(&out, "$1 = 35");
    has(&out, "Old value = 35\nNew value = 5");
    has(&out, "str\t");
    has(&out, "$2 = 5");
    has(&out, "Old value = 5\nNew value = 0");
    has(&out, "No more reverse-execution history.");
    has(&out, "Old value = 0\nNew value = 5");
    has(&out, "$3 = 5");
    has(&out, "$4 = 0");
    has(&out, "exited normally");
    let (status, stdout, stderr) = d.finish();
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, "sum 5 watched 35 counter 0\n");

    // threads: reverse-stepi goes back in the thread gdb looks at, the others stay
    let d = start(&["--deterministic"], prog, &["threads"]);
    let out = gdb(
        &d,
        prog,
        &[],
        &[
            "break in_thread",
            "continue",
            "reverse-stepi",
            "reverse-stepi",
            "thread",
            "reverse-finish",
            "thread",
            "delete",
            "continue",
        ],
    );
    has(&out, "Thread 2 hit Breakpoint 1, in_thread (id=1)");
    assert_eq!(out.matches("[Current thread is 2 ").count(), 2, "{out}");
    has(&out, " in worker (arg=0x1)");
    has(&out, "exited normally");
    let (_, stdout, _) = d.finish();
    assert_eq!(stdout, "sum 5 watched 35 counter 203\n");

    // without --deterministic there is no history to go back through
    let d = start(&[], prog, &[]);
    let out = gdb(
        &d,
        prog,
        &[],
        &[
            "break after_stores",
            "continue",
            "reverse-stepi",
            "continue",
        ],
    );
    has(&out, "does not support this command.");
    has(&out, "exited normally");
    d.finish();
}

#[test]
fn bad_clients_get_clear_messages_and_never_a_panic() {
    let Some((prog, _)) = built("gdb bad clients") else {
        return;
    };
    // a port in use
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let o = Command::new(armada_bin())
        .args(["run", "-g", &port])
        .arg(prog)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the port is in use"), "{err}");
    drop(l);
    // a value -g does not take
    let o = Command::new(armada_bin())
        .args(["run", "-g", "port"])
        .arg(prog)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&o.stderr).contains("-g takes a port"));

    // a client that leaves in the middle of a packet: the program runs on to its end
    let d = start(&[], prog, &[]);
    {
        let mut s = std::net::TcpStream::connect(&d.addr).unwrap();
        s.write_all(b"+$qSupported:multiprocess+;swbreak+;hwbr")
            .unwrap();
    }
    let (status, stdout, stderr) = d.finish();
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, "sum 5 watched 35 counter 0\n");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Random bytes, and well-formed packets with random bodies, from a client: armada
/// answers what it can and runs the program on when the client goes; it never panics.
#[test]
fn random_packets_never_panic_the_stub() {
    use proptest::prelude::*;
    let Some((prog, _)) = built("gdb random packets") else {
        return;
    };
    fn packet(body: &[u8]) -> Vec<u8> {
        let sum = body.iter().fold(0u8, |a, b| a.wrapping_add(*b));
        let mut p = vec![b'$'];
        p.extend_from_slice(body);
        p.extend_from_slice(format!("#{sum:02x}").as_bytes());
        p
    }
    let heads: &[&[u8]] = &[
        b"m",
        b"M",
        b"g",
        b"G",
        b"p",
        b"P",
        b"Z0,",
        b"z0,",
        b"Z2,",
        b"vCont;",
        b"qXfer:auxv:read::",
        b"qXfer:exec-file:read:",
        b"H",
        b"T",
        b"X",
        b"s",
        b"qfThreadInfo",
    ];
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 24,
        ..ProptestConfig::default()
    });
    let strat = proptest::collection::vec(
        (
            0usize..heads.len(),
            proptest::collection::vec(any::<u8>(), 0..40),
            any::<bool>(),
        ),
        1..8,
    );
    runner
        .run(&strat, |msgs| {
            let d = start(&[], prog, &[]);
            {
                let mut s = std::net::TcpStream::connect(&d.addr).unwrap();
                s.set_write_timeout(Some(Duration::from_secs(5))).ok();
                for (h, body, raw) in &msgs {
                    let bytes = if *raw {
                        body.clone()
                    } else {
                        let mut b = heads[*h].to_vec();
                        // no kill or detach by chance: the test wants the program's end
                        b.extend(
                            body.iter()
                                .filter(|c| !matches!(c, b'k' | b'D' | b'$' | b'#')),
                        );
                        packet(&b)
                    };
                    let _ = s.write_all(&bytes);
                }
            }
            let (status, _, stderr) = d.finish();
            prop_assert!(!stderr.contains("panicked"), "{}", stderr);
            prop_assert!(status.code().is_some() || status.success(), "{:?}", status);
            Ok(())
        })
        .unwrap();
}
