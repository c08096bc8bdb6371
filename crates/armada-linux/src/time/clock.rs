//! Clocks, sleeping and random bytes.
//!
//! Deterministic mode: every clock is a function of the lane's retired instruction count
//! (one instruction = [`NS_PER_INSN`] ns) plus the time the guest slept; sleeping advances
//! the clock without waiting. Random bytes come from a xoshiro256** generator seeded with
//! `LinuxConfig::seed`. Otherwise the host's clocks and random bytes are used.

use crate::{read_timespec_ns, wr, Errno, Process, SysResult};
use armada_machine::memory::AddressSpace;

/// Virtual CLOCK_REALTIME at the first instruction: 2024-01-01T00:00:00Z.
pub const DET_REALTIME_BASE_S: i64 = 1_704_067_200;
/// Virtual CLOCK_MONOTONIC (uptime) at the first instruction.
pub const DET_MONOTONIC_BASE_S: i64 = 100;
/// Virtual nanoseconds per retired instruction (a 1 GHz, one-instruction-per-cycle machine).
pub const NS_PER_INSN: u64 = 1;

pub const CLOCK_REALTIME: i32 = 0;
pub const CLOCK_MONOTONIC: i32 = 1;
pub const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
pub const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
pub const CLOCK_MONOTONIC_RAW: i32 = 4;
pub const CLOCK_REALTIME_COARSE: i32 = 5;
pub const CLOCK_MONOTONIC_COARSE: i32 = 6;
pub const CLOCK_BOOTTIME: i32 = 7;
pub const CLOCK_REALTIME_ALARM: i32 = 8;
pub const CLOCK_BOOTTIME_ALARM: i32 = 9;
pub const CLOCK_TAI: i32 = 11;

const NS: u64 = 1_000_000_000;

#[derive(Clone, Debug)]
pub(crate) struct Clock {
    deterministic: bool,
    /// Virtual time slept (deterministic mode).
    slept_ns: u64,
}

impl Clock {
    /// The virtual time slept so far, in deterministic mode (None otherwise: the host's
    /// clocks are read).
    pub(crate) fn slept(&self) -> Option<u64> {
        self.deterministic.then_some(self.slept_ns)
    }

    pub(crate) fn new(deterministic: bool) -> Self {
        Clock {
            deterministic,
            slept_ns: 0,
        }
    }
}

/// xoshiro256** seeded through splitmix64.
#[derive(Clone, Debug)]
pub(crate) struct Rng {
    s: [u64; 4],
    host: bool,
}

impl Rng {
    pub(crate) fn seeded(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
            host: false,
        }
    }

    /// A forked child's generator: seeded from this one (so parent and child draw different
    /// bytes, and the same ones every deterministic run).
    pub(crate) fn fork(&mut self) -> Self {
        if self.host {
            return Rng::from_host();
        }
        Rng::seeded(self.next_u64())
    }

    pub(crate) fn from_host() -> Self {
        Rng {
            s: [1, 2, 3, 4],
            host: true,
        }
    }

    fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let r = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        r
    }

    pub(crate) fn fill(&mut self, buf: &mut [u8]) {
        if self.host {
            let mut done = 0;
            while done < buf.len() {
                // SAFETY: the pointer and length describe the rest of buf.
                let r = unsafe {
                    libc::getrandom(buf[done..].as_mut_ptr().cast(), buf.len() - done, 0)
                };
                if r <= 0 {
                    break;
                }
                done += r as usize;
            }
            if done == buf.len() {
                return;
            }
            // getrandom failed: fall back to the generator, seeded from the clock
            let seed = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            *self = Rng::seeded(seed);
        }
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

pub(crate) fn write_timespec(
    mem: &mut AddressSpace,
    addr: u64,
    sec: i64,
    nsec: i64,
) -> Result<(), Errno> {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&sec.to_le_bytes());
    b[8..].copy_from_slice(&nsec.to_le_bytes());
    wr(mem, addr, &b)
}

fn host_clock(id: i32) -> Result<(i64, i64), Errno> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec.
    if unsafe { libc::clock_gettime(id, &mut ts) } < 0 {
        return Err(Errno::last());
    }
    Ok((ts.tv_sec, ts.tv_nsec))
}

fn valid_clock(id: i32) -> bool {
    matches!(id, 0..=9 | 11)
}

/// A virtual clock of deterministic mode: its seconds at the first instruction, and whether
/// it counts only the guest's CPU time (else the time slept too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DetClock {
    pub base_s: i64,
    pub cpu_only: bool,
}

