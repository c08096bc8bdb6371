//! ioctls on the host's files: terminals and pseudo-terminals (the host's /dev/ptmx and
//! /dev/pts/N, which a guest opens as host files, as under qemu-user), and FIONREAD; and the
//! passing of one request's argument to the host (`host_ioctl_with`, which the network's
//! interface requests on `--net host` sockets use too).
//!
//! Each request passes through to the host with its argument carried as the table says:
//! bytes out of or into guest memory, a plain value, or nothing. The numbers and the
//! layouts (`struct termios`: 36 bytes, `termios2`: 44, `winsize`: 8) are asm-generic's,
//! which arm64 and x86-64 share. TIOCGPTPEER opens the slave of a pseudo-terminal master and
//! becomes a guest fd.
//!
//! Left out on purpose: the requests that act on sessions, process groups and the
//! controlling terminal (TIOCSCTTY, TIOCNOTTY, TIOCSPGRP, TIOCGSID). A run's processes are
//! tasks of one host process, with pids of the run's own; passing these through would act
//! on armada's session, not the guest's. They answer ENOTTY, as for a file that is no
//! terminal.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use crate::io::fd::o::O_CLOEXEC;
use crate::io::fd::{host_mode, host_open_flags, HostFd, Kind, OpenFile};
use crate::{rd, wr, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

/// How a request's argument travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arg {
    /// No argument.
    None,
    /// The argument is a value, not a pointer.
    Value,
    /// The host writes this many bytes, copied out to the guest's pointer.
    Out(usize),
    /// The host reads this many bytes, copied in from the guest's pointer.
    In(usize),
    /// The host reads and rewrites this many bytes (an `ifreq`).
    InOut(usize),
    /// TIOCGPTPEER: the argument is open flags; the result is a new fd.
    NewFd,
}

const TIOCGPGRP: u32 = 0x540f;
pub(crate) const FIONREAD: u32 = 0x541b;

/// The requests passed to the host, by number.
const HOST_IOCTLS: &[(u32, &str, Arg)] = &[
    (0x5401, "TCGETS", Arg::Out(36)),
    (0x5402, "TCSETS", Arg::In(36)),
    (0x5403, "TCSETSW", Arg::In(36)),
    (0x5404, "TCSETSF", Arg::In(36)),
    (0x5409, "TCSBRK", Arg::Value),
    (0x540a, "TCXONC", Arg::Value),
    (0x540b, "TCFLSH", Arg::Value),
    (0x540c, "TIOCEXCL", Arg::None),
    (0x540d, "TIOCNXCL", Arg::None),
    (TIOCGPGRP, "TIOCGPGRP", Arg::Out(4)),
    (0x5411, "TIOCOUTQ", Arg::Out(4)),
    (0x5413, "TIOCGWINSZ", Arg::Out(8)),
    (0x5414, "TIOCSWINSZ", Arg::In(8)),
    (FIONREAD, "FIONREAD", Arg::Out(4)),
    (0x5420, "TIOCPKT", Arg::In(4)),
    (0x5425, "TCSBRKP", Arg::Value),
    (0x5427, "TIOCSBRK", Arg::None),
    (0x5428, "TIOCCBRK", Arg::None),
    (0x802c_542a, "TCGETS2", Arg::Out(44)),
    (0x402c_542b, "TCSETS2", Arg::In(44)),
    (0x402c_542c, "TCSETSW2", Arg::In(44)),
    (0x402c_542d, "TCSETSF2", Arg::In(44)),
    (0x8004_5430, "TIOCGPTN", Arg::Out(4)),
    (0x4004_5431, "TIOCSPTLCK", Arg::In(4)),
    (0x8004_5438, "TIOCGPKT", Arg::Out(4)),
    (0x8004_5439, "TIOCGPTLCK", Arg::Out(4)),
    (0x8004_5440, "TIOCGEXCL", Arg::Out(4)),
    (0x5441, "TIOCGPTPEER", Arg::NewFd),
];

