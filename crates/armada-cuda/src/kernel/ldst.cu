// ------------------------------------------------------------------------------------------
// The loads and stores the interpreter's loop calls out for: pairs and vector registers
// (other than the common forms it runs itself), accesses that straddle a page, exclusives
// and atomics, and the vector structure loads and stores. They are out of line
// (`__noinline__`) so that the loop's own code stays small: on Python lanes 42% of the
// kernel's stall samples were instruction fetches, the loop's cases spread over 400 KB of
// SASS (docs/performance.md, "Where the kernel's time goes on Python lanes").
//
// Each returns COLD_OK, COLD_HOST (the host runs the instruction), or COLD_MISS_R/W with the
// address that missed in `miss` (the lane stops for the host to map it). Nothing is written
// before every page an access needs is translated, so a miss changes nothing.

#define COLD_OK 0u
#define COLD_MISS_R 1u
#define COLD_MISS_W 2u
#define COLD_HOST 3u

// Translates one access of `size` bytes (never crossing a page) or returns the miss.
#define CTR(var, addr_, write_)                                                       \
    u8* var = tlb_get(T, P, lane, rec, (addr_), (write_));                            \
    if (!var) {                                                                       \
        miss = (addr_);                                                               \
        return (write_) ? COLD_MISS_W : COLD_MISS_R;                                  \
    }

