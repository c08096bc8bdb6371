//! Syscalls of threads and processes (clone, futex, eventfd, timerfd, epoll, fork, wait,
//! kill, the scheduler's calls) driven through `Process::syscall`, with the harness of
//! `tests` (its `Lane`).

use super::*;

// ----- threads: clone, futex, eventfd, timerfd, epoll -------------------------------------

/// glibc's pthread_create flags: VM, FS, FILES, SIGHAND, THREAD, SYSVSEM, SETTLS,
/// PARENT_SETTID, CHILD_CLEARTID.
const PTHREAD_FLAGS: u64 = 0x3d0f00;

#[test]
fn clone_makes_threads_and_refuses_the_rest() {
    let mut l = Lane::det();
    let ptid = SCRATCH + 0x100;
    let ctid = SCRATCH + 0x108;
    l.st.x[31] = 0x7000;
    l.st.tpidr = 0x1234;
    let tid = l.call(
        CLONE,
        &[PTHREAD_FLAGS, SCRATCH + 0x8000, ptid, 0xabc0, ctid],
    );
    assert_eq!(tid, DETERMINISTIC_PID as i64 + 1);
    assert_eq!(l.mem.read_u32(ptid).unwrap() as i64, tid);
    let spawned = l.p.take_spawned();
    assert_eq!(spawned.len(), 1);
    let child = &spawned[0].state;
    assert_eq!(
        (child.x[0], child.x[31], child.tpidr),
        (0, SCRATCH + 0x8000, 0xabc0)
    );
    assert_eq!(l.st.tpidr, 0x1234, "the parent keeps its TLS");
    assert_eq!(l.p.thread_count(), 2);
    // a thread with more than a thread's flags is refused (processes: see `fork_*`)
    assert_eq!(
        l.call(CLONE, &[PTHREAD_FLAGS & !0x100, SCRATCH + 0x8000, 0, 0, 0]),
        neg(libc::EINVAL),
        "a thread without CLONE_VM"
    );
    assert_eq!(
        l.call(
            CLONE,
            &[PTHREAD_FLAGS | 0x2_0000, SCRATCH + 0x8000, 0, 0, 0]
        ),
        neg(libc::EINVAL),
        "a new mount namespace"
    );
    // the thread limit: EAGAIN past it
    let mut made = 2;
    loop {
        let r = l.call(
            CLONE,
            &[PTHREAD_FLAGS & !0x10_0000, SCRATCH + 0x8000, 0, 0, 0],
        );
        if r < 0 {
            assert_eq!(r, neg(libc::EAGAIN));
            break;
        }
        made += 1;
        assert!(made <= proc::task::MAX_THREADS);
    }
    assert_eq!(made, proc::task::MAX_THREADS);
    // gettid follows the current thread; exit of one thread leaves the process
    l.p.switch_thread(tid as i32, true);
    assert_eq!(l.call(GETTID, &[]), tid);
    assert_eq!(l.call(GETPID, &[]), DETERMINISTIC_PID as i64);
    l.mem.write_u32(ctid, tid as u32).unwrap();
    assert_eq!(l.call_o(EXIT, &[0]).1, SysOutcome::ThreadExit);
    assert_eq!(
        l.mem.read_u32(ctid).unwrap(),
        0,
        "CLONE_CHILD_CLEARTID zeroes the word"
    );
}

