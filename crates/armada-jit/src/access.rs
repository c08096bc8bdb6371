//! Loads and stores: the TLB lookup `AddressSpace::read`/`write` make, inline, and the
//! helpers on a miss. Each op makes the same accesses, of the same sizes and in the same
//! order, as the interpreter, so a fault is reported at the same address; registers are
//! written only once every access has succeeded.

use crate::helpers::{
    exit, CTX_FAULT, CTX_STATUS, CTX_TLB_ENTRIES, CTX_TLB_UNINDEXED, CTX_WINDOW, STOPPED,
};
use crate::translate::{guest_mem, Tx, V_OFF};
use armada_core::memory::tlb_layout as tl;
use armada_isa::uop::addr_mode;
use armada_isa::{ops::*, MicroOp};
use cranelift_codegen::ir::{
    condcodes::IntCC,
    types::{I16, I32, I64, I8},
    Block, BlockArg, InstBuilder, MemFlagsData, Value,
};

/// The context's window (see `Tx::window`). Not `can_move`: Cranelift places a movable
/// load at each of its uses again, each in a block of its own that does not dominate the
/// next.
pub(crate) fn load_window(b: &mut cranelift_frontend::FunctionBuilder, ctx: Value) -> Value {
    b.ins().load(
        I64,
        MemFlagsData::trusted().with_readonly(),
        ctx,
        CTX_WINDOW,
    )
}

/// The blocks of a write's slow path (see `Tx::write_slow`).
struct WriteSlow {
    slow: Block,
    done: Block,
    view: bool,
}

/// Memory flags for a guarded access (see `guard`): it may fault on the host, so Cranelift
/// keeps it where it is and never drops it.
fn guarded_mem() -> MemFlagsData {
    MemFlagsData::new()
}