// A load or store of general or vector registers at `addr` (its base register's write-back
// included) that the loop's own paths do not take.
__device__ __noinline__ u32 ldst_general(Tlb& T, const Params& P, u32 lane, u64* rec, u64* x, u32 op, u32 a,
                                         u32 b, u32 d, u32 f, u64 addr, u64 imm, u64& miss) {
    u32 dr = d & 63;
    // size of the access, whether it writes, whether it is a pair of two halves
    u32 size, write = 0;
    switch (op) {
    case OP_LDR_B: case OP_LDRSB_W: case OP_LDRSB_X: case OP_LDR_V8: size = 1; break;
    case OP_STR_B: case OP_STR_V8: size = 1; write = 1; break;
    case OP_LDR_H: case OP_LDRSH_W: case OP_LDRSH_X: case OP_LDR_V16: size = 2; break;
    case OP_STR_H: case OP_STR_V16: size = 2; write = 1; break;
    case OP_LDR_W: case OP_LDRSW: case OP_LDR_V32: size = 4; break;
    case OP_STR_W: case OP_STR_V32: size = 4; write = 1; break;
    case OP_LDR_X: case OP_LDR_V64: case OP_LDP_W: case OP_LDPSW: case OP_LDP_V32: size = 8; break;
    case OP_STR_X: case OP_STR_V64: case OP_STP_W: case OP_STP_V32: size = 8; write = 1; break;
    case OP_LDR_V128: case OP_LDP_X: case OP_LDP_V64: size = 16; break;
    case OP_STR_V128: case OP_STP_X: case OP_STP_V64: size = 16; write = 1; break;
    case OP_LDP_V128: size = 32; break;
    default: size = 32; write = 1; break; // STP_V128
    }
    // Both pages are translated before any byte moves, so a faulting access changes
    // nothing (the CPU engine checks a straddling write's pages first, too).
    u64 off = addr & 4095;
    u8* p0;
    u8* p1 = 0;
    u32 n0 = size;
    {
        CTR(q0, addr, write)
        p0 = q0;
    }
    if (off + size > 4096) {
        n0 = (u32)(4096 - off);
        u64 a1 = (addr | 4095) + 1;
        CTR(q1, a1, write)
        p1 = q1;
    }
    // The data, as up to four 64-bit words (little-endian).
    u64 wv[4] = {0, 0, 0, 0};
    if (write) {
        switch (op) {
        case OP_STR_B: case OP_STR_H: case OP_STR_W: case OP_STR_X: wv[0] = x[a]; break;
        case OP_STP_W: wv[0] = (x[a] & 0xffffffffull) | (x[dr] << 32); break;
        case OP_STP_X: wv[0] = x[a]; wv[1] = x[dr]; break;
        case OP_STR_V8: case OP_STR_V16: case OP_STR_V32: case OP_STR_V64:
            wv[0] = rec[S_V + 2 * (a & 31)];
            break;
        case OP_STR_V128:
            wv[0] = rec[S_V + 2 * (a & 31)];
            wv[1] = rec[S_V + 2 * (a & 31) + 1];
            break;
        case OP_STP_V32:
            wv[0] = (rec[S_V + 2 * (a & 31)] & 0xffffffffull) | (rec[S_V + 2 * (d & 31)] << 32);
            break;
        case OP_STP_V64:
            wv[0] = rec[S_V + 2 * (a & 31)];
            wv[1] = rec[S_V + 2 * (d & 31)];
            break;
        default: // STP_V128
            wv[0] = rec[S_V + 2 * (a & 31)];
            wv[1] = rec[S_V + 2 * (a & 31) + 1];
            wv[2] = rec[S_V + 2 * (d & 31)];
            wv[3] = rec[S_V + 2 * (d & 31) + 1];
            break;
        }
        if (!p1) {
            if (size <= 8) st_raw(p0, size, wv[0]);
            else for (u32 i = 0; i < size / 8; i++) st_raw(p0 + 8 * i, 8, wv[i]);
        } else {
            for (u32 i = 0; i < size; i++) {
                u8 byte = (u8)(wv[i >> 3] >> (8 * (i & 7)));
                if (i < n0) p0[i] = byte;
                else p1[i - n0] = byte;
            }
        }
    } else {
        if (!p1) {
            if (size <= 8) wv[0] = ld_raw(p0, size);
            else for (u32 i = 0; i < size / 8; i++) wv[i] = ld_raw(p0 + 8 * i, 8);
        } else {
            for (u32 i = 0; i < size; i++) {
                u8 byte = i < n0 ? p0[i] : p1[i - n0];
                wv[i >> 3] |= (u64)byte << (8 * (i & 7));
            }
        }
    }
    // Base register write-back, then the loaded registers (a load into the base wins).
    if (f == AM_PRE) x[b] = addr;
    else if (f == AM_POST) x[b] = addr + imm;
    if (!write) {
        if ((op >= OP_LDR_V8 && op <= OP_LDR_V128) || (op >= OP_LDP_V32 && op <= OP_LDP_V128)) rec[S_VDIRTY] = 1;
        switch (op) {
        case OP_LDR_B: case OP_LDR_H: case OP_LDR_W: case OP_LDR_X: x[a] = wv[0]; break;
        case OP_LDRSB_W: x[a] = (u32)(i32)(signed char)(u8)wv[0]; break;
        case OP_LDRSB_X: x[a] = (u64)(i64)(signed char)(u8)wv[0]; break;
        case OP_LDRSH_W: x[a] = (u32)(i32)(short)(u16)wv[0]; break;
        case OP_LDRSH_X: x[a] = (u64)(i64)(short)(u16)wv[0]; break;
        case OP_LDRSW: x[a] = (u64)(i64)(i32)(u32)wv[0]; break;
        case OP_LDP_W:
            x[a] = wv[0] & 0xffffffffull;
            x[dr] = wv[0] >> 32;
            break;
        case OP_LDPSW:
            x[a] = (u64)(i64)(i32)(u32)wv[0];
            x[dr] = (u64)(i64)(i32)(u32)(wv[0] >> 32);
            break;
        case OP_LDP_X:
            x[a] = wv[0];
            x[dr] = wv[1];
            break;
        case OP_LDR_V8: case OP_LDR_V16: case OP_LDR_V32: case OP_LDR_V64:
            rec[S_V + 2 * (a & 31)] = wv[0];
            rec[S_V + 2 * (a & 31) + 1] = 0;
            break;
        case OP_LDR_V128:
            rec[S_V + 2 * (a & 31)] = wv[0];
            rec[S_V + 2 * (a & 31) + 1] = wv[1];
            break;
        case OP_LDP_V32:
            rec[S_V + 2 * (a & 31)] = wv[0] & 0xffffffffull;
            rec[S_V + 2 * (a & 31) + 1] = 0;
            rec[S_V + 2 * (d & 31)] = wv[0] >> 32;
            rec[S_V + 2 * (d & 31) + 1] = 0;
            break;
        case OP_LDP_V64:
            rec[S_V + 2 * (a & 31)] = wv[0];
            rec[S_V + 2 * (a & 31) + 1] = 0;
            rec[S_V + 2 * (d & 31)] = wv[1];
            rec[S_V + 2 * (d & 31) + 1] = 0;
            break;
        default: // LDP_V128
            rec[S_V + 2 * (a & 31)] = wv[0];
            rec[S_V + 2 * (a & 31) + 1] = wv[1];
            rec[S_V + 2 * (d & 31)] = wv[2];
            rec[S_V + 2 * (d & 31) + 1] = wv[3];
            break;
        }
    }
    return COLD_OK;
}