#[test]
fn futex_queues_wake_requeue_and_wake_op() {
    let mut l = Lane::det();
    let (a, b) = (SCRATCH + 0x200, SCRATCH + 0x300);
    l.mem.write_u32(a, 7).unwrap();
    const WAIT: u64 = 128;
    const WAKE: u64 = 129;
    assert_eq!(l.call(FUTEX, &[a, WAIT, 6, 0, 0, 0]), neg(libc::EAGAIN));
    assert_eq!(l.call(FUTEX, &[a + 1, WAIT, 7, 0, 0, 0]), neg(libc::EINVAL));
    assert_eq!(
        l.call(FUTEX, &[a, WAIT | 9, 7, 0, 0, 0]),
        neg(libc::EINVAL),
        "bitset 0"
    );
    // two threads wait on a
    let t2 = l.call(
        CLONE,
        &[PTHREAD_FLAGS & !0x10_0000, SCRATCH + 0x8000, 0, 0, 0],
    ) as i32;
    l.p.take_spawned();
    let (_, o) = l.call_o(FUTEX, &[a, WAIT, 7, 0, 0, 0]);
    assert_eq!(o, SysOutcome::Block);
    l.p.switch_thread(t2, true);
    let (_, o) = l.call_o(FUTEX, &[a, WAIT, 7, 0, 0, 0]);
    assert_eq!(o, SysOutcome::Block);
    // CMP_REQUEUE: wake one, move the other to b
    assert_eq!(
        l.call(FUTEX, &[a, 4 | 128, 1, 1, b, 8]),
        neg(libc::EAGAIN),
        "val3 must match"
    );
    assert_eq!(l.call(FUTEX, &[a, 4 | 128, 1, 1, b, 7]), 2);
    assert_eq!(l.p.take_woken(), vec![DETERMINISTIC_PID]);
    assert_eq!(l.call(FUTEX, &[a, WAKE, 10, 0, 0, 0]), 0);
    assert_eq!(l.call(FUTEX, &[b, WAKE, 10, 0, 0, 0]), 1);
    assert_eq!(l.p.take_woken(), vec![t2]);
    // WAKE_OP: *b += 5 (old 0), wake waiters of b if old == 0
    l.mem.write_u32(b, 0).unwrap();
    let op = (1 << 28) | (5 << 12); // FUTEX_OP_ADD 5, compare EQ 0
    assert_eq!(l.call(FUTEX, &[a, 5 | 128, 1, 1, b, op]), 0);
    assert_eq!(l.mem.read_u32(b).unwrap(), 5);
    // unmapped words: a shared futex is EFAULT, a private wake is just an address
    assert_eq!(l.call(FUTEX, &[0x1000, 1, 1, 0, 0, 0]), neg(libc::EFAULT));
    assert_eq!(l.call(FUTEX, &[0x1000, WAKE, 1, 0, 0, 0]), 0);
    assert_eq!(
        l.call(FUTEX, &[0x1000, WAIT, 0, 0, 0, 0]),
        neg(libc::EFAULT)
    );
}

#[test]
fn futex_wait_times_out_on_the_virtual_clock() {
    let mut l = Lane::det();
    let a = SCRATCH + 0x200;
    let ts = SCRATCH + 0x400;
    l.put(
        ts,
        &[0, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x42, 0x0f, 0, 0, 0, 0, 0],
    ); // 1 ms
    let t0 = l.p.monotonic_ns();
    assert_eq!(l.call(FUTEX, &[a, 128, 0, ts, 0, 0]), neg(libc::ETIMEDOUT));
    assert_eq!(l.p.monotonic_ns() - t0, 1_000_000);
}

