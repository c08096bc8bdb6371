//! Quick blocks' loads and stores: general and SIMD&FP registers, single and pair, every
//! addressing mode; DC ZVA; LSE's atomics and CAS. Each looks the page up in the TLB
//! inline; where it misses (or the access crosses a page) a helper makes the access as the
//! interpreter does (`slow::read`, `slow::write`), or the interpreter runs the whole op.

use super::{voff, Block, Slow};
use crate::quick::slow::{Q_TLB_ENTRIES, Q_TLB_MASK, Q_WINDOW_END};
use armada_core::memory::tlb_layout as tl;
use armada_isa::ops::*;
use armada_isa::uop::addr_mode;
use armada_isa::MicroOp;
use dynasmrt::{dynasm, DynamicLabel, DynasmApi, DynasmLabelApi};

/// Whether `op` is one of this module's.
pub(super) fn handles(op: u16) -> bool {
    matches!(
        op,
        LDR_B
            | LDR_H
            | LDR_W
            | LDR_X
            | LDRSB_W
            | LDRSB_X
            | LDRSH_W
            | LDRSH_X
            | LDRSW
            | STR_B
            | STR_H
            | STR_W
            | STR_X
            | LDP_X
            | LDP_W
            | LDPSW
            | STP_X
            | STP_W
            | LDR_V8
            | LDR_V16
            | LDR_V32
            | LDR_V64
            | LDR_V128
            | LDP_V32
            | LDP_V64
            | LDP_V128
            | STR_V8
            | STR_V16
            | STR_V32
            | STR_V64
            | STR_V128
            | STP_V32
            | STP_V64
            | STP_V128
            | DC_ZVA
            | ATOMIC_RMW
            | CAS
    )
}

impl Block {
    /// Op `i`, one of [`handles`]'s.
    pub(super) fn load_store(&mut self, i: usize, u: &MicroOp) {
        let (a, b, d) = (u.a, u.b, u.d);
        match u.op {
            LDR_B | LDR_H | LDR_W | LDR_X | LDRSB_W | LDRSB_X | LDRSH_W | LDRSH_X | LDRSW => {
                let size = match u.op {
                    LDR_B | LDRSB_W | LDRSB_X => 1,
                    LDR_H | LDRSH_W | LDRSH_X => 2,
                    LDR_W | LDRSW => 4,
                    _ => 8,
                };
                self.address(u);
                self.read(i, size);
                match u.op {
                    LDRSB_W => dynasm!(self.a ; .arch x64 ; movsx eax, al),
                    LDRSB_X => dynasm!(self.a ; .arch x64 ; movsx rax, al),
                    LDRSH_W => dynasm!(self.a ; .arch x64 ; movsx eax, ax),
                    LDRSH_X => dynasm!(self.a ; .arch x64 ; movsx rax, ax),
                    LDRSW => dynasm!(self.a ; .arch x64 ; movsxd rax, eax),
                    _ => {}
                }
                self.writeback(u);
                self.store(a, 0);
            }
            STR_B | STR_H | STR_W | STR_X => {
                let size = match u.op {
                    STR_B => 1,
                    STR_H => 2,
                    STR_W => 4,
                    _ => 8,
                };
                self.address(u);
                self.load(15, a);
                self.write(i, size, 0);
                self.writeback(u);
                self.leave_if_code_changed(i);
            }
            LDP_X => {
                self.address(u);
                self.read(i, 16);
                self.writeback(u);
                self.store(a, 0);
                self.store(d, 2);
            }
            LDP_W | LDPSW => {
                self.address(u);
                self.read(i, 4);
                dynasm!(self.a ; .arch x64 ; mov r15, rax ; lea rsi, [r14 + 4]);
                self.read(i, 4);
                self.writeback(u);
                if u.op == LDPSW {
                    dynasm!(self.a ; .arch x64 ; movsxd r15, r15d ; movsxd rax, eax);
                }
                self.store(a, 15);
                self.store(d, 0);
            }
            STP_X => {
                self.address(u);
                self.load(15, a);
                self.write(i, 16, d);
                self.writeback(u);
                self.leave_if_code_changed(i);
            }
            STP_W => {
                self.address(u);
                self.load32(15, a);
                self.load(1, d);
                dynasm!(self.a ; .arch x64 ; shl rcx, 32 ; or r15, rcx);
                self.write(i, 8, 0);
                self.writeback(u);
                self.leave_if_code_changed(i);
            }

            LDR_V8 | LDR_V16 | LDR_V32 | LDR_V64 | LDR_V128 | LDP_V32 | LDP_V64 | LDP_V128
            | STR_V8 | STR_V16 | STR_V32 | STR_V64 | STR_V128 | STP_V32 | STP_V64 | STP_V128 => {
                self.vector_access(i, u)
            }
            DC_ZVA => {
                // the 64 bytes (`cpu::ZVA_BYTES`) of the block at Rt, in one page; where the
                // TLB misses, the interpreter zeroes them
                let at = self.a.new_dynamic_label();
                let back = self.a.new_dynamic_label();
                self.load(6, b);
                dynasm!(self.a ; .arch x64 ; and rsi, -64);
                self.tlb(64, tl::WTAG, at);
                dynasm!(self.a
                    ; .arch x64
                    ; mov rax, QWORD [rax + tl::WPTR]
                    ; add rax, rsi
                    ; xor ecx, ecx
                    ; mov QWORD [rax], rcx
                    ; mov QWORD [rax + 8], rcx
                    ; mov QWORD [rax + 16], rcx
                    ; mov QWORD [rax + 24], rcx
                    ; mov QWORD [rax + 32], rcx
                    ; mov QWORD [rax + 40], rcx
                    ; mov QWORD [rax + 48], rcx
                    ; mov QWORD [rax + 56], rcx
                    ; =>back
                );
                self.slow.push(Slow::One { at, back, i });
            }

            ATOMIC_RMW | CAS => self.atomic(i, u),

            _ => unreachable!("not a load or store: {}", name(u.op)),
        }
    }