// LDXR/LDXP/STXR/STXP, the LSE atomics, CAS and CASP. `excl` is the exclusive monitor.
__device__ __noinline__ u32 excl_atomic(Tlb& T, const Params& P, u32 lane, u64* rec, u64* x, u64& excl,
                                        u32 op, u32 a, u32 b, u32 c, u32 d, u32 e, u32 f, u64& miss) {
    u32 dr = d & 63;
    u64 addr = x[b];
    u32 lg = e & 3;
    u32 size = 1u << lg;
    if (op == OP_LDXP || op == OP_STXP || op == OP_CASP) size = lg == 2 ? 8 : 16;
    if ((addr & 4095) + size > 4096) {
        return COLD_HOST;
    }
    if (op == OP_LDXR) {
        CTR(p, addr, 0)
        x[a] = ld_raw(p, size);
        excl = addr;
    } else if (op == OP_LDXP) {
        CTR(p, addr, 0)
        if (lg == 2) {
            u64 v = ld_raw(p, 8);
            x[a] = v & 0xffffffffull;
            x[dr] = v >> 32;
        } else {
            u64 lo = ld_raw(p, 8), hi = ld_raw(p + 8, 8);
            x[a] = lo;
            x[dr] = hi;
        }
        excl = addr;
    } else if (op == OP_STXR || op == OP_STXP) {
        if (excl == addr) {
            CTR(p, addr, 1)
            if (op == OP_STXR) st_raw(p, size, x[a]);
            else if (lg == 2) st_raw(p, 8, (x[a] & 0xffffffffull) | (x[dr] << 32));
            else {
                st_raw(p, 8, x[a]);
                st_raw(p + 8, 8, x[dr]);
            }
            x[c] = 0;
        } else {
            // the failing store is still checked (as a read of its size), as the CPU
            // engine does
            if ((addr & 4095) + (1u << lg) > 4096) {
                return COLD_HOST;
            }
            CTR(p, addr, 0)
            (void)p;
            x[c] = 1;
        }
        excl = MAXU64;
    } else if (op == OP_ATOMIC_RMW) {
        { CTR(pr, addr, 0) (void)pr; }
        CTR(p, addr, 1)
        u64 old = ld_raw(p, size);
        st_raw(p, size, atomic_apply(f, lg, old, x[c]));
        x[a] = old;
    } else if (op == OP_CAS) {
        { CTR(pr, addr, 0) (void)pr; }
        CTR(p, addr, 1)
        u64 old = ld_raw(p, size);
        u64 m = size_mask(lg);
        if (old == (x[c] & m)) st_raw(p, size, x[a]);
        x[dr] = old;
    } else { // CASP
        { CTR(pr, addr, 0) (void)pr; }
        CTR(p, addr, 1)
        u32 s0 = c, s1 = c + 1, t0 = a, t1 = a + 1;
        u64 cmp0 = s0 == 31 ? 0 : x[s0 & 63], cmp1 = s1 == 31 ? 0 : x[s1 & 63];
        u64 new0 = t0 == 31 ? 0 : x[t0 & 63], new1 = t1 == 31 ? 0 : x[t1 & 63];
        u64 old0, old1;
        if (lg == 2) {
            u64 v = ld_raw(p, 8);
            old0 = v & 0xffffffffull;
            old1 = v >> 32;
        } else {
            old0 = ld_raw(p, 8);
            old1 = ld_raw(p + 8, 8);
        }
        u64 m = size_mask(lg);
        bool eq = old0 == (cmp0 & m) && old1 == (cmp1 & m);
        if (eq) {
            if (lg == 2) st_raw(p, 8, (new0 & m) | ((new1 & m) << 32));
            else {
                st_raw(p, 8, new0 & m);
                st_raw(p + 8, 8, new1 & m);
            }
        }
        if (s0 != 31) x[s0 & 63] = old0;
        if (s1 < 31) x[s1 & 63] = old1;
    }
    return COLD_OK;
}

