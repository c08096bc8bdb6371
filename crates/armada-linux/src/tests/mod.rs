//! Syscalls driven through `Process::syscall` against a small address space.

use super::*;
use crate::nr::*;
use armada_machine::memory::{AddressSpace, Perm};
use armada_machine::state::CpuState;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const SCRATCH: u64 = 0x10_0000;
const SCRATCH_LEN: u64 = 0x4_0000;

/// A directory of a test's own, removed (whatever the guest made unreadable) when dropped.
pub(crate) struct TempDir(pub(crate) PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        // the guest may have chmod-ed things unreadable
        let _ = std::process::Command::new("chmod")
            .args(["-R", "u+rwx"])
            .arg(&self.0)
            .status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(crate) fn tempdir(tag: &str) -> TempDir {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let p = std::env::temp_dir().join(format!(
        "armada-sys-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    TempDir(std::fs::canonicalize(&p).unwrap())
}

struct Lane {
    p: Process,
    st: CpuState,
    mem: AddressSpace,
}

impl Lane {
    fn new(cfg: LinuxConfig, stdin: &[u8]) -> Lane {
        let mut mem = AddressSpace::new();
        mem.map(SCRATCH, SCRATCH_LEN, Perm::RW).unwrap();
        Lane {
            p: Process::new(
                cfg,
                Stdio::Captured {
                    stdin: stdin.to_vec(),
                },
                0x40_0000,
            ),
            st: CpuState::default(),
            mem,
        }
    }

    fn det() -> Lane {
        Lane::new(
            LinuxConfig {
                sysroot: None,
                deterministic: true,
                seed: 1,
                ..Default::default()
            },
            b"",
        )
    }

    fn rooted(root: &Path) -> Lane {
        Lane::new(
            LinuxConfig {
                sysroot: None,
                root: Some(root.to_path_buf()),
                deterministic: true,
                exe_host_path: PathBuf::from("/proc/self/exe"),
                exe_guest_path: b"/bin/prog".to_vec(),
                ..Default::default()
            },
            b"",
        )
    }

    /// Runs syscall `nr` as the scheduler of a one-thread process would: a wait with a
    /// deadline moves the clock on and runs the syscall again; returns (x0 as i64,
    /// outcome), the outcome `Block` for a wait that nothing can end.
    fn call_o(&mut self, nr: u64, args: &[u64]) -> (i64, SysOutcome) {
        self.st.x[8] = nr;
        for (i, a) in args.iter().enumerate() {
            self.st.x[i] = *a;
        }
        for i in args.len()..6 {
            self.st.x[i] = 0;
        }
        let mut o = self.p.syscall(&mut self.st, &mut self.mem);
        while o == SysOutcome::Block {
            let w = self.p.take_block().expect("a block says what it waits for");
            let Some(d) = w.deadline.or(w.wake_at) else {
                return (self.st.x[0] as i64, o);
            };
            self.p.idle_until(d);
            if let crate::sched::WaitKind::Futex { .. } = w.kind {
                self.p.futex_cancel(self.p.tid());
                self.st.x[0] = neg(libc::ETIMEDOUT) as u64;
                return (self.st.x[0] as i64, SysOutcome::Continue);
            }
            o = self.p.restart(&mut self.st, &mut self.mem, w.deadline);
        }
        (self.st.x[0] as i64, o)
    }

    fn call(&mut self, nr: u64, args: &[u64]) -> i64 {
        let (r, o) = self.call_o(nr, args);
        assert_eq!(o, SysOutcome::Continue, "syscall {nr} ended the process");
        r
    }

    fn put(&mut self, addr: u64, data: &[u8]) -> u64 {
        self.mem.write_bytes(addr, data).unwrap();
        addr
    }

    fn cstr(&mut self, addr: u64, s: &str) -> u64 {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        self.put(addr, &v)
    }

    fn get(&mut self, addr: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        self.mem.read_bytes(addr, &mut v).unwrap();
        v
    }

    fn u64_at(&mut self, addr: u64) -> u64 {
        self.mem.read_u64(addr).unwrap()
    }
}

const FDCWD: u64 = -100i64 as u64;
fn neg(e: i32) -> i64 {
    -(e as i64)
}

#[test]
fn captured_stdio() {
    let mut l = Lane::new(LinuxConfig::default(), b"input bytes");
    let buf = l.cstr(SCRATCH, "hello\n");
    assert_eq!(l.call(WRITE, &[1, buf, 6]), 6);
    assert_eq!(l.call(WRITE, &[2, buf, 5]), 5);
    // writev gathers
    l.put(SCRATCH + 0x100, &(SCRATCH).to_le_bytes());
    l.put(SCRATCH + 0x108, &3u64.to_le_bytes());
    l.put(SCRATCH + 0x110, &(SCRATCH + 3).to_le_bytes());
    l.put(SCRATCH + 0x118, &3u64.to_le_bytes());
    assert_eq!(l.call(WRITEV, &[1, SCRATCH + 0x100, 2]), 6);
    let r = SCRATCH + 0x1000;
    assert_eq!(l.call(READ, &[0, r, 5]), 5);
    assert_eq!(l.get(r, 5), b"input");
    assert_eq!(l.call(READ, &[0, r, 100]), 6);
    assert_eq!(l.call(READ, &[0, r, 100]), 0);
    let (out, err) = l.p.take_output();
    assert_eq!(out, b"hello\nhello\n");
    assert_eq!(err, b"hello");
    // bad fds and bad pointers
    assert_eq!(l.call(WRITE, &[7, buf, 1]), neg(libc::EBADF));
    assert_eq!(l.call(READ, &[1, buf, 1]), neg(libc::EBADF));
    assert_eq!(l.call(WRITE, &[1, 0xdead_0000, 4]), neg(libc::EFAULT));
    // the buffer is checked before anything is consumed
    assert_eq!(l.call(READ, &[0, 0xdead_0000, 4]), neg(libc::EFAULT));
    // fstat on captured stdout says FIFO, so glibc buffers fully, as with a pipe
    assert_eq!(l.call(FSTAT, &[1, SCRATCH + 0x200]), 0);
    let mode = l.mem.read_u32(SCRATCH + 0x200 + 16).unwrap();
    assert_eq!(mode & libc::S_IFMT, libc::S_IFIFO);
    assert_eq!(
        l.call(IOCTL, &[1, 0x5401, SCRATCH + 0x300]),
        neg(libc::ENOTTY)
    );
    assert_eq!(l.call(LSEEK, &[1, 0, 0]), neg(libc::ESPIPE));
    // a read asking for far more than the input holds gives what is left, then 0; the whole
    // buffer is still checked at the end of input; stdin has no offsets
    let mut l = Lane::new(LinuxConfig::default(), b"abc");
    let r = SCRATCH + 0x1000;
    assert_eq!(l.call(PREAD64, &[0, r, 2, 0]), neg(libc::ESPIPE));
    assert_eq!(l.call(READ, &[0, r, SCRATCH_LEN - 0x1000]), 3);
    assert_eq!(l.get(r, 3), b"abc");
    assert_eq!(l.call(READ, &[0, r, SCRATCH_LEN - 0x1000]), 0);
    assert_eq!(l.call(READ, &[0, r, SCRATCH_LEN]), neg(libc::EFAULT));
    assert_eq!(l.call(READ, &[0, r, 0]), 0);
}

#[test]
fn unknown_syscall_is_enosys() {
    let mut l = Lane::det();
    assert_eq!(l.call(4000, &[]), neg(libc::ENOSYS));
    // families the run's network does not have (AF_PACKET) get an address-family error,
    // quietly; AF_INET streams are the run's own
    assert_eq!(l.call(SOCKET, &[17, 3, 0]), neg(libc::EAFNOSUPPORT));
    assert!(l.call(SOCKET, &[2, 1, 0]) >= 3);
    assert_eq!(l.call(RSEQ, &[0, 0, 0, 0]), neg(libc::ENOSYS));
}

/// UDP-Lite's checksum coverage: below the 8-byte header reads back as 8 (Linux's rule;
/// qemu-user refuses the option level, so the surface suite cannot compare it).
#[test]
fn udplite_coverage_option() {
    let mut l = Lane::det();
    let fd = l.call(SOCKET, &[2, 2, 136]) as u64;
    assert!(fd >= 3);
    let v = l.put(SCRATCH, &5i32.to_le_bytes());
    assert_eq!(l.call(SETSOCKOPT, &[fd, 136, 10, v, 4]), 0);
    let len = l.put(SCRATCH + 64, &4u32.to_le_bytes());
    assert_eq!(l.call(GETSOCKOPT, &[fd, 136, 10, SCRATCH + 32, len]), 0);
    assert_eq!(l.get(SCRATCH + 32, 4), 8i32.to_le_bytes());
    // not on a UDP socket
    let udp = l.call(SOCKET, &[2, 2, 0]) as u64;
    assert_eq!(
        l.call(SETSOCKOPT, &[udp, 136, 10, v, 4]),
        neg(libc::ENOPROTOOPT)
    );
}

#[test]
fn netlink_route_dumps_lo_and_survives_garbage() {
    let mut l = Lane::det();
    // other netlink families do not exist here
    assert_eq!(l.call(SOCKET, &[16, 3, 9]), neg(libc::EPROTONOSUPPORT));
    let fd = l.call(SOCKET, &[16, 3, 0]) as u64;
    assert!(fd >= 3);
    // bind to port id 0: the pid is chosen; getsockname says so
    let sa = l.put(SCRATCH, &[16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(l.call(BIND, &[fd, sa, 12]), 0);
    let len = l.put(SCRATCH + 0x100, &12u32.to_le_bytes());
    assert_eq!(l.call(GETSOCKNAME, &[fd, sa, len]), 0);
    let pid = l.mem.read_u32(SCRATCH + 4).unwrap();
    assert_eq!(pid, l.p.pid as u32);
    // a link dump as Go sends it: 17 bytes, the last message unpadded
    let mut req = vec![17, 0, 0, 0, 18, 0, 0x01, 0x03, 1, 0, 0, 0, 0, 0, 0, 0, 0];
    let buf = l.put(SCRATCH + 0x200, &req);
    assert_eq!(l.call(SENDTO, &[fd, buf, 17, 0, 0, 0]), 17);
    let out = SCRATCH + 0x1000;
    let n = l.call(RECVFROM, &[fd, out, 4096, 0, 0, 0]);
    let m = l.get(out, n as usize);
    assert_eq!(u16::from_le_bytes([m[4], m[5]]), 16, "RTM_NEWLINK");
    assert_eq!(u32::from_le_bytes([m[12], m[13], m[14], m[15]]), pid);
    assert!(m.windows(3).any(|w| w == b"lo\0"));
    let n = l.call(RECVFROM, &[fd, out, 4096, 0, 0, 0]);
    assert_eq!(n, 20);
    assert_eq!(l.get(out + 4, 2), [3, 0], "NLMSG_DONE");
    // malformed requests: never a panic, and the socket still answers after them
    for cut in 0..req.len() + 8 {
        req.resize(cut.max(req.len()), 0xff);
        for (i, b) in req.iter_mut().enumerate().take(4) {
            *b = if i == 0 { cut as u8 } else { 0 };
        }
        let buf = l.put(SCRATCH + 0x200, &req[..cut]);
        assert_eq!(l.call(SENDTO, &[fd, buf, cut as u64, 0, 0, 0]), cut as i64);
        while l.call(RECVFROM, &[fd, out, 4096, 0x40, 0, 0]) > 0 {}
    }
    // an interface ioctl on it: lo is index 1
    let mut ifr = [0u8; 40];
    ifr[..2].copy_from_slice(b"lo");
    let r = l.put(SCRATCH + 0x300, &ifr);
    assert_eq!(l.call(IOCTL, &[fd, 0x8933, r]), 0);
    assert_eq!(l.mem.read_u32(SCRATCH + 0x300 + 16).unwrap(), 1);
    ifr[..3].copy_from_slice(b"et0");
    let r = l.put(SCRATCH + 0x300, &ifr);
    assert_eq!(l.call(IOCTL, &[fd, 0x8933, r]), neg(libc::ENODEV));
}

#[test]
fn privileged_and_absent_features_get_linuxs_answers() {
    let mut l = Lane::det();
    let ts = l.put(SCRATCH, &[0u8; 16]);
    // setting the machine's time: EPERM; clocks that cannot be set: EINVAL
    assert_eq!(l.call(CLOCK_SETTIME, &[0, ts]), neg(libc::EPERM));
    assert_eq!(l.call(CLOCK_SETTIME, &[1, ts]), neg(libc::EINVAL));
    assert_eq!(l.call(CLOCK_SETTIME, &[99, ts]), neg(libc::EINVAL));
    assert_eq!(l.call(SETTIMEOFDAY, &[ts, 0]), neg(libc::EPERM));
    // a thread CPU clock of this thread reads; one of no such thread does not
    let me = l.p.tid() as i64;
    let clock = |tid: i64| ((!tid) << 3 | 6) as u64;
    assert_eq!(l.call(CLOCK_GETTIME, &[clock(me), ts]), 0);
    assert_eq!(
        l.call(CLOCK_GETTIME, &[clock(me + 777), ts]),
        neg(libc::EINVAL)
    );
    // namespaces need privileges; unsharing what one thread shares with nobody is a no-op
    assert_eq!(l.call(UNSHARE, &[0x1000_0000]), neg(libc::EPERM));
    assert_eq!(l.call(UNSHARE, &[0x400 | 0x200]), 0);
    assert_eq!(l.call(UNSHARE, &[1 << 40]), neg(libc::EINVAL));
    for nr in [USERFAULTFD, SYSLOG, VHANGUP] {
        assert_eq!(l.call(nr, &[0, 0, 0]), neg(libc::EPERM), "{nr}");
    }
    for nr in [IO_SETUP, MQ_OPEN, IO_URING_SETUP, PIDFD_OPEN] {
        assert_eq!(l.call(nr, &[0, 0, 0]), neg(libc::ENOSYS), "{nr}");
    }
    assert_eq!(l.call(RESTART_SYSCALL, &[]), neg(libc::EINTR));
}

#[test]
fn files_inside_root() {
    let t = tempdir("files");
    let outer = &t.0;
    let root = outer.join("root");
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::write(root.join("etc/passwd"), b"root:x:0:0\n").unwrap();
    std::fs::write(outer.join("secret"), b"SECRET").unwrap();
    std::os::unix::fs::symlink(outer.join("secret"), root.join("link-out")).unwrap();
    std::os::unix::fs::symlink("../../../secret", root.join("etc/rel-out")).unwrap();
    let mut l = Lane::rooted(&root);

    let path = l.cstr(SCRATCH, "/../../etc/passwd");
    let fd = l.call(OPENAT, &[FDCWD, path, 0, 0]);
    assert!(fd >= 3, "{fd}");
    let buf = SCRATCH + 0x1000;
    assert_eq!(l.call(READ, &[fd as u64, buf, 100]), 11);
    assert_eq!(l.get(buf, 11), b"root:x:0:0\n");
    assert_eq!(l.call(LSEEK, &[fd as u64, 0, 0]), 0);
    assert_eq!(l.call(PREAD64, &[fd as u64, buf, 4, 5]), 4);
    assert_eq!(l.get(buf, 4), b"x:0:");
    // fstat: size at offset 48 of the arm64 struct stat
    assert_eq!(l.call(FSTAT, &[fd as u64, SCRATCH + 0x2000]), 0);
    assert_eq!(l.u64_at(SCRATCH + 0x2000 + 48), 11);
    let mode = l.mem.read_u32(SCRATCH + 0x2000 + 16).unwrap();
    assert_eq!(mode & libc::S_IFMT, libc::S_IFREG);
    assert_eq!(l.call(CLOSE, &[fd as u64]), 0);
    assert_eq!(l.call(CLOSE, &[fd as u64]), neg(libc::EBADF));

    // symlinks pointing outside resolve inside the root: not found there
    for p in ["/link-out", "etc/rel-out", "../secret", "/../secret"] {
        let path = l.cstr(SCRATCH, p);
        let r = l.call(OPENAT, &[FDCWD, path, 0, 0]);
        assert_eq!(r, neg(libc::ENOENT), "{p}");
    }
    // readlink shows the link as stored
    let path = l.cstr(SCRATCH, "etc/rel-out");
    let n = l.call(READLINKAT, &[FDCWD, path, buf, 100]);
    assert_eq!(l.get(buf, n as usize), b"../../../secret");
    // creating files, mkdir, getdents, unlink, rename all stay inside
    let path = l.cstr(SCRATCH, "/../newdir");
    assert_eq!(l.call(MKDIRAT, &[FDCWD, path, 0o755]), 0);
    assert!(root.join("newdir").is_dir());
    assert!(!outer.join("newdir").exists());
    let path = l.cstr(SCRATCH, "newdir/f.txt");
    let fd = l.call(OPENAT, &[FDCWD, path, 0o101 | 0o1000, 0o644]); // O_WRONLY|O_CREAT|O_TRUNC
    assert!(fd >= 0);
    let data = l.cstr(SCRATCH + 0x100, "data");
    assert_eq!(l.call(WRITE, &[fd as u64, data, 4]), 4);
    assert_eq!(std::fs::read(root.join("newdir/f.txt")).unwrap(), b"data");
    // chdir and relative paths, getcwd
    let path = l.cstr(SCRATCH, "/newdir");
    assert_eq!(l.call(CHDIR, &[path]), 0);
    assert_eq!(l.call(GETCWD, &[buf, 100]), 8);
    assert_eq!(l.get(buf, 8), b"/newdir\0");
    assert_eq!(l.call(GETCWD, &[buf, 4]), neg(libc::ERANGE));
    let path = l.cstr(SCRATCH, "f.txt");
    assert_eq!(l.call(NEWFSTATAT, &[FDCWD, path, SCRATCH + 0x2000, 0]), 0);
    assert_eq!(l.u64_at(SCRATCH + 0x2000 + 48), 4);
    // statx of the same
    assert_eq!(l.call(STATX, &[FDCWD, path, 0, 0x7ff, SCRATCH + 0x2000]), 0);
    assert_eq!(l.u64_at(SCRATCH + 0x2000 + 40), 4);
    // directory listing through an fd opened O_DIRECTORY
    let dot = l.cstr(SCRATCH + 0x300, ".");
    let dfd = l.call(OPENAT, &[FDCWD, dot, 0o40000, 0]);
    assert!(dfd >= 0);
    let n = l.call(GETDENTS64, &[dfd as u64, buf, 4096]);
    assert!(n > 0);
    let ents = l.get(buf, n as usize);
    let mut names = Vec::new();
    let mut off = 0;
    while off < ents.len() {
        let reclen = u16::from_le_bytes([ents[off + 16], ents[off + 17]]) as usize;
        let name = &ents[off + 19..off + reclen];
        names.push(String::from_utf8_lossy(name.split(|&c| c == 0).next().unwrap()).into_owned());
        off += reclen;
    }
    names.sort();
    assert_eq!(names, [".", "..", "f.txt"]);
    // openat relative to the directory fd; fchdir
    assert_eq!(l.call(FCHDIR, &[dfd as u64]), 0);
    let to = l.cstr(SCRATCH + 0x400, "../g.txt");
    assert_eq!(l.call(RENAMEAT, &[dfd as u64, path, FDCWD, to]), 0);
    assert!(root.join("g.txt").exists());
    let to2 = l.cstr(SCRATCH + 0x400, "/g.txt");
    assert_eq!(l.call(UNLINKAT, &[FDCWD, to2, 0]), 0);
    assert!(!root.join("g.txt").exists());
    // faccessat
    let p = l.cstr(SCRATCH, "/etc/passwd");
    assert_eq!(l.call(FACCESSAT, &[FDCWD, p, 4]), 0);
    let p = l.cstr(SCRATCH, "/nope");
    assert_eq!(l.call(FACCESSAT, &[FDCWD, p, 0]), neg(libc::ENOENT));
    // symlinkat writes the target as given; following it stays inside
    let target = l.cstr(SCRATCH + 0x500, "/etc/passwd");
    let link = l.cstr(SCRATCH + 0x600, "/mylink");
    assert_eq!(l.call(SYMLINKAT, &[target, FDCWD, link]), 0);
    let fd = l.call(OPENAT, &[FDCWD, link, 0, 0]);
    assert!(fd >= 0);
    assert_eq!(l.call(READ, &[fd as u64, buf, 4]), 4);
    assert_eq!(l.get(buf, 4), b"root");
    // O_NOFOLLOW on a symlink
    assert_eq!(
        l.call(OPENAT, &[FDCWD, link, 0o100000, 0]),
        neg(libc::ELOOP)
    );
    // empty path
    let e = l.cstr(SCRATCH, "");
    assert_eq!(l.call(OPENAT, &[FDCWD, e, 0, 0]), neg(libc::ENOENT));
    // a path longer than PATH_MAX
    let long = "a/".repeat(3000);
    let p = l.cstr(SCRATCH, &long);
    assert_eq!(l.call(OPENAT, &[FDCWD, p, 0, 0]), neg(libc::ENAMETOOLONG));
}

#[test]
fn special_paths() {
    let t = tempdir("special");
    let exe = t.0.join("prog");
    std::fs::write(&exe, b"\x7fELF-not-really").unwrap();
    let mut l = Lane::new(
        LinuxConfig {
            sysroot: None,
            root: Some(t.0.clone()),
            deterministic: true,
            exe_host_path: exe,
            exe_guest_path: b"/bin/prog".to_vec(),
            ..Default::default()
        },
        b"",
    );
    let buf = SCRATCH + 0x1000;
    let p = l.cstr(SCRATCH, "/proc/self/exe");
    let n = l.call(READLINKAT, &[FDCWD, p, buf, 100]);
    assert_eq!(l.get(buf, n as usize), b"/bin/prog");
    let fd = l.call(OPENAT, &[FDCWD, p, 0, 0]);
    assert!(fd >= 0);
    assert_eq!(l.call(READ, &[fd as u64, buf, 4]), 4);
    assert_eq!(l.get(buf, 4), b"\x7fELF");
    // /dev/null, /dev/zero, /dev/urandom (seeded)
    let p = l.cstr(SCRATCH, "/dev/null");
    let fd = l.call(OPENAT, &[FDCWD, p, 2, 0]);
    assert_eq!(l.call(WRITE, &[fd as u64, buf, 10]), 10);
    assert_eq!(l.call(READ, &[fd as u64, buf, 10]), 0);
    let p = l.cstr(SCRATCH, "/dev/urandom");
    let fd = l.call(OPENAT, &[FDCWD, p, 0, 0]);
    assert_eq!(l.call(READ, &[fd as u64, buf, 16]), 16);
    // /proc/self/maps lists the scratch area
    let p = l.cstr(SCRATCH, "/proc/self/maps");
    let fd = l.call(OPENAT, &[FDCWD, p, 0, 0]);
    let n = l.call(READ, &[fd as u64, buf, 4096]);
    let text = String::from_utf8(l.get(buf, n as usize)).unwrap();
    assert!(
        text.starts_with("00100000-00140000 rw-p 00000000 00:00 0"),
        "{text}"
    );
    // /dev/stdout is a dup of fd 1
    let p = l.cstr(SCRATCH, "/dev/stdout");
    let fd = l.call(OPENAT, &[FDCWD, p, 1, 0]);
    let d = l.cstr(SCRATCH + 0x100, "via dev");
    assert_eq!(l.call(WRITE, &[fd as u64, d, 7]), 7);
    assert_eq!(l.p.take_output().0, b"via dev");
}

#[test]
fn brk_grows_and_shrinks() {
    let mut l = Lane::det();
    let b0 = l.call(BRK, &[0]) as u64;
    assert_eq!(b0, 0x40_0000);
    assert_eq!(l.call(BRK, &[b0 + 0x2_1000]) as u64, b0 + 0x2_1000);
    l.mem.write_u64(b0 + 0x2_0ff8, 7).unwrap();
    assert_eq!(l.call(BRK, &[b0 + 0x1000]) as u64, b0 + 0x1000);
    assert!(l.mem.read_u8(b0 + 0x2000).is_err());
    assert_eq!(l.call(BRK, &[b0 + 0x2_1000]) as u64, b0 + 0x2_1000);
    assert_eq!(l.mem.read_u64(b0 + 0x2_0ff8).unwrap(), 0);
    // below the start or absurdly high: unchanged
    assert_eq!(l.call(BRK, &[0x1000]) as u64, b0 + 0x2_1000);
    assert_eq!(l.call(BRK, &[u64::MAX - 5]) as u64, b0 + 0x2_1000);
    // into an existing mapping: refused
    assert_eq!(l.call(BRK, &[SCRATCH + 0x1000]) as u64, b0 + 0x2_1000);
}

#[test]
fn mmap_family() {
    let mut l = Lane::det();
    let a = l.call(MMAP, &[0, 0x3000, 3, 0x22, u64::MAX, 0]) as u64; // RW, PRIVATE|ANON
    assert_eq!(a & 0xfff, 0);
    assert!(a < mm::mmap::MMAP_TOP && a > mm::mmap::MMAP_MIN);
    l.mem.write_u64(a + 0x2ff8, 0x1234).unwrap();
    let b = l.call(MMAP, &[0, 0x1000, 1, 0x22, u64::MAX, 0]) as u64;
    assert!(b < a, "top-down");
    assert!(l.mem.write_u8(b, 1).is_err());
    // MAP_FIXED_NOREPLACE over an existing mapping
    assert_eq!(
        l.call(MMAP, &[a, 0x1000, 3, 0x100022, u64::MAX, 0]),
        neg(libc::EEXIST)
    );
    // bad arguments
    assert_eq!(
        l.call(MMAP, &[0, 0, 3, 0x22, u64::MAX, 0]),
        neg(libc::EINVAL)
    );
    assert_eq!(
        l.call(MMAP, &[0, 0x1000, 3, 0x20, u64::MAX, 0]),
        neg(libc::EINVAL)
    );
    assert_eq!(
        l.call(MMAP, &[0, u64::MAX, 3, 0x22, u64::MAX, 0]),
        neg(libc::ENOMEM)
    );
    assert_eq!(
        l.call(MMAP, &[0x1001, 0x1000, 3, 0x32, u64::MAX, 0]),
        neg(libc::EINVAL)
    );
    assert_eq!(l.call(MMAP, &[0, 0x1000, 3, 0x02, 99, 0]), neg(libc::EBADF));
    // mremap grow (moves, since b is... wherever) keeps the contents
    let c = l.call(MREMAP, &[a, 0x3000, 0x10000, 1, 0]) as u64;
    assert_eq!(l.mem.read_u64(c + 0x2ff8).unwrap(), 0x1234);
    assert_eq!(l.mem.read_u64(c + 0xfff8).unwrap(), 0);
    // shrink
    assert_eq!(l.call(MREMAP, &[c, 0x10000, 0x1000, 0, 0]) as u64, c);
    assert!(l.mem.read_u8(c + 0x1000).is_err());
    // without MAYMOVE growing into a mapped neighbour fails
    let d = l.call(MMAP, &[0, 0x2000, 3, 0x22, u64::MAX, 0]) as u64;
    assert_eq!(
        l.call(MREMAP, &[d, 0x1000, 0x2000, 0, 0]),
        neg(libc::ENOMEM)
    );
    // mprotect and madvise(DONTNEED)
    l.mem.write_u64(d, 5).unwrap();
    assert_eq!(l.call(MPROTECT, &[d, 0x1000, 1]), 0);
    assert!(l.mem.write_u8(d, 1).is_err());
    assert_eq!(l.call(MPROTECT, &[d, 0x1000, 3]), 0);
    assert_eq!(l.call(MADVISE, &[d, 0x1000, 4]), 0);
    assert_eq!(l.mem.read_u64(d).unwrap(), 0);
    assert_eq!(
        l.call(MPROTECT, &[0x7000_0000, 0x1000, 1]),
        neg(libc::ENOMEM)
    );
    // munmap
    assert_eq!(l.call(MUNMAP, &[d, 0x2000]), 0);
    assert!(l.mem.read_u8(d).is_err());
    assert_eq!(l.call(MUNMAP, &[d + 1, 0x1000]), neg(libc::EINVAL));
}

#[test]
fn mmap_file() {
    let t = tempdir("mmapf");
    let data: Vec<u8> = (0..10000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(t.0.join("data.bin"), &data).unwrap();
    let mut l = Lane::rooted(&t.0);
    let p = l.cstr(SCRATCH, "/data.bin");
    let fd = l.call(OPENAT, &[FDCWD, p, 0, 0]) as u64;
    let a = l.call(MMAP, &[0, 0x4000, 1, 2, fd, 0x1000]) as u64;
    assert!(a & 0xfff == 0 && (a as i64) > 0);
    assert_eq!(l.get(a, 10000 - 0x1000), &data[0x1000..]);
    assert_eq!(l.get(a + 10000 - 0x1000, 16), vec![0u8; 16]);
    // writing to a write-only fd mapping is refused; a read-only mapping faults on write
    assert!(l.mem.write_u8(a, 1).is_err());
    let a2 = l.call(MMAP, &[0, 0x1000, 3, 2, fd, 0]) as u64;
    l.mem.write_u8(a2, 0xff).unwrap();
    assert_eq!(
        std::fs::read(t.0.join("data.bin")).unwrap()[0],
        0,
        "private"
    );
}

/// Private mappings of one file in two lanes share its page buffers (`filepages`): the
/// same bytes, one buffer; a lane's write copies the page for it alone; a file changed in
/// place (new size or time) gets pages of its own.
#[test]
fn private_file_mappings_share_pages_until_written() {
    let t = tempdir("filepages");
    let data: Vec<u8> = (0..9000u32).map(|i| (i % 253) as u8).collect();
    let path = t.0.join("lib.so");
    std::fs::write(&path, &data).unwrap();
    let map = |l: &mut Lane| {
        let p = l.cstr(SCRATCH, "/lib.so");
        let fd = l.call(OPENAT, &[FDCWD, p, 0, 0]) as u64;
        // PROT_READ|PROT_WRITE, MAP_PRIVATE
        l.call(MMAP, &[0, 0x3000, 3, 2, fd, 0]) as u64
    };
    let (mut a, mut b) = (Lane::rooted(&t.0), Lane::rooted(&t.0));
    let (pa, pb) = (map(&mut a), map(&mut b));
    for k in 0..3 {
        let (va, vb) = ((pa >> 12) + k, (pb >> 12) + k);
        let (da, db) = (a.mem.page_data(va).unwrap(), b.mem.page_data(vb).unwrap());
        assert!(Arc::ptr_eq(da, db), "page {k} is one buffer");
    }
    assert_eq!(a.get(pa, 9000), data);
    assert_eq!(a.get(pa + 9000, 16), vec![0u8; 16], "zeros past the end");
    // a write is the writer's alone, and reaches neither the file nor the other lane
    let before = a.mem.private_bytes();
    a.mem.write_u8(pa + 5, 0xee).unwrap();
    assert_eq!(a.mem.private_bytes(), before + 4096);
    assert_eq!(b.get(pb + 5, 1), [data[5]]);
    assert_eq!(std::fs::read(&path).unwrap()[5], data[5]);
    // the file changed (another size): a new mapping reads the new bytes
    std::fs::write(&path, b"new bytes").unwrap();
    let mut c = Lane::rooted(&t.0);
    let pc = map(&mut c);
    assert_eq!(c.get(pc, 9), b"new bytes");
    assert_eq!(b.get(pb, 4), &data[..4]);
}

#[test]
fn shared_file_mapping_writes_back() {
    let t = tempdir("shared");
    std::fs::write(t.0.join("s.bin"), b"0123456789").unwrap();
    let mut l = Lane::rooted(&t.0);
    let p = l.cstr(SCRATCH, "/s.bin");
    let fd = l.call(OPENAT, &[FDCWD, p, 2, 0]) as u64;
    let a = l.call(MMAP, &[0, 0x1000, 3, 1, fd, 0]) as u64; // RW, MAP_SHARED
    assert_eq!(l.get(a, 10), b"0123456789");
    l.mem.write_bytes(a + 2, b"AB").unwrap();
    l.mem.write_bytes(a + 20, b"past the end").unwrap();
    // a write() to the file meanwhile is not clobbered by unchanged bytes
    l.cstr(SCRATCH + 0x100, "Z");
    assert_eq!(l.call(PWRITE64, &[fd, SCRATCH + 0x100, 1, 8]), 1);
    assert_eq!(l.call(MSYNC, &[a, 0x1000, 4]), 0);
    assert_eq!(std::fs::read(t.0.join("s.bin")).unwrap(), b"01AB4567Z9");
    l.mem.write_bytes(a, b"x").unwrap();
    assert_eq!(l.call(MUNMAP, &[a, 0x1000]), 0);
    assert_eq!(std::fs::read(t.0.join("s.bin")).unwrap(), b"x1AB4567Z9");
    // a read-only fd cannot be mapped shared and writable
    let fd2 = l.call(OPENAT, &[FDCWD, p, 0, 0]) as u64;
    assert_eq!(l.call(MMAP, &[0, 0x1000, 3, 1, fd2, 0]), neg(libc::EACCES));
    // the process ending writes back too
    let b = l.call(MMAP, &[0, 0x1000, 3, 1, fd, 0]) as u64;
    l.mem.write_bytes(b + 9, b"!").unwrap();
    let (_, o) = l.call_o(EXIT_GROUP, &[0]);
    assert_eq!(o, SysOutcome::Exit(0));
    assert_eq!(std::fs::read(t.0.join("s.bin")).unwrap(), b"x1AB4567Z!");
}

#[test]
fn pipes() {
    let mut l = Lane::det();
    let fds = SCRATCH + 0x800;
    assert_eq!(l.call(PIPE2, &[fds, 0]), 0);
    let r = l.mem.read_u32(fds).unwrap() as u64;
    let w = l.mem.read_u32(fds + 4).unwrap() as u64;
    assert_eq!((r, w), (3, 4));
    let d = l.cstr(SCRATCH, "through the pipe");
    assert_eq!(l.call(WRITE, &[w, d, 16]), 16);
    let buf = SCRATCH + 0x1000;
    assert_eq!(l.call(READ, &[r, buf, 7]), 7);
    assert_eq!(l.call(READ, &[r, buf + 7, 100]), 9);
    assert_eq!(l.get(buf, 16), b"through the pipe");
    // dup keeps the write end open
    let w2 = l.call(DUP, &[w]) as u64;
    assert_eq!(l.call(CLOSE, &[w]), 0);
    // O_NONBLOCK via fcntl: empty pipe -> EAGAIN
    assert_eq!(l.call(FCNTL, &[r, 4, 0o4000]), 0);
    assert_eq!(l.call(FCNTL, &[r, 3, 0]) as u32 & 0o4000, 0o4000);
    assert_eq!(l.call(READ, &[r, buf, 1]), neg(libc::EAGAIN));
    assert_eq!(l.call(CLOSE, &[w2]), 0);
    assert_eq!(
        l.call(READ, &[r, buf, 1]),
        0,
        "EOF once all writers are gone"
    );
    // writing with no reader: EPIPE and SIGPIPE (default: killed)
    assert_eq!(l.call(PIPE2, &[fds, 0o2000000]), 0);
    let r = l.mem.read_u32(fds).unwrap() as u64;
    let w = l.mem.read_u32(fds + 4).unwrap() as u64;
    assert_eq!(l.call(FCNTL, &[r, 1, 0]), 1, "O_CLOEXEC -> FD_CLOEXEC");
    assert_eq!(l.call(CLOSE, &[r]), 0);
    let (ret, o) = l.call_o(WRITE, &[w, d, 1]);
    assert_eq!((ret, o), (neg(libc::EPIPE), SysOutcome::Killed(13)));
}

#[test]
fn blocking_without_a_deadline_blocks() {
    let mut l = Lane::det();
    let fds = SCRATCH + 0x800;
    assert_eq!(l.call(PIPE2, &[fds, 0]), 0);
    let (_, o) = l.call_o(READ, &[3, SCRATCH, 1]);
    assert_eq!(o, SysOutcome::Block);
    let mut l = Lane::det();
    l.mem.write_u32(SCRATCH, 5).unwrap();
    assert_eq!(
        l.call(FUTEX, &[SCRATCH, 128, 6, 0, 0, 0]),
        neg(libc::EAGAIN)
    );
    assert_eq!(l.call(FUTEX, &[SCRATCH, 129, 1, 0, 0, 0]), 0);
    let (_, o) = l.call_o(FUTEX, &[SCRATCH, 128, 5, 0, 0, 0]);
    assert_eq!(o, SysOutcome::Block);
}

#[test]
fn dup_and_fcntl() {
    let mut l = Lane::det();
    assert_eq!(l.call(DUP3, &[1, 10, 0o2000000]), 10);
    assert_eq!(l.call(FCNTL, &[10, 1, 0]), 1);
    assert_eq!(l.call(DUP3, &[1, 1, 0]), neg(libc::EINVAL));
    assert_eq!(l.call(DUP3, &[1, 5000, 0]), neg(libc::EBADF));
    assert_eq!(l.call(FCNTL, &[1, 0, 7]), 7); // F_DUPFD
    assert_eq!(l.call(FCNTL, &[1, 1030, 7]), 8); // F_DUPFD_CLOEXEC
    assert_eq!(l.call(FCNTL, &[8, 1, 0]), 1);
    assert_eq!(l.call(FCNTL, &[1, 3, 0]), 1, "O_WRONLY");
    let d = l.cstr(SCRATCH, "x");
    assert_eq!(l.call(WRITE, &[10, d, 1]), 1);
    assert_eq!(l.p.take_output().0, b"x");
    assert_eq!(l.call(FCNTL, &[99, 1, 0]), neg(libc::EBADF));
}

#[test]
fn clock_is_virtual_and_random_is_seeded() {
    let mut l = Lane::det();
    let ts = SCRATCH + 0x100;
    assert_eq!(l.call(CLOCK_GETTIME, &[0, ts]), 0);
    assert_eq!(l.u64_at(ts), time::clock::DET_REALTIME_BASE_S as u64);
    assert_eq!(l.u64_at(ts + 8), 0);
    l.st.retired = 2_500_000_000;
    assert_eq!(l.call(CLOCK_GETTIME, &[1, ts]), 0);
    assert_eq!(l.u64_at(ts), time::clock::DET_MONOTONIC_BASE_S as u64 + 2);
    assert_eq!(l.u64_at(ts + 8), 500_000_000);
    // nanosleep advances it without waiting
    l.put(ts, &100u64.to_le_bytes());
    l.put(ts + 8, &0u64.to_le_bytes());
    let start = std::time::Instant::now();
    assert_eq!(l.call(NANOSLEEP, &[ts, 0]), 0);
    assert!(start.elapsed().as_secs() < 5);
    assert_eq!(l.call(CLOCK_GETTIME, &[0, ts]), 0);
    assert_eq!(l.u64_at(ts), time::clock::DET_REALTIME_BASE_S as u64 + 102);
    assert_eq!(l.call(CLOCK_GETTIME, &[77, ts]), neg(libc::EINVAL));
    assert_eq!(l.call(GETTIMEOFDAY, &[ts, 0]), 0);
    assert_eq!(l.u64_at(ts), time::clock::DET_REALTIME_BASE_S as u64 + 102);
    assert_eq!(l.u64_at(ts + 8), 500_000);
    // seeded random bytes repeat across processes
    assert_eq!(l.call(GETRANDOM, &[SCRATCH, 32, 0]), 32);
    let a = l.get(SCRATCH, 32);
    let mut l2 = Lane::det();
    assert_eq!(l2.call(GETRANDOM, &[SCRATCH, 32, 0]), 32);
    assert_eq!(a, l2.get(SCRATCH, 32));
    assert_eq!(l.call(GETRANDOM, &[0xdead_0000, 32, 0]), neg(libc::EFAULT));
    assert_eq!(l.call(GETPID, &[]), DETERMINISTIC_PID as i64);
}

/// A sleep blocks as `WaitKind::Sleep` (only its deadline or a signal ends it), a read of an
/// empty pipe as `WaitKind::Retry` (another task's syscall may give it bytes): the scheduler
/// readies only the second kind after each completed syscall, and the GPU kernels answer a
/// threaded lane's syscalls themselves only while no task waits that way.
#[test]
fn a_sleep_waits_apart_from_retries() {
    use crate::sched::WaitKind;
    let mut l = Lane::det();
    let block_of = |l: &mut Lane, nr: u64, args: &[u64]| {
        l.st.x[8] = nr;
        l.st.x[..args.len()].copy_from_slice(args);
        assert_eq!(
            l.p.syscall(&mut l.st, &mut l.mem),
            SysOutcome::Block,
            "syscall {nr}"
        );
        l.p.take_block().expect("a block says what it waits for")
    };
    let ts = SCRATCH + 0x100;
    l.put(ts, &1u64.to_le_bytes());
    l.put(ts + 8, &0u64.to_le_bytes());
    let w = block_of(&mut l, NANOSLEEP, &[ts, 0]);
    assert_eq!(w.kind, WaitKind::Sleep);
    assert!(w.deadline.is_some(), "a sleep ends at its deadline");
    let w = block_of(&mut l, CLOCK_NANOSLEEP, &[1, 0, ts, 0]);
    assert_eq!(w.kind, WaitKind::Sleep);
    let fds = SCRATCH + 0x800;
    assert_eq!(l.call(PIPE2, &[fds, 0]), 0);
    let r = l.mem.read_u32(fds).unwrap() as u64;
    let w = block_of(&mut l, READ, &[r, SCRATCH + 0x1000, 1]);
    assert_eq!(w.kind, WaitKind::Retry);
}

#[test]
fn signals() {
    // abort(): raise blocks everything, tgkill(SIGABRT) pends, unblocking delivers it
    let mut l = Lane::det();
    let set = SCRATCH;
    l.put(set, &u64::MAX.to_le_bytes());
    assert_eq!(l.call(RT_SIGPROCMASK, &[0, set, SCRATCH + 8, 8]), 0);
    assert_eq!(l.call(TGKILL, &[1000, 1000, 6]), 0);
    let (_, o) = l.call_o(RT_SIGPROCMASK, &[2, SCRATCH + 8, 0, 8]);
    assert_eq!(o, SysOutcome::Killed(6));

    // SIG_IGN: nothing happens; rt_sigaction returns the old action
    let mut l = Lane::det();
    let act = SCRATCH;
    l.put(act, &1u64.to_le_bytes());
    assert_eq!(l.call(RT_SIGACTION, &[15, act, 0, 8]), 0);
    assert_eq!(l.call(KILL, &[1000, 15]), 0);
    assert_eq!(l.call(RT_SIGACTION, &[15, 0, SCRATCH + 0x100, 8]), 0);
    assert_eq!(l.u64_at(SCRATCH + 0x100), 1);
    assert_eq!(l.call(RT_SIGACTION, &[9, act, 0, 8]), neg(libc::EINVAL));
    assert_eq!(l.call(RT_SIGACTION, &[15, act, 0, 4]), neg(libc::EINVAL));
    assert_eq!(l.call(KILL, &[4242, 15]), neg(libc::ESRCH));
    // SIGCHLD's default is to ignore
    assert_eq!(l.call(KILL, &[0, 17]), 0);
    // a handler runs on a signal frame and returns through rt_sigreturn
    let stack_top = SCRATCH + 0x3_0000;
    l.st.x[31] = stack_top;
    l.st.x[19] = 0x1919;
    l.st.x[29] = 0x2929;
    l.st.v[5] = 0x5555_u128 << 64;
    l.st.nzcv = 0x6000_0000;
    l.st.pc = 0x40_1000;
    l.put(act, &0x40_0123u64.to_le_bytes());
    assert_eq!(l.call(RT_SIGACTION, &[10, act, 0, 8]), 0);
    let (r, o) = l.call_o(KILL, &[1000, 10]);
    assert_eq!(o, SysOutcome::Continue);
    assert_eq!(r, 10, "x0 = signal number");
    assert_eq!(l.st.pc, 0x40_0123);
    let frame = l.st.x[31];
    assert_eq!(frame % 16, 0);
    assert!(frame < stack_top - 4688);
    assert_eq!(l.st.x[1], frame);
    assert_eq!(l.st.x[2], frame + 128);
    assert_eq!(l.st.x[30], signal::SIGTRAMP_ADDR);
    assert_eq!(l.mem.read_u32(frame).unwrap(), 10); // si_signo
    assert_eq!(l.mem.read_u32(frame + 8).unwrap() as i32, signal::SI_USER);
    assert_eq!(l.u64_at(frame + 128 + 176 + 8 + 19 * 8), 0x1919);
    assert_eq!(l.u64_at(frame + 128 + 176 + 264), 0x40_1000); // pc
                                                              // the signal is blocked while its handler runs
    assert_eq!(l.call(RT_SIGPROCMASK, &[0, 0, SCRATCH + 0x200, 8]), 0);
    assert_eq!(l.u64_at(SCRATCH + 0x200), 1 << 9);
    // the trampoline is there and executable
    let mut w = [0u8; 8];
    l.mem.fetch_bytes(signal::SIGTRAMP_ADDR, &mut w).unwrap();
    assert_eq!(w, [0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4]);
    // the handler clobbers registers, then returns
    l.st.x[19] = 0;
    l.st.v[5] = 0;
    l.st.nzcv = 0;
    let r = l.call(RT_SIGRETURN, &[]);
    assert_eq!(r, 0, "x0 as it was after kill returned 0");
    assert_eq!(l.st.pc, 0x40_1000);
    assert_eq!(l.st.x[31], stack_top);
    assert_eq!(l.st.x[19], 0x1919);
    assert_eq!(l.st.x[29], 0x2929);
    assert_eq!(l.st.v[5], 0x5555_u128 << 64);
    assert_eq!(l.st.nzcv, 0x6000_0000);
    assert_eq!(l.call(RT_SIGPROCMASK, &[0, 0, SCRATCH + 0x200, 8]), 0);
    assert_eq!(l.u64_at(SCRATCH + 0x200), 0);
    // a fault with a handler goes to the handler; without one the process dies
    let o =
        l.p.deliver_fault(&mut l.st, &mut l.mem, 10, signal::SEGV_MAPERR, 0x10);
    assert_eq!(o, None);
    assert_eq!(l.st.pc, 0x40_0123);
    let o =
        l.p.deliver_fault(&mut l.st, &mut l.mem, 11, signal::SEGV_MAPERR, 0x10);
    assert_eq!(o, Some(SysOutcome::Killed(11)));
    // a handler with no usable stack: SIGSEGV
    let mut l = Lane::det();
    l.put(act, &0x40_0123u64.to_le_bytes());
    assert_eq!(l.call(RT_SIGACTION, &[10, act, 0, 8]), 0);
    l.st.x[31] = 0x7000_0000;
    let (_, o) = l.call_o(KILL, &[1000, 10]);
    assert_eq!(o, SysOutcome::Killed(11));
    // exit_group
    let mut l = Lane::det();
    let (_, o) = l.call_o(EXIT_GROUP, &[0x1_0000_0103]);
    assert_eq!(o, SysOutcome::Exit(3));
}

#[test]
fn misc_info() {
    let mut l = Lane::det();
    let b = SCRATCH;
    assert_eq!(l.call(UNAME, &[b]), 0);
    assert_eq!(&l.get(b, 6), b"Linux\0");
    assert_eq!(&l.get(b + 65 * 4, 8), b"aarch64\0");
    assert_eq!(l.call(PRLIMIT64, &[0, 3, 0, b]), 0);
    assert_eq!(l.u64_at(b), 8 << 20);
    assert_eq!(l.call(SCHED_GETAFFINITY, &[0, 128, b]), 8);
    assert_eq!(l.u64_at(b), 1);
    assert_eq!(l.call(SYSINFO, &[b]), 0);
    assert_eq!(l.call(SET_TID_ADDRESS, &[b]), 1000);
    assert_eq!(l.call(UMASK, &[0o077]), 0o022);
    assert_eq!(l.call(UMASK, &[0o022]), 0o077);
    assert_eq!(l.call(GETUID, &[]), unsafe { libc::getuid() } as i64);
    assert_eq!(l.call(WAIT4, &[u64::MAX, 0, 0, 0]), neg(libc::ECHILD));
    assert_eq!(
        l.call(TIMES, &[b]),
        100 * 100,
        "monotonic ticks: 100 s of uptime"
    );
}

/// sethostname/setdomainname name the run's own machine (uname sees it, the host's is not
/// touched); EPERM without CAP_SYS_ADMIN, EINVAL past 64 bytes.
#[test]
fn host_and_domain_names_are_the_runs() {
    let mut l = Lane::det();
    // (as root, whoever runs the test)
    l.p.creds.cap_eff = crate::proc::creds::CAP_FULL;
    let b = SCRATCH;
    l.put(b + 512, b"lane-7");
    l.put(b + 600, b"example.org");
    assert_eq!(l.call(SETHOSTNAME, &[b + 512, 6]), 0);
    assert_eq!(l.call(SETDOMAINNAME, &[b + 600, 11]), 0);
    assert_eq!(l.call(SETHOSTNAME, &[b + 512, 65]), neg(libc::EINVAL));
    assert_eq!(l.call(UNAME, &[b]), 0);
    assert_eq!(&l.get(b + 65, 7), b"lane-7\0");
    assert_eq!(&l.get(b + 65 * 5, 12), b"example.org\0");
    l.p.creds.cap_eff = 0;
    assert_eq!(l.call(SETHOSTNAME, &[b + 512, 6]), neg(libc::EPERM));
}

#[test]
fn strace_lines() {
    let mut mem = AddressSpace::new();
    mem.map(SCRATCH, 0x1000, Perm::RW).unwrap();
    mem.write_bytes(SCRATCH, b"/etc/passwd\0").unwrap();
    let s = strace::format_call(OPENAT, &[FDCWD, SCRATCH, 0o2000000, 0, 0, 0], &mut mem);
    assert_eq!(
        s,
        "openat(AT_FDCWD, \"/etc/passwd\", O_RDONLY|O_CLOEXEC, 0)"
    );
    assert_eq!(strace::format_ret(OPENAT, Ok(3)), "3");
    assert_eq!(
        strace::format_ret(OPENAT, Err(Errno::ENOENT)),
        "-1 ENOENT (No such file or directory)"
    );
}

#[test]
fn batch_in_parallel() {
    let mut lanes: Vec<Lane> = (0..8).map(|_| Lane::det()).collect();
    for (i, l) in lanes.iter_mut().enumerate() {
        let d = l.cstr(SCRATCH, &format!("lane {i}\n"));
        l.st.x[8] = WRITE;
        l.st.x[0] = 1;
        l.st.x[1] = d;
        l.st.x[2] = 7;
    }
    let mut refs: Vec<(&mut Process, &mut CpuState, &mut AddressSpace)> = lanes
        .iter_mut()
        .map(|l| (&mut l.p, &mut l.st, &mut l.mem))
        .collect();
    let out = service_batch(&mut refs);
    assert!(out.iter().all(|o| *o == SysOutcome::Continue));
    for (i, l) in lanes.iter_mut().enumerate() {
        assert_eq!(l.st.x[0], 7);
        assert_eq!(l.p.take_output().0, format!("lane {i}\n").into_bytes());
    }
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// Cases per property: `default`, or ARMADA_PROPTEST_CASES for a longer run.
    fn cases(default: u32) -> u32 {
        std::env::var("ARMADA_PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases(3000)))]
        /// Random syscalls with random arguments (pointers often into scratch memory full of
        /// random bytes) never panic and never touch anything outside the root.
        #[test]
        fn random_syscalls_never_panic(
            calls in proptest::collection::vec(
                (0u64..470, proptest::collection::vec(any::<u64>(), 6), proptest::collection::vec(0u8..4, 6)),
                1..12),
            fill in proptest::collection::vec(any::<u8>(), 512),
        ) {
            let t = tempdir("fuzz");
            let root = t.0.join("root");
            std::fs::create_dir_all(root.join("d")).unwrap();
            std::fs::write(root.join("f"), b"file").unwrap();
            let mut l = Lane::rooted(&root);
            for k in 0..(SCRATCH_LEN / 512) {
                l.put(SCRATCH + k * 512, &fill);
            }
            // a few plausible strings
            l.cstr(SCRATCH, "f");
            l.cstr(SCRATCH + 0x10, "../../d/../x");
            l.cstr(SCRATCH + 0x20, "/d");
            for (nr, args, kinds) in calls {
                if nr == MKNODAT {
                    continue; // opening a FIFO would block the host thread, as it blocks Linux
                }
                let a: Vec<u64> = args.iter().zip(kinds.iter()).map(|(&v, &k)| match k {
                    0 => v,
                    1 => SCRATCH + (v % SCRATCH_LEN),
                    2 => [SCRATCH, SCRATCH + 0x10, SCRATCH + 0x20][(v % 3) as usize],
                    _ => v % 16,
                }).collect();
                let (_, o) = l.call_o(nr, &a);
                if o != SysOutcome::Continue {
                    break;
                }
            }
            // nothing was created next to the root
            let names: Vec<_> = std::fs::read_dir(&t.0).unwrap().map(|e| e.unwrap().file_name()).collect();
            prop_assert!(names.len() <= 1, "{names:?}");
        }
    }
}

// threads and processes
mod tasks;