#[test]
fn eventfd_timerfd_and_epoll() {
    let mut l = Lane::det();
    let buf = SCRATCH + 0x100;
    const NONBLOCK: u64 = 0o4000;
    let efd = l.call(EVENTFD2, &[3, NONBLOCK]) as u64;
    assert_eq!(l.call(READ, &[efd, buf, 8]), 8);
    assert_eq!(l.u64_at(buf), 3);
    assert_eq!(l.call(READ, &[efd, buf, 8]), neg(libc::EAGAIN));
    assert_eq!(l.call(READ, &[efd, buf, 4]), neg(libc::EINVAL));
    l.mem.write_u64(buf, 5).unwrap();
    assert_eq!(l.call(WRITE, &[efd, buf, 8]), 8);
    // a semaphore eventfd hands out 1 at a time
    let sem = l.call(EVENTFD2, &[2, NONBLOCK | 1]) as u64;
    assert_eq!(l.call(READ, &[sem, buf, 8]), 8);
    assert_eq!(l.u64_at(buf), 1);

    // epoll over the eventfd
    let ep = l.call(EPOLL_CREATE1, &[0]) as u64;
    let ev = SCRATCH + 0x200;
    l.mem.write_u32(ev, 1).unwrap(); // EPOLLIN
    l.mem.write_u64(ev + 8, 77).unwrap();
    assert_eq!(l.call(EPOLL_CTL, &[ep, 1, efd, ev]), 0);
    assert_eq!(l.call(EPOLL_CTL, &[ep, 1, efd, ev]), neg(libc::EEXIST));
    assert_eq!(l.call(EPOLL_CTL, &[ep, 2, sem + 100, 0]), neg(libc::EBADF));
    assert_eq!(l.call(EPOLL_CTL, &[ep, 2, sem, 0]), neg(libc::ENOENT));
    assert_eq!(l.call(EPOLL_CTL, &[ep, 1, ep, ev]), neg(libc::EINVAL));
    let out = SCRATCH + 0x300;
    assert_eq!(l.call(EPOLL_PWAIT, &[ep, out, 8, 0, 0, 0]), 1);
    assert_eq!(
        (l.mem.read_u32(out).unwrap(), l.u64_at(out + 8)),
        (1, 77),
        "EPOLLIN only: EPOLLOUT was not asked for"
    );
    // drained: nothing ready; a wait without a timeout blocks
    assert_eq!(l.call(READ, &[efd, buf, 8]), 8);
    l.mem.write_u32(ev, 1).unwrap();
    assert_eq!(l.call(EPOLL_CTL, &[ep, 3, efd, ev]), 0);
    assert_eq!(l.call(EPOLL_PWAIT, &[ep, out, 8, 0, 0, 0]), 0);
    let (_, o) = l.call_o(EPOLL_PWAIT, &[ep, out, 8, u64::MAX, 0, 0]);
    assert_eq!(o, SysOutcome::Block);
    // a timeout ends the wait on the virtual clock
    let t0 = l.p.monotonic_ns();
    assert_eq!(l.call(EPOLL_PWAIT, &[ep, out, 8, 5, 0, 0]), 0);
    assert_eq!(l.p.monotonic_ns() - t0, 5_000_000);

    // a one-shot 2 ms timer: a blocking read waits for it on the clock
    let tfd = l.call(TIMERFD_CREATE, &[1, 0]) as u64;
    let spec = SCRATCH + 0x400;
    l.put(spec, &[0u8; 32]);
    l.mem.write_u64(spec + 24, 2_000_000).unwrap();
    assert_eq!(l.call(TIMERFD_SETTIME, &[tfd, 0, spec, 0]), 0);
    let t0 = l.p.monotonic_ns();
    assert_eq!(l.call(READ, &[tfd, buf, 8]), 8);
    assert_eq!(l.u64_at(buf), 1);
    assert_eq!(l.p.monotonic_ns() - t0, 2_000_000);
    // disarmed now: gettime says so
    assert_eq!(l.call(TIMERFD_GETTIME, &[tfd, spec]), 0);
    assert_eq!(l.get(spec, 32), vec![0u8; 32]);
}

#[test]
fn maps_names_file_mappings_and_pages_past_eof_are_marked() {
    let dir = tempdir("maps");
    let file = dir.0.join("data.bin");
    std::fs::write(&file, vec![7u8; 5000]).unwrap();
    let mut l = Lane::det();
    let p = l.cstr(SCRATCH, file.to_str().unwrap());
    let fd = l.call(OPENAT, &[FDCWD, p, 0, 0]) as u64;
    // four pages from offset 4096: one page of file, the rest past its end
    let at = l.call(MMAP, &[0, 4 * 4096, 1, 2, fd, 4096]) as u64;
    assert!(l.p.past_eof(at + 4096) && !l.p.past_eof(at));
    let p = l.cstr(SCRATCH, "/proc/self/maps");
    let mfd = l.call(OPENAT, &[FDCWD, p, 0, 0]) as u64;
    let buf = SCRATCH + 0x1000;
    let n = l.call(READ, &[mfd, buf, 8192]);
    let text = String::from_utf8(l.get(buf, n as usize)).unwrap();
    let line = text
        .lines()
        .find(|s| s.starts_with(&format!("{at:08x}-")))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains(" r--p 00001000 "), "{line}");
    assert!(line.ends_with(file.to_str().unwrap()), "{line}");
    // unmapping the first page keeps the name of the rest, at its own offset
    assert_eq!(l.call(MUNMAP, &[at, 4096]), 0);
    let (m, off) = l.p.file_map_at(at + 4096).unwrap();
    assert_eq!(
        (off, m.name.as_slice()),
        (0x2000, file.to_str().unwrap().as_bytes())
    );
    assert!(l.p.file_map_at(at).is_none());
}

