//! The system-wide files of /proc and /sys that programs read to learn about the machine:
//! the CPUs, memory, uptime and load, the kernel's names and limits, the mounts.
//!
//! /proc/cpuinfo is always armada's (an arm64 one: the host's would describe the host's
//! CPU). The others are the host's files (as under qemu-user) unless the run is confined
//! to a root (`--root`: the host's /proc is out of its view) or deterministic (the host's
//! values change between runs); then armada writes them, consistent with what uname,
//! sysinfo and sched_getaffinity say.

use crate::Process;

/// A file armada writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SysFile {
    /// /sys/devices/system/cpu/{online,possible,present}
    CpuOnline,
    CpuInfo,
    MemInfo,
    Uptime,
    LoadAvg,
    Stat,
    MountInfo,
    Mounts,
    /// /proc/sys/kernel/NAME: one line.
    Kernel(KernelFile),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KernelFile {
    OsType,
    OsRelease,
    Version,
    Hostname,
    DomainName,
    PidMax,
    ThreadsMax,
    NgroupsMax,
    CapLastCap,
    BootId,
    Overcommit,
    Somaxconn,
    ShmMax,
    ShmAll,
    ShmMni,
    MsgMax,
    MsgMnb,
    MsgMni,
    Sem,
}

impl Process {
    /// Whether armada writes the machine's files itself rather than showing the host's.
    fn own_machine_files(&self) -> bool {
        self.root.is_some() || self.cfg.deterministic
    }

    /// The file armada writes at normalized guest path `p`, if any.
    pub(crate) fn sys_file(&self, p: &[u8]) -> Option<SysFile> {
        use KernelFile::*;
        let f = match p {
            b"/sys/devices/system/cpu/online"
            | b"/sys/devices/system/cpu/possible"
            | b"/sys/devices/system/cpu/present" => SysFile::CpuOnline,
            b"/proc/cpuinfo" => SysFile::CpuInfo,
            _ if !self.own_machine_files() => return None,
            b"/proc/meminfo" => SysFile::MemInfo,
            b"/proc/uptime" => SysFile::Uptime,
            b"/proc/loadavg" => SysFile::LoadAvg,
            b"/proc/stat" => SysFile::Stat,
            b"/proc/self/mountinfo" => SysFile::MountInfo,
            b"/proc/mounts" | b"/proc/self/mounts" => SysFile::Mounts,
            _ => {
                let name = p
                    .strip_prefix(b"/proc/sys/kernel/")
                    .or_else(|| p.strip_prefix(b"/proc/sys/net/core/"))
                    .or_else(|| p.strip_prefix(b"/proc/sys/vm/"))?;
                SysFile::Kernel(match name {
                    b"ostype" => OsType,
                    b"osrelease" => OsRelease,
                    b"version" => Version,
                    b"hostname" => Hostname,
                    b"domainname" => DomainName,
                    b"pid_max" => PidMax,
                    b"threads-max" => ThreadsMax,
                    b"ngroups_max" => NgroupsMax,
                    b"cap_last_cap" => CapLastCap,
                    b"random/boot_id" => BootId,
                    b"overcommit_memory" => Overcommit,
                    b"somaxconn" => Somaxconn,
                    b"shmmax" => ShmMax,
                    b"shmall" => ShmAll,
                    b"shmmni" => ShmMni,
                    b"msgmax" => MsgMax,
                    b"msgmnb" => MsgMnb,
                    b"msgmni" => MsgMni,
                    b"sem" => Sem,
                    _ => return None,
                })
            }
        };
        Some(f)
    }

    /// The text of a file armada writes.
    pub(crate) fn sys_file_text(&self, f: SysFile) -> Vec<u8> {
        use std::fmt::Write;
        let ncpu = self.cpu_count();
        let mut s = String::new();
        match f {
            SysFile::CpuOnline => return self.cpu_list(),
            SysFile::CpuInfo => {
                for n in 0..ncpu {
                    let _ = write!(
                        s,
                        "processor\t: {n}\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n"
                    );
                }
            }
            SysFile::MemInfo => {
                let (total, free) = self.memory_totals();
                let kb = |b: u64| b / 1024;
                let _ = write!(
                    s,
                    "MemTotal:       {:8} kB\nMemFree:        {:8} kB\nMemAvailable:   {:8} kB\nBuffers:               0 kB\nCached:                0 kB\nSwapCached:            0 kB\nSwapTotal:             0 kB\nSwapFree:              0 kB\nShmem:                 0 kB\nHugePages_Total:       0\nHugePages_Free:        0\nHugepagesize:       2048 kB\n",
                    kb(total),
                    kb(free),
                    kb(free)
                );
            }
            SysFile::Uptime => {
                let (sec, ns) = self
                    .clock_now(crate::time::clock::CLOCK_BOOTTIME)
                    .unwrap_or((0, 0));
                let _ = writeln!(s, "{sec}.{:02} 0.00", ns / 10_000_000);
            }
            SysFile::LoadAvg => {
                let n = self.procs.procs.len();
                let _ = writeln!(s, "0.00 0.00 0.00 1/{n} {}", self.pid);
            }
            SysFile::Stat => {
                let (boot, _) = self
                    .clock_now(crate::time::clock::CLOCK_REALTIME)
                    .unwrap_or((0, 0));
                let (up, _) = self
                    .clock_now(crate::time::clock::CLOCK_BOOTTIME)
                    .unwrap_or((0, 0));
                s.push_str("cpu  0 0 0 0 0 0 0 0 0 0\n");
                for n in 0..ncpu {
                    let _ = writeln!(s, "cpu{n} 0 0 0 0 0 0 0 0 0 0");
                }
                let _ = write!(
                    s,
                    "intr 0\nctxt 0\nbtime {}\nprocesses {}\nprocs_running 1\nprocs_blocked 0\n",
                    boot - up,
                    self.procs.procs.len()
                );
            }
            SysFile::MountInfo => {
                s.push_str("1 0 0:1 / / rw,relatime - rootfs rootfs rw\n2 1 0:2 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw\n");
            }
            SysFile::Mounts => {
                s.push_str(
                    "rootfs / rootfs rw 0 0\nproc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n",
                );
            }
            SysFile::Kernel(k) => {
                use KernelFile::*;
                let (node, release, version) = self.uname_fields();
                let line: String = match k {
                    OsType => "Linux".into(),
                    OsRelease => String::from_utf8_lossy(&release).into_owned(),
                    Version => String::from_utf8_lossy(&version).into_owned(),
                    Hostname => String::from_utf8_lossy(&node).into_owned(),
                    DomainName => String::from_utf8_lossy(&self.domainname()).into_owned(),
                    PidMax => "4194304".into(),
                    ThreadsMax => "4096".into(),
                    NgroupsMax => "65536".into(),
                    CapLastCap => "40".into(),
                    BootId => "9b4a4b6e-1c3f-4d2e-8a5b-0a1d2c3e4f50".into(),
                    Overcommit => "0".into(),
                    Somaxconn => "4096".into(),
                    ShmMax => (1u64 << 36).to_string(),
                    ShmAll => (1u64 << 24).to_string(),
                    ShmMni | MsgMni => "32000".into(),
                    MsgMax => "8192".into(),
                    MsgMnb => "16384".into(),
                    Sem => "32000\t1024000000\t500\t32000".into(),
                };
                s = line;
                s.push('\n');
            }
        }
        s.into_bytes()
    }
}
