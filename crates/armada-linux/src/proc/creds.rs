//! A process's credentials: real, effective, saved and file-system user and group ids,
//! supplementary groups and capabilities, with Linux's rules for changing them
//! (kernel/sys.c, kernel/capability.c): the set*id calls, setgroups, capget and capset.
//!
//! They are the guest's view only. The run starts with the host's ids (root keeps every
//! capability), and a guest that changes them changes what getuid, /proc/self/status,
//! SysV IPC owners, signal senders and the capability checks armada makes (raw sockets,
//! set*id) see; host files are still opened with armada's own host identity.
//!
//! Linux keeps credentials per thread; glibc and Go change them on every thread at once
//! (the setxid broadcast), so armada keeps one set per process.

use crate::{rd_u32, wr_u32, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

pub(crate) const CAP_KILL: u32 = 5;
pub(crate) const CAP_SETGID: u32 = 6;
pub(crate) const CAP_SETUID: u32 = 7;
pub(crate) const CAP_NET_RAW: u32 = 13;
pub(crate) const CAP_SYS_ADMIN: u32 = 21;
/// The highest capability this kernel knows (CAP_CHECKPOINT_RESTORE).
const CAP_LAST_CAP: u32 = 40;
/// Every capability.
pub(crate) const CAP_FULL: u64 = (1 << (CAP_LAST_CAP + 1)) - 1;
/// Most supplementary groups (NGROUPS_MAX).
const NGROUPS_MAX: u64 = 65536;

const CAP_V1: u32 = 0x1998_0330;
const CAP_V2: u32 = 0x2007_1026;
const CAP_V3: u32 = 0x2008_0522;

/// One id set: real, effective, saved, file system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ids {
    pub(crate) real: u32,
    pub(crate) eff: u32,
    pub(crate) saved: u32,
    pub(crate) fs: u32,
}

impl Ids {
    fn all(id: u32) -> Ids {
        Ids {
            real: id,
            eff: id,
            saved: id,
            fs: id,
        }
    }