// ----- processes: fork, wait, exec ---------------------------------------------------------

const SIGCHLD_FLAG: u64 = 17;

#[test]
fn fork_copies_memory_and_shares_open_files() {
    let mut l = Lane::det();
    l.mem.write_u64(SCRATCH, 0x1111).unwrap();
    let child = l.call(CLONE, &[SIGCHLD_FLAG, 0, 0, 0, 0]);
    assert_eq!(child, DETERMINISTIC_PID as i64 + 1);
    let mut c =
        l.p.take_forked()
            .expect("fork leaves the child for the scheduler");
    assert_eq!(c.pid as i64, child);
    assert_eq!(c.state.x[0], 0, "the child sees 0");
    let mut cmem = c.mem.take().expect("a fork has its own memory");
    // copy-on-write: a write on either side is not seen by the other
    cmem.write_u64(SCRATCH, 0x2222).unwrap();
    assert_eq!(l.mem.read_u64(SCRATCH).unwrap(), 0x1111);
    l.mem.write_u64(SCRATCH + 8, 0x3333).unwrap();
    assert_eq!(cmem.read_u64(SCRATCH + 8).unwrap(), 0);
    // getppid in the child is the parent; the table knows both
    assert_eq!(c.process.sys_getppid().unwrap() as i32, DETERMINISTIC_PID);
    // the child's fds point at the parent's open file descriptions: a pipe written by
    // the child (holding the lane's state, as the scheduler arranges) is read by the parent
    let fds = SCRATCH + 0x100;
    assert_eq!(l.call(PIPE2, &[fds, 0]), 0);
    let (r, w) = (
        l.mem.read_u32(fds).unwrap() as u64,
        l.mem.read_u32(fds + 4).unwrap() as u64,
    );
    let child2 = l.call(CLONE, &[SIGCHLD_FLAG, 0, 0, 0, 0]);
    let mut c2 = l.p.take_forked().unwrap();
    let mut c2mem = c2.mem.take().unwrap();
    l.p.hand_over(&mut c2.process);
    c2mem.write_bytes(SCRATCH + 0x200, b"hello").unwrap();
    c2.state.x[8] = WRITE;
    c2.state.x[0] = w;
    c2.state.x[1] = SCRATCH + 0x200;
    c2.state.x[2] = 5;
    assert_eq!(
        c2.process.syscall(&mut c2.state, &mut c2mem),
        SysOutcome::Continue
    );
    assert_eq!(c2.state.x[0], 5);
    // the child ends: its fds close, it is a zombie until waited for
    c2.process.end_process(crate::proc::table::exited(3));
    let sigchld = c2.process.take_outgoing();
    assert_eq!(sigchld.len(), 1);
    assert_eq!((sigchld[0].pid, sigchld[0].signal), (DETERMINISTIC_PID, 17));
    c2.process.hand_over(&mut l.p);
    assert_eq!(l.call(READ, &[r, SCRATCH + 0x300, 16]), 5);
    let mut b = [0u8; 5];
    l.mem.read_bytes(SCRATCH + 0x300, &mut b).unwrap();
    assert_eq!(&b, b"hello");
    let st = SCRATCH + 0x400;
    // WNOHANG for the first child (alive) says 0; the second is reaped with its status
    assert_eq!(l.call(WAIT4, &[child as u64, st, 1, 0]), 0);
    assert_eq!(l.call(WAIT4, &[u64::MAX, st, 0, 0]), child2);
    assert_eq!(l.mem.read_u32(st).unwrap(), 3 << 8);
    assert_eq!(l.call(WAIT4, &[child2 as u64, st, 0, 0]), neg(libc::ECHILD));
    // a non-child
    assert_eq!(l.call(WAIT4, &[4242, st, 1, 0]), neg(libc::ECHILD));
}