fn host_arg(req: u32) -> Option<Arg> {
    HOST_IOCTLS
        .iter()
        .find(|&&(r, _, _)| r == req)
        .map(|&(_, _, a)| a)
}

impl Process {
    /// An ioctl of the table on a host file `h`; ENOTTY for any other request.
    pub(crate) fn host_ioctl(
        &mut self,
        mem: &mut AddressSpace,
        h: RawFd,
        req: u32,
        arg: u64,
    ) -> SysResult {
        let how = host_arg(req).ok_or(Errno::ENOTTY)?;
        self.host_ioctl_with(mem, h, req, arg, how)
    }

    /// Request `req` on host file `h`, its argument travelling as `how` says.
    pub(crate) fn host_ioctl_with(
        &mut self,
        mem: &mut AddressSpace,
        h: RawFd,
        req: u32,
        arg: u64,
        how: Arg,
    ) -> SysResult {
        let mut buf = [0u8; 64];
        let r = match how {
            Arg::None | Arg::Value => {
                let v = if how == Arg::Value { arg } else { 0 };
                // SAFETY: these requests take no pointer.
                unsafe { libc::ioctl(h, req as _, v as libc::c_ulong) }
            }
            Arg::NewFd => {
                let flags = host_open_flags(arg as u32) | libc::O_CLOEXEC;
                // SAFETY: TIOCGPTPEER takes open flags and returns a new fd.
                unsafe { libc::ioctl(h, req as _, flags as libc::c_ulong) }
            }
            Arg::In(n) | Arg::Out(n) | Arg::InOut(n) => {
                if matches!(how, Arg::In(_) | Arg::InOut(_)) {
                    rd(mem, arg, &mut buf[..n])?;
                }
                if matches!(how, Arg::Out(_) | Arg::InOut(_)) {
                    crate::check_writable(mem, arg, n as u64)?;
                }
                // SAFETY: buf is 64 bytes, larger than any of these requests' argument.
                unsafe { libc::ioctl(h, req as _, buf.as_mut_ptr()) }
            }
        };
        if r < 0 {
            return Err(Errno::last());
        }
        match how {
            Arg::Out(n) | Arg::InOut(n) => {
                if req == TIOCGPGRP && self.cfg.deterministic {
                    buf[..4].copy_from_slice(&self.pid.to_le_bytes());
                }
                wr(mem, arg, &buf[..n])?;
                Ok(r as u64)
            }
            Arg::NewFd => {
                // SAFETY: a fresh fd from the host, owned by nobody else.
                let fd = unsafe { OwnedFd::from_raw_fd(r) };
                let mode = host_mode(r);
                let flags = arg as u32 & !(O_CLOEXEC | crate::io::fd::o::O_NOCTTY);
                let idx = self.files.add(OpenFile::new(
                    Kind::Host {
                        fd: HostFd::Owned(fd),
                        mode,
                    },
                    flags,
                    Vec::new(),
                ));
                let limit = self.nofile();
                self.files
                    .install(idx, 0, arg as u32 & O_CLOEXEC != 0, limit)
                    .map(|fd| fd as u64)
            }
            Arg::None | Arg::Value | Arg::In(_) => Ok(r as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_once() {
        let mut seen = std::collections::BTreeSet::new();
        for &(r, name, _) in HOST_IOCTLS {
            assert!(seen.insert(r), "{name} ({r:#x}) is listed twice");
        }
        // the _IOR/_IOW numbers carry their argument's size: the table must agree
        for &(r, name, a) in HOST_IOCTLS {
            let size = ((r >> 16) & 0x3fff) as usize;
            match (r >> 30, a) {
                (2, Arg::Out(n)) | (1, Arg::In(n)) => assert_eq!(size, n, "{name}"),
                (0, _) => {}
                (dir, a) => panic!("{name}: direction {dir} but {a:?}"),
            }
        }
    }
}
