//! The paths armada answers itself: /proc/self (exe, maps, fd/N), /proc/<pid>, the CPU
//! lists under /sys, /dev/null, /dev/zero, /dev/urandom and /dev/std*.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use crate::fs::path::normalize_lexically;
use crate::io::fd::o::*;
use crate::io::fd::{host_mode, HostFd, Kind, OpenFile};
use crate::{Errno, Process, SysResult};
use armada_machine::memory::{AddressSpace, Perm};

/// Guest paths armada answers itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    Exe,
    Maps,
    /// /proc/PID/{stat,status,cmdline,comm} of a process of the lane.
    Proc(i32, ProcFile),
    /// A machine-wide file of /proc or /sys (see `procfs`).
    System(crate::fs::sysfiles::SysFile),
    Null,
    Zero,
    Random,
    Fd(i32),
    /// The fuzz input's `@@` file (see `input`).
    Input,
}

/// The files of /proc/PID that armada writes itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProcFile {
    Stat,
    Status,
    Cmdline,
    Comm,
}

impl ProcFile {
    fn from_name(n: &[u8]) -> Option<ProcFile> {
        Some(match n {
            b"stat" => ProcFile::Stat,
            b"status" => ProcFile::Status,
            b"cmdline" => ProcFile::Cmdline,
            b"comm" => ProcFile::Comm,
            _ => return None,
        })
    }
}

impl Process {
    /// Recognizes the guest paths armada serves itself.
    pub(crate) fn special(&self, dirfd: i32, path: &[u8]) -> Option<Special> {
        let base = if path.first() == Some(&b'/') {
            b"/".to_vec()
        } else {
            self.dir_guest_path(dirfd).ok()?
        };
        let p = normalize_lexically(&base, path);
        if self.input_file_at(&p).is_some() {
            return Some(Special::Input);
        }
        let proc_fd = |rest: &[u8]| -> Option<Special> {
            std::str::from_utf8(rest)
                .ok()?
                .parse::<i32>()
                .ok()
                .map(Special::Fd)
        };
        let pid_prefix = format!("/proc/{}/", self.pid);
        let p: &[u8] = if let Some(rest) = p
            .strip_prefix(pid_prefix.as_bytes())
            .or_else(|| p.strip_prefix(b"/proc/self/"))
        {
            return match rest {
                b"exe" => Some(Special::Exe),
                b"maps" => Some(Special::Maps),
                _ => ProcFile::from_name(rest)
                    .map(|f| Special::Proc(self.pid, f))
                    .or_else(|| rest.strip_prefix(b"fd/").and_then(proc_fd))
                    .or_else(|| {
                        self.sys_file(&[b"/proc/self/", rest].concat())
                            .map(Special::System)
                    }),
            };
        } else {
            &p
        };
        // another process of the lane
        if let Some(rest) = p.strip_prefix(b"/proc/") {
            let slash = rest.iter().position(|&c| c == b'/');
            let pid = slash.and_then(|n| std::str::from_utf8(&rest[..n]).ok()?.parse::<i32>().ok());
            if let (Some(n), Some(pid)) = (slash, pid) {
                if self.procs.procs.contains_key(&pid) {
                    return ProcFile::from_name(&rest[n + 1..]).map(|f| Special::Proc(pid, f));
                }
            }
        }
        match p {
            b"/proc/self/exe" => Some(Special::Exe),
            b"/proc/self/maps" => Some(Special::Maps),
            b"/dev/null" => Some(Special::Null),
            b"/dev/zero" => Some(Special::Zero),
            b"/dev/urandom" | b"/dev/random" => Some(Special::Random),
            b"/dev/stdin" => Some(Special::Fd(0)),
            b"/dev/stdout" => Some(Special::Fd(1)),
            b"/dev/stderr" => Some(Special::Fd(2)),
            _ => p
                .strip_prefix(b"/proc/self/fd/")
                .or_else(|| p.strip_prefix(b"/dev/fd/"))
                .and_then(proc_fd)
                .or_else(|| self.sys_file(p).map(Special::System)),
        }
    }

    pub(crate) fn exe_guest_bytes(&self) -> Vec<u8> {
        let g = &self.cfg.exe_guest_path;
        if g.first() == Some(&b'/') {
            g.clone()
        } else if self.root.is_none() {
            self.cfg.exe_host_path.as_os_str().as_bytes().to_vec()
        } else {
            let mut v = b"/".to_vec();
            v.extend_from_slice(g);
            normalize_lexically(b"/", &v)
        }
    }