    /// The access's address into rsi and r14.
    fn address(&mut self, u: &MicroOp) {
        self.load(6, u.b);
        match u.f {
            addr_mode::OFFSET | addr_mode::PRE => {
                let v = u.imm as i64;
                if v == v as i32 as i64 {
                    if v != 0 {
                        dynasm!(self.a ; .arch x64 ; add rsi, v as i32);
                    }
                } else {
                    self.imm(1, u.imm);
                    dynasm!(self.a ; .arch x64 ; add rsi, rcx);
                }
            }
            addr_mode::POST => {}
            _ => {
                self.load(1, u.c);
                self.extend(u.e >> 3, u.e & 7);
                dynasm!(self.a ; .arch x64 ; add rsi, rcx);
            }
        }
        dynasm!(self.a ; .arch x64 ; mov r14, rsi);
    }

    /// The base register's writeback from r14 (pre- and post-index forms).
    fn writeback(&mut self, u: &MicroOp) {
        match u.f {
            addr_mode::PRE => self.store(u.b, 14),
            addr_mode::POST => {
                self.imm(1, u.imm);
                dynasm!(self.a ; .arch x64 ; add rcx, r14);
                self.store(u.b, 1);
            }
            _ => {}
        }
    }

    /// The TLB entry of the address in rsi into rax, and whether the `size` bytes there
    /// are in the page its tag at `tag` names (the tag compared with the page of the last
    /// byte, so an access crossing pages misses too): jumps to `slow` where not.
    fn tlb(&mut self, size: i32, tag: i32, slow: DynamicLabel) {
        dynasm!(self.a
            ; .arch x64
            ; mov rax, rsi
            ; shr rax, 12
            ; and rax, QWORD [r12 + Q_TLB_MASK]
            ; shl rax, 5
            ; add rax, QWORD [r12 + Q_TLB_ENTRIES]
            ; lea rdx, [rsi + (size - 1)]
            ; and rdx, -4096
            ; cmp rdx, QWORD [rax + tag]
            ; jne =>slow
        );
    }

    /// Reads `size` bytes at rsi into rax (zero-extended; 16: the high half into rdx), for
    /// op `i`: through the guarded window at `rbp` where the blocks use it (see `emit`),
    /// else the TLB's entry. Keeps r13-r15.
    fn read(&mut self, i: usize, size: i32) {
        let at = self.a.new_dynamic_label();
        let back = self.a.new_dynamic_label();
        self.host_base(size, tl::RTAG, tl::RPTR, at, 1);
        let s = self.a.offset().0;
        match size {
            1 => dynasm!(self.a ; .arch x64 ; movzx eax, BYTE [rcx + rsi]),
            2 => dynasm!(self.a ; .arch x64 ; movzx eax, WORD [rcx + rsi]),
            4 => dynasm!(self.a ; .arch x64 ; mov eax, DWORD [rcx + rsi]),
            8 => dynasm!(self.a ; .arch x64 ; mov rax, QWORD [rcx + rsi]),
            _ => dynasm!(self.a
                ; .arch x64
                ; mov rax, QWORD [rcx + rsi]
                ; mov rdx, QWORD [rcx + rsi + 8]
            ),
        }
        self.site(s, at);
        dynasm!(self.a ; .arch x64 ; =>back);
        self.slow.push(Slow::Read { at, back, i, size });
    }

