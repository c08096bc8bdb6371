//! execve and execveat, the Linux layer's part: the file to run is found as the guest
//! names it (cwd, `--root`, `-L`, /proc/self/exe), checked (a directory or a file without
//! execute permission is EACCES), and read; a `#!` script becomes a run of its interpreter,
//! found inside the guest's view too, with the script's path as an argument (up to four
//! levels, as Linux). What is left is an AArch64 ELF file; anything else is ENOEXEC and
//! is never run on the host. The new image is built by the scheduler (it needs the ELF
//! loader, which sits above this layer): [`ExecRequest`] is what it gets, and
//! [`Process::exec_commit`] is what this layer does once the new image is in place.

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::fs::path::AT_FDCWD;
use crate::fs::procfs::Special;
use crate::{cstr, rd_u64, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

/// What execve asks the scheduler to load.
#[derive(Clone, Debug)]
pub struct ExecRequest {
    /// The ELF file, open, and where it is on the host.
    pub file: Arc<std::fs::File>,
    pub host_path: PathBuf,
    /// The path the guest ran it by (what /proc/self/exe reads as, made absolute), and the
    /// name AT_EXECFN gives (the path as passed to execve).
    pub guest_path: Vec<u8>,
    pub execfn: Vec<u8>,
    pub argv: Vec<Vec<u8>>,
    pub envp: Vec<Vec<u8>>,
}

/// Most nested `#!` interpreters (Linux: 4 + the file itself).
const MAX_INTERP_DEPTH: usize = 4;
/// Most bytes of one `#!` line Linux reads (BINPRM_BUF_SIZE).
const BINPRM_BUF: usize = 256;
/// Most pointers in argv or envp (Linux's MAX_ARG_STRINGS).
const MAX_ARG_STRINGS: usize = 0x7fff_ffff;
/// Most bytes of arguments and environment (a quarter of the 8 MiB stack, as Linux).
const MAX_ARG_BYTES: usize = 2 << 20;
const AT_EMPTY_PATH: i32 = 0x1000;
const AT_SYMLINK_NOFOLLOW: i32 = 0x100;

/// The e_machine of AArch64.
const EM_AARCH64: u16 = 183;

impl Process {
    pub(crate) fn sys_execve(
        &mut self,
        mem: &mut AddressSpace,
        path: u64,
        argv: u64,
        envp: u64,
    ) -> SysResult {
        self.sys_execveat(mem, AT_FDCWD, path, argv, envp, 0)
    }

    pub(crate) fn sys_execveat(
        &mut self,
        mem: &mut AddressSpace,
        dirfd: i32,
        path: u64,
        argv: u64,
        envp: u64,
        flags: i32,
    ) -> SysResult {
        if flags & !(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0 {
            return Err(Errno::EINVAL);
        }
        let name = cstr(mem, path)?;
        let mut bytes_left = MAX_ARG_BYTES;
        let argv = read_strings(mem, argv, &mut bytes_left)?;
        let envp = read_strings(mem, envp, &mut bytes_left)?;
        let (mut host, mut guest, mut data, mut file) = if name.is_empty() {
            if flags & AT_EMPTY_PATH == 0 {
                return Err(Errno::ENOENT);
            }
            self.exec_open_fd(dirfd)?
        } else {
            self.exec_open(dirfd, &name, flags & AT_SYMLINK_NOFOLLOW == 0)?
        };
        let mut argv = argv;
        // the script (or the file) as argv names it: the path as given, made absolute
        // when it was relative to a directory fd
        let mut script_name = name.clone();
        for _ in 0..=MAX_INTERP_DEPTH {
            if data.starts_with(b"#!") {
                let (interp, arg) = parse_shebang(&data)?;
                let mut new_argv = vec![interp.clone()];
                new_argv.extend(arg);
                new_argv.push(if script_name.is_empty() {
                    guest.clone()
                } else {
                    script_name.clone()
                });
                new_argv.extend(argv.into_iter().skip(1));
                argv = new_argv;
                (host, guest, data, file) = self.exec_open(AT_FDCWD, &interp, true)?;
                script_name = interp;
                continue;
            }
            if let Err(e) = check_elf(&data) {
                if host_machine_elf(&data) {
                    return self.exec_on_host(host, argv, envp);
                }
                return Err(e);
            }
            self.exec = Some(ExecRequest {
                file: Arc::new(file),
                host_path: host,
                guest_path: guest,
                execfn: if name.is_empty() {
                    format!("/dev/fd/{dirfd}").into_bytes()
                } else {
                    name
                },
                argv,
                envp,
            });
            return Ok(0);
        }
        Err(Errno::ELOOP)
    }

    /// An exec of a host program: run natively under `--host-exec` (this process's image
    /// becomes it; the task then waits on it, `hostexec`), else ENOEXEC with a note that
    /// says how. A process of several threads cannot become one (EINVAL and a note).
    fn exec_on_host(&mut self, path: PathBuf, argv: Vec<Vec<u8>>, envp: Vec<Vec<u8>>) -> SysResult {
        if !self.cfg.host_exec {
            let shown = path.display().to_string();
            crate::note_once(crate::NOTE_MISC, 0x5000_0000, || {
                format!(
                    "exec of {shown}, a program for the host's architecture, not AArch64: \
                     ENOEXEC. `armada run --host-exec` runs such programs natively, as \
                     qemu-user with binfmt_misc does"
                )
            });
            return Err(Errno::ENOEXEC);
        }
        if self.thread_count() > 1 {
            crate::note_once(crate::NOTE_MISC, 0x5000_0001, || {
                "--host-exec: a process of several threads exec'd a host program; only a \
                 process of one thread can (fork first, as Go and Python do): EINVAL"
                    .to_string()
            });
            return Err(Errno::EINVAL);
        }
        // as a successful exec: close-on-exec descriptors go (after the host program got
        // the others), and the scheduler gives a vfork parent its memory back
        self.host_exec(crate::proc::hostexec::HostExecRequest { path, argv, envp })?;
        self.files.close_on_exec();
        self.host_execed = true;
        let wake = self.monotonic_ns();
        Err(self.block_until(crate::sched::WaitKind::Retry, None, Some(wake)))
    }

    /// Opens the file a guest path names for execution: (host path, guest path, its
    /// first bytes, the file).
    fn exec_open(&self, dirfd: i32, name: &[u8], follow: bool) -> Result<Opened, Errno> {
        if let Some(Special::Exe) = self.special(dirfd, name) {
            let host = self.cfg.exe_host_path.clone();
            let file = std::fs::File::open(&host).map_err(|e| Errno::from_io(&e))?;
            let (head, file) = read_head(file.into())?;
            return Ok((host, self.exe_guest_bytes(), head, file));
        }
        let t = self.resolve(dirfd, name, follow)?;
        let mut fl = libc::O_RDONLY | libc::O_CLOEXEC;
        if t.confined || !follow {
            fl |= libc::O_NOFOLLOW;
        }
        // SAFETY: valid C string; the fd is owned below.
        let fd = unsafe { libc::openat(t.dirfd, t.path.as_ptr(), fl) };
        if fd < 0 {
            let e = Errno::last();
            // a symlink not followed is ELOOP from open: execve says the same
            return Err(e);
        }
        // SAFETY: fd was just opened and is ours.
        let file = unsafe { OwnedFd::from_raw_fd(fd) };
        let host = if t.dirfd == libc::AT_FDCWD {
            PathBuf::from(std::ffi::OsStr::from_bytes(t.path.as_bytes()))
        } else {
            crate::io::fd::fd_path(fd)
                .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(&p)))
                .unwrap_or_default()
        };
        let (head, file) = read_executable(file, &t.path, t.dirfd)?;
        Ok((host, t.guest, head, file))
    }

    /// execveat(fd, "", ..., AT_EMPTY_PATH): the file behind an fd (fexecve).
    fn exec_open_fd(&self, fd: i32) -> Result<Opened, Errno> {
        let f = self.files.file(fd)?;
        let h = f.host_fd_pub().ok_or(Errno::EACCES)?;
        let path = f.path.clone();
        // SAFETY: dup of an fd we hold; the copy is owned below.
        let d = unsafe { libc::fcntl(h, libc::F_DUPFD_CLOEXEC, 0) };
        if d < 0 {
            return Err(Errno::last());
        }
        // SAFETY: d was just made and is ours.
        let file = unsafe { OwnedFd::from_raw_fd(d) };
        let host = crate::io::fd::fd_path(h)
            .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(&p)))
            .unwrap_or_default();
        let (head, file) = read_head(file)?;
        Ok((host, path, head, file))
    }

    /// What a successful execve does to the process once its new image is in place: the
    /// close-on-exec fds close, handlers go back to the default, the other threads are
    /// gone (the scheduler drops them) and the caller takes the pid as its tid; the heap
    /// starts at `brk_start`; /proc/self/exe and the command name name the new program.
    pub fn exec_commit(&mut self, req: &ExecRequest, brk_start: u64) {
        self.files.close_on_exec();
        self.exec_signals();
        self.others.clear();
        self.futexes = Default::default();
        self.timers.after_exec();
        // (the scheduler synced the old image's shared pages out before the exec)
        self.shm_detach_all();
        self.thread.tid = self.pid;
        self.thread.clear_child_tid = 0;
        self.thread.robust_list = 0;
        self.shared_maps.clear();
        self.past_eof.clear();
        self.file_maps.clear();
        self.brk_start = brk_start;
        self.brk_cur = brk_start;
        self.cfg.exe_host_path = req.host_path.clone();
        self.cfg.exe_guest_path = req.guest_path.clone();
        let base = req.execfn.rsplit(|&c| c == b'/').next().unwrap_or_default();
        self.comm = [0; 16];
        // keep-caps ends with the program; no-new-privs and the rest stay, as on Linux
        self.prctl.keepcaps = false;
        self.creds.on_exec();
        let n = base.len().min(15);
        self.comm[..n].copy_from_slice(&base[..n]);
        let pid = self.pid;
        self.set_cmdline(&req.argv, &req.guest_path);
        if let Some(e) = self.procs.procs.get_mut(&pid) {
            e.execed = true;
        }
    }

    /// Takes the execve the last syscall asked for.
    /// Whether the last syscall made this process a host program (`--host-exec`): its
    /// image is gone, as after an exec.
    pub fn take_host_execed(&mut self) -> bool {
        std::mem::take(&mut self.host_execed)
    }

    pub fn take_exec(&mut self) -> Option<ExecRequest> {
        self.exec.take()
    }
}

