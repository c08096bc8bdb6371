//! Extended attributes (getxattr, listxattr, setxattr, removexattr and their l- and f-
//! forms), passed to the host on the resolved path (inside `--root`, under `-L`) or the
//! file's host fd. `ls -l` asks for them (SELinux labels, ACLs); armada's own fds (pipes,
//! captured stdio, /proc files) have none to give (EOPNOTSUPP, as an fs without xattrs).

use std::ffi::CString;

use crate::{cstr, rd, wr, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

/// Longest attribute name and value Linux accepts.
const XATTR_NAME_MAX: usize = 255;
const XATTR_SIZE_MAX: u64 = 65536;
const XATTR_LIST_MAX: u64 = 65536;

/// Which form of the call: by path (following a final symlink or not) or by fd.
#[derive(Clone, Copy)]
pub(crate) enum On {
    Path { addr: u64, follow: bool },
    Fd(i32),
}

fn name_arg(mem: &mut AddressSpace, addr: u64) -> Result<CString, Errno> {
    let n = cstr(mem, addr)?;
    if n.is_empty() || n.len() > XATTR_NAME_MAX {
        return Err(Errno::ERANGE);
    }
    CString::new(n).map_err(|_| Errno::EINVAL)
}

fn ret(r: isize) -> Result<usize, Errno> {
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(r as usize)
    }
}

/// Runs a host query that fills a buffer of `size` bytes (0: it only says how many it
/// would need) and copies its answer to guest memory at `out`.
fn answer_into(
    mem: &mut AddressSpace,
    out: u64,
    size: u64,
    query: impl FnOnce(*mut libc::c_void, usize) -> isize,
) -> SysResult {
    let mut buf = vec![0u8; size as usize];
    let n = ret(query(buf.as_mut_ptr().cast(), buf.len()))?;
    if size > 0 {
        wr(mem, out, &buf[..n])?;
    }
    Ok(n as u64)
}

/// A host target: a path or an fd.
enum Host {
    Path(CString, bool),
    Fd(i32),
}

impl Process {
    fn xattr_target(&self, mem: &mut AddressSpace, on: On) -> Result<Host, Errno> {
        match on {
            On::Path { addr, follow } => {
                let p = cstr(mem, addr)?;
                let t = self.resolve(crate::fs::path::AT_FDCWD, &p, follow)?;
                // a confined path has its final symlink resolved already when followed
                Ok(Host::Path(t.path, follow && !t.confined))
            }
            On::Fd(fd) => match self.files.file(fd)?.host_fd_pub() {
                Some(h) => Ok(Host::Fd(h)),
                None => Err(Errno::EOPNOTSUPP),
            },
        }
    }

    pub(crate) fn sys_getxattr(
        &mut self,
        mem: &mut AddressSpace,
        on: On,
        name: u64,
        value: u64,
        size: u64,
    ) -> SysResult {
        let name = name_arg(mem, name)?;
        let t = self.xattr_target(mem, on)?;
        // SAFETY: valid C strings; the buffer is valid for n bytes (n may be 0: a size query).
        answer_into(mem, value, size.min(XATTR_SIZE_MAX), |p, n| unsafe {
            match &t {
                Host::Path(path, true) => libc::getxattr(path.as_ptr(), name.as_ptr(), p, n),
                Host::Path(path, false) => libc::lgetxattr(path.as_ptr(), name.as_ptr(), p, n),
                Host::Fd(fd) => libc::fgetxattr(*fd, name.as_ptr(), p, n),
            }
        })
    }

    pub(crate) fn sys_listxattr(
        &mut self,
        mem: &mut AddressSpace,
        on: On,
        list: u64,
        size: u64,
    ) -> SysResult {
        let t = self.xattr_target(mem, on)?;
        // SAFETY: valid C string; the buffer is valid for n bytes (n may be 0: a size query).
        answer_into(mem, list, size.min(XATTR_LIST_MAX), |p, n| unsafe {
            match &t {
                Host::Path(path, true) => libc::listxattr(path.as_ptr(), p.cast(), n),
                Host::Path(path, false) => libc::llistxattr(path.as_ptr(), p.cast(), n),
                Host::Fd(fd) => libc::flistxattr(*fd, p.cast(), n),
            }
        })
    }

    pub(crate) fn sys_setxattr(
        &mut self,
        mem: &mut AddressSpace,
        on: On,
        name: u64,
        value: u64,
        size: u64,
        flags: i32,
    ) -> SysResult {
        if size > XATTR_SIZE_MAX {
            return Err(Errno(libc::E2BIG));
        }
        let name = name_arg(mem, name)?;
        let mut buf = vec![0u8; size as usize];
        rd(mem, value, &mut buf)?;
        let t = self.xattr_target(mem, on)?;
        let (p, n) = (buf.as_ptr().cast(), buf.len());
        // SAFETY: valid C strings; buf is valid for n bytes.
        ret(unsafe {
            match &t {
                Host::Path(path, true) => libc::setxattr(path.as_ptr(), name.as_ptr(), p, n, flags),
                Host::Path(path, false) => {
                    libc::lsetxattr(path.as_ptr(), name.as_ptr(), p, n, flags)
                }
                Host::Fd(fd) => libc::fsetxattr(*fd, name.as_ptr(), p, n, flags),
            }
        } as isize)?;
        Ok(0)
    }

    pub(crate) fn sys_removexattr(
        &mut self,
        mem: &mut AddressSpace,
        on: On,
        name: u64,
    ) -> SysResult {
        let name = name_arg(mem, name)?;
        let t = self.xattr_target(mem, on)?;
        // SAFETY: valid C strings.
        ret(unsafe {
            match &t {
                Host::Path(path, true) => libc::removexattr(path.as_ptr(), name.as_ptr()),
                Host::Path(path, false) => libc::lremovexattr(path.as_ptr(), name.as_ptr()),
                Host::Fd(fd) => libc::fremovexattr(*fd, name.as_ptr()),
            }
        } as isize)?;
        Ok(0)
    }
}
