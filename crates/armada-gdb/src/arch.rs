//! The AArch64 Linux user-mode target as gdb sees it: the registers of a guest thread and
//! their target description.
//!
//! `gdbstub_arch`'s AArch64 describes a bare-metal core (every system register, no TLS
//! register, no OS ABI). A Linux process has the core and FP/SIMD registers and `tpidr`
//! (gdb's `org.gnu.gdb.aarch64.tls` feature), and says GNU/Linux so that gdb unwinds
//! through signal frames and finds shared libraries as on a real arm64 Linux machine.

use armada_core::state::CpuState;
use gdbstub::arch::{Arch, Registers};

/// The architecture gdbstub serves: AArch64, Linux user mode.
pub enum Aarch64Linux {}

impl Arch for Aarch64Linux {
    type Usize = u64;
    type Registers = Regs;
    type RegId = ();
    type BreakpointKind = usize;

    fn target_description_xml() -> Option<&'static str> {
        Some(TARGET_XML)
    }
}

/// gdb's register numbering is the order of the description: x0-x30, sp, pc, cpsr (the
/// core feature), v0-v31, fpsr, fpcr (the FP feature), tpidr. The vector type lets `p $v0`
/// show the register as gdb does on hardware (`{d = {...}, s = {...}, ...}`).
const TARGET_XML: &str = r#"<?xml version="1.0"?>
<!DOCTYPE target SYSTEM "gdb-target.dtd">
<target version="1.0">
<architecture>aarch64</architecture>
<osabi>GNU/Linux</osabi>
<feature name="org.gnu.gdb.aarch64.core">
<reg name="x0" bitsize="64" type="int" regnum="0"/>
<reg name="x1" bitsize="64" type="int"/>
<reg name="x2" bitsize="64" type="int"/>
<reg name="x3" bitsize="64" type="int"/>
<reg name="x4" bitsize="64" type="int"/>
<reg name="x5" bitsize="64" type="int"/>
<reg name="x6" bitsize="64" type="int"/>
<reg name="x7" bitsize="64" type="int"/>
<reg name="x8" bitsize="64" type="int"/>
<reg name="x9" bitsize="64" type="int"/>
<reg name="x10" bitsize="64" type="int"/>
<reg name="x11" bitsize="64" type="int"/>
<reg name="x12" bitsize="64" type="int"/>
<reg name="x13" bitsize="64" type="int"/>
<reg name="x14" bitsize="64" type="int"/>
<reg name="x15" bitsize="64" type="int"/>
<reg name="x16" bitsize="64" type="int"/>
<reg name="x17" bitsize="64" type="int"/>
<reg name="x18" bitsize="64" type="int"/>
<reg name="x19" bitsize="64" type="int"/>
<reg name="x20" bitsize="64" type="int"/>
<reg name="x21" bitsize="64" type="int"/>
<reg name="x22" bitsize="64" type="int"/>
<reg name="x23" bitsize="64" type="int"/>
<reg name="x24" bitsize="64" type="int"/>
<reg name="x25" bitsize="64" type="int"/>
<reg name="x26" bitsize="64" type="int"/>
<reg name="x27" bitsize="64" type="int"/>
<reg name="x28" bitsize="64" type="int"/>
<reg name="x29" bitsize="64" type="int"/>
<reg name="x30" bitsize="64" type="int"/>
<reg name="sp" bitsize="64" type="data_ptr"/>
<reg name="pc" bitsize="64" type="code_ptr"/>
<reg name="cpsr" bitsize="32" type="int"/>
</feature>
<feature name="org.gnu.gdb.aarch64.fpu">
<vector id="v2d" type="ieee_double" count="2"/>
<vector id="v2u" type="uint64" count="2"/>
<vector id="v2i" type="int64" count="2"/>
<vector id="v4f" type="ieee_single" count="4"/>
<vector id="v4u" type="uint32" count="4"/>
<vector id="v4i" type="int32" count="4"/>
<vector id="v8u" type="uint16" count="8"/>
<vector id="v8i" type="int16" count="8"/>
<vector id="v16u" type="uint8" count="16"/>
<vector id="v16i" type="int8" count="16"/>
<vector id="v1u" type="uint128" count="1"/>
<vector id="v1i" type="int128" count="1"/>
<union id="vnd"><field name="f" type="v2d"/><field name="u" type="v2u"/><field name="s" type="v2i"/></union>
<union id="vns"><field name="f" type="v4f"/><field name="u" type="v4u"/><field name="s" type="v4i"/></union>
<union id="vnh"><field name="u" type="v8u"/><field name="s" type="v8i"/></union>
<union id="vnb"><field name="u" type="v16u"/><field name="s" type="v16i"/></union>
<union id="vnq"><field name="u" type="v1u"/><field name="s" type="v1i"/></union>
<union id="aarch64v"><field name="d" type="vnd"/><field name="s" type="vns"/><field name="h" type="vnh"/><field name="b" type="vnb"/><field name="q" type="vnq"/></union>
<reg name="v0" bitsize="128" type="aarch64v" regnum="34"/>
<reg name="v1" bitsize="128" type="aarch64v"/>
<reg name="v2" bitsize="128" type="aarch64v"/>
<reg name="v3" bitsize="128" type="aarch64v"/>
<reg name="v4" bitsize="128" type="aarch64v"/>
<reg name="v5" bitsize="128" type="aarch64v"/>
<reg name="v6" bitsize="128" type="aarch64v"/>
<reg name="v7" bitsize="128" type="aarch64v"/>
<reg name="v8" bitsize="128" type="aarch64v"/>
<reg name="v9" bitsize="128" type="aarch64v"/>
<reg name="v10" bitsize="128" type="aarch64v"/>
<reg name="v11" bitsize="128" type="aarch64v"/>
<reg name="v12" bitsize="128" type="aarch64v"/>
<reg name="v13" bitsize="128" type="aarch64v"/>
<reg name="v14" bitsize="128" type="aarch64v"/>
<reg name="v15" bitsize="128" type="aarch64v"/>
<reg name="v16" bitsize="128" type="aarch64v"/>
<reg name="v17" bitsize="128" type="aarch64v"/>
<reg name="v18" bitsize="128" type="aarch64v"/>
<reg name="v19" bitsize="128" type="aarch64v"/>
<reg name="v20" bitsize="128" type="aarch64v"/>
<reg name="v21" bitsize="128" type="aarch64v"/>
<reg name="v22" bitsize="128" type="aarch64v"/>
<reg name="v23" bitsize="128" type="aarch64v"/>
<reg name="v24" bitsize="128" type="aarch64v"/>
<reg name="v25" bitsize="128" type="aarch64v"/>
<reg name="v26" bitsize="128" type="aarch64v"/>
<reg name="v27" bitsize="128" type="aarch64v"/>
<reg name="v28" bitsize="128" type="aarch64v"/>
<reg name="v29" bitsize="128" type="aarch64v"/>
<reg name="v30" bitsize="128" type="aarch64v"/>
<reg name="v31" bitsize="128" type="aarch64v"/>
<reg name="fpsr" bitsize="32" type="int"/>
<reg name="fpcr" bitsize="32" type="int"/>
</feature>
<feature name="org.gnu.gdb.aarch64.tls">
<reg name="tpidr" bitsize="64" type="data_ptr" regnum="68"/>
</feature>
</target>
"#;