    /// The text of /proc/PID/{stat,status,cmdline,comm} (ENOENT once the process is
    /// reaped). What armada does not track reads as Linux shows an idle value: zero.
    fn proc_text(&self, pid: i32, f: ProcFile) -> Result<Vec<u8>, Errno> {
        let e = self.procs.procs.get(&pid).ok_or(Errno::ENOENT)?;
        let comm: Vec<u8> = if pid == self.pid {
            let n = self.comm.iter().position(|&c| c == 0).unwrap_or(16);
            self.comm[..n].to_vec()
        } else {
            let base = e.exe.rsplit(|&c| c == b'/').next().unwrap_or_default();
            base[..base.len().min(15)].to_vec()
        };
        let comm = String::from_utf8_lossy(&comm).into_owned();
        let state = if e.zombie.is_some() {
            ('Z', "zombie")
        } else if e.stopped {
            ('T', "stopped")
        } else if pid == self.pid {
            ('R', "running")
        } else {
            ('S', "sleeping")
        };
        let threads = if pid == self.pid {
            self.thread_count()
        } else {
            1
        };
        Ok(match f {
            ProcFile::Cmdline => e.cmdline.clone(),
            ProcFile::Comm => format!("{comm}\n").into_bytes(),
            ProcFile::Stat => {
                // pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt
                // majflt cmajflt utime stime cutime cstime priority nice num_threads
                // itrealvalue starttime vsize rss, then 28 more fields
                let mut v = format!(
                    "{pid} ({comm}) {} {} {} {} 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 {threads} 0 0 0 0",
                    state.0, e.ppid, e.pgid, e.sid
                );
                for _ in 0..28 {
                    v.push_str(" 0");
                }
                v.push('\n');
                v.into_bytes()
            }
            ProcFile::Status => {
                use std::fmt::Write;
                let (c, umask) = match &e.creds {
                    Some(c) if pid != self.pid => (c, e.umask),
                    _ => (&self.creds, self.umask),
                };
                let mut s = format!(
                "Name:\t{comm}\nUmask:\t{:04o}\nState:\t{} ({})\nTgid:\t{pid}\nNgid:\t0\nPid:\t{pid}\nPPid:\t{}\nTracerPid:\t0\nUid:\t{}\t{}\t{}\t{}\nGid:\t{}\t{}\t{}\t{}\nFDSize:\t64\nGroups:\t{}\nThreads:\t{threads}\n",
                umask,
                state.0,
                state.1,
                e.ppid,
                c.uid.real,
                c.uid.eff,
                c.uid.saved,
                c.uid.fs,
                c.gid.real,
                c.gid.eff,
                c.gid.saved,
                c.gid.fs,
                // Linux ends the list with a space, even an empty one
                c.groups.iter().map(|g| format!("{g} ")).collect::<String>() + if c.groups.is_empty() { " " } else { "" },
            );
                // signal masks: those of this process (another's read as none here), and
                // the capability sets
                let ((shd, ign, cgt), (pnd, blk)) = if pid == self.pid {
                    (
                        self.signals.status_masks(),
                        (self.thread.sig.pending, self.thread.sig.mask),
                    )
                } else {
                    ((0, 0, 0), (0, 0))
                };
                let _ = write!(
                    s,
                    "SigQ:\t0/{}\nSigPnd:\t{pnd:016x}\nShdPnd:\t{shd:016x}\nSigBlk:\t{blk:016x}\nSigIgn:\t{ign:016x}\nSigCgt:\t{cgt:016x}\nCapInh:\t{:016x}\nCapPrm:\t{:016x}\nCapEff:\t{:016x}\nCapBnd:\t{:016x}\nCapAmb:\t{:016x}\nNoNewPrivs:\t{}\nSeccomp:\t0\n",
                    self.sigpending_limit(),
                    c.cap_inh,
                    c.cap_prm,
                    c.cap_eff,
                    c.cap_bnd,
                    0,
                    self.prctl.no_new_privs as u8,
                );
                s.into_bytes()
            }
        })
    }

    /// The lane pid a guest path names as a /proc directory (`/proc/PID`), if any.
    pub(crate) fn proc_pid_dir(&self, dirfd: i32, path: &[u8]) -> Option<i32> {
        if self.root.is_some() {
            return None;
        }
        let base = if path.first() == Some(&b'/') {
            b"/".to_vec()
        } else {
            self.dir_guest_path(dirfd).ok()?
        };
        let p = normalize_lexically(&base, path);
        let rest = p.strip_prefix(b"/proc/")?;
        let pid: i32 = std::str::from_utf8(rest).ok()?.parse().ok()?;
        self.procs.procs.contains_key(&pid).then_some(pid)
    }