#[test]
fn vfork_blocks_the_parent_and_lends_its_memory() {
    let mut l = Lane::det();
    let (_, o) = l.call_o(
        CLONE,
        &[0x4000 | 0x100 | SIGCHLD_FLAG, SCRATCH + 0x8000, 0, 0, 0],
    );
    assert_eq!(o, SysOutcome::Block);
    let c = l.p.take_forked().unwrap();
    assert!(c.mem.is_none(), "the child runs on the parent's memory");
    assert_eq!(c.state.x[31], SCRATCH + 0x8000);
}

#[test]
fn fork_past_the_process_cap_is_eagain() {
    let mut l = Lane::new(
        LinuxConfig {
            deterministic: true,
            max_processes: Some(3),
            net: Default::default(),
            ..Default::default()
        },
        b"",
    );
    assert!(l.call(CLONE, &[SIGCHLD_FLAG, 0, 0, 0, 0]) > 0);
    assert!(l.call(CLONE, &[SIGCHLD_FLAG, 0, 0, 0, 0]) > 0);
    assert_eq!(
        l.call(CLONE, &[SIGCHLD_FLAG, 0, 0, 0, 0]),
        neg(libc::EAGAIN)
    );
    // sharing the fd table without a thread is refused, not half done
    assert_eq!(
        l.call(CLONE, &[0x400 | SIGCHLD_FLAG, 0, 0, 0, 0]),
        neg(libc::EINVAL)
    );
}

#[test]
fn kill_and_groups() {
    let mut l = Lane::det();
    let child = l.call(CLONE, &[SIGCHLD_FLAG, 0, 0, 0, 0]) as u64;
    let _ = l.p.take_forked();
    // the child into its own group; kill(-pgid) reaches it through the scheduler
    assert_eq!(l.call(SETPGID, &[child, child]), 0);
    assert_eq!(l.call(GETPGID, &[child]), child as i64);
    assert_eq!(l.call(KILL, &[(-(child as i64)) as u64, 15]), 0);
    let out = l.p.take_outgoing();
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].pid as u64, out[0].signal), (child, 15));
    assert_eq!(l.call(KILL, &[(-4242i64) as u64, 15]), neg(libc::ESRCH));
    assert_eq!(l.call(KILL, &[4242, 0]), neg(libc::ESRCH));
    // a process group leader cannot start a session; the child's group is not ours
    assert_eq!(l.call(SETSID, &[]), neg(libc::EPERM));
}

