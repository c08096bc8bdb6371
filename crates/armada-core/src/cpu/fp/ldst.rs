//! AdvSIMD structure loads and stores: LD1-LD4 / ST1-LD4 (multiple structures and single
//! structure) and LD1R-LD4R, with post-index write-back.
//!
//! Loads read every element before any register changes, so a faulting load leaves the
//! registers as they were; stores write element by element in the manual's order. The base
//! register is written back only after every access succeeded.

use super::lanes::{broadcast, datamask, set};
use crate::memory::{AddressSpace, Fault};
use crate::state::CpuState;
use armada_isa::ops::*;
use armada_isa::MicroOp;

fn load(mem: &mut AddressSpace, addr: u64, e: u8) -> Result<u64, Fault> {
    Ok(match e {
        0 => mem.read_u8(addr)? as u64,
        1 => mem.read_u16(addr)? as u64,
        2 => mem.read_u32(addr)? as u64,
        _ => mem.read_u64(addr)?,
    })
}

fn store(mem: &mut AddressSpace, addr: u64, e: u8, x: u64) -> Result<(), Fault> {
    match e {
        0 => mem.write_u8(addr, x as u8),
        1 => mem.write_u16(addr, x as u16),
        2 => mem.write_u32(addr, x as u32),
        _ => mem.write_u64(addr, x),
    }
}

pub(super) fn exec(st: &mut CpuState, mem: &mut AddressSpace, u: &MicroOp) -> Result<(), Fault> {
    let t = u.a as usize;
    let base = st.x[u.b as usize];
    let e = u.e;
    let eb = 1u64 << e;
    let selem = (u.d & 7) as usize;
    match u.op {
        V_LD_MULTI | V_ST_MULTI => {
            let rpt = ((u.d >> 3) & 7) as usize;
            let cnt = (1usize << u.f) >> e;
            let regs = rpt * selem;
            let mut addr = base;
            if u.op == V_LD_MULTI {
                let mut vals = [0u128; 4];
                for r in 0..rpt {
                    for i in 0..cnt {
                        for s in 0..selem {
                            set(&mut vals[r + s], e, i, load(mem, addr, e)?);
                            addr = addr.wrapping_add(eb);
                        }
                    }
                }
                for (k, v) in vals.iter().enumerate().take(regs) {
                    st.v[(t + k) % 32] = *v;
                }
            } else {
                for r in 0..rpt {
                    for i in 0..cnt {
                        for s in 0..selem {
                            let x = super::lanes::get(st.v[(t + r + s) % 32], e, i);
                            store(mem, addr, e, x)?;
                            addr = addr.wrapping_add(eb);
                        }
                    }
                }
            }
        }
        V_LD_SINGLE => {
            let mut vals = [0u64; 4];
            for (s, v) in vals.iter_mut().enumerate().take(selem) {
                *v = load(mem, base.wrapping_add(s as u64 * eb), e)?;
            }
            for (s, v) in vals.iter().enumerate().take(selem) {
                set(&mut st.v[(t + s) % 32], e, u.f as usize, *v);
            }
        }
        V_ST_SINGLE => {
            for s in 0..selem {
                let x = super::lanes::get(st.v[(t + s) % 32], e, u.f as usize);
                store(mem, base.wrapping_add(s as u64 * eb), e, x)?;
            }
        }
        _ => {
            // V_LD_REPL
            let mut vals = [0u64; 4];
            for (s, v) in vals.iter_mut().enumerate().take(selem) {
                *v = load(mem, base.wrapping_add(s as u64 * eb), e)?;
            }
            for (s, v) in vals.iter().enumerate().take(selem) {
                st.v[(t + s) % 32] = broadcast(*v, e) & datamask(u.f);
            }
        }
    }
    if u.d & LDST_WB != 0 {
        let off = st.x[u.c as usize].wrapping_add(u.imm);
        st.x[u.b as usize] = base.wrapping_add(off);
    }
    Ok(())
}