    /// getdents64 of /proc: the host's entries without its processes, and the lane's
    /// processes instead (the first call lists them). `pos` of the description marks
    /// that they were listed.
    pub(crate) fn proc_listing(&mut self, fd: i32, host: &[u8], room: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(host.len());
        let put = |out: &mut Vec<u8>, ino: u64, ty: u8, name: &[u8]| {
            let reclen = (19 + name.len() + 1).next_multiple_of(8);
            out.extend_from_slice(&ino.to_le_bytes());
            out.extend_from_slice(&0i64.to_le_bytes());
            out.extend_from_slice(&(reclen as u16).to_le_bytes());
            out.push(ty);
            out.extend_from_slice(name);
            out.resize(out.len() + reclen - 19 - name.len(), 0);
        };
        let first = self.files.file(fd).map(|f| f.pos == 0).unwrap_or(false);
        if first {
            let pids: Vec<i32> = self.procs.procs.keys().copied().collect();
            for pid in pids {
                let name = pid.to_string();
                if out.len() + (19 + name.len() + 1).next_multiple_of(8) > room / 2 {
                    break;
                }
                put(&mut out, 5000 + pid as u64, libc::DT_DIR, name.as_bytes());
            }
            if let Ok(f) = self.files.file_mut(fd) {
                f.pos = 1;
            }
        }
        let mut at = 0;
        while at + 19 <= host.len() {
            let reclen = u16::from_le_bytes([host[at + 16], host[at + 17]]) as usize;
            if reclen < 19 || at + reclen > host.len() {
                break;
            }
            let rec = &host[at..at + reclen];
            let name = &rec[19..];
            let name = &name[..name.iter().position(|&c| c == 0).unwrap_or(name.len())];
            let is_pid = !name.is_empty() && name.iter().all(u8::is_ascii_digit);
            if !is_pid {
                out.extend_from_slice(rec);
            }
            at += reclen;
        }
        out
    }

    /// Whether guest path `p` is this process's /proc fd directory.
    pub(crate) fn is_own_fd_dir(&self, p: &[u8]) -> bool {
        let p = normalize_lexically(b"/", p);
        let Some(rest) = p.strip_prefix(b"/proc/") else {
            return p == b"/dev/fd";
        };
        let Some(who) = rest.strip_suffix(b"/fd") else {
            return false;
        };
        let me = self.pid.to_string();
        let task = |t: &[u8]| {
            std::str::from_utf8(t)
                .ok()
                .and_then(|t| t.parse::<i32>().ok())
                .is_some_and(|t| self.is_thread(t))
        };
        match who {
            b"self" | b"thread-self" => true,
            w if w == me.as_bytes() => true,
            w => [b"self/task/".as_slice(), format!("{me}/task/").as_bytes()]
                .iter()
                .any(|pre| w.strip_prefix(*pre).is_some_and(task)),
        }
    }

    /// getdents64 of /proc/self/fd: ".", "..", then this process's open fds, from the
    /// host directory's offset on (`h`, which keeps the cursor: 0 and 1 are the dots, fd
    /// `n` is at `n + 2`), in at most `room` bytes (EINVAL when not even one fits).
    pub(crate) fn fd_listing(
        &mut self,
        h: std::os::fd::RawFd,
        room: usize,
    ) -> Result<Vec<u8>, Errno> {
        // SAFETY: lseek with integer arguments on a descriptor of ours.
        let mut at = unsafe { libc::lseek(h, 0, libc::SEEK_CUR) }.max(0) as u64;
        let mut out = Vec::new();
        let end = self.files.fds.len() as u64 + 2;
        while at < end {
            let name = match at {
                0 => b".".to_vec(),
                1 => b"..".to_vec(),
                k if self.files.fds[(k - 2) as usize].is_some() => (k - 2).to_string().into_bytes(),
                _ => {
                    at += 1;
                    continue;
                }
            };
            let reclen = (19 + name.len() + 1).next_multiple_of(8);
            if out.len() + reclen > room {
                if out.is_empty() {
                    return Err(Errno::EINVAL);
                }
                break;
            }
            let ty = if at < 2 { libc::DT_DIR } else { libc::DT_LNK };
            out.extend_from_slice(&(0x1000 + at).to_le_bytes());
            out.extend_from_slice(&(at as i64 + 1).to_le_bytes());
            out.extend_from_slice(&(reclen as u16).to_le_bytes());
            out.push(ty);
            out.extend_from_slice(&name);
            out.resize(out.len() + reclen - 19 - name.len(), 0);
            at += 1;
        }
        // SAFETY: as above.
        unsafe { libc::lseek(h, at as i64, libc::SEEK_SET) };
        Ok(out)
    }

