// Loads and stores (all addressing modes, pairs, vector registers), exclusives and LSE atomics,
// LD1/ST1 structure accesses: armada.cu's load/store cases. Each returns false, having changed
// no register and written no guest byte, when the instruction must end here: a translation-cache
// miss (g_refill: the main loop walks the page table and runs it again) or a stop (g_stop:
// STOP_HOST).

fn wb(f: u32, b: u32, addr: u64, imm: u64) {
    if f == AM_PRE {
        x[b] = addr;
    } else if f == AM_POST {
        x[b] = addr + imm;
    }
}

fn vreg_w(r: u32) -> u32 { return R + 2u * (S_V + 2u * (r & 31u)); }

fn stop_host() -> bool {
    g_stop = STOP_HOST;
    g_info = 0lu;
    return false;
}

fn exec_ldst(op: u32, a: u32, b: u32, c: u32, d: u32, e: u32, f: u32, imm: u64) -> bool {
    let dr = d & 63u;
    var addr: u64;
    if f == AM_OFFSET || f == AM_PRE {
        addr = x[b] + imm;
    } else if f == AM_POST {
        addr = x[b];
    } else {
        addr = x[b] + extend(x[c], e >> 3u, e & 7u);
    }
    // The common case first: one general register, within one page.
    if op >= OP_LDR_B && op <= OP_STR_X {
        let k = op - OP_LDR_B;
        let lg = u32((LDST_LG >> (2u * k)) & 3lu); // (naga cannot cast a u64 constant to u32)
        let sz = 1u << lg;
        if (addr & 4095lu) + u64(sz) <= 4096lu {
            let wr1 = op >= OP_STR_B;
            let p1 = tr(addr, wr1);
            if p1 == NOFP { return false; }
            if wr1 {
                st_raw(p1, sz, x[a]);
                wb(f, b, addr, imm);
            } else {
                var v = ld_raw(p1, sz);
                switch op {
                    case OP_LDRSB_W: { v = sext(v, 8u) & LO32; }
                    case OP_LDRSB_X: { v = sext(v, 8u); }
                    case OP_LDRSH_W: { v = sext(v, 16u) & LO32; }
                    case OP_LDRSH_X: { v = sext(v, 16u); }
                    case OP_LDRSW: { v = sext(v, 32u); }
                    default: {}
                }
                wb(f, b, addr, imm);
                x[a] = v;
            }
            return true;
        }
    }
    // size of the access, whether it writes
    var size: u32;
    var write = false;
    switch op {
        case OP_LDR_B, OP_LDRSB_W, OP_LDRSB_X, OP_LDR_V8: { size = 1u; }
        case OP_STR_B, OP_STR_V8: { size = 1u; write = true; }
        case OP_LDR_H, OP_LDRSH_W, OP_LDRSH_X, OP_LDR_V16: { size = 2u; }
        case OP_STR_H, OP_STR_V16: { size = 2u; write = true; }
        case OP_LDR_W, OP_LDRSW, OP_LDR_V32: { size = 4u; }
        case OP_STR_W, OP_STR_V32: { size = 4u; write = true; }
        case OP_LDR_X, OP_LDR_V64, OP_LDP_W, OP_LDPSW, OP_LDP_V32: { size = 8u; }
        case OP_STR_X, OP_STR_V64, OP_STP_W, OP_STP_V32: { size = 8u; write = true; }
        case OP_LDR_V128, OP_LDP_X, OP_LDP_V64: { size = 16u; }
        case OP_STR_V128, OP_STP_X, OP_STP_V64: { size = 16u; write = true; }
        case OP_LDP_V128: { size = 32u; }
        default: { size = 32u; write = true; } // STP_V128
    }
    // Both pages are translated before any byte moves, so a faulting access changes nothing
    // (the CPU engine checks a straddling write's pages first, too).
    let off = u32(addr & 4095lu);
    var n0 = size;
    let p0 = tr(addr, write);
    if p0 == NOFP { return false; }
    var p1 = NOFP;
    if off + size > 4096u {
        n0 = 4096u - off;
        p1 = tr((addr | 4095lu) + 1lu, write);
        if p1 == NOFP { return false; }
    }
    // The data, as up to four 64-bit words (little-endian).
    var wv = array<u64, 4>(0lu, 0lu, 0lu, 0lu);
    let va = vreg_w(a);
    let vd = vreg_w(d);
    if write {
        switch op {
            case OP_STR_B, OP_STR_H, OP_STR_W, OP_STR_X: { wv[0] = x[a]; }
            case OP_STP_W: { wv[0] = (x[a] & LO32) | (x[dr] << 32u); }
            case OP_STP_X: { wv[0] = x[a]; wv[1] = x[dr]; }
            case OP_STR_V8, OP_STR_V16, OP_STR_V32, OP_STR_V64: { wv[0] = ld64w(va); }
            case OP_STR_V128: { wv[0] = ld64w(va); wv[1] = ld64w(va + 2u); }
            case OP_STP_V32: { wv[0] = (ld64w(va) & LO32) | (ld64w(vd) << 32u); }
            case OP_STP_V64: { wv[0] = ld64w(va); wv[1] = ld64w(vd); }
            default: { // STP_V128
                wv[0] = ld64w(va);
                wv[1] = ld64w(va + 2u);
                wv[2] = ld64w(vd);
                wv[3] = ld64w(vd + 2u);
            }
        }
        if size <= 8u {
            st_span(p0, p1, n0, 0u, size, wv[0]);
        } else {
            for (var i = 0u; i < size / 8u; i++) {
                lp(2u);
                st_span(p0, p1, n0, 8u * i, 8u, wv[i & 3u]);
            }
        }
    } else {
        if size <= 8u {
            wv[0] = ld_span(p0, p1, n0, 0u, size);
        } else {
            for (var i = 0u; i < size / 8u; i++) {
                lp(2u);
                wv[i & 3u] = ld_span(p0, p1, n0, 8u * i, 8u);
            }
        }
    }
    // Base register write-back, then the loaded registers (a load into the base wins).
    wb(f, b, addr, imm);
    if !write {
        if (op >= OP_LDR_V8 && op <= OP_LDR_V128) || (op >= OP_LDP_V32 && op <= OP_LDP_V128) { rset(S_VDIRTY, 1lu); }
        switch op {
            case OP_LDR_B, OP_LDR_H, OP_LDR_W, OP_LDR_X: { x[a] = wv[0]; }
            case OP_LDRSB_W: { x[a] = sext(wv[0] & 0xfflu, 8u) & LO32; }
            case OP_LDRSB_X: { x[a] = sext(wv[0] & 0xfflu, 8u); }
            case OP_LDRSH_W: { x[a] = sext(wv[0] & 0xfffflu, 16u) & LO32; }
            case OP_LDRSH_X: { x[a] = sext(wv[0] & 0xfffflu, 16u); }
            case OP_LDRSW: { x[a] = sext(wv[0] & LO32, 32u); }
            case OP_LDP_W: {
                x[a] = wv[0] & LO32;
                x[dr] = wv[0] >> 32u;
            }
            case OP_LDPSW: {
                x[a] = sext(wv[0] & LO32, 32u);
                x[dr] = sext(wv[0] >> 32u, 32u);
            }
            case OP_LDP_X: {
                x[a] = wv[0];
                x[dr] = wv[1];
            }
            case OP_LDR_V8, OP_LDR_V16, OP_LDR_V32, OP_LDR_V64: {
                st64w(va, wv[0]);
                st64w(va + 2u, 0lu);
            }
            case OP_LDR_V128: {
                st64w(va, wv[0]);
                st64w(va + 2u, wv[1]);
            }
            case OP_LDP_V32: {
                st64w(va, wv[0] & LO32);
                st64w(va + 2u, 0lu);
                st64w(vd, wv[0] >> 32u);
                st64w(vd + 2u, 0lu);
            }
            case OP_LDP_V64: {
                st64w(va, wv[0]);
                st64w(va + 2u, 0lu);
                st64w(vd, wv[1]);
                st64w(vd + 2u, 0lu);
            }
            default: { // LDP_V128
                st64w(va, wv[0]);
                st64w(va + 2u, wv[1]);
                st64w(vd, wv[2]);
                st64w(vd + 2u, wv[3]);
            }
        }
    }
    return true;
}