impl Tx<'_> {
    fn ea(&mut self, u: &MicroOp) -> Value {
        let base = self.rd(u.b);
        match u.f {
            addr_mode::OFFSET | addr_mode::PRE => self.b.ins().iadd_imm_s(base, u.imm as i64),
            addr_mode::POST => base,
            _ => {
                let c = self.rd(u.c);
                let off = self.extend(c, u.e >> 3, u.e & 7);
                self.b.ins().iadd(base, off)
            }
        }
    }

    fn writeback(&mut self, u: &MicroOp, addr: Value) {
        if let Some((r, v)) = self.writeback_value(u, addr) {
            self.wr(r, v);
        }
    }

    /// The base register `u` writes back, and its value.
    fn writeback_value(&mut self, u: &MicroOp, addr: Value) -> Option<(u8, Value)> {
        match u.f {
            addr_mode::PRE => Some((u.b, addr)),
            addr_mode::POST => Some((u.b, self.b.ins().iadd_imm_s(addr, u.imm as i64))),
            _ => None,
        }
    }

    /// The TLB's entries pointer and the complement of its index bits (see `Ctx`): loaded
    /// from the context at a block's first access and kept through the block. Every way
    /// back from a helper loads them again (a miss's fill may grow the table), so two
    /// loads an access became two a block.
    pub(crate) fn tlb_view(&mut self) -> (Value, Value) {
        if let Some(view) = self.tlb {
            return view;
        }
        if let Some(view) = self.loop_tlb() {
            self.tlb = Some(view);
            return view;
        }
        let flags = MemFlagsData::trusted();
        let c = self.ctx();
        let entries = self.b.ins().load(I64, flags, c, CTX_TLB_ENTRIES);
        let unindexed = self.b.ins().load(I64, flags, c, CTX_TLB_UNINDEXED);
        self.tlb = Some((entries, unindexed));
        (entries, unindexed)
    }

    /// Adds the TLB view to `block`'s parameters, for a merge after a helper: the helper's
    /// way in passes the view it loads again ([`Self::view_args`]), the other the kept one.
    fn view_params(&mut self, block: Block) -> (Value, Value) {
        let e = self.b.append_block_param(block, I64);
        let m = self.b.append_block_param(block, I64);
        (e, m)
    }

    /// The TLB view as arguments of a jump from a helper's way back (loaded again when the
    /// helper forgot it) or from a path without one.
    fn view_args(&mut self) -> [BlockArg; 2] {
        let (e, m) = self.tlb_view();
        [e.into(), m.into()]
    }

    /// The TLB entry for `addr`, and whether its tag at `tag_off` says that the `size` bytes
    /// there are all in its page. The tag is compared with the page of the access's last
    /// byte (the entry being the first byte's): one compare finds both a miss and an access
    /// that crosses into the next page, as qemu's TLB check does.
    ///
    /// Nothing here is shared with another access to the same address: the index is of
    /// this access's view (a value of its own after every access's merge), and the page
    /// is a mask by a constant, which Cranelift computes again in each block that uses it.
    /// A shift of the address was computed once and kept for the next access to it, and
    /// in long blocks the register allocator spilled it to the stack between the two.
    fn tlb_hit(&mut self, addr: Value, size: i64, tag_off: i32) -> (Value, Value) {
        let flags = MemFlagsData::trusted();
        let (entries, unindexed) = self.tlb_view();
        // `addr & !unindexed`: BMI1's `andn`, which leaves `addr` in its register
        let indexed = self.b.ins().bnot(unindexed);
        let bits = self.b.ins().band(addr, indexed);
        let off = self
            .b
            .ins()
            .ushr_imm_s(bits, 12 - tl::ENTRY_BYTES.trailing_zeros() as i64);
        let e = self.b.ins().iadd(entries, off);
        let tag = self.b.ins().load(I64, flags, e, tag_off);
        let end = if size > 1 {
            self.b.ins().iadd_imm_s(addr, size - 1)
        } else {
            addr
        };
        let page = self.b.ins().band_imm_s(end, !0xfff);
        let hit = self.b.ins().icmp(IntCC::Equal, tag, page);
        (e, hit)
    }

    /// The host address of guest `addr` in the page whose TLB entry `e` hit: the address
    /// plus the entry's pointer at `ptr_off` (the page's buffer less its guest address).
    fn host_addr(&mut self, e: Value, addr: Value, ptr_off: i32) -> Value {
        let base = self.b.ins().load(I64, MemFlagsData::trusted(), e, ptr_off);
        self.b.ins().iadd(addr, base)
    }

    /// Reads `size` bytes (1, 2, 4, 8: one i64, zero-extended; 16: two) at `addr` for the
    /// op at `slot`, leaving the unit if the read faults.
    ///
    /// On a miss the helper makes the read into the context's buffer and returns the
    /// buffer's bias (see `helpers::read`), and the loads below read from there: a miss
    /// rejoins the hit's path before the loads, so there is no merge of the loaded values
    /// (a block and a move for each load) and one load of each size.
    pub(crate) fn read(&mut self, slot: usize, addr: Value, size: i64) -> (Value, Option<Value>) {
        if self.guarded {
            return self.read_guarded(slot, addr, size);
        }
        let (e, hit) = self.tlb_hit(addr, size, tl::RTAG);
        // Without windows, the entry's pointer: in the tag's cache line, and harmless to
        // load on a miss.
        let windows = armada_core::memory::windows_possible();
        let bias = (!windows).then(|| self.b.ins().load(I64, MemFlagsData::trusted(), e, tl::RPTR));
        // Every way into `fast` is a jump from a block of its own: a branch with the
        // bias on one edge was a critical edge, whose block of moves Cranelift placed
        // between the hit and `fast`, so every hit jumped over it.
        let hit_way = self.b.create_block();
        let slow = self.b.create_block();
        let fast = self.b.create_block();
        let at = self.b.append_block_param(fast, I64);
        let view = self.view_params(fast);
        self.b.set_cold_block(slow);
        self.b.ins().brif(hit, hit_way, &[], slow, &[]);
        self.b.switch_to_block(hit_way);
        if let Some(bias) = bias {
            let [e, m] = self.view_args();
            self.b.ins().jump(fast, &[bias.into(), e, m]);
        } else {
            // The window's base, where the address space has one (`memory::window`): the
            // load then waits only for the address, not for the entry's pointer. The
            // branch on it goes the same way every time for a lane.
            let ctx = self.ctx();
            let win = self
                .b
                .ins()
                .load(I64, MemFlagsData::trusted(), ctx, CTX_WINDOW);
            let in_window = self.b.create_block();
            let by_entry = self.b.create_block();
            self.b.set_cold_block(by_entry);
            self.b.ins().brif(win, in_window, &[], by_entry, &[]);
            self.b.switch_to_block(in_window);
            let [ve, vm] = self.view_args();
            self.b.ins().jump(fast, &[win.into(), ve, vm]);
            self.b.switch_to_block(by_entry);
            let bias = self.b.ins().load(I64, MemFlagsData::trusted(), e, tl::RPTR);
            let [ve, vm] = self.view_args();
            self.b.ins().jump(fast, &[bias.into(), ve, vm]);
        }

        self.b.switch_to_block(slow);
        let bias = self.read_helper(slot, addr, size);
        let [e, m] = self.view_args();
        self.b.ins().jump(fast, &[bias.into(), e, m]);

        self.b.switch_to_block(fast);
        self.tlb = Some(view);
        let p = self.b.ins().iadd(addr, at);
        self.loads(p, size, guest_mem())
    }

    /// Writes `size` bytes of `lo` (and `hi`, the upper 8 of 16) at `addr` for the op `u`
    /// at `slot`, leaving the unit if the write faults (before the op) or wrote decoded
    /// code (after it: with `u`'s base register written back, as the rest of the op would).
    fn write(
        &mut self,
        slot: usize,
        u: &MicroOp,
        addr: Value,
        size: i64,
        lo: Value,
        hi: Option<Value>,
    ) {
        if self.guarded {
            return self.write_guarded(slot, u, addr, size, lo, hi);
        }
        let (e, hit) = self.tlb_hit(addr, size, tl::WTAG);
        let fast = self.b.create_block();
        let slow = self.b.create_block();
        let done = self.b.create_block();
        let view = self.view_params(done);
        self.b.set_cold_block(slow);
        self.b.ins().brif(hit, fast, &[], slow, &[]);

        self.b.switch_to_block(fast);
        let p = self.host_addr(e, addr, tl::WPTR);
        self.stores(p, size, lo, hi, guest_mem());
        let args = self.view_args();
        self.b.ins().jump(done, &args);

        let to = WriteSlow {
            slow,
            done,
            view: true,
        };
        self.write_slow(to, slot, u, addr, size, lo, hi);
        self.b.switch_to_block(done);
        self.tlb = Some(view);
    }

    /// Fills a write's slow path: the helper's write, then on to `done` (with the TLB's
    /// view where `view`) or, where the helper stopped or wrote into decoded code, out of
    /// the unit (the rest of the unit may be stale).
    #[allow(clippy::too_many_arguments)]
    fn write_slow(
        &mut self,
        to: WriteSlow,
        slot: usize,
        u: &MicroOp,
        addr: Value,
        size: i64,
        lo: Value,
        hi: Option<Value>,
    ) {
        let WriteSlow { slow, done, view } = to;
        let failed = self.b.create_block();
        self.b.set_cold_block(failed);
        self.b.switch_to_block(slow);
        let ctx = self.ctx();
        let n = self.b.ins().iconst(I64, size);
        let h = hi.unwrap_or(lo);
        let status = self.call(self.h.write, &[ctx, addr, n, lo, h])[0];
        // (to `done` by a jump of its own: see `read`)
        let written = self.b.create_block();
        self.b.set_cold_block(written);
        self.b.ins().brif(status, failed, &[], written, &[]);
        self.b.switch_to_block(written);
        let args = if view {
            self.view_args().to_vec()
        } else {
            Vec::new()
        };
        self.b.ins().jump(done, &args);

        self.b.switch_to_block(failed);
        let stopped = self
            .b
            .ins()
            .icmp_imm_u(IntCC::Equal, status, STOPPED as i64);
        self.leave_if(stopped, slot, exit::STOP, false);
        let wb = self.writeback_value(u, addr).filter(|&(r, _)| r < 32);
        let next = self.pc(slot + 1) as i64;
        let pc = self.b.ins().iconst(I64, next);
        let r = self.retired_at(slot + 1);
        self.leave_with(wb, pc, r, exit::NEXT);
    }

    /// The guarded window's base (see `guard`): the same for the whole unit.
    ///
    /// Loaded once a block (at its first access, before that access's branches) and kept
    /// in a variable: loaded at each access, as the atomic load of the fault word after
    /// each access kept Cranelift from reusing the last load, an access was two loads of
    /// the context. Every definition of the variable is the same value (the context's
    /// window does not change while a unit runs, see `helpers::sync_tlb`), and the unit's
    /// first block defines it too, so whatever definition a use finds is right.
    fn window(&mut self) -> Value {
        let var = self
            .win
            .expect("a unit for guarded windows has the window's variable");
        if self.win_here {
            return self.b.use_var(var);
        }
        let ctx = self.ctx();
        let w = load_window(&mut self.b, ctx);
        self.b.def_var(var, w);
        self.win_here = true;
        w
    }

    /// After a guarded access: to `slow` where it faulted in the guest (the handler set
    /// the context's fault word), else on to `cont` with `args`. The word is loaded as an
    /// atomic load so that Cranelift neither takes one access's load of it for the next's
    /// nor moves the access's own load or store past it.
    ///
    /// At an exact site (`exact`, see `guard`) there is nothing to test: on to `cont`.
    fn guard_check(&mut self, exact: bool, slow: Block, cont: Block, args: &[Value]) {
        if exact {
            let args: Vec<BlockArg> = args.iter().map(|&v| v.into()).collect();
            self.b.ins().jump(cont, &args);
            return;
        }
        let ctx = self.ctx();
        let at = self.b.ins().iadd_imm_s(ctx, CTX_FAULT as i64);
        let f = self.b.ins().atomic_load(I64, MemFlagsData::trusted(), at);
        let args: Vec<BlockArg> = args.iter().map(|&v| v.into()).collect();
        self.b.ins().brif(f, slow, &[], cont, &args);
    }

    /// To `slow` where the `size` bytes at `addr` cross into the next page: the parts of a
    /// guarded write of more than 8 bytes are host stores of their own, and one that
    /// faulted after another had written would leave half a write.
    fn guard_one_page(&mut self, addr: Value, size: i64, slow: Block) {
        let off = self.b.ins().band_imm_s(addr, 0xfff);
        let crosses = self
            .b
            .ins()
            .icmp_imm_u(IntCC::UnsignedGreaterThan, off, 4096 - size);
        let go = self.b.create_block();
        self.b.ins().brif(crosses, slow, &[], go, &[]);
        self.b.switch_to_block(go);
    }

    /// To `slow` where `addr` is not in the window at all (the guest has nothing there, or
    /// an address space of the bare machine has memory past it): `window + addr` would be
    /// some other host memory. (An access that starts in the window and runs past its end
    /// faults in the guard bytes after it.)
    fn guard_in_window(&mut self, addr: Value, slow: Block) {
        let above = self
            .b
            .ins()
            .ushr_imm_s(addr, armada_core::memory::WINDOW_BITS as i64);
        let go = self.b.create_block();
        self.b.ins().brif(above, slow, &[], go, &[]);
        self.b.switch_to_block(go);
    }

    /// A read at `window + addr`, with no TLB lookup (see `guard`).
    fn read_guarded(&mut self, slot: usize, addr: Value, size: i64) -> (Value, Option<Value>) {
        let slow = self.b.create_block();
        self.b.set_cold_block(slow);
        let exact = self.site_start(slot);
        let win = self.window();
        self.guard_in_window(addr, slow);
        let p = self.b.ins().iadd(addr, win);
        let (lo, hi) = self.loads(p, size, guarded_mem());
        self.site_end();
        let cont = self.b.create_block();
        let lo_at = self.b.append_block_param(cont, I64);
        let hi_at = hi.map(|_| self.b.append_block_param(cont, I64));
        let args: Vec<Value> = [Some(lo), hi].into_iter().flatten().collect();
        self.guard_check(exact, slow, cont, &args);

        // the interpreter's read, into the context's buffer (see `helpers::read`)
        self.b.switch_to_block(slow);
        let bias = self.read_helper(slot, addr, size);
        let p = self.b.ins().iadd(addr, bias);
        let (lo, hi) = self.loads(p, size, guest_mem());
        let args: Vec<BlockArg> = [Some(lo), hi]
            .into_iter()
            .flatten()
            .map(|v| v.into())
            .collect();
        self.b.ins().jump(cont, &args);

        self.b.switch_to_block(cont);
        (lo_at, hi_at)
    }

    /// A read's slow path: the interpreter's read into the context's buffer (see
    /// `helpers::read`), leaving the unit where it faulted; the buffer's bias.
    fn read_helper(&mut self, slot: usize, addr: Value, size: i64) -> Value {
        let ctx = self.ctx();
        let n = self.b.ins().iconst(I64, size);
        let bias = self.call(self.h.read, &[ctx, addr, n])[0];
        let status = self
            .b
            .ins()
            .load(I64, MemFlagsData::trusted(), ctx, CTX_STATUS);
        self.leave_if(status, slot, exit::STOP, false);
        bias
    }

    /// The loads of a read of `size` bytes at host address `p`.
    fn loads(&mut self, p: Value, size: i64, m: MemFlagsData) -> (Value, Option<Value>) {
        match size {
            1 => (self.b.ins().uload8(I64, m, p, 0), None),
            2 => (self.b.ins().uload16(I64, m, p, 0), None),
            4 => (self.b.ins().uload32(m, p, 0), None),
            8 => (self.b.ins().load(I64, m, p, 0), None),
            _ => (
                self.b.ins().load(I64, m, p, 0),
                Some(self.b.ins().load(I64, m, p, 8)),
            ),
        }
    }

    /// The stores of a write of `size` bytes at host address `p`.
    fn stores(&mut self, p: Value, size: i64, lo: Value, hi: Option<Value>, m: MemFlagsData) {
        match size {
            1 => {
                self.b.ins().istore8(m, lo, p, 0);
            }
            2 => {
                self.b.ins().istore16(m, lo, p, 0);
            }
            4 => {
                self.b.ins().istore32(m, lo, p, 0);
            }
            8 => {
                self.b.ins().store(m, lo, p, 0);
            }
            _ => {
                self.b.ins().store(m, lo, p, 0);
                self.b.ins().store(m, hi.unwrap_or(lo), p, 8);
            }
        }
    }

    /// A write at `window + addr`, with no TLB lookup (see `guard`).
    fn write_guarded(
        &mut self,
        slot: usize,
        u: &MicroOp,
        addr: Value,
        size: i64,
        lo: Value,
        hi: Option<Value>,
    ) {
        let slow = self.b.create_block();
        let done = self.b.create_block();
        self.b.set_cold_block(slow);
        let exact = self.site_start(slot);
        let win = self.window();
        self.guard_in_window(addr, slow);
        if size > 8 {
            self.guard_one_page(addr, size, slow);
        }
        let p = self.b.ins().iadd(addr, win);
        self.stores(p, size, lo, hi, guarded_mem());
        self.site_end();
        self.guard_check(exact, slow, done, &[]);
        let to = WriteSlow {
            slow,
            done,
            view: false,
        };
        self.write_slow(to, slot, u, addr, size, lo, hi);
        self.b.switch_to_block(done);
    }

    /// Where vector register `r` is in the state.
    pub(crate) fn v_off(r: u8) -> i32 {
        V_OFF + 16 * (r as i32 & 31)
    }

    /// Sets vector register `r` to `lo` and `hi` (zero when None).
    pub(crate) fn set_v(&mut self, r: u8, lo: Value, hi: Option<Value>) {
        let hi = hi.unwrap_or_else(|| self.b.ins().iconst(I64, 0));
        let off = Self::v_off(r);
        self.store_state(lo, off);
        self.store_state(hi, off + 8);
    }

    /// Translates a load or store (`op` is `u`'s op).
    pub fn access(&mut self, slot: usize, u: &MicroOp, op: u16) {
        // The registers written so far are stored here, on the main path, so the ways out
        // of this access (a miss that faults, a store into code) have none to store. Else
        // each way out would store them, and Cranelift, which places a pure value at its
        // first use, would compute them again in each: a long block of arithmetic and
        // stores grew quadratically (Go's P-521 code: 2.7 MB of host code in 3.9 s).
        // A host loop is short, and its registers stay in host registers round it: there
        // the ways out store them (see `flush_at_access`).
        self.flush_at_access();
        if self.long {
            self.load_regs(None);
        }
        let addr = self.ea(u);
        let (a, d) = (u.a, u.d);
        match op {
            LDR_B | LDR_H | LDR_W | LDR_X | LDRSB_W | LDRSB_X | LDRSH_W | LDRSH_X | LDRSW => {
                let size = match op {
                    LDR_B | LDRSB_W | LDRSB_X => 1,
                    LDR_H | LDRSH_W | LDRSH_X => 2,
                    LDR_W | LDRSW => 4,
                    _ => 8,
                };
                let (v, _) = self.read(slot, addr, size);
                let v = match op {
                    LDRSB_W | LDRSB_X | LDRSH_W | LDRSH_X | LDRSW => {
                        let ty = match size {
                            1 => I8,
                            2 => I16,
                            _ => I32,
                        };
                        let n = self.b.ins().ireduce(ty, v);
                        if matches!(op, LDRSB_W | LDRSH_W) {
                            let s = self.b.ins().sextend(I32, n);
                            self.b.ins().uextend(I64, s)
                        } else {
                            self.b.ins().sextend(I64, n)
                        }
                    }
                    _ => v,
                };
                self.writeback(u, addr);
                self.wr(a, v);
            }
            STR_B | STR_H | STR_W | STR_X => {
                let size = match op {
                    STR_B => 1,
                    STR_H => 2,
                    STR_W => 4,
                    _ => 8,
                };
                let v = self.rd(a);
                let v = match size {
                    1 => self.b.ins().ireduce(I8, v),
                    2 => self.b.ins().ireduce(I16, v),
                    4 => self.b.ins().ireduce(I32, v),
                    _ => v,
                };
                let v = self.widen_store(v, size);
                self.write(slot, u, addr, size, v, None);
                self.writeback(u, addr);
            }
            LDR_V8 | LDR_V16 | LDR_V32 | LDR_V64 | LDR_V128 => {
                let size = 1i64 << (op - LDR_V8);
                let (lo, hi) = self.read(slot, addr, size);
                self.writeback(u, addr);
                self.set_v(a, lo, hi);
            }
            STR_V8 | STR_V16 | STR_V32 | STR_V64 | STR_V128 => {
                let size = 1i64 << (op - STR_V8);
                let off = Self::v_off(a);
                let lo = self.load_state(off);
                let hi = (size == 16).then(|| self.load_state(off + 8));
                self.write(slot, u, addr, size, lo, hi);
                self.writeback(u, addr);
            }
            LDP_W | LDPSW => {
                let (v1, _) = self.read(slot, addr, 4);
                let a2 = self.b.ins().iadd_imm_s(addr, 4);
                let (v2, _) = self.read(slot, a2, 4);
                self.writeback(u, addr);
                let (v1, v2) = if op == LDPSW {
                    let n1 = self.b.ins().ireduce(I32, v1);
                    let n2 = self.b.ins().ireduce(I32, v2);
                    (self.b.ins().sextend(I64, n1), self.b.ins().sextend(I64, n2))
                } else {
                    (v1, v2)
                };
                self.wr(a, v1);
                self.wr(d, v2);
            }
            LDP_X => {
                let (lo, hi) = self.read(slot, addr, 16);
                self.writeback(u, addr);
                self.wr(a, lo);
                self.wr(d, hi.expect("16 bytes"));
            }
            STP_W => {
                let x = self.rd(a);
                let y = self.rd(d);
                let x = self.b.ins().ireduce(I32, x);
                let x = self.b.ins().uextend(I64, x);
                let y = self.b.ins().ishl_imm_s(y, 32);
                let v = self.b.ins().bor(x, y);
                self.write(slot, u, addr, 8, v, None);
                self.writeback(u, addr);
            }
            STP_X => {
                let x = self.rd(a);
                let y = self.rd(d);
                self.write(slot, u, addr, 16, x, Some(y));
                self.writeback(u, addr);
            }
            LDP_V32 | LDP_V64 | LDP_V128 => {
                let size = match op {
                    LDP_V32 => 4,
                    LDP_V64 => 8,
                    _ => 16,
                };
                let (l1, h1) = self.read(slot, addr, size);
                let a2 = self.b.ins().iadd_imm_s(addr, size);
                let (l2, h2) = self.read(slot, a2, size);
                self.writeback(u, addr);
                self.set_v(a, l1, h1);
                self.set_v(d, l2, h2);
            }
            STP_V32 | STP_V64 => {
                let (o1, o2) = (Self::v_off(a), Self::v_off(d));
                let x = self.load_state(o1);
                let y = self.load_state(o2);
                if op == STP_V32 {
                    let x = self.b.ins().ireduce(I32, x);
                    let x = self.b.ins().uextend(I64, x);
                    let y = self.b.ins().ishl_imm_s(y, 32);
                    let v = self.b.ins().bor(x, y);
                    self.write(slot, u, addr, 8, v, None)
                } else {
                    self.write(slot, u, addr, 16, x, Some(y))
                }
                self.writeback(u, addr);
            }
            STP_V128 => {
                self.store_pair_q(slot, u, addr);
                self.writeback(u, addr);
            }
            _ => unreachable!("access() is called for loads and stores only"),
        }
    }

    /// STP of two Q registers (glibc's memset and memcpy): 32 bytes written inline (see
    /// [`Self::store_inline`]).
    fn store_pair_q(&mut self, slot: usize, u: &MicroOp, addr: Value) {
        let words = [
            Self::v_off(u.a),
            Self::v_off(u.a) + 8,
            Self::v_off(u.d),
            Self::v_off(u.d) + 8,
        ]
        .map(|off| self.load_state(off));
        self.store_inline(slot, addr, &words);
    }

    /// DC ZVA: the 64 bytes (`cpu::ZVA_BYTES`) of the block that holds the address in
    /// register `b`, zeroed inline (see [`Self::store_inline`]). glibc's memset of zeros and
    /// Go's memclr use it for large clears; through the one-op helper each block was a
    /// permission search and a TLB fill (a tenth of Go's compress/flate tests).
    pub(crate) fn zero_block(&mut self, slot: usize, u: &MicroOp) {
        let x = self.rd(u.b);
        let addr = self.b.ins().band_imm_s(x, !63);
        let zero = self.b.ins().iconst(I64, 0);
        self.store_inline(slot, addr, &[zero; 8]);
    }

    /// `words` written at `addr` inline (see [`Self::inline_access`]).
    fn store_inline(&mut self, slot: usize, addr: Value, words: &[Value]) {
        self.inline_access(slot, addr, 8 * words.len() as i64, false, |tx, p, m| {
            for (i, &w) in words.iter().enumerate() {
                tx.b.ins().store(m, w, p, 8 * i as i32);
            }
        });
    }

    /// LSE's atomic read-modify-write ops (LDADD ... LDUMIN, SWP, and their ST forms) and
    /// CAS, inline: a load, the operation and a store at one host address. (Go's runtime and
    /// sync package use them for every lock and counter; through the one-op helper, with
    /// the registers stored and loaded again around each, they were up to half of a test
    /// binary's time.) Guest threads run one at a time, so the interpreter's load and store
    /// are the op, and so are these.
    pub(crate) fn atomic(&mut self, slot: usize, u: &MicroOp) {
        let size = 1i64 << (u.e & 3);
        let bits = 8 * size;
        let addr = self.rd(u.b);
        let s = self.rd(u.c);
        let cas = u.op == CAS;
        // (CAS's new value; the other ops' Rt is where the old value goes)
        let t = cas.then(|| self.rd(u.a));
        let mut old = None;
        self.inline_access(slot, addr, size, true, |tx, p, m| {
            let (o, _) = tx.loads(p, size, m);
            let v = if size == 8 {
                s
            } else {
                tx.b.ins().band_imm_s(s, (1i64 << bits) - 1)
            };
            let new = if cas {
                let equal = tx.b.ins().icmp(IntCC::Equal, o, v);
                tx.b.ins().select(equal, t.expect("CAS's new value"), o)
            } else {
                tx.atomic_apply(u.f, bits, o, v)
            };
            tx.stores(p, size, new, None, m);
            old = Some(o);
        });
        let old = old.expect("the access's body ran");
        self.wr(if cas { u.d } else { u.a }, old);
    }

    /// The interpreter's `atomic_apply` of `old` and `v` (both zero-extended from `bits`).
    fn atomic_apply(&mut self, op: u8, bits: i64, old: Value, v: Value) -> Value {
        use armada_isa::ops::atomic_op as a;
        let signed = |tx: &mut Self, x: Value| {
            if bits == 64 {
                x
            } else {
                let up = tx.b.ins().ishl_imm_s(x, 64 - bits);
                tx.b.ins().sshr_imm_s(up, 64 - bits)
            }
        };
        let pick = |tx: &mut Self, cc: IntCC, x: Value, y: Value| {
            let c = tx.b.ins().icmp(cc, x, y);
            tx.b.ins().select(c, old, v)
        };
        let r = match op {
            a::ADD => self.b.ins().iadd(old, v),
            a::CLR => self.b.ins().band_not(old, v),
            a::EOR => self.b.ins().bxor(old, v),
            a::SET => self.b.ins().bor(old, v),
            a::SMAX | a::SMIN => {
                let (so, sv) = (signed(self, old), signed(self, v));
                let cc = if op == a::SMAX {
                    IntCC::SignedGreaterThanOrEqual
                } else {
                    IntCC::SignedLessThanOrEqual
                };
                pick(self, cc, so, sv)
            }
            a::UMAX => pick(self, IntCC::UnsignedGreaterThanOrEqual, old, v),
            a::UMIN => pick(self, IntCC::UnsignedLessThanOrEqual, old, v),
            _ => v,
        };
        // (the store writes the low `bits`; an ADD's carry out of them is dropped there)
        r
    }

    /// An access of `size` bytes at `addr` made inline by `body` (given the host address
    /// and the memory flags to use) where they lie in one page the TLB has for writing (and
    /// for reading, where `read`), or, guarded, that the window has writable. Else the unit
    /// leaves before the op and the interpreter makes it (which faults as a whole, or
    /// crosses pages, as the interpreter's does). `body` writes no guest register: where a
    /// guarded store in it faults, the op runs again on the interpreter.
    fn inline_access(
        &mut self,
        slot: usize,
        addr: Value,
        size: i64,
        read: bool,
        body: impl FnOnce(&mut Self, Value, MemFlagsData),
    ) {
        if self.guarded {
            let slow = self.b.create_block();
            self.b.set_cold_block(slow);
            let exact = self.site_start(slot);
            let win = self.window();
            self.guard_in_window(addr, slow);
            self.guard_one_page(addr, size, slow);
            let p = self.b.ins().iadd(addr, win);
            body(self, p, guarded_mem());
            self.site_end();
            let cont = self.b.create_block();
            self.guard_check(exact, slow, cont, &[]);
            self.b.switch_to_block(slow);
            let here = self.pc(slot) as i64;
            let pc = self.b.ins().iconst(I64, here);
            let r = self.retired_at(slot);
            self.leave(pc, r, exit::ONE);
            self.b.switch_to_block(cont);
            return;
        }
        let (e, mut hit) = self.tlb_hit(addr, size, tl::WTAG);
        if read {
            let (_, readable) = self.tlb_hit(addr, size, tl::RTAG);
            hit = self.b.ins().band(hit, readable);
        }
        let fast = self.b.create_block();
        let slow = self.b.create_block();
        self.b.set_cold_block(slow);
        self.b.ins().brif(hit, fast, &[], slow, &[]);

        self.b.switch_to_block(slow);
        let here = self.pc(slot) as i64;
        let pc = self.b.ins().iconst(I64, here);
        let r = self.retired_at(slot);
        self.leave(pc, r, exit::ONE);

        self.b.switch_to_block(fast);
        let p = self.host_addr(e, addr, tl::WPTR);
        body(self, p, guest_mem());
    }

    /// A narrow store value as the i64 the write paths take (zero-extended).
    fn widen_store(&mut self, v: Value, size: i64) -> Value {
        if size == 8 {
            v
        } else {
            self.b.ins().uextend(I64, v)
        }
    }
}