/// Reads a NULL-terminated array of guest strings (argv or envp; a NULL array is empty).
fn read_strings(
    mem: &mut AddressSpace,
    mut addr: u64,
    bytes_left: &mut usize,
) -> Result<Vec<Vec<u8>>, Errno> {
    let mut v = Vec::new();
    if addr == 0 {
        return Ok(v);
    }
    loop {
        let p = rd_u64(mem, addr)?;
        if p == 0 {
            return Ok(v);
        }
        if v.len() >= MAX_ARG_STRINGS {
            return Err(Errno::E2BIG);
        }
        let s = mem
            .read_cstr(p, (*bytes_left).min(MAX_ARG_BYTES))
            .map_err(|_| Errno::EFAULT)?;
        let need = s.len() + 1;
        if need > *bytes_left {
            return Err(Errno::E2BIG);
        }
        *bytes_left -= need;
        v.push(s);
        addr = addr.checked_add(8).ok_or(Errno::EFAULT)?;
    }
}

/// What opening a file for exec gives: host path, guest path, its first bytes, the file.
type Opened = (PathBuf, Vec<u8>, Vec<u8>, std::fs::File);

/// Checks that an opened file may be executed (a regular file with execute permission)
/// and reads its first bytes.
fn read_executable(
    file: OwnedFd,
    path: &CString,
    dirfd: i32,
) -> Result<(Vec<u8>, std::fs::File), Errno> {
    // SAFETY: valid C string.
    if unsafe { libc::faccessat(dirfd, path.as_ptr(), libc::X_OK, 0) } != 0 {
        return Err(Errno::EACCES);
    }
    read_head(file)
}