/// Clock `id` in deterministic mode (None: no such clock, EINVAL). The one table of what
/// each clock reads, for the CPU engine and for the GPU kernel that answers clock_gettime
/// itself (armada-gpu's layout exports it).
pub fn det_clock(id: i32) -> Option<DetClock> {
    if !valid_clock(id) {
        return None;
    }
    let (base_s, cpu_only) = match id {
        CLOCK_REALTIME | CLOCK_REALTIME_COARSE | CLOCK_REALTIME_ALARM => {
            (DET_REALTIME_BASE_S, false)
        }
        CLOCK_TAI => (DET_REALTIME_BASE_S + 37, false),
        CLOCK_PROCESS_CPUTIME_ID | CLOCK_THREAD_CPUTIME_ID => (0, true),
        _ => (DET_MONOTONIC_BASE_S, false),
    };
    Some(DetClock { base_s, cpu_only })
}

impl Process {
    /// Nanoseconds of guest CPU time (deterministic: retired instructions).
    fn cpu_ns(&self) -> u64 {
        self.retired.saturating_mul(NS_PER_INSN)
    }

    /// The time on clock `id` as (seconds, nanoseconds).
    pub(crate) fn clock_now(&self, id: i32) -> Result<(i64, i64), Errno> {
        if !valid_clock(id) {
            return Err(Errno::EINVAL);
        }
        if !self.clock.deterministic {
            let hid = match id {
                CLOCK_REALTIME_ALARM => CLOCK_REALTIME,
                CLOCK_BOOTTIME_ALARM => CLOCK_BOOTTIME,
                // the guest's CPU time is the lane's host thread's: armada's own threads
                // (compiling, serving a GPU) are not the guest's, and the host process's
                // clock would count them (see `clock_of`)
                CLOCK_PROCESS_CPUTIME_ID => CLOCK_THREAD_CPUTIME_ID,
                i => i,
            };
            return host_clock(hid);
        }
        let c = det_clock(id).ok_or(Errno::EINVAL)?;
        let ns = if c.cpu_only {
            self.cpu_ns()
        } else {
            self.cpu_ns().saturating_add(self.clock.slept_ns)
        };
        Ok((c.base_s + (ns / NS) as i64, (ns % NS) as i64))
    }

    /// Sleeps `ns` nanoseconds of guest time: advances the virtual clock, or really sleeps.
    fn sleep_ns(&mut self, ns: u64) {
        if self.clock.deterministic {
            self.clock.slept_ns = self.clock.slept_ns.saturating_add(ns);
        } else {
            std::thread::sleep(std::time::Duration::from_nanos(ns));
        }
    }

    /// The clock a dynamic clock id stands for: a CPU-time clock of a process or thread
    /// (`clock_getcpuclockid`, `pthread_getcpuclockid`: `~pid << 3 | type`, bit 2 for a
    /// thread). A thread's CPU time is its process's here: a lane runs its tasks on one
    /// host thread, whose CPU time both clocks read (so a lane's processes each count all
    /// of the lane's). Fixed ids stay as they are.
    fn clock_of(&self, id: i32) -> Result<i32, Errno> {
        const PERTHREAD: i32 = 4;
        const TYPE_MASK: i32 = 3;
        if id >= 0 {
            return Ok(id);
        }
        if id & TYPE_MASK == TYPE_MASK {
            return Err(Errno::EINVAL);
        }
        let pid = !(id >> 3);
        if id & PERTHREAD != 0 {
            if pid != 0 && !self.is_thread(pid) {
                return Err(Errno::EINVAL);
            }
            return Ok(CLOCK_THREAD_CPUTIME_ID);
        }
        if pid != 0 && pid != self.pid {
            return Err(Errno::EINVAL);
        }
        Ok(CLOCK_PROCESS_CPUTIME_ID)
    }

    /// clock_settime: a guest may not set the machine's clocks (EPERM, as for a process
    /// without CAP_SYS_TIME); EINVAL for clocks that cannot be set at all.
    pub(crate) fn sys_clock_settime(&mut self, id: i32) -> SysResult {
        match self.clock_of(id)? {
            CLOCK_REALTIME => Err(Errno::EPERM),
            _ => Err(Errno::EINVAL),
        }
    }

    pub(crate) fn sys_clock_gettime(
        &mut self,
        mem: &mut AddressSpace,
        id: i32,
        tp: u64,
    ) -> SysResult {
        let (s, ns) = self.clock_now(self.clock_of(id)?)?;
        write_timespec(mem, tp, s, ns)?;
        Ok(0)
    }

    pub(crate) fn sys_clock_getres(
        &mut self,
        mem: &mut AddressSpace,
        id: i32,
        tp: u64,
    ) -> SysResult {
        let id = self.clock_of(id)?;
        if !valid_clock(id) {
            return Err(Errno::EINVAL);
        }
        let res = match id {
            CLOCK_REALTIME_COARSE | CLOCK_MONOTONIC_COARSE => 4_000_000,
            _ => 1,
        };
        if tp != 0 {
            write_timespec(mem, tp, 0, res)?;
        }
        Ok(0)
    }

    pub(crate) fn sys_gettimeofday(
        &mut self,
        mem: &mut AddressSpace,
        tv: u64,
        tz: u64,
    ) -> SysResult {
        if tv != 0 {
            let (s, ns) = self.clock_now(CLOCK_REALTIME)?;
            write_timespec(mem, tv, s, ns / 1000)?;
        }
        if tz != 0 {
            wr(mem, tz, &[0u8; 8])?;
        }
        Ok(0)
    }