    /// Writes the low `size` bytes of r15 at rsi, for op `i` (16: r15, then the guest
    /// register `hi` above it, as one host store, so that a guest fault on its second page
    /// through the window leaves the first unwritten, as the interpreter's access does).
    fn write(&mut self, i: usize, size: i32, hi: u8) {
        let at = self.a.new_dynamic_label();
        let back = self.a.new_dynamic_label();
        self.host_base(size, tl::WTAG, tl::WPTR, at, 0);
        if size == 16 {
            self.load(1, hi);
            dynasm!(self.a
                ; .arch x64
                ; movq xmm0, r15
                ; movq xmm1, rcx
                ; punpcklqdq xmm0, xmm1
            );
        }
        let s = self.a.offset().0;
        match size {
            1 => dynasm!(self.a ; .arch x64 ; mov BYTE [rax + rsi], r15b),
            2 => dynasm!(self.a ; .arch x64 ; mov WORD [rax + rsi], r15w),
            4 => dynasm!(self.a ; .arch x64 ; mov DWORD [rax + rsi], r15d),
            8 => dynasm!(self.a ; .arch x64 ; mov QWORD [rax + rsi], r15),
            _ => dynasm!(self.a ; .arch x64 ; movdqu [rax + rsi], xmm0),
        }
        self.site(s, at);
        dynasm!(self.a ; .arch x64 ; =>back);
        self.slow.push(Slow::Write {
            at,
            back,
            i,
            size,
            hi,
        });
    }

    /// The base an access of `size` bytes at rsi adds rsi to, into host register `reg` (0:
    /// rax, 1: rcx): the guarded window's (`rbp`), after a compare that sends an address
    /// past the window to `slow`; else the TLB entry's pointer (`tag`, `ptr`: the entry's
    /// read or write fields), where the entry has the page of the access's last byte.
    fn host_base(&mut self, size: i32, tag: i32, ptr: i32, slow: DynamicLabel, reg: u8) {
        if self.window {
            dynasm!(self.a
                ; .arch x64
                ; cmp rsi, QWORD [r12 + Q_WINDOW_END]
                ; jae =>slow
                ; mov Rq(reg), rbp
            );
        } else {
            self.tlb(size, tag, slow);
            dynasm!(self.a ; .arch x64 ; mov Rq(reg), QWORD [rax + ptr]);
        }
    }