// Structure loads and stores (cpu/fp/ldst.rs): LD1-LD4/ST1-ST4 of multiple structures, of one
// element (single structure) and LD1R-LD4R. At most 64 bytes, so at most two pages, both
// translated before anything changes. LD1/ST1 of whole registers go 8 bytes at a time; the rest
// element by element in memory order: element j of an interleaving group is element j / selem
// of register t + j % selem, of a single structure element f of register t + j.
__device__ __noinline__ u32 vec_struct(Tlb& T, const Params& P, u32 lane, u64* rec, u64* x, u32 op, u32 a,
                                       u32 b, u32 c, u32 d, u32 e, u32 f, u64 imm, u64& miss) {
    u32 selem = d & 7, rpt = (d >> 3) & 7;
    bool multi = op == OP_V_LD_MULTI || op == OP_V_ST_MULTI;
    if (selem < 1 || selem > 4 || e > 3) return COLD_HOST;
    if (multi && ((f != 3 && f != 4) || rpt * selem > 4)) return COLD_HOST;
    u64 addr = x[b];
    bool wr = op == OP_V_ST_MULTI || op == OP_V_ST_SINGLE;
    u32 size = multi ? (rpt * selem) << f : selem << e;
    u64 off = addr & 4095;
    u8* p0;
    u8* p1 = 0;
    u32 n0 = size;
    {
        CTR(q0, addr, wr)
        p0 = q0;
    }
    if (off + size > 4096) {
        n0 = (u32)(4096 - off);
        u64 a1 = (addr | 4095) + 1;
        CTR(q1, a1, wr)
        p1 = q1;
    }
    if (multi && selem == 1) {
        u32 rb = 1u << f;
        for (u32 r = 0; r < rpt; r++) {
            u32 reg = (a + r) & 31;
            for (u32 h = 0; h < rb / 8; h++) {
                u32 at = r * rb + 8 * h;
                if (wr) {
                    st_span(p0, p1, n0, at, 8, rec[S_V + 2 * reg + h]);
                } else {
                    rec[S_V + 2 * reg + h] = ld_span(p0, p1, n0, at, 8);
                    rec[S_VDIRTY] = 1;
                }
            }
            if (!wr && rb == 8) rec[S_V + 2 * reg + 1] = 0;
        }
    } else {
        // the group's registers: stores and single-element loads start from their values, the
        // other loads from zero (an 8-byte register's upper half is cleared)
        V2 regs[4];
        bool keep = wr || op == OP_V_LD_SINGLE;
        for (u32 k = 0; k < 4; k++) regs[k] = keep ? vload(rec, (a + k) & 31) : V2{0, 0};
        u32 eb = 1u << e;
        for (u32 j = 0; j < (size >> e); j++) {
            u32 s = multi ? j % selem : j, i = multi ? j / selem : f;
            if (wr) {
                st_span(p0, p1, n0, j << e, eb, vget(regs[s], e, i));
            } else {
                u64 v = ld_span(p0, p1, n0, j << e, eb);
                if (op == OP_V_LD_REPL) regs[s] = datamask(broadcast(v, e), f);
                else vset(regs[s], e, i, v);
            }
        }
        if (!wr)
            for (u32 k = 0; k < selem; k++) vstore(rec, (a + k) & 31, regs[k]);
    }
    if (d & LDST_WB) x[b] = addr + (x[c] + imm);
    return COLD_OK;
}

#undef CTR
