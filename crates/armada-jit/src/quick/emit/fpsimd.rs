//! Quick blocks' FP and AdvSIMD ops: templates for the moves between the register files
//! and immediates (MOVI, DUP from a general register, UMOV) and for FCMP on the host's
//! compare; every other op of the `FP_BASE` range calls the interpreter's FP code with the
//! op itself (`slow::fp`: no lookup or decoding, as the one-op path makes).

use super::{voff, Block, Slow, BIAS, NZCV};
use armada_core::cpu::fp::HOST_FPCR_MASK;
use armada_core::state::CpuState;
use armada_isa::ops::*;
use armada_isa::MicroOp;
use dynasmrt::{dynasm, DynasmApi, DynasmLabelApi};
use std::mem::offset_of;

const FPCR: i32 = offset_of!(CpuState, fpcr) as i32 - BIAS;

/// The low `2^f` bytes of a vector register (`f` 4: all of it), as the interpreter masks a
/// result.
fn datamask(f: u8) -> u128 {
    if f >= 4 {
        u128::MAX
    } else {
        (1u128 << (8u32 << f)) - 1
    }
}

impl Block {
    /// Op `i` of the `FP_BASE` range.
    pub(super) fn fp_simd(&mut self, i: usize, u: &MicroOp) {
        match u.op {
            V_MOVI => {
                let v = if u.f >= 4 {
                    u.imm as u128 | (u.imm as u128) << 64
                } else {
                    u.imm as u128 & datamask(u.f)
                };
                self.set_v(u.a, v as u64, (v >> 64) as u64);
            }
            V_DUP_GEN if u.e <= 3 && u.f >= u.e => self.dup_general(u),
            V_UMOV if u.e <= 3 => {
                let at = voff(u.b) + ((u.imm as i32 & ((16 >> u.e) - 1)) << u.e);
                match u.e {
                    0 => dynasm!(self.a ; .arch x64 ; movzx eax, BYTE [rbx + at]),
                    1 => dynasm!(self.a ; .arch x64 ; movzx eax, WORD [rbx + at]),
                    2 => dynasm!(self.a ; .arch x64 ; mov eax, DWORD [rbx + at]),
                    _ => dynasm!(self.a ; .arch x64 ; mov rax, QWORD [rbx + at]),
                }
                self.store(u.a, 0);
            }
            F_CMP if matches!(u.e, 2 | 3) => self.fcmp(u),
            _ => self.fp_call(i, u),
        }
    }

    /// Vector register `r` = `lo`, `hi` (constants).
    fn set_v(&mut self, r: u8, lo: u64, hi: u64) {
        let at = voff(r);
        for (half, v) in [(0, lo), (8, hi)] {
            if v as i64 == v as i32 as i64 {
                dynasm!(self.a ; .arch x64 ; mov QWORD [rbx + at + half], v as i32);
            } else {
                dynasm!(self.a ; .arch x64 ; mov rax, QWORD v as i64 ; mov QWORD [rbx + at + half], rax);
            }
        }
    }

    /// DUP (general) and FMOV (general) to H, S or D: Rn's low element in every element of
    /// the `2^f` bytes of Vd (a multiply by 0x01..01 spreads a byte or a halfword over 64
    /// bits), the rest zero.
    fn dup_general(&mut self, u: &MicroOp) {
        self.load(0, u.b);
        match u.e {
            0 => dynasm!(self.a
                ; .arch x64
                ; movzx eax, al
                ; mov rcx, QWORD 0x0101_0101_0101_0101
                ; imul rax, rcx
            ),
            1 => dynasm!(self.a
                ; .arch x64
                ; movzx eax, ax
                ; mov rcx, QWORD 0x0001_0001_0001_0001
                ; imul rax, rcx
            ),
            2 => {
                dynasm!(self.a ; .arch x64 ; mov eax, eax ; mov rcx, rax ; shl rcx, 32 ; or rax, rcx)
            }
            _ => {}
        }
        match u.f {
            0 => dynasm!(self.a ; .arch x64 ; movzx eax, al),
            1 => dynasm!(self.a ; .arch x64 ; movzx eax, ax),
            2 => dynasm!(self.a ; .arch x64 ; mov eax, eax),
            _ => {}
        }
        let va = voff(u.a);
        dynasm!(self.a ; .arch x64 ; mov QWORD [rbx + va], rax);
        if u.f >= 4 {
            dynasm!(self.a ; .arch x64 ; mov QWORD [rbx + va + 8], rax);
        } else {
            dynasm!(self.a ; .arch x64 ; mov QWORD [rbx + va + 8], 0);
        }
    }