/// The first [`BINPRM_BUF`] bytes of a regular file with execute permission (EACCES for
/// anything else), and the file.
fn read_head(file: OwnedFd) -> Result<(Vec<u8>, std::fs::File), Errno> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    let st = crate::io::fd::host_fstat(file.as_raw_fd())?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_mode & 0o111 == 0 {
        return Err(Errno::EACCES);
    }
    let f = std::fs::File::from(file);
    let mut head = vec![0u8; BINPRM_BUF];
    let mut n = 0;
    while n < head.len() {
        match f.read_at(&mut head[n..], n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Errno::from_io(&e)),
        }
    }
    head.truncate(n);
    Ok((head, f))
}

/// The interpreter and its one optional argument of a `#!` line, as Linux splits it.
fn parse_shebang(data: &[u8]) -> Result<(Vec<u8>, Option<Vec<u8>>), Errno> {
    let line = &data[2..data.len().min(BINPRM_BUF)];
    let line = match line.iter().position(|&c| c == b'\n') {
        Some(n) => &line[..n],
        None => line,
    };
    let blank = |c: &u8| *c == b' ' || *c == b'\t';
    let start = line.iter().position(|c| !blank(c)).ok_or(Errno::ENOEXEC)?;
    let line = &line[start..];
    let end = line.iter().rposition(|c| !blank(c)).map_or(0, |e| e + 1);
    let line = &line[..end];
    let split = line.iter().position(blank).unwrap_or(line.len());
    let interp = line[..split].to_vec();
    let rest = &line[split..];
    let arg = rest
        .iter()
        .position(|c| !blank(c))
        .map(|s| rest[s..].to_vec());
    if interp.is_empty() {
        return Err(Errno::ENOEXEC);
    }
    Ok((interp, arg))
}

