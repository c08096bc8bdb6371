//! Process and system information: uname, ids, resource limits, usage, sysinfo, prctl,
//! CPU affinity.

use crate::{wr, wr_u32, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

pub const RLIMIT_CPU: usize = 0;
pub const RLIMIT_FSIZE: usize = 1;
pub const RLIMIT_DATA: usize = 2;
pub const RLIMIT_STACK: usize = 3;
pub const RLIMIT_CORE: usize = 4;
pub const RLIMIT_RSS: usize = 5;
pub const RLIMIT_NPROC: usize = 6;
pub const RLIMIT_NOFILE: usize = 7;
pub const RLIMIT_MEMLOCK: usize = 8;
pub const RLIMIT_AS: usize = 9;
pub const RLIMIT_SIGPENDING: usize = 11;
pub const RLIMIT_NLIMITS: usize = 16;
pub(crate) const RLIM_NLIMITS: usize = RLIMIT_NLIMITS;
pub const RLIM_INFINITY: u64 = u64::MAX;

/// The limits a fresh guest sees: fixed ones (what a default Linux login shell has) in
/// deterministic mode, the host's otherwise (as qemu-user reports them).
pub(crate) fn default_rlimits(deterministic: bool) -> [(u64, u64); RLIM_NLIMITS] {
    let inf = (RLIM_INFINITY, RLIM_INFINITY);
    let mut r = [inf; RLIM_NLIMITS];
    r[RLIMIT_STACK] = (crate::mm::mmap::STACK_SIZE, RLIM_INFINITY);
    r[RLIMIT_CORE] = (0, RLIM_INFINITY);
    r[RLIMIT_NPROC] = (63_536, 63_536);
    r[RLIMIT_NOFILE] = (1024, 4096);
    r[RLIMIT_MEMLOCK] = (8 << 20, 8 << 20);
    r[10] = inf; // LOCKS
    r[RLIMIT_SIGPENDING] = (63_536, 63_536);
    r[12] = (819_200, 819_200); // MSGQUEUE
    r[13] = (0, 0); // NICE
    r[14] = (0, 0); // RTPRIO
    if !deterministic {
        for (res, v) in r.iter_mut().enumerate() {
            let mut l = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: l is a valid rlimit.
            if unsafe { libc::getrlimit(res as _, &mut l) } == 0 {
                *v = (l.rlim_cur, l.rlim_max);
            }
        }
    }
    r
}

/// Simulated machine for sysinfo in deterministic mode.
const DET_TOTALRAM: u64 = 8 << 30;
const DET_FREERAM: u64 = 6 << 30;

fn utsfield(s: &[u8]) -> [u8; 65] {
    let mut f = [0u8; 65];
    let n = s.len().min(64);
    f[..n].copy_from_slice(&s[..n]);
    f
}

fn host_uname() -> Option<libc::utsname> {
    // SAFETY: u is plain data filled by the kernel.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        (libc::uname(&mut u) == 0).then_some(u)
    }
}

fn cfield(f: &[libc::c_char]) -> Vec<u8> {
    f.iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect()
}

/// A process's timer slack unless set (Linux's 50 µs).
const DEFAULT_TIMERSLACK_NS: u64 = 50_000;

/// prctl's per-process settings: inherited by fork; keep-caps is cleared by exec.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Prctl {
    pub(crate) keepcaps: bool,
    pub(crate) no_new_privs: bool,
    pub(crate) thp_disable: bool,
    /// 0: the default.
    pub(crate) timerslack_ns: u64,
}

impl Prctl {
    fn timerslack_ns(&self) -> u64 {
        if self.timerslack_ns == 0 {
            DEFAULT_TIMERSLACK_NS
        } else {
            self.timerslack_ns
        }
    }
}

impl Process {
    /// The most fds the process may have open (RLIMIT_NOFILE, capped at 2^20 as Linux's
    /// nr_open is).
    pub(crate) fn nofile(&self) -> u64 {
        self.rlimits[RLIMIT_NOFILE].0.min(1 << 20)
    }