#[test]
fn proc_lists_the_lanes_processes() {
    let mut l = Lane::det();
    let child = l.call(CLONE, &[SIGCHLD_FLAG, 0, 0, 0, 0]);
    let _ = l.p.take_forked();
    let path = l.put(SCRATCH, b"/proc\0");
    let fd = l.call(OPENAT, &[FDCWD, path, 0o40000, 0]) as u64; // O_DIRECTORY
    assert!(fd < 1 << 20, "open /proc: {fd}");
    let mut names = Vec::new();
    loop {
        let n = l.call(GETDENTS64, &[fd, SCRATCH + 0x1000, 8192]);
        assert!(n >= 0, "getdents64: {n}");
        if n == 0 {
            break;
        }
        let mut b = vec![0u8; n as usize];
        l.mem.read_bytes(SCRATCH + 0x1000, &mut b).unwrap();
        let mut at = 0;
        while at < b.len() {
            let reclen = u16::from_le_bytes([b[at + 16], b[at + 17]]) as usize;
            let name = &b[at + 19..at + reclen];
            let end = name.iter().position(|&c| c == 0).unwrap();
            names.push(String::from_utf8_lossy(&name[..end]).into_owned());
            at += reclen;
        }
    }
    let pids: Vec<&String> = names
        .iter()
        .filter(|n| n.bytes().all(|c| c.is_ascii_digit()))
        .collect();
    // the lane's two processes, none of the host's
    assert_eq!(
        pids,
        [&DETERMINISTIC_PID.to_string(), &child.to_string()],
        "{names:?}"
    );
    assert!(names.iter().any(|n| n == "self"), "{names:?}");
    // /proc/PID of a lane process is a directory, and its stat names it
    let stat = SCRATCH + 0x100;
    let p = l.put(SCRATCH + 0x80, format!("/proc/{child}\0").as_bytes());
    assert_eq!(l.call(NEWFSTATAT, &[FDCWD, p, stat, 0]), 0);
    let mode = l.mem.read_u32(stat + 16).unwrap();
    assert_eq!(mode & libc::S_IFMT, libc::S_IFDIR);
    let p = l.put(SCRATCH + 0x80, format!("/proc/{child}/stat\0").as_bytes());
    let f = l.call(OPENAT, &[FDCWD, p, 0, 0]) as u64;
    let n = l.call(READ, &[f, SCRATCH + 0x2000, 256]);
    let mut b = vec![0u8; n as usize];
    l.mem.read_bytes(SCRATCH + 0x2000, &mut b).unwrap();
    let text = String::from_utf8_lossy(&b);
    assert!(
        text.starts_with(&format!("{child} ("))
            && text.contains(&format!(") S {DETERMINISTIC_PID} ")),
        "{text}"
    );
}

/// The guest runs on one CPU in every mode (a lane's tasks take turns on one host thread):
/// sched_getaffinity shows CPU 0 alone, sched_setaffinity accepts a mask that includes it
/// (any length, a short one read as the rest cleared) and refuses one that does not, as a
/// process in a cpuset of one CPU sees, and getcpu says CPU 0.
#[test]
fn affinity_is_one_cpu() {
    for deterministic in [false, true] {
        let mut l = Lane::new(
            LinuxConfig {
                deterministic,
                ..Default::default()
            },
            b"",
        );
        let m = SCRATCH + 0x100;
        assert_eq!(l.call(SCHED_GETAFFINITY, &[0, 128, m]), 8);
        assert_eq!(l.u64_at(m), 1);
        assert_eq!(l.call(SCHED_GETAFFINITY, &[0, 4, m]), neg(libc::EINVAL));
        l.put(m, &0b1011u64.to_le_bytes());
        assert_eq!(l.call(SCHED_SETAFFINITY, &[0, 8, m]), 0);
        assert_eq!(l.call(SCHED_SETAFFINITY, &[0, 1, m]), 0);
        l.put(m, &0b1010u64.to_le_bytes());
        assert_eq!(l.call(SCHED_SETAFFINITY, &[0, 8, m]), neg(libc::EINVAL));
        assert_eq!(l.call(SCHED_SETAFFINITY, &[0, 0, m]), neg(libc::EINVAL));
        assert_eq!(
            l.call(SCHED_SETAFFINITY, &[0, 8, 0xdead_0000]),
            neg(libc::EFAULT)
        );
        assert_eq!(l.call(SCHED_SETAFFINITY, &[4242, 8, m]), neg(libc::ESRCH));
        l.put(m, &[0xff; 8]);
        assert_eq!(l.call(GETCPU, &[m, 0]), 0);
        assert_eq!(l.mem.read_u32(m).unwrap(), 0);
    }
}