    pub(crate) fn has(&self, id: u32) -> bool {
        id == self.real || id == self.eff || id == self.saved
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Creds {
    pub(crate) uid: Ids,
    pub(crate) gid: Ids,
    pub(crate) groups: Vec<u32>,
    pub(crate) cap_eff: u64,
    pub(crate) cap_prm: u64,
    pub(crate) cap_inh: u64,
    /// The bounding set: what an exec by root may have.
    pub(crate) cap_bnd: u64,
}

/// "no change" in the set*id calls.
const KEEP: u32 = u32::MAX;

impl Creds {
    /// The run's first process: the host's ids, with every capability for root.
    pub(crate) fn new(uid: u32, gid: u32) -> Creds {
        let caps = if uid == 0 { CAP_FULL } else { 0 };
        Creds {
            uid: Ids::all(uid),
            gid: Ids::all(gid),
            groups: Vec::new(),
            cap_eff: caps,
            cap_prm: caps,
            cap_inh: 0,
            cap_bnd: CAP_FULL,
        }
    }

    /// armada's own credentials on the host: the guest starts as what runs it (a root in
    /// a container without every capability sees that, as under qemu). Read once: they
    /// take some 45 system calls (the bounding set is a prctl a capability), which every
    /// lane of a batch of short runs paid (10% of 10,000 `hello` lanes), and armada never
    /// changes its own.
    pub(crate) fn host() -> Creds {
        static HOST: std::sync::OnceLock<Creds> = std::sync::OnceLock::new();
        HOST.get_or_init(Creds::read_host).clone()
    }

    fn read_host() -> Creds {
        let (mut u, mut g) = ([0u32; 3], [0u32; 3]);
        // SAFETY: each pointer is to a u32 of ours.
        unsafe {
            libc::getresuid(&mut u[0], &mut u[1], &mut u[2]);
            libc::getresgid(&mut g[0], &mut g[1], &mut g[2]);
        }
        let ids = |v: [u32; 3]| Ids {
            real: v[0],
            eff: v[1],
            saved: v[2],
            fs: v[1],
        };
        let mut c = Creds::new(u[1], g[1]);
        c.uid = ids(u);
        c.gid = ids(g);
        // SAFETY: getgroups into a buffer of the size given.
        let n = unsafe { libc::getgroups(0, std::ptr::null_mut()) };
        if n > 0 {
            let mut groups = vec![0 as libc::gid_t; n as usize];
            let n = unsafe { libc::getgroups(n, groups.as_mut_ptr()) };
            groups.truncate(n.max(0) as usize);
            groups.sort_unstable();
            c.groups = groups;
        }
        let hdr = [CAP_V3, 0u32];
        let mut data = [0u32; 6];
        // SAFETY: capget with a v3 header and room for its two data words.
        let r = unsafe { libc::syscall(libc::SYS_capget, hdr.as_ptr(), data.as_mut_ptr()) };
        c.cap_bnd = (0..=CAP_LAST_CAP)
            // SAFETY: prctl with integer arguments only.
            .filter(|&k| unsafe { libc::prctl(libc::PR_CAPBSET_READ, k as libc::c_ulong) } == 1)
            .fold(0, |m, k| m | 1 << k);
        if r == 0 {
            let two = |lo: u32, hi: u32| lo as u64 | (hi as u64) << 32;
            c.cap_eff = two(data[0], data[3]) & CAP_FULL;
            c.cap_prm = two(data[1], data[4]) & CAP_FULL;
            c.cap_inh = two(data[2], data[5]) & CAP_FULL;
        }
        c
    }

    pub(crate) fn capable(&self, cap: u32) -> bool {
        self.cap_eff & (1 << cap) != 0
    }

    /// Linux's capability fix-up after the uids changed from `old` (cap_emulate_setxuid):
    /// leaving root drops the capabilities (the permitted ones stay with keepcaps), and an
    /// effective uid of 0 again brings back the permitted ones.
    fn after_uid_change(&mut self, old: Ids, keepcaps: bool) {
        let was_root = old.real == 0 || old.eff == 0 || old.saved == 0;
        let root_now = self.uid.real == 0 || self.uid.eff == 0 || self.uid.saved == 0;
        if was_root && !root_now && !keepcaps {
            self.cap_prm = 0;
            self.cap_eff = 0;
        }
        if old.eff == 0 && self.uid.eff != 0 {
            self.cap_eff = 0;
        }
        if old.eff != 0 && self.uid.eff == 0 {
            self.cap_eff = self.cap_prm;
        }
    }

    /// execve: the saved and file-system ids become the effective ones; root gets the
    /// bounding set, others none (no file or ambient capabilities here).
    pub(crate) fn on_exec(&mut self) {
        for ids in [&mut self.uid, &mut self.gid] {
            ids.saved = ids.eff;
            ids.fs = ids.eff;
        }
        let root = self.uid.eff == 0 || self.uid.real == 0;
        self.cap_prm = if root { self.cap_bnd } else { 0 };
        self.cap_eff = if self.uid.eff == 0 { self.cap_prm } else { 0 };
    }
}

/// setuid/setgid: with the capability all four; else the effective (and fs) id, to the
/// real or saved one.
fn set_one(ids: &mut Ids, id: u32, privileged: bool) -> Result<(), Errno> {
    if id == KEEP {
        return Err(Errno::EINVAL);
    }
    if privileged {
        *ids = Ids::all(id);
    } else if id == ids.real || id == ids.saved {
        ids.eff = id;
        ids.fs = id;
    } else {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// setreuid/setregid.
fn set_re(ids: &mut Ids, r: u32, e: u32, privileged: bool) -> Result<(), Errno> {
    let old = *ids;
    let mut new = old;
    if r != KEEP {
        if !privileged && r != old.real && r != old.eff {
            return Err(Errno::EPERM);
        }
        new.real = r;
    }
    if e != KEEP {
        if !privileged && !old.has(e) {
            return Err(Errno::EPERM);
        }
        new.eff = e;
    }
    if r != KEEP || (e != KEEP && e != old.real) {
        new.saved = new.eff;
    }
    new.fs = new.eff;
    *ids = new;
    Ok(())
}

/// setresuid/setresgid.
fn set_res(ids: &mut Ids, r: u32, e: u32, s: u32, privileged: bool) -> Result<(), Errno> {
    let old = *ids;
    if !privileged && [r, e, s].iter().any(|&v| v != KEEP && !old.has(v)) {
        return Err(Errno::EPERM);
    }
    if r != KEEP {
        ids.real = r;
    }
    if e != KEEP {
        ids.eff = e;
    }
    if s != KEEP {
        ids.saved = s;
    }
    ids.fs = ids.eff;
    Ok(())
}

/// setfsuid/setfsgid: the previous fs id, whether or not it changed.
fn set_fs(ids: &mut Ids, id: u32, privileged: bool) -> u64 {
    let old = ids.fs;
    if id != KEEP && (privileged || ids.has(id) || id == ids.fs) {
        ids.fs = id;
    }
    old as u64
}

impl Process {
    /// The set*id calls and setgroups.
    pub(crate) fn sys_setid(&mut self, mem: &mut AddressSpace, nr: u64, a: [u64; 6]) -> SysResult {
        use crate::nr::*;
        let id = |k: usize| a[k] as u32;
        let c = &mut self.creds;
        let setuid = c.capable(CAP_SETUID);
        let setgid = c.capable(CAP_SETGID);
        let old_uid = c.uid;
        let r = match nr {
            SETUID => set_one(&mut c.uid, id(0), setuid).map(|_| 0),
            SETREUID => set_re(&mut c.uid, id(0), id(1), setuid).map(|_| 0),
            SETRESUID => set_res(&mut c.uid, id(0), id(1), id(2), setuid).map(|_| 0),
            SETFSUID => Ok(set_fs(&mut c.uid, id(0), setuid)),
            SETGID => set_one(&mut c.gid, id(0), setgid).map(|_| 0),
            SETREGID => set_re(&mut c.gid, id(0), id(1), setgid).map(|_| 0),
            SETRESGID => set_res(&mut c.gid, id(0), id(1), id(2), setgid).map(|_| 0),
            SETFSGID => Ok(set_fs(&mut c.gid, id(0), setgid)),
            SETGROUPS => {
                if !setgid {
                    return Err(Errno::EPERM);
                }
                let n = a[0] as i32 as i64;
                if n < 0 || n as u64 > NGROUPS_MAX {
                    return Err(Errno::EINVAL);
                }
                let mut groups = Vec::with_capacity(n as usize);
                for k in 0..n as u64 {
                    groups.push(rd_u32(mem, a[1] + 4 * k)?);
                }
                // Linux keeps them sorted (groups_sort)
                groups.sort_unstable();
                self.creds.groups = groups;
                return Ok(0);
            }
            _ => return Err(Errno::ENOSYS),
        };
        let keepcaps = self.prctl.keepcaps;
        if self.creds.uid != old_uid {
            self.creds.after_uid_change(old_uid, keepcaps);
        }
        r
    }

    /// getgroups: the count with size 0, else the groups (EINVAL when they do not fit).
    pub(crate) fn sys_getgroups(
        &mut self,
        mem: &mut AddressSpace,
        size: i32,
        list: u64,
    ) -> SysResult {
        let g = &self.creds.groups;
        if size < 0 {
            return Err(Errno::EINVAL);
        }
        if size == 0 {
            return Ok(g.len() as u64);
        }
        if (size as usize) < g.len() {
            return Err(Errno::EINVAL);
        }
        for (k, &v) in g.iter().enumerate() {
            wr_u32(mem, list + 4 * k as u64, v)?;
        }
        Ok(g.len() as u64)
    }

    /// getresuid/getresgid.
    pub(crate) fn sys_getres(
        &mut self,
        mem: &mut AddressSpace,
        ptrs: [u64; 3],
        ids: Ids,
    ) -> SysResult {
        for (p, v) in ptrs.into_iter().zip([ids.real, ids.eff, ids.saved]) {
            wr_u32(mem, p, v)?;
        }
        Ok(0)
    }

    /// The header's version, or EINVAL with the preferred version written back (how
    /// libcap asks which version the kernel speaks).
    fn cap_header(&mut self, mem: &mut AddressSpace, hdr: u64) -> Result<(u32, i32), Errno> {
        let version = rd_u32(mem, hdr)?;
        let pid = rd_u32(mem, hdr + 4)? as i32;
        if ![CAP_V1, CAP_V2, CAP_V3].contains(&version) {
            wr_u32(mem, hdr, CAP_V3)?;
            return Err(Errno::EINVAL);
        }
        if pid < 0 {
            return Err(Errno::EINVAL);
        }
        Ok((version, pid))
    }

    pub(crate) fn sys_capget(&mut self, mem: &mut AddressSpace, hdr: u64, data: u64) -> SysResult {
        let (version, pid) = match self.cap_header(mem, hdr) {
            // no data: a probe of the version, answered before anything else is looked at
            Err(Errno::EINVAL) | Ok(_) if data == 0 => return Ok(0),
            r => r?,
        };
        if pid != 0
            && pid != self.pid
            && !self.is_thread(pid)
            && !self.procs.procs.contains_key(&pid)
        {
            return Err(Errno::ESRCH);
        }
        let c = &self.creds;
        let words = if version == CAP_V1 { 1 } else { 2 };
        for w in 0..words {
            let part = |v: u64| (v >> (32 * w)) as u32;
            let at = data + 12 * w as u64;
            wr_u32(mem, at, part(c.cap_eff))?;
            wr_u32(mem, at + 4, part(c.cap_prm))?;
            wr_u32(mem, at + 8, part(c.cap_inh))?;
        }
        Ok(0)
    }

    /// capset on the calling process: the new permitted set within the old, the new
    /// effective within the new permitted, the inheritable within the old inheritable
    /// and permitted.
    pub(crate) fn sys_capset(&mut self, mem: &mut AddressSpace, hdr: u64, data: u64) -> SysResult {
        let (version, pid) = self.cap_header(mem, hdr)?;
        if pid != 0 && pid != self.pid && !self.is_thread(pid) {
            return Err(Errno::EPERM);
        }
        let words = if version == CAP_V1 { 1 } else { 2 };
        let (mut eff, mut prm, mut inh) = (0u64, 0u64, 0u64);
        for w in 0..words {
            let at = data + 12 * w as u64;
            eff |= (rd_u32(mem, at)? as u64) << (32 * w);
            prm |= (rd_u32(mem, at + 4)? as u64) << (32 * w);
            inh |= (rd_u32(mem, at + 8)? as u64) << (32 * w);
        }
        let c = &mut self.creds;
        if prm & !c.cap_prm != 0 || eff & !prm != 0 || inh & !(c.cap_inh | c.cap_prm) != 0 {
            return Err(Errno::EPERM);
        }
        c.cap_eff = eff & CAP_FULL;
        c.cap_prm = prm & CAP_FULL;
        c.cap_inh = inh & CAP_FULL;
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_calls_follow_linux_rules() {
        // root: setreuid(0, 2) makes the saved uid 2 as well
        let mut ids = Ids::all(0);
        set_re(&mut ids, 0, 2, true).unwrap();
        assert_eq!((ids.real, ids.eff, ids.saved, ids.fs), (0, 2, 2, 2));
        // unprivileged: setresuid only among the ids held
        let mut ids = Ids::all(5);
        ids.saved = 7;
        assert_eq!(set_res(&mut ids, 9, KEEP, KEEP, false), Err(Errno::EPERM));
        set_res(&mut ids, 7, 7, 5, false).unwrap();
        assert_eq!((ids.real, ids.eff, ids.saved, ids.fs), (7, 7, 5, 7));
        // setuid without the capability touches the effective id only
        set_one(&mut ids, 5, false).unwrap();
        assert_eq!((ids.real, ids.eff, ids.saved), (7, 5, 5));
        assert_eq!(set_one(&mut ids, KEEP, true), Err(Errno::EINVAL));
        // setfsuid answers the old fs id and refuses strangers silently
        assert_eq!(set_fs(&mut ids, 99, false), 5);
        assert_eq!(ids.fs, 5);
    }

    #[test]
    fn leaving_root_drops_capabilities_unless_kept() {
        let mut c = Creds::new(0, 0);
        let old = c.uid;
        set_res(&mut c.uid, 1, 1, 1, true).unwrap();
        c.after_uid_change(old, false);
        assert_eq!((c.cap_eff, c.cap_prm), (0, 0));
        let mut c = Creds::new(0, 0);
        let old = c.uid;
        set_re(&mut c.uid, KEEP, 1, true).unwrap();
        c.after_uid_change(old, false);
        // the real uid is still 0: permitted stays, effective goes, and comes back
        assert_eq!((c.cap_eff, c.cap_prm), (0, CAP_FULL));
        let old = c.uid;
        set_re(&mut c.uid, KEEP, 0, false).unwrap();
        c.after_uid_change(old, false);
        assert_eq!(c.cap_eff, CAP_FULL);
    }
}