    /// The most signals that may wait queued (RLIMIT_SIGPENDING; /proc/PID/status's SigQ).
    pub(crate) fn sigpending_limit(&self) -> u64 {
        self.rlimits[RLIMIT_SIGPENDING].0.min(1 << 31)
    }

    pub(crate) fn sys_prlimit64(
        &mut self,
        mem: &mut AddressSpace,
        pid: i32,
        res: i32,
        new: u64,
        old: u64,
    ) -> SysResult {
        if pid != 0 && pid != self.pid {
            return Err(Errno::ESRCH);
        }
        let r = usize::try_from(res)
            .ok()
            .filter(|&r| r < RLIM_NLIMITS)
            .ok_or(Errno::EINVAL)?;
        let newv = if new != 0 {
            let cur = crate::rd_u64(mem, new)?;
            let max = crate::rd_u64(mem, new + 8)?;
            if cur > max {
                return Err(Errno::EINVAL);
            }
            if max > self.rlimits[r].1 {
                return Err(Errno::EPERM);
            }
            Some((cur, max))
        } else {
            None
        };
        if old != 0 {
            let (cur, max) = self.rlimits[r];
            let mut b = [0u8; 16];
            b[..8].copy_from_slice(&cur.to_le_bytes());
            b[8..].copy_from_slice(&max.to_le_bytes());
            wr(mem, old, &b)?;
        }
        if let Some(v) = newv {
            self.rlimits[r] = v;
        }
        Ok(0)
    }