    /// LSE's atomic ops and CAS (op `i`): a load, the op and a store at one host address
    /// where the TLB has the page for reading and writing, as the translation tier's (guest
    /// threads run one at a time); else the interpreter runs the op.
    fn atomic(&mut self, i: usize, u: &MicroOp) {
        use armada_isa::ops::atomic_op as op;
        let size = 1i32 << (u.e & 3);
        let at = self.a.new_dynamic_label();
        let back = self.a.new_dynamic_label();
        self.load(6, u.b);
        self.tlb(size, tl::WTAG, at);
        // (`tlb` leaves the page of the last byte in rdx)
        dynasm!(self.a
            ; .arch x64
            ; cmp rdx, QWORD [rax + tl::RTAG]
            ; jne =>at
            ; mov r8, QWORD [rax + tl::WPTR]
            ; add r8, rsi
        );
        // the old value into rax and the operand into rcx, zero-extended from the size
        match size {
            1 => dynasm!(self.a ; .arch x64 ; movzx eax, BYTE [r8]),
            2 => dynasm!(self.a ; .arch x64 ; movzx eax, WORD [r8]),
            4 => dynasm!(self.a ; .arch x64 ; mov eax, DWORD [r8]),
            _ => dynasm!(self.a ; .arch x64 ; mov rax, QWORD [r8]),
        }
        self.load(1, u.c);
        match size {
            1 => dynasm!(self.a ; .arch x64 ; movzx ecx, cl),
            2 => dynasm!(self.a ; .arch x64 ; movzx ecx, cx),
            4 => dynasm!(self.a ; .arch x64 ; mov ecx, ecx),
            _ => {}
        }
        // the new value into rdx
        if u.op == CAS {
            self.load(2, u.a);
            dynasm!(self.a ; .arch x64 ; cmp rax, rcx ; cmovne rdx, rax);
        } else {
            dynasm!(self.a ; .arch x64 ; mov rdx, rax);
            match u.f {
                op::ADD => dynasm!(self.a ; .arch x64 ; add rdx, rcx),
                op::CLR => dynasm!(self.a ; .arch x64 ; mov r9, rcx ; not r9 ; and rdx, r9),
                op::EOR => dynasm!(self.a ; .arch x64 ; xor rdx, rcx),
                op::SET => dynasm!(self.a ; .arch x64 ; or rdx, rcx),
                op::SMAX | op::SMIN => {
                    match size {
                        1 => dynasm!(self.a ; .arch x64 ; movsx r9, al ; movsx r10, cl),
                        2 => dynasm!(self.a ; .arch x64 ; movsx r9, ax ; movsx r10, cx),
                        4 => dynasm!(self.a ; .arch x64 ; movsxd r9, eax ; movsxd r10, ecx),
                        _ => dynasm!(self.a ; .arch x64 ; mov r9, rax ; mov r10, rcx),
                    }
                    dynasm!(self.a ; .arch x64 ; cmp r9, r10);
                    if u.f == op::SMAX {
                        dynasm!(self.a ; .arch x64 ; cmovl rdx, rcx);
                    } else {
                        dynasm!(self.a ; .arch x64 ; cmovg rdx, rcx);
                    }
                }
                op::UMAX => dynasm!(self.a ; .arch x64 ; cmp rax, rcx ; cmovb rdx, rcx),
                op::UMIN => dynasm!(self.a ; .arch x64 ; cmp rax, rcx ; cmova rdx, rcx),
                _ => dynasm!(self.a ; .arch x64 ; mov rdx, rcx),
            }
        }
        match size {
            1 => dynasm!(self.a ; .arch x64 ; mov BYTE [r8], dl),
            2 => dynasm!(self.a ; .arch x64 ; mov WORD [r8], dx),
            4 => dynasm!(self.a ; .arch x64 ; mov DWORD [r8], edx),
            _ => dynasm!(self.a ; .arch x64 ; mov QWORD [r8], rdx),
        }
        self.store(if u.op == CAS { u.d } else { u.a }, 0);
        dynasm!(self.a ; .arch x64 ; =>back);
        self.slow.push(Slow::One { at, back, i });
    }