    /// FCMP and FCMPE of singles and doubles: the host's `ucomis` where FPCR is on the
    /// host's path (`HOST_FPCR_MASK` clear: no flush of subnormal inputs) and neither
    /// operand is a NaN, so no exception is possible; else (a NaN: Invalid Operation for
    /// a signalling one or for FCMPE) the interpreter's FP code.
    fn fcmp(&mut self, u: &MicroOp) {
        let at = self.a.new_dynamic_label();
        let back = self.a.new_dynamic_label();
        let (vb, vc) = (voff(u.b), voff(u.c));
        let zero = u.d & fcmp::ZERO != 0;
        dynasm!(self.a ; .arch x64 ; test DWORD [rbx + FPCR], HOST_FPCR_MASK as i32 ; jnz =>at);
        match (u.e, zero) {
            (3, true) => {
                dynasm!(self.a ; .arch x64 ; movsd xmm0, QWORD [rbx + vb] ; xorpd xmm1, xmm1 ; ucomisd xmm0, xmm1)
            }
            (3, false) => {
                dynasm!(self.a ; .arch x64 ; movsd xmm0, QWORD [rbx + vb] ; ucomisd xmm0, QWORD [rbx + vc])
            }
            (_, true) => {
                dynasm!(self.a ; .arch x64 ; movss xmm0, DWORD [rbx + vb] ; xorps xmm1, xmm1 ; ucomiss xmm0, xmm1)
            }
            (_, false) => {
                dynasm!(self.a ; .arch x64 ; movss xmm0, DWORD [rbx + vb] ; ucomiss xmm0, DWORD [rbx + vc])
            }
        }
        // unordered: PF; then greater 0010, equal 0110 (ZF), less 1000 (CF)
        dynasm!(self.a
            ; .arch x64
            ; jp =>at
            ; mov eax, 0b0010 << 28
            ; mov ecx, 0b0110 << 28
            ; cmove eax, ecx
            ; mov ecx, (0b1000u32 << 28) as i32
            ; cmovb eax, ecx
            ; mov DWORD [rbx + NZCV], eax
            ; =>back
        );
        self.slow.push(Slow::Fp {
            at,
            back,
            word: u.fields_word(),
            imm: u.imm,
        });
    }

    /// The op through the interpreter's FP code (`slow::fp`). Only structure loads and
    /// stores touch memory: they store the PC and count first, for a fault, and leave
    /// after a store into decoded code.
    fn fp_call(&mut self, i: usize, u: &MicroOp) {
        let mem = matches!(
            u.op,
            V_LD_MULTI | V_ST_MULTI | V_LD_SINGLE | V_ST_SINGLE | V_LD_REPL
        );
        if super::super::tracing() {
            let n = &super::super::FALLBACKS[u.op as usize & 0x7ff] as *const _ as i64;
            dynasm!(self.a ; .arch x64 ; mov rax, QWORD n ; inc QWORD [rax]);
        }
        if mem {
            self.sync(i);
        }
        self.call_fp(u.fields_word(), u.imm);
        if mem {
            self.leave_if_code_changed(i);
        }
    }

    /// Calls `slow::fp` with the op's two words.
    pub(super) fn call_fp(&mut self, word: u64, imm: u64) {
        dynasm!(self.a
            ; .arch x64
            ; mov rdi, r12
            ; mov rsi, QWORD word as i64
            ; mov rdx, QWORD imm as i64
        );
        self.call(self.stubs.fp);
    }
}