/// One thread's registers, in the description's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Regs {
    pub x: [u64; 31],
    pub sp: u64,
    pub pc: u64,
    pub cpsr: u32,
    pub v: [u128; 32],
    pub fpsr: u32,
    pub fpcr: u32,
    pub tpidr: u64,
}

impl Regs {
    /// A guest thread's registers as gdb shows them.
    pub fn from_state(st: &CpuState) -> Regs {
        let mut x = [0u64; 31];
        x.copy_from_slice(&st.x[..31]);
        Regs {
            x,
            sp: st.x[31],
            pc: st.pc,
            cpsr: st.nzcv as u32,
            v: st.v,
            fpsr: st.fpsr as u32,
            fpcr: st.fpcr as u32,
            tpidr: st.tpidr,
        }
    }

    /// Writes what gdb set into a guest thread's registers. Only the flags of CPSR exist
    /// at EL0 (NZCV); the other bits are kept as they were (zero).
    pub fn to_state(&self, st: &mut CpuState) {
        st.x[..31].copy_from_slice(&self.x);
        st.x[31] = self.sp;
        st.pc = self.pc;
        st.nzcv = u64::from(self.cpsr) & 0xf000_0000;
        st.v = self.v;
        st.fpsr = u64::from(self.fpsr);
        st.fpcr = u64::from(self.fpcr);
        st.tpidr = self.tpidr;
    }
}

impl Registers for Regs {
    type ProgramCounter = u64;

    fn pc(&self) -> u64 {
        self.pc
    }

    fn gdb_serialize(&self, mut write_byte: impl FnMut(Option<u8>)) {
        let mut put = |bytes: &[u8]| bytes.iter().for_each(|b| write_byte(Some(*b)));
        for r in &self.x {
            put(&r.to_le_bytes());
        }
        put(&self.sp.to_le_bytes());
        put(&self.pc.to_le_bytes());
        put(&self.cpsr.to_le_bytes());
        for r in &self.v {
            put(&r.to_le_bytes());
        }
        put(&self.fpsr.to_le_bytes());
        put(&self.fpcr.to_le_bytes());
        put(&self.tpidr.to_le_bytes());
    }