// Exclusives and atomics: the natural alignment is not required, as in the CPU engine; a
// straddling one goes to the host.
fn exec_excl(op: u32, a: u32, b: u32, c: u32, d: u32, e: u32, f: u32) -> bool {
    let dr = d & 63u;
    let addr = x[b];
    let lg = e & 3u;
    var size = 1u << lg;
    if op == OP_LDXP || op == OP_STXP || op == OP_CASP { size = select(16u, 8u, lg == 2u); }
    if (addr & 4095lu) + u64(size) > 4096lu { return stop_host(); }
    if op == OP_LDXR {
        let p = tr(addr, false);
        if p == NOFP { return false; }
        x[a] = ld_raw(p, size);
        excl = addr;
    } else if op == OP_LDXP {
        let p = tr(addr, false);
        if p == NOFP { return false; }
        if lg == 2u {
            let v = ld_raw(p, 8u);
            x[a] = v & LO32;
            x[dr] = v >> 32u;
        } else {
            let lo = ld_raw(p, 8u);
            let hi = ld_raw(p + 8lu, 8u);
            x[a] = lo;
            x[dr] = hi;
        }
        excl = addr;
    } else if op == OP_STXR || op == OP_STXP {
        if excl == addr {
            let p = tr(addr, true);
            if p == NOFP { return false; }
            if op == OP_STXR {
                st_raw(p, size, x[a]);
            } else if lg == 2u {
                st_raw(p, 8u, (x[a] & LO32) | (x[dr] << 32u));
            } else {
                st_raw(p, 8u, x[a]);
                st_raw(p + 8lu, 8u, x[dr]);
            }
            x[c] = 0lu;
        } else {
            // the failing store is still checked (as a read of its size), as the CPU engine does
            if (addr & 4095lu) + u64(1u << lg) > 4096lu { return stop_host(); }
            let p = tr(addr, false);
            if p == NOFP { return false; }
            x[c] = 1lu;
        }
        excl = MAXU64;
    } else {
        // ATOMIC_RMW, CAS, CASP: checked as a read, then as a write
        if tr(addr, false) == NOFP { return false; }
        let p = tr(addr, true);
        if p == NOFP { return false; }
        if op == OP_ATOMIC_RMW {
            let old = ld_raw(p, size);
            st_raw(p, size, atomic_apply(f, lg, old, x[c]));
            x[a] = old;
        } else if op == OP_CAS {
            let old = ld_raw(p, size);
            let m = size_mask(lg);
            if old == (x[c] & m) { st_raw(p, size, x[a]); }
            x[dr] = old;
        } else { // CASP
            let s0 = c;
            let s1 = c + 1u;
            let t0 = a;
            let t1 = a + 1u;
            let cmp0 = select(x[s0 & 63u], 0lu, s0 == 31u);
            let cmp1 = select(x[s1 & 63u], 0lu, s1 == 31u);
            let new0 = select(x[t0 & 63u], 0lu, t0 == 31u);
            let new1 = select(x[t1 & 63u], 0lu, t1 == 31u);
            var old0: u64;
            var old1: u64;
            if lg == 2u {
                let v = ld_raw(p, 8u);
                old0 = v & LO32;
                old1 = v >> 32u;
            } else {
                old0 = ld_raw(p, 8u);
                old1 = ld_raw(p + 8lu, 8u);
            }
            let m = size_mask(lg);
            if old0 == (cmp0 & m) && old1 == (cmp1 & m) {
                if lg == 2u {
                    st_raw(p, 8u, (new0 & m) | ((new1 & m) << 32u));
                } else {
                    st_raw(p, 8u, new0 & m);
                    st_raw(p + 8lu, 8u, new1 & m);
                }
            }
            if s0 != 31u { x[s0 & 63u] = old0; }
            if s1 < 31u { x[s1 & 63u] = old1; }
        }
    }
    return true;
}