/// Whether the file is an ELF executable of the host's machine (x86-64 on x86-64 hosts),
/// which `--host-exec` runs natively.
fn host_machine_elf(data: &[u8]) -> bool {
    let Some(m) = crate::proc::hostexec::HOST_MACHINE else {
        return false;
    };
    data.len() >= 64
        && &data[..4] == b"\x7fELF"
        && data[4] == 2
        && data[5] == 1
        && u16::from_le_bytes([data[18], data[19]]) == m
}

/// Whether the file is a 64-bit little-endian AArch64 ELF executable (ENOEXEC otherwise:
/// armada hands a file to the host only under `--host-exec`, `exec_on_host`).
fn check_elf(data: &[u8]) -> Result<(), Errno> {
    if data.len() < 64 || &data[..4] != b"\x7fELF" || data[4] != 2 || data[5] != 1 {
        return Err(Errno::ENOEXEC);
    }
    let machine = u16::from_le_bytes([data[18], data[19]]);
    if machine != EM_AARCH64 {
        return Err(Errno::ENOEXEC);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebang_lines_split_as_linux_does() {
        let p = |s: &[u8]| parse_shebang(s);
        assert_eq!(p(b"#!/bin/sh\necho").unwrap(), (b"/bin/sh".to_vec(), None));
        assert_eq!(
            p(b"#! /usr/bin/env  python3 -u \n").unwrap(),
            (b"/usr/bin/env".to_vec(), Some(b"python3 -u".to_vec()))
        );
        assert_eq!(p(b"#!\t/bin/bash\t-e").unwrap().1, Some(b"-e".to_vec()));
        assert!(p(b"#!   \n").is_err());
        assert!(p(b"#!").is_err());
    }

    #[test]
    fn only_aarch64_elf_runs() {
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 2;
        elf[5] = 1;
        elf[18..20].copy_from_slice(&EM_AARCH64.to_le_bytes());
        assert!(check_elf(&elf).is_ok());
        elf[18..20].copy_from_slice(&62u16.to_le_bytes()); // x86-64
        assert_eq!(check_elf(&elf), Err(Errno::ENOEXEC));
        assert_eq!(check_elf(b"echo hi\n"), Err(Errno::ENOEXEC));
        assert_eq!(check_elf(&[]), Err(Errno::ENOEXEC));
    }
}