    fn gdb_deserialize(&mut self, bytes: &[u8]) -> Result<(), ()> {
        let mut r = Reader(bytes);
        for x in self.x.iter_mut() {
            *x = u64::from_le_bytes(r.take()?);
        }
        self.sp = u64::from_le_bytes(r.take()?);
        self.pc = u64::from_le_bytes(r.take()?);
        self.cpsr = u32::from_le_bytes(r.take()?);
        for v in self.v.iter_mut() {
            *v = u128::from_le_bytes(r.take()?);
        }
        self.fpsr = u32::from_le_bytes(r.take()?);
        self.fpcr = u32::from_le_bytes(r.take()?);
        // an older gdb may send the registers without tpidr
        if let Ok(t) = r.take() {
            self.tpidr = u64::from_le_bytes(t);
        }
        Ok(())
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], ()> {
        if self.0.len() < N {
            return Err(());
        }
        let (head, rest) = self.0.split_at(N);
        self.0 = rest;
        head.try_into().map_err(|_| ())
    }
}

/// gdb's number for Linux signal `sig` (gdb numbers signals its own way: SIGBUS is 10,
/// SIGUSR1 30, SIGCHLD 20).
pub fn gdb_signal(sig: i32) -> gdbstub::common::Signal {
    use gdbstub::common::Signal as G;
    const TABLE: [(i32, G); 30] = [
        (1, G::SIGHUP),
        (2, G::SIGINT),
        (3, G::SIGQUIT),
        (4, G::SIGILL),
        (5, G::SIGTRAP),
        (6, G::SIGABRT),
        (7, G::SIGBUS),
        (8, G::SIGFPE),
        (9, G::SIGKILL),
        (10, G::SIGUSR1),
        (11, G::SIGSEGV),
        (12, G::SIGUSR2),
        (13, G::SIGPIPE),
        (14, G::SIGALRM),
        (15, G::SIGTERM),
        (17, G::SIGCHLD),
        (18, G::SIGCONT),
        (19, G::SIGSTOP),
        (20, G::SIGTSTP),
        (21, G::SIGTTIN),
        (22, G::SIGTTOU),
        (23, G::SIGURG),
        (24, G::SIGXCPU),
        (25, G::SIGXFSZ),
        (26, G::SIGVTALRM),
        (27, G::SIGPROF),
        (28, G::SIGWINCH),
        (29, G::SIGIO),
        (30, G::SIGPWR),
        (31, G::SIGSYS),
    ];
    TABLE
        .iter()
        .find(|(l, _)| *l == sig)
        .map_or(G::SIGKILL, |(_, g)| *g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_round_trip_in_the_description_order() {
        let mut st = CpuState::default();
        for i in 0..32 {
            st.x[i] = 0x1000 + i as u64;
            st.v[i] = (i as u128) << 64 | 7;
        }
        st.pc = 0x40_0000;
        st.nzcv = 0x6000_0000;
        st.fpsr = 0x10;
        st.fpcr = 0x0300_0000;
        st.tpidr = 0xdead_beef;
        let regs = Regs::from_state(&st);
        let mut bytes = Vec::new();
        regs.gdb_serialize(|b| bytes.push(b.unwrap()));
        // 31 x, sp, pc (8 each), cpsr (4), 32 v (16 each), fpsr, fpcr (4 each), tpidr (8)
        assert_eq!(bytes.len(), 33 * 8 + 4 + 32 * 16 + 8 + 8);
        assert_eq!(&bytes[31 * 8..32 * 8], &st.x[31].to_le_bytes());
        assert_eq!(&bytes[32 * 8..33 * 8], &st.pc.to_le_bytes());
        let mut back = Regs::default();
        back.gdb_deserialize(&bytes).unwrap();
        let mut st2 = CpuState::default();
        back.to_state(&mut st2);
        assert_eq!(st2.x[..32], st.x[..32]);
        assert_eq!(
            (st2.pc, st2.nzcv, st2.v, st2.tpidr),
            (st.pc, st.nzcv, st.v, st.tpidr)
        );
        assert!(back.gdb_deserialize(&bytes[..100]).is_err());
    }

    #[test]
    fn signals_take_gdbs_numbers() {
        assert_eq!(gdb_signal(7).0, 10); // SIGBUS
        assert_eq!(gdb_signal(11).0, 11); // SIGSEGV
        assert_eq!(gdb_signal(10).0, 30); // SIGUSR1
    }
}