    /// uname's node name, release and version: the host's, or fixed ones under
    /// --deterministic.
    pub(crate) fn uname_fields(&self) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let host = if self.cfg.deterministic {
            None
        } else {
            host_uname()
        };
        let (node, release, version) = match &host {
            Some(u) => (cfield(&u.nodename), cfield(&u.release), cfield(&u.version)),
            None => (
                b"armada".to_vec(),
                b"6.1.0".to_vec(),
                b"#1 SMP PREEMPT_DYNAMIC Debian 6.1.0".to_vec(),
            ),
        };
        (
            self.procs.hostname.clone().unwrap_or(node),
            release,
            version,
        )
    }

    /// The run's domain name (uname's, /proc/sys/kernel/domainname).
    pub(crate) fn domainname(&self) -> Vec<u8> {
        self.procs
            .domainname
            .clone()
            .unwrap_or_else(|| b"(none)".to_vec())
    }

    /// sethostname/setdomainname: the run's own names (see `ProcTable::hostname`), set
    /// with CAP_SYS_ADMIN as Linux asks; at most 64 bytes.
    pub(crate) fn sys_setuname(
        &mut self,
        mem: &mut AddressSpace,
        name: u64,
        len: u64,
        domain: bool,
    ) -> SysResult {
        const NEW_UTS_LEN: u64 = 64;
        if !self.creds.capable(crate::proc::creds::CAP_SYS_ADMIN) {
            return Err(Errno::EPERM);
        }
        if len > NEW_UTS_LEN {
            return Err(Errno::EINVAL);
        }
        let mut v = vec![0u8; len as usize];
        crate::rd(mem, name, &mut v)?;
        // the name ends at a NUL if there is one, as the kernel copies it
        if let Some(i) = v.iter().position(|&c| c == 0) {
            v.truncate(i);
        }
        if domain {
            self.procs.domainname = Some(v);
        } else {
            self.procs.hostname = Some(v);
        }
        Ok(0)
    }

    /// Total and free memory in bytes (sysinfo, /proc/meminfo): the host's, or fixed ones
    /// under --deterministic.
    pub(crate) fn memory_totals(&self) -> (u64, u64) {
        if self.cfg.deterministic {
            return (DET_TOTALRAM, DET_FREERAM);
        }
        // SAFETY: si is plain data filled by the kernel.
        unsafe {
            let mut si: libc::sysinfo = std::mem::zeroed();
            if libc::sysinfo(&mut si) < 0 {
                return (DET_TOTALRAM, DET_FREERAM);
            }
            let unit = si.mem_unit.max(1) as u64;
            (si.totalram as u64 * unit, si.freeram as u64 * unit)
        }
    }

    /// The number of CPUs the machine has, as /proc/cpuinfo and /sys/devices/system/cpu/online
    /// show them: one (virtual) core in deterministic mode, the host's otherwise (as under
    /// qemu-user). The process runs on one of them ([`Self::cpu_mask`]).
    pub(crate) fn cpu_count(&self) -> u32 {
        if self.cfg.deterministic {
            return 1;
        }
        // SAFETY: set is plain data filled by the kernel.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return 1;
            }
            (libc::CPU_COUNT(&set) as u32).max(1)
        }
    }

    pub(crate) fn sys_uname(&mut self, mem: &mut AddressSpace, buf: u64) -> SysResult {
        let (node, release, version) = self.uname_fields();
        let mut b = Vec::with_capacity(65 * 6);
        b.extend_from_slice(&utsfield(b"Linux"));
        b.extend_from_slice(&utsfield(&node));
        b.extend_from_slice(&utsfield(&release));
        b.extend_from_slice(&utsfield(&version));
        b.extend_from_slice(&utsfield(b"aarch64"));
        b.extend_from_slice(&utsfield(&self.domainname()));
        wr(mem, buf, &b)?;
        Ok(0)
    }

    /// The lane processes `which`/`who` name for get/setpriority (ESRCH: none).
    fn prio_targets(&self, which: i32, who: i32) -> Result<Vec<i32>, Errno> {
        const PRIO_PROCESS: i32 = 0;
        const PRIO_PGRP: i32 = 1;
        const PRIO_USER: i32 = 2;
        let live = self.procs.procs.iter().filter(|(_, e)| e.zombie.is_none());
        let v: Vec<i32> = match which {
            PRIO_PROCESS => {
                // a thread id names its process
                let pid = if who == 0 || self.is_thread(who) {
                    self.pid
                } else {
                    who
                };
                live.filter(|(&p, _)| p == pid).map(|(&p, _)| p).collect()
            }
            PRIO_PGRP => {
                let me = self.procs.procs.get(&self.pid).map_or(self.pid, |e| e.pgid);
                let g = if who == 0 { me } else { who };
                live.filter(|(_, e)| e.pgid == g).map(|(&p, _)| p).collect()
            }
            // every process of the lane runs as the same user
            PRIO_USER if who == 0 || who as u32 == self.creds.uid.real => {
                live.map(|(&p, _)| p).collect()
            }
            PRIO_USER => Vec::new(),
            _ => return Err(Errno::EINVAL),
        };
        if v.is_empty() {
            return Err(Errno::ESRCH);
        }
        Ok(v)
    }

    /// getpriority: 20 - the lowest nice value among the targets (the kernel's form;
    /// libc turns it back into a nice value).
    pub(crate) fn sys_getpriority(&mut self, which: i32, who: i32) -> SysResult {
        let t = self.prio_targets(which, who)?;
        let nice = t
            .iter()
            .filter_map(|p| self.procs.procs.get(p).map(|e| e.nice))
            .min()
            .unwrap_or(0);
        Ok((20 - nice) as u64)
    }

    /// setpriority: the nice value of every target, clamped to -20..=19; lowering one
    /// takes CAP_SYS_NICE (EACCES). It is recorded and reported; the lane's scheduler
    /// gives every task the same turns whatever its nice value.
    pub(crate) fn sys_setpriority(&mut self, which: i32, who: i32, prio: i32) -> SysResult {
        const CAP_SYS_NICE: u32 = 23;
        let t = self.prio_targets(which, who)?;
        let nice = prio.clamp(-20, 19);
        let may_lower = self.creds.capable(CAP_SYS_NICE);
        for p in t {
            if let Some(e) = self.procs.procs.get_mut(&p) {
                if nice < e.nice && !may_lower {
                    return Err(Errno::EACCES);
                }
                e.nice = nice;
            }
        }
        Ok(0)
    }

    /// Guest CPU time in nanoseconds: virtual (retired instructions) or the lane's host
    /// thread's.
    fn user_ns(&self) -> u64 {
        if self.cfg.deterministic {
            return self.retired.saturating_mul(crate::time::clock::NS_PER_INSN);
        }
        self.clock_now(crate::time::clock::CLOCK_PROCESS_CPUTIME_ID)
            .map(|(s, n)| {
                (s as u64)
                    .saturating_mul(1_000_000_000)
                    .saturating_add(n as u64)
            })
            .unwrap_or(0)
    }

    pub(crate) fn sys_times(&mut self, mem: &mut AddressSpace, buf: u64) -> SysResult {
        let ticks = |ns: u64| ns / 10_000_000; // USER_HZ = 100
        if buf != 0 {
            let mut b = [0u8; 32];
            b[..8].copy_from_slice(&ticks(self.user_ns()).to_le_bytes());
            wr(mem, buf, &b)?;
        }
        let (s, n) = self.clock_now(crate::time::clock::CLOCK_MONOTONIC)?;
        Ok(ticks(
            (s as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(n as u64),
        ))
    }

    pub(crate) fn sys_getrusage(
        &mut self,
        mem: &mut AddressSpace,
        who: i32,
        buf: u64,
    ) -> SysResult {
        // RUSAGE_SELF 0, RUSAGE_CHILDREN -1, RUSAGE_THREAD 1
        if !(-1..=1).contains(&who) {
            return Err(Errno::EINVAL);
        }
        let mut b = [0u8; 144];
        if who != -1 {
            let ns = self.user_ns();
            b[0..8].copy_from_slice(&((ns / 1_000_000_000) as i64).to_le_bytes());
            b[8..16].copy_from_slice(&(((ns % 1_000_000_000) / 1000) as i64).to_le_bytes());
            let maxrss_kb = (mem.resident_bytes() / 1024) as i64;
            b[32..40].copy_from_slice(&maxrss_kb.to_le_bytes());
        }
        wr(mem, buf, &b)?;
        Ok(0)
    }

    pub(crate) fn sys_sysinfo(&mut self, mem: &mut AddressSpace, buf: u64) -> SysResult {
        let mut b = [0u8; 112];
        let put =
            |b: &mut [u8; 112], at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        let (uptime, total, free, procs) = if self.cfg.deterministic {
            let (s, _) = self.clock_now(crate::time::clock::CLOCK_BOOTTIME)?;
            (s as u64, DET_TOTALRAM, DET_FREERAM, 1u16)
        } else {
            // SAFETY: si is plain data filled by the kernel.
            let si = unsafe {
                let mut si: libc::sysinfo = std::mem::zeroed();
                if libc::sysinfo(&mut si) < 0 {
                    return Err(Errno::last());
                }
                si
            };
            let unit = si.mem_unit.max(1) as u64;
            (
                si.uptime as u64,
                si.totalram as u64 * unit,
                si.freeram as u64 * unit,
                si.procs,
            )
        };
        put(&mut b, 0, uptime);
        put(&mut b, 32, total);
        put(&mut b, 40, free);
        b[80..82].copy_from_slice(&procs.to_le_bytes());
        b[104..108].copy_from_slice(&1u32.to_le_bytes()); // mem_unit
        wr(mem, buf, &b)?;
        Ok(0)
    }

    /// unshare: namespaces need privileges a guest does not have (EPERM); a process of one
    /// thread shares its fd table, cwd and SysV undo list with nobody, so unsharing them
    /// changes nothing. Threads that would each get their own are not supported (EINVAL,
    /// with a note).
    pub(crate) fn sys_unshare(&mut self, flags: u64) -> SysResult {
        use crate::proc::clone::{CLONE_FILES, CLONE_FS, CLONE_SYSVSEM};
        /// CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
        const CLONE_NEW: u64 = 0x0002_0000
            | 0x0200_0000
            | 0x0400_0000
            | 0x0800_0000
            | 0x1000_0000
            | 0x2000_0000
            | 0x4000_0000
            | 0x80;
        const CLONE_THREAD_SIGHAND_VM: u64 = 0x1_0000 | 0x800 | 0x100;
        if flags & !(CLONE_NEW | CLONE_FILES | CLONE_FS | CLONE_SYSVSEM | CLONE_THREAD_SIGHAND_VM)
            != 0
        {
            return Err(Errno::EINVAL);
        }
        if flags & CLONE_NEW != 0 {
            return Err(Errno::EPERM);
        }
        if self.thread_count() > 1 {
            if flags & CLONE_THREAD_SIGHAND_VM != 0 {
                // Linux: only a process of one thread may
                return Err(Errno::EINVAL);
            }
            if flags & (CLONE_FILES | CLONE_FS) != 0 {
                self.unsupported(crate::nr::UNSHARE);
                return Err(Errno::EINVAL);
            }
        }
        Ok(0)
    }

    /// prctl: the process's name, parent-death signal, subreaper, and the settings in
    /// [`Prctl`]. Capabilities: a guest has none to keep or drop, but the bounding set reads
    /// full and keep-caps/no-new-privs/securebits are kept as set, so programs that set and
    /// check them (Go's os/signal tests, sandboxes) see Linux's answers.
    pub(crate) fn sys_prctl(
        &mut self,
        mem: &mut AddressSpace,
        op: i32,
        a2: u64,
        _a3: u64,
    ) -> SysResult {
        const PR_SET_PDEATHSIG: i32 = 1;
        const PR_GET_PDEATHSIG: i32 = 2;
        const PR_GET_DUMPABLE: i32 = 3;
        const PR_SET_DUMPABLE: i32 = 4;
        const PR_SET_NAME: i32 = 15;
        const PR_GET_NAME: i32 = 16;
        const PR_SET_VMA: i32 = 0x53564d41;
        const PR_SET_CHILD_SUBREAPER: i32 = 36;
        const PR_GET_CHILD_SUBREAPER: i32 = 37;
        const PR_GET_KEEPCAPS: i32 = 7;
        const PR_SET_KEEPCAPS: i32 = 8;
        const PR_CAPBSET_READ: i32 = 23;
        const PR_GET_SECUREBITS: i32 = 27;
        const PR_SET_TIMERSLACK: i32 = 29;
        const PR_GET_TIMERSLACK: i32 = 30;
        const PR_SET_NO_NEW_PRIVS: i32 = 38;
        const PR_GET_NO_NEW_PRIVS: i32 = 39;
        const PR_SET_THP_DISABLE: i32 = 41;
        const PR_GET_THP_DISABLE: i32 = 42;
        const PR_SET_PTRACER: i32 = 0x59616d61;
        /// CAP_CHECKPOINT_RESTORE, the last capability Linux 5.9+ knows
        const CAP_LAST_CAP: u64 = 40;
        let flag = |v: u64| {
            if v > 1 {
                Err(Errno::EINVAL)
            } else {
                Ok(v != 0)
            }
        };
        match op {
            PR_SET_KEEPCAPS => {
                self.prctl.keepcaps = flag(a2)?;
                Ok(0)
            }
            PR_GET_KEEPCAPS => Ok(self.prctl.keepcaps as u64),
            PR_CAPBSET_READ if a2 <= CAP_LAST_CAP => Ok((self.creds.cap_bnd >> a2) & 1),
            PR_CAPBSET_READ => Err(Errno::EINVAL),
            PR_GET_SECUREBITS => Ok(if self.prctl.keepcaps { 1 << 4 } else { 0 }),
            PR_SET_NO_NEW_PRIVS => {
                // it can be set, never cleared
                if a2 != 1 {
                    return Err(Errno::EINVAL);
                }
                self.prctl.no_new_privs = true;
                Ok(0)
            }
            PR_GET_NO_NEW_PRIVS => Ok(self.prctl.no_new_privs as u64),
            PR_SET_TIMERSLACK => {
                self.prctl.timerslack_ns = if a2 == 0 { DEFAULT_TIMERSLACK_NS } else { a2 };
                Ok(0)
            }
            PR_GET_TIMERSLACK => Ok(self.prctl.timerslack_ns()),
            PR_SET_THP_DISABLE => {
                self.prctl.thp_disable = flag(a2)?;
                Ok(0)
            }
            PR_GET_THP_DISABLE => Ok(self.prctl.thp_disable as u64),
            // Yama's ptrace scope: nobody traces a guest
            PR_SET_PTRACER => Ok(0),
            PR_SET_NAME => {
                let mut n = [0u8; 16];
                let s = mem.read_cstr(a2, 15).map_err(|_| Errno::EFAULT)?;
                n[..s.len()].copy_from_slice(&s);
                self.comm = n;
                Ok(0)
            }
            PR_GET_NAME => {
                let c = self.comm;
                wr(mem, a2, &c)?;
                Ok(0)
            }
            PR_SET_CHILD_SUBREAPER => {
                self.set_subreaper(a2 != 0);
                Ok(0)
            }
            PR_GET_CHILD_SUBREAPER => wr_u32(mem, a2, self.is_subreaper() as u32).map(|_| 0),
            PR_SET_PDEATHSIG => {
                if a2 > crate::signal::NSIG as u64 {
                    return Err(Errno::EINVAL);
                }
                self.set_pdeathsig(a2 as i32);
                Ok(0)
            }
            PR_GET_PDEATHSIG => wr_u32(mem, a2, self.pdeathsig() as u32).map(|_| 0),
            PR_SET_DUMPABLE | PR_SET_VMA => Ok(0),
            PR_GET_DUMPABLE => Ok(1),
            _ => Err(Errno::EINVAL),
        }
    }

    pub(crate) fn sys_getcpu(&mut self, mem: &mut AddressSpace, cpu: u64, node: u64) -> SysResult {
        if cpu != 0 {
            wr_u32(mem, cpu, 0)?;
        }
        if node != 0 {
            wr_u32(mem, node, 0)?;
        }
        Ok(0)
    }

    /// The CPUs the process may run on (sched_getaffinity's mask): CPU 0 alone, in every
    /// mode, as for a process pinned there with `taskset`. A lane's tasks, every thread of
    /// every process, run one at a time on one host thread (docs/architecture.md, the
    /// scheduler), so a guest shown the host's 16 CPUs sized its runtime for parallelism it
    /// never got: Go's runtime (GOMAXPROCS from this mask) then kept 16 Ps whose idle
    /// spinning, work stealing and GC workers all ran in turn on that thread, and Go's
    /// compress/flate tests took 2.7-2.9 s against 1.85 s with one P on a 16-core host
    /// (docs/performance.md, "One CPU for the guest's affinity"). getcpu says CPU 0 too.
    fn cpu_mask(&self) -> u64 {
        1
    }

    /// /sys/devices/system/cpu/online (and possible): "0" or "0-3".
    pub(crate) fn cpu_list(&self) -> Vec<u8> {
        if !self.cfg.deterministic {
            if let Ok(v) = std::fs::read("/sys/devices/system/cpu/online") {
                return v;
            }
        }
        let n = self.cpu_count();
        if n <= 1 {
            b"0\n".to_vec()
        } else {
            format!("0-{}\n", n - 1).into_bytes()
        }
    }

    /// The task a scheduling call names: 0 (the caller), the process or one of its threads;
    /// another pid is ESRCH (the lane's other processes are not the caller's to schedule).
    fn sched_target(&self, pid: i32) -> Result<(), Errno> {
        if pid != 0 && pid != self.pid && !self.is_thread(pid) {
            return Err(Errno::ESRCH);
        }
        Ok(())
    }

    /// sched_getscheduler (`param` None) and sched_getparam: every task is SCHED_OTHER at
    /// priority 0 on the lane's scheduler. A negative pid or no parameter is EINVAL.
    pub(crate) fn sys_sched_get(
        &mut self,
        mem: &mut AddressSpace,
        pid: i32,
        param: Option<u64>,
    ) -> SysResult {
        if pid < 0 || param == Some(0) {
            return Err(Errno::EINVAL);
        }
        if let Some(p) = param {
            wr_u32(mem, p, 0)?;
        }
        Ok(0)
    }

    /// sched_setparam (`policy` None: the task's own, SCHED_OTHER) and sched_setscheduler:
    /// SCHED_OTHER, BATCH or IDLE with priority 0 is accepted (the scheduler has one order for
    /// all); a real-time policy is EPERM, as for an unprivileged process (RLIMIT_RTPRIO 0);
    /// what Linux refuses as invalid (a negative pid, no parameter, a priority outside the
    /// policy's range, an unknown policy) is EINVAL.
    pub(crate) fn sys_sched_set(
        &mut self,
        mem: &mut AddressSpace,
        pid: i32,
        policy: Option<i32>,
        param: u64,
    ) -> SysResult {
        if pid < 0 || param == 0 {
            return Err(Errno::EINVAL);
        }
        let prio = crate::rd_u32(mem, param)? as i32;
        const RESET_ON_FORK: i32 = 0x4000_0000;
        match policy.unwrap_or(0) & !RESET_ON_FORK {
            0 | 3 | 5 if prio == 0 => Ok(0),
            1 | 2 if (1..=99).contains(&prio) => Err(Errno::EPERM),
            _ => Err(Errno::EINVAL),
        }
    }

    /// sched_get_priority_max and _min: Linux's ranges, 1 to 99 for the real-time policies
    /// (SCHED_FIFO, SCHED_RR) and 0 for the others (SCHED_OTHER, BATCH, IDLE, DEADLINE);
    /// EINVAL for a policy Linux does not know.
    pub(crate) fn sys_sched_priority_bound(policy: i32, max: bool) -> SysResult {
        match policy {
            1 | 2 => Ok(if max { 99 } else { 1 }),
            0 | 3 | 5 | 6 => Ok(0),
            _ => Err(Errno::EINVAL),
        }
    }

    /// sched_rr_get_interval: every task is SCHED_OTHER on the lane's scheduler, whose time
    /// slice is a turn of [`crate::sched::QUANTUM`] instructions (in the virtual clock's
    /// time: [`crate::time::clock::NS_PER_INSN`] a instruction), as Linux reports a
    /// SCHED_OTHER task's slice.
    pub(crate) fn sys_sched_rr_get_interval(
        &mut self,
        mem: &mut AddressSpace,
        pid: i32,
        tp: u64,
    ) -> SysResult {
        if pid < 0 {
            return Err(Errno::EINVAL);
        }
        self.sched_target(pid)?;
        let ns = crate::sched::QUANTUM * crate::time::clock::NS_PER_INSN;
        let (sec, nsec) = ((ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64);
        crate::time::clock::write_timespec(mem, tp, sec, nsec)?;
        Ok(0)
    }

    /// sched_setaffinity: the process stays on its one CPU ([`Self::cpu_mask`]), as a
    /// process in a cpuset of one CPU does: a mask that includes it is accepted (the
    /// affinity is then that CPU), one that does not is EINVAL. Linux reads at most its
    /// mask's size and takes a shorter mask as the rest cleared.
    pub(crate) fn sys_sched_setaffinity(
        &mut self,
        mem: &mut AddressSpace,
        pid: i32,
        len: u64,
        mask: u64,
    ) -> SysResult {
        self.sched_target(pid)?;
        let mut b = [0u8; 8];
        let n = len.min(8) as usize;
        crate::rd(mem, mask, &mut b[..n])?;
        if u64::from_le_bytes(b) & self.cpu_mask() == 0 {
            return Err(Errno::EINVAL);
        }
        Ok(0)
    }

    pub(crate) fn sys_sched_getaffinity(
        &mut self,
        mem: &mut AddressSpace,
        pid: i32,
        len: u64,
        mask: u64,
    ) -> SysResult {
        self.sched_target(pid)?;
        if len < 8 || len & 7 != 0 {
            return Err(Errno::EINVAL);
        }
        wr(mem, mask, &self.cpu_mask().to_le_bytes())?;
        Ok(8)
    }
}