    /// LDR, STR, LDP and STP of B, H, S, D and Q registers (op `i`): the whole access
    /// (both of a pair) in one page the TLB has, or through the guarded window (see
    /// `read`), through the host's SSE registers for Q; else the interpreter runs the op
    /// (it writes no register before every access succeeded, and a store into decoded code
    /// leaves from there). A store is one host store, or two within one page (a 32-byte
    /// pair through the window checks that first), so that a guest fault on its second
    /// page never leaves its first part written.
    fn vector_access(&mut self, i: usize, u: &MicroOp) {
        let (size, pair, load) = match u.op {
            LDR_V8 => (1, false, true),
            LDR_V16 => (2, false, true),
            LDR_V32 => (4, false, true),
            LDR_V64 => (8, false, true),
            LDR_V128 => (16, false, true),
            LDP_V32 => (4, true, true),
            LDP_V64 => (8, true, true),
            LDP_V128 => (16, true, true),
            STR_V8 => (1, false, false),
            STR_V16 => (2, false, false),
            STR_V32 => (4, false, false),
            STR_V64 => (8, false, false),
            STR_V128 => (16, false, false),
            STP_V32 => (4, true, false),
            STP_V64 => (8, true, false),
            _ => (16, true, false),
        };
        let (va, vd) = (voff(u.a), voff(u.d));
        let at = self.a.new_dynamic_label();
        let back = self.a.new_dynamic_label();
        self.address(u);
        let total = if pair { 2 * size } else { size };
        // the host address: rcx for a load, rax for a store
        if self.window {
            dynasm!(self.a ; .arch x64 ; cmp rsi, QWORD [r12 + Q_WINDOW_END] ; jae =>at);
            if load {
                dynasm!(self.a ; .arch x64 ; lea rcx, [rbp + rsi]);
            } else {
                if total == 32 {
                    dynasm!(self.a
                        ; .arch x64
                        ; mov eax, esi ; and eax, 0xfff ; cmp eax, 4096 - 32 ; ja =>at
                    );
                }
                dynasm!(self.a ; .arch x64 ; lea rax, [rbp + rsi]);
            }
        } else if load {
            self.tlb(total, tl::RTAG, at);
            dynasm!(self.a ; .arch x64 ; mov rcx, QWORD [rax + tl::RPTR] ; add rcx, rsi);
        } else {
            self.tlb(total, tl::WTAG, at);
            dynasm!(self.a ; .arch x64 ; mov rax, QWORD [rax + tl::WPTR] ; add rax, rsi);
        }
        if load {
            // the first register into rax (xmm0 for Q), the second into rdx (xmm1)
            let s = self.a.offset().0;
            match (size, pair) {
                (1, _) => dynasm!(self.a ; .arch x64 ; movzx eax, BYTE [rcx]),
                (2, _) => dynasm!(self.a ; .arch x64 ; movzx eax, WORD [rcx]),
                (4, false) => dynasm!(self.a ; .arch x64 ; mov eax, DWORD [rcx]),
                (8, false) => dynasm!(self.a ; .arch x64 ; mov rax, QWORD [rcx]),
                (4, true) => {
                    dynasm!(self.a ; .arch x64 ; mov eax, DWORD [rcx] ; mov edx, DWORD [rcx + 4])
                }
                (8, true) => {
                    dynasm!(self.a ; .arch x64 ; mov rax, QWORD [rcx] ; mov rdx, QWORD [rcx + 8])
                }
                (_, false) => dynasm!(self.a ; .arch x64 ; movdqu xmm0, [rcx]),
                (_, true) => {
                    dynasm!(self.a ; .arch x64 ; movdqu xmm0, [rcx] ; movdqu xmm1, [rcx + 16])
                }
            }
            self.site(s, at);
            self.writeback(u);
            // Vt, then Vt2 (the interpreter's order, where they are the same register);
            // the bytes above the access are zero
            if size == 16 {
                dynasm!(self.a ; .arch x64 ; movdqu [rbx + va], xmm0);
                if pair {
                    dynasm!(self.a ; .arch x64 ; movdqu [rbx + vd], xmm1);
                }
            } else {
                dynasm!(self.a ; .arch x64 ; mov QWORD [rbx + va], rax ; mov QWORD [rbx + va + 8], 0);
                if pair {
                    dynasm!(self.a ; .arch x64 ; mov QWORD [rbx + vd], rdx ; mov QWORD [rbx + vd + 8], 0);
                }
            }
        } else {
            // the value into rcx, or xmm0 (and xmm1 for a pair of Q)
            match (size, pair) {
                (1, _) => dynasm!(self.a ; .arch x64 ; movzx ecx, BYTE [rbx + va]),
                (2, _) => dynasm!(self.a ; .arch x64 ; movzx ecx, WORD [rbx + va]),
                (4, false) => dynasm!(self.a ; .arch x64 ; mov ecx, DWORD [rbx + va]),
                (8, false) => dynasm!(self.a ; .arch x64 ; mov rcx, QWORD [rbx + va]),
                (4, true) => dynasm!(self.a
                    ; .arch x64
                    ; mov ecx, DWORD [rbx + va] ; mov edx, DWORD [rbx + vd]
                    ; shl rdx, 32 ; or rcx, rdx
                ),
                (8, true) => dynasm!(self.a
                    ; .arch x64
                    ; movq xmm0, QWORD [rbx + va] ; movq xmm1, QWORD [rbx + vd]
                    ; punpcklqdq xmm0, xmm1
                ),
                (_, false) => dynasm!(self.a ; .arch x64 ; movdqu xmm0, [rbx + va]),
                (_, true) => dynasm!(self.a
                    ; .arch x64
                    ; movdqu xmm0, [rbx + va] ; movdqu xmm1, [rbx + vd]
                ),
            }
            let s = self.a.offset().0;
            match (size, pair) {
                (1, _) => dynasm!(self.a ; .arch x64 ; mov BYTE [rax], cl),
                (2, _) => dynasm!(self.a ; .arch x64 ; mov WORD [rax], cx),
                (4, false) => dynasm!(self.a ; .arch x64 ; mov DWORD [rax], ecx),
                (8, false) | (4, true) => dynasm!(self.a ; .arch x64 ; mov QWORD [rax], rcx),
                (_, false) | (8, true) => dynasm!(self.a ; .arch x64 ; movdqu [rax], xmm0),
                (_, true) => dynasm!(self.a
                    ; .arch x64
                    ; movdqu [rax], xmm0 ; movdqu [rax + 16], xmm1
                ),
            }
            self.site(s, at);
            self.writeback(u);
        }
        dynasm!(self.a ; .arch x64 ; =>back);
        self.slow.push(Slow::One { at, back, i });
    }

    /// Where blocks use the guarded window: the host accesses from offset `s` to here are
    /// a guarded access's, whose slow path is `at` (`emit::Made::sites`).
    fn site(&mut self, s: usize, at: DynamicLabel) {
        if self.window {
            self.sites.push((s, self.a.offset().0, at));
        }
    }
}