    pub(crate) fn exe_host_cpath(&self) -> Result<CString, Errno> {
        CString::new(self.cfg.exe_host_path.as_os_str().as_bytes()).map_err(|_| Errno::ENOENT)
    }

    pub(crate) fn maps_text(&self, mem: &AddressSpace) -> Vec<u8> {
        use std::fmt::Write;
        let mut s = String::new();
        let exe = String::from_utf8_lossy(&self.exe_guest_bytes()).into_owned();
        for (start, end, perm) in mem.areas() {
            let file = self.file_map_at(start);
            let name = if let Some((m, _)) = file.filter(|(m, _)| !m.name.is_empty()) {
                String::from_utf8_lossy(&m.name).into_owned()
            } else if start == crate::signal::SIGTRAMP_ADDR {
                "[sigpage]".to_string()
            } else if start >= crate::mm::mmap::STACK_TOP - crate::mm::mmap::STACK_SIZE
                && end <= crate::mm::mmap::STACK_TOP
            {
                "[stack]".to_string()
            } else if start >= self.brk_start && end <= (self.brk_cur + 0xfff) & !0xfff {
                "[heap]".to_string()
            } else if end <= self.brk_start {
                exe.clone()
            } else {
                String::new()
            };
            let c = |p: Perm, ch: char| if perm.contains(p) { ch } else { '-' };
            let (off, dev, ino) = file.map_or((0, 0, 0), |(m, off)| (off, m.dev, m.ino));
            let mut line = format!(
                "{start:08x}-{end:08x} {}{}{}p {off:08x} {:02x}:{:02x} {ino}",
                c(Perm::R, 'r'),
                c(Perm::W, 'w'),
                c(Perm::X, 'x'),
                libc::major(dev),
                libc::minor(dev),
            );
            if !name.is_empty() {
                while line.len() < 72 {
                    line.push(' ');
                }
                line.push(' ');
                line.push_str(&name);
            }
            let _ = writeln!(s, "{line}");
        }
        s.into_bytes()
    }

    pub(crate) fn open_special(
        &mut self,
        mem: &mut AddressSpace,
        sp: Special,
        flags: u32,
    ) -> SysResult {
        let cloexec = flags & O_CLOEXEC != 0;
        let acc = flags & O_ACCMODE;
        let limit = self.nofile();
        let (kind, path): (Kind, &[u8]) = match sp {
            Special::Fd(n) => {
                let e = self.files.entry(n)?;
                return self
                    .files
                    .install(e.file, 0, cloexec, limit)
                    .map(|fd| fd as u64);
            }
            Special::Exe => {
                if acc != O_RDONLY {
                    return Err(Errno::EACCES);
                }
                let p = self.exe_host_cpath()?;
                // SAFETY: p is a valid C string.
                let fd = unsafe { libc::open(p.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
                if fd < 0 {
                    return Err(Errno::last());
                }
                // SAFETY: fresh fd owned by nobody else.
                let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                let mode = host_mode(fd.as_raw_fd());
                (
                    Kind::Host {
                        fd: HostFd::Owned(fd),
                        mode,
                    },
                    b"/proc/self/exe",
                )
            }
            Special::Maps => {
                if acc != O_RDONLY {
                    return Err(Errno::EACCES);
                }
                (Kind::Mem(self.maps_text(mem)), b"/proc/self/maps")
            }
            Special::System(f) => {
                if acc != O_RDONLY {
                    return Err(Errno::EACCES);
                }
                (Kind::Mem(self.sys_file_text(f)), b"")
            }
            Special::Proc(pid, f) => {
                if acc != O_RDONLY {
                    return Err(Errno::EACCES);
                }
                (Kind::Mem(self.proc_text(pid, f)?), b"/proc/self/stat")
            }
            Special::Input => {
                if acc != O_RDONLY {
                    return Err(Errno::EACCES);
                }
                let f = self.input.as_ref().ok_or(Errno::ENOENT)?;
                let of = OpenFile::new(Kind::Mem(f.data.to_vec()), O_RDONLY, f.path.clone());
                let idx = self.files.add(of);
                return self
                    .files
                    .install(idx, 0, cloexec, limit)
                    .map(|fd| fd as u64);
            }
            Special::Null => (Kind::Null, b"/dev/null"),
            Special::Zero => (Kind::Zero, b"/dev/zero"),
            Special::Random => (Kind::Random, b"/dev/urandom"),
        };
        let keep = acc | (flags & (O_APPEND | O_NONBLOCK));
        let idx = self.files.add(OpenFile::new(kind, keep, path.to_vec()));
        self.files
            .install(idx, 0, cloexec, limit)
            .map(|fd| fd as u64)
    }
}