// Structure loads and stores (cpu/fp/ldst.rs): LD1-LD4/ST1-ST4 of multiple structures, of one
// element (single structure) and LD1R-LD4R. At most 64 bytes, so at most two pages, both
// translated before anything changes (a fault leaves the registers and memory as they were,
// and the host redoes the access). LD1/ST1 of whole registers go 8 bytes at a time; the rest
// element by element in memory order: element j of an interleaving group is element j / selem
// of register t + j % selem (selem registers of one structure each), of a single structure
// element f of register t + j.
fn exec_vldst(op: u32, a: u32, b: u32, c: u32, d: u32, e: u32, f: u32, imm: u64) -> bool {
    let selem = d & 7u;
    if selem < 1u || selem > 4u || e > 3u { return stop_host(); }
    let addr = x[b];
    let wr = op == OP_V_ST_MULTI || op == OP_V_ST_SINGLE;
    let multi = op == OP_V_LD_MULTI || op == OP_V_ST_MULTI;
    let rpt = (d >> 3u) & 7u;
    var size: u32;
    if multi {
        // 8 or 16 bytes a register, at most 4 registers
        if (f != 3u && f != 4u) || rpt * selem > 4u { return stop_host(); }
        size = (rpt * selem) << f;
    } else {
        size = selem << e;
    }
    let off = u32(addr & 4095lu);
    var n0 = size;
    let p0 = tr(addr, wr);
    if p0 == NOFP { return false; }
    var p1 = NOFP;
    if off + size > 4096u {
        n0 = 4096u - off;
        p1 = tr((addr | 4095lu) + 1lu, wr);
        if p1 == NOFP { return false; }
    }
    if multi && selem == 1u {
        let rb = 1u << f;
        for (var r = 0u; r < rpt; r++) {
            lp(2u);
            let reg = vreg_w((a + r) & 31u);
            for (var h = 0u; h < rb / 8u; h++) {
                lp(2u);
                let at = r * rb + 8u * h;
                if wr {
                    st_span(p0, p1, n0, at, 8u, ld64w(reg + 2u * h));
                } else {
                    st64w(reg + 2u * h, ld_span(p0, p1, n0, at, 8u));
                    rset(S_VDIRTY, 1lu);
                }
            }
            if !wr && rb == 8u { st64w(reg + 2u, 0lu); }
        }
    } else {
        // the registers of the group: stores and single-element loads start from their values,
        // the other loads from zero (an 8-byte register's upper half is cleared)
        // (unrolled, as the stores below: lavapipe counts every loop of the main loop's body)
        var regs: array<V2, 4>;
        if wr || op == OP_V_LD_SINGLE {
            regs[0] = vload(a & 31u);
            regs[1] = vload((a + 1u) & 31u);
            regs[2] = vload((a + 2u) & 31u);
            regs[3] = vload((a + 3u) & 31u);
        }
        let eb = 1u << e;
        for (var j = 0u; j < (size >> e); j++) {
            lp(2u);
            var s = j;
            var i = f;
            if multi {
                s = j % selem;
                i = j / selem;
            }
            if wr {
                st_span(p0, p1, n0, j << e, eb, vget(regs[s], e, i));
            } else if op == OP_V_LD_REPL {
                regs[s] = datamask(broadcast(ld_span(p0, p1, n0, j << e, eb), e), f);
            } else {
                regs[s] = vset(regs[s], e, i, ld_span(p0, p1, n0, j << e, eb));
            }
        }
        if !wr {
            vstore(a & 31u, regs[0]);
            if selem > 1u { vstore((a + 1u) & 31u, regs[1]); }
            if selem > 2u { vstore((a + 2u) & 31u, regs[2]); }
            if selem > 3u { vstore((a + 3u) & 31u, regs[3]); }
        }
    }
    if (d & LDST_WB) != 0u { x[b] = addr + (x[c] + imm); }
    return true;
}