    pub(crate) fn sys_nanosleep(&mut self, mem: &mut AddressSpace, req: u64) -> SysResult {
        // (`rem` is written only when a signal interrupts the sleep: `sleep_interrupted`)
        let ns = read_timespec_ns(mem, req)?;
        self.sleep_until(self.deadline_after(ns))?;
        Ok(0)
    }

    /// Ok once CLOCK_MONOTONIC has reached `deadline`; until then the task blocks (the
    /// scheduler runs others, or moves the clock on when none can run) and the syscall runs
    /// again at the deadline.
    pub(crate) fn sleep_until(&mut self, deadline: u64) -> Result<(), Errno> {
        if self.deadline_passed(deadline) {
            return Ok(());
        }
        Err(self.block(crate::sched::WaitKind::Sleep, Some(deadline)))
    }

    /// The lane's instruction count now, outside a syscall (the scheduler's view of the
    /// virtual clock when it switches tasks).
    pub fn set_retired(&mut self, retired: u64) {
        self.retired = retired;
    }

    /// CLOCK_MONOTONIC in nanoseconds: the clock deadlines are kept on.
    pub fn monotonic_ns(&self) -> u64 {
        let (s, n) = self.clock_now(CLOCK_MONOTONIC).unwrap_or((0, 0));
        (s as u64).saturating_mul(NS).saturating_add(n as u64)
    }

    /// Moves the clock on to `deadline` when every task waits (the scheduler's idle time):
    /// the virtual clock jumps, the host's is waited for.
    pub fn idle_until(&mut self, deadline: u64) {
        let now = self.monotonic_ns();
        if deadline > now {
            self.sleep_ns(deadline - now);
        }
    }

    /// A signal's handler interrupted a sleep (EINTR): a relative nanosleep or
    /// clock_nanosleep tells the time it had left, as Linux does.
    pub fn sleep_interrupted(&mut self, w: &crate::sched::Wait, mem: &mut AddressSpace) {
        use crate::nr::{CLOCK_NANOSLEEP, NANOSLEEP};
        const TIMER_ABSTIME: u64 = 1;
        let rem = match w.nr {
            NANOSLEEP => w.args[1],
            CLOCK_NANOSLEEP if w.args[1] & TIMER_ABSTIME == 0 => w.args[3],
            _ => return,
        };
        if let (Some(d), true) = (w.deadline, rem != 0) {
            let left = d.saturating_sub(self.monotonic_ns());
            let _ = write_timespec(mem, rem, (left / NS) as i64, (left % NS) as i64);
        }
    }

    pub(crate) fn sys_clock_nanosleep(
        &mut self,
        mem: &mut AddressSpace,
        id: i32,
        flags: i32,
        req: u64,
    ) -> SysResult {
        const TIMER_ABSTIME: i32 = 1;
        if id == CLOCK_THREAD_CPUTIME_ID || !valid_clock(id) {
            return Err(Errno::EINVAL);
        }
        let ns = read_timespec_ns(mem, req)?;
        let wait = if flags & TIMER_ABSTIME != 0 {
            let (s, n) = self.clock_now(id)?;
            let now = (s as u64).saturating_mul(NS).saturating_add(n as u64);
            ns.saturating_sub(now)
        } else {
            ns
        };
        // (`rem` is written only when a signal interrupts the sleep: `sleep_interrupted`)
        self.sleep_until(self.deadline_after(wait))?;
        Ok(0)
    }

    pub(crate) fn sys_getrandom(
        &mut self,
        mem: &mut AddressSpace,
        buf: u64,
        len: u64,
        flags: u32,
    ) -> SysResult {
        const GRND_NONBLOCK: u32 = 1;
        const GRND_RANDOM: u32 = 2;
        const GRND_INSECURE: u32 = 4;
        if flags & !(GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE) != 0
            || flags & (GRND_RANDOM | GRND_INSECURE) == (GRND_RANDOM | GRND_INSECURE)
        {
            return Err(Errno::EINVAL);
        }
        // one call fills at most 32 MiB (Linux: at most MAX_RW_COUNT, and short reads are allowed)
        let len = len.min(32 << 20);
        crate::check_writable(mem, buf, len)?;
        let mut tmp = vec![0u8; len as usize];
        self.rng.fill(&mut tmp);
        wr(mem, buf, &tmp)?;
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_rng_repeats() {
        let mut a = Rng::seeded(7);
        let mut b = Rng::seeded(7);
        let mut c = Rng::seeded(8);
        let (mut x, mut y, mut z) = ([0u8; 37], [0u8; 37], [0u8; 37]);
        a.fill(&mut x);
        b.fill(&mut y);
        c.fill(&mut z);
        assert_eq!(x, y);
        assert_ne!(x, z);
    }
}
