//! inotify: the host's, on the host paths that guest paths resolve to, as under qemu-user.
//!
//! The guest's files are the host's (under `-L`, `--root` or neither), so the host's
//! inotify sees every change to them, the guest's own and other programs'. An instance is
//! a host inotify fd behind a guest fd; `struct inotify_event` (wd, mask, cookie, len,
//! name) is laid out alike on arm64 and x86-64, so a read passes through as it is. A watch
//! is added on the path armada resolves (inside the root, with the final symlink already
//! followed when the guest asked for that), so a guest never watches outside its view.

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};

use crate::io::fd::o::{O_CLOEXEC, O_NONBLOCK, O_RDONLY};
use crate::io::fd::{cvt, host_mode, HostFd, Kind, OpenFile};
use crate::{cstr, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

const AT_FDCWD: i32 = -100;
/// inotify_init1's flags are open flags (IN_NONBLOCK, IN_CLOEXEC).
const IN_FLAGS: i32 = (O_NONBLOCK | O_CLOEXEC) as i32;
const IN_DONT_FOLLOW: u32 = 0x0200_0000;

impl Process {
    pub(crate) fn sys_inotify_init1(&mut self, flags: i32) -> SysResult {
        if flags & !IN_FLAGS != 0 {
            return Err(Errno::EINVAL);
        }
        let nonblock = flags & O_NONBLOCK as i32 != 0;
        let host_flags = libc::IN_CLOEXEC | if nonblock { libc::IN_NONBLOCK } else { 0 };
        // SAFETY: no pointer arguments.
        let fd = cvt(unsafe { libc::inotify_init1(host_flags) })? as i32;
        // SAFETY: a fresh fd from the host, owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mode = host_mode(std::os::fd::AsRawFd::as_raw_fd(&fd));
        let guest_flags = O_RDONLY | if nonblock { O_NONBLOCK } else { 0 };
        let idx = self.files.add(OpenFile::new(
            Kind::Host {
                fd: HostFd::Owned(fd),
                mode,
            },
            guest_flags,
            b"anon_inode:inotify".to_vec(),
        ));
        let limit = self.nofile();
        self.files
            .install(idx, 0, flags & O_CLOEXEC as i32 != 0, limit)
            .map(|fd| fd as u64)
    }

    pub(crate) fn sys_inotify_add_watch(
        &mut self,
        mem: &mut AddressSpace,
        fd: i32,
        path: u64,
        mask: u32,
    ) -> SysResult {
        let h = self.inotify_fd(fd)?;
        let p = cstr(mem, path)?;
        let t = self.resolve(AT_FDCWD, &p, mask & IN_DONT_FOLLOW == 0)?;
        // inotify_add_watch takes a path, not a directory fd: name the directory through
        // the host's /proc (a leading part of a long path, or the root's dirfd)
        let host = if t.dirfd == libc::AT_FDCWD || t.path.as_bytes().first() == Some(&b'/') {
            t.path.clone()
        } else {
            let mut v = format!("/proc/self/fd/{}/", t.dirfd).into_bytes();
            v.extend_from_slice(t.path.as_bytes());
            CString::new(v).map_err(|_| Errno::EINVAL)?
        };
        let mask = if t.confined {
            mask | IN_DONT_FOLLOW
        } else {
            mask
        };
        // SAFETY: host is a valid C string.
        cvt(unsafe { libc::inotify_add_watch(h, host.as_ptr(), mask) })
    }

    pub(crate) fn sys_inotify_rm_watch(&mut self, fd: i32, wd: i32) -> SysResult {
        let h = self.inotify_fd(fd)?;
        // SAFETY: no pointer arguments.
        cvt(unsafe { libc::inotify_rm_watch(h, wd) })
    }

    /// The host fd behind `fd`, for the host to check that it is an inotify instance
    /// (EINVAL for one of armada's own files, as Linux says for any other kind of file).
    fn inotify_fd(&self, fd: i32) -> Result<i32, Errno> {
        match &self.files.file(fd)?.kind {
            Kind::Host { fd: h, .. } => Ok(h.raw()),
            _ => Err(Errno::EINVAL),
        }
    }
}