/// The scheduling policies' priority ranges are Linux's; every task's time slice is the lane
/// scheduler's turn.
#[test]
fn sched_ranges_and_slice() {
    let mut l = Lane::det();
    for (policy, lo, hi) in [
        (0, 0, 0),
        (1, 1, 99),
        (2, 1, 99),
        (3, 0, 0),
        (5, 0, 0),
        (6, 0, 0),
    ] {
        assert_eq!(
            l.call(SCHED_GET_PRIORITY_MIN, &[policy]),
            lo,
            "policy {policy}"
        );
        assert_eq!(
            l.call(SCHED_GET_PRIORITY_MAX, &[policy]),
            hi,
            "policy {policy}"
        );
    }
    for bad in [4u64, 7, (-23i64) as u64] {
        assert_eq!(l.call(SCHED_GET_PRIORITY_MIN, &[bad]), neg(libc::EINVAL));
        assert_eq!(l.call(SCHED_GET_PRIORITY_MAX, &[bad]), neg(libc::EINVAL));
    }
    let t = SCRATCH + 0x200;
    assert_eq!(l.call(SCHED_RR_GET_INTERVAL, &[0, t]), 0);
    let ns = crate::sched::QUANTUM * crate::time::clock::NS_PER_INSN;
    assert_eq!(l.get(t, 16), {
        let mut v = ((ns / 1_000_000_000) as i64).to_le_bytes().to_vec();
        v.extend_from_slice(&((ns % 1_000_000_000) as i64).to_le_bytes());
        v
    });
    assert_eq!(
        l.call(SCHED_RR_GET_INTERVAL, &[0, 0xdead_0000]),
        neg(libc::EFAULT)
    );
    assert_eq!(l.call(SCHED_RR_GET_INTERVAL, &[4242, t]), neg(libc::ESRCH));
    assert_eq!(
        l.call(SCHED_RR_GET_INTERVAL, &[(-1i64) as u64, t]),
        neg(libc::EINVAL)
    );
    // one policy for all: SCHED_OTHER; setting it (or BATCH, IDLE) at priority 0 is taken,
    // a real-time one is EPERM as for an unprivileged process, the rest EINVAL
    let p = SCRATCH + 0x300;
    let minus1 = (-1i64) as u64;
    assert_eq!(l.call(SCHED_GETSCHEDULER, &[0]), 0);
    assert_eq!(l.call(SCHED_GETSCHEDULER, &[minus1]), neg(libc::EINVAL));
    l.put(p, &7u32.to_le_bytes());
    assert_eq!(l.call(SCHED_GETPARAM, &[0, p]), 0);
    assert_eq!(l.mem.read_u32(p).unwrap(), 0);
    assert_eq!(l.call(SCHED_GETPARAM, &[minus1, p]), neg(libc::EINVAL));
    assert_eq!(l.call(SCHED_GETPARAM, &[0, 0]), neg(libc::EINVAL));
    assert_eq!(l.call(SCHED_SETPARAM, &[0, p]), 0);
    assert_eq!(l.call(SCHED_SETPARAM, &[minus1, p]), neg(libc::EINVAL));
    for policy in [0u64, 3, 5, 0x4000_0000] {
        assert_eq!(
            l.call(SCHED_SETSCHEDULER, &[0, policy, p]),
            0,
            "policy {policy:#x}"
        );
    }
    assert_eq!(
        l.call(SCHED_SETSCHEDULER, &[minus1, 0, p]),
        neg(libc::EINVAL)
    );
    assert_eq!(l.call(SCHED_SETSCHEDULER, &[0, 1, p]), neg(libc::EINVAL));
    l.put(p, &10u32.to_le_bytes());
    assert_eq!(l.call(SCHED_SETPARAM, &[0, p]), neg(libc::EINVAL));
    assert_eq!(l.call(SCHED_SETSCHEDULER, &[0, 0, p]), neg(libc::EINVAL));
    assert_eq!(l.call(SCHED_SETSCHEDULER, &[0, 1, p]), neg(libc::EPERM));
    assert_eq!(l.call(SCHED_SETSCHEDULER, &[0, 2, p]), neg(libc::EPERM));
    assert_eq!(l.call(SCHED_SETSCHEDULER, &[0, 9, p]), neg(libc::EINVAL));
}
