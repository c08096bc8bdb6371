// ------------------------------------------------------------------------------------------
// The interpreter.

__device__ __forceinline__ bool find_region(const Params& P, u64 regs, u64 pc, u64& base, u64& len, const u64*& ops) {
    if (pc & 3) return false;
    u32 first = (u32)regs, n = (u32)(regs >> 32);
    for (u32 i = first; i < first + n && i < P.nregions; i++) {
        u64 b = P.regions[3 * i], e = P.regions[3 * i + 1];
        if (pc >= b && pc < e) {
            base = b;
            len = e - b;
            ops = P.ops + 2 * P.regions[3 * i + 2];
            return true;
        }
    }
    return false;
}

// A micro-op's two words (w0: op and fields; the immediate), 16-byte aligned as P.ops is, so
// that one load brings both.
struct alignas(16) OpWords {
    u64 w0, imm;
};

#ifdef ARMADA_BLOCKS
// Translated blocks (blocks.rs): a function each, `BLOCKS[k]` for the slot rewritten to
// OP_TBLOCK with k in its fields, and `BLOCK_TABLE[3k ..]` the slot's own micro-op and the
// block's length. A block runs its micro-ops and says how it left and how many of them
// retired before (n): at the micro-op after its last or before one the loop runs (BX_OUT,
// at idx + n), or by a branch taken (BX_JUMP to v, the branch retired by the loop's
// `jump`). Out of line, one function each: as one function with the loop, a few hundred
// blocks took NVRTC many minutes.
#define BX_OUT 0
#define BX_JUMP 1
struct BlockExit {
    u32 how, n;
    u64 v;
};
typedef BlockExit (*BlockFn)(u64* x, u32& nzcv, const Tlb& T, u64 pc0);
// A block's access: a page in the lane's translation cache (its four latest pages) and an
// aligned access run in the block; anything else leaves the block at that micro-op for the
// loop (which fills the cache). So a block calls nothing: each is a leaf function, with no
// registers saved around calls in it (calls out of every access doubled a block's code and
// NVRTC's time on it).
__device__ __forceinline__ u8* blk_tr(const Tlb& T, u64 addr, u32 write) {
    u64 vpn = addr >> 12, off = addr & 4095;
    if (T.tag0 == vpn && (!write || (T.wr & 1))) return (u8*)(T.ptr0 + off);
    if (T.tag1 == vpn && (!write || (T.wr & 2))) return (u8*)(T.ptr1 + off);
    if (T.tag2 == vpn && (!write || (T.wr & 4))) return (u8*)(T.ptr2 + off);
    if (T.tag3 == vpn && (!write || (T.wr & 8))) return (u8*)(T.ptr3 + off);
    return 0;
}
// @include blocks.cu
#endif

// min-PC scheduling's window (layout.rs: MINPC_WINDOW); ARMADA_MINPC_WINDOW=N (a variant to
// measure) sets another
#ifdef ARMADA_MINPC_WINDOW
#define MINPC_LAG ((u32)(ARMADA_MINPC_WINDOW))
#else
#define MINPC_LAG ((u32)MINPC_WINDOW)
#endif

__device__ void run_lane(const Params& P, u32 lane) {
    if (P.restart) {
        u32 bits = P.restart[lane];
        if (bits) {
            restart_lane(P, lane, bits);
            P.restart[lane] = 0;
        }
    }
    u64* rec = P.lanes + (u64)lane * S_WORDS;
    u64 x[64];
#pragma unroll
    for (int r = 0; r < 32; r++) x[r] = rec[S_X + r];
    x[32] = 0;
    x[33] = 0;
    u64 pc = rec[S_PC];
    u32 nzcv = (u32)rec[S_NZCV];
    u64 tpidr = rec[S_TPIDR];
    u64 excl = rec[S_EXCL];
    u64 retired = rec[S_RETIRED];
    u64 limit = rec[S_LIMIT];
    u64 regs = rec[S_REGIONS];
    u64 end = retired + P.slice;
    if (end < retired || end > limit) end = limit;
    // Every CHECK_EVERY instructions a running lane asks whether to leave the launch: after
    // max_ns, or once the first lane that stopped for the host has waited about as long as it
    // ran (at least min_grace), so lanes that stop early do not wait long for the others. Every
    // lane runs at least min_run, so lanes of late waves of blocks still make progress.
    u64 t_start = a_now_ns();
    a_set_once(&P.sched[1], t_start);
    u64 launch_start = *(volatile u64*)&P.sched[1];
    u64 check = retired + CHECK_EVERY;
    if (check > end) check = end;
    Tlb T;
    T.tag0 = T.tag1 = T.tag2 = T.tag3 = MAXU64;
    T.ptr0 = T.ptr1 = T.ptr2 = T.ptr3 = 0;
    T.wr = 0;
    COV_STATE

    u32 stop = STOP_NONE;
    u64 info = 0;
    u64 base = 0, rlen = 0, idx = 0;
    const u64* ops = P.ops;
    // the vote's key is the micro-op's index in P.ops: kbase (the region's first) + idx, kept in
    // a register so that a turn reads no P.ops (the Params sit in local memory)
    u32 kbase = 0;
    u64 miss_addr = 0;
    u32 miss_write = 0;
    u64 cold_miss = 0;
    u64 nw0 = 0, nimm = 0;
    u64 jt = 0; // a branch's target (JUMP)

    if (!find_region(P, regs, pc, base, rlen, ops)) {
        stop = STOP_HOST;
        goto done;
    }
    kbase = (u32)((ops - P.ops) >> 1);
    idx = (pc - base) >> 2;

// Translates one access of `size` bytes (never crossing a page) or leaves through a miss.
#define TR(var, addr_, write_)                                                        \
    u8* var = tlb_get(T, P, lane, rec, (addr_), (write_));                            \
    if (!var) {                                                                       \
        miss_addr = (addr_);                                                          \
        miss_write = (write_);                                                        \
        goto miss;                                                                    \
    }

// The micro-op at idx is loaded one iteration ahead (its latency hides behind the current
// one); a jump loads it again.
#ifdef ARMADA_NO_PREFETCH
#define RELOAD()
#else
#define RELOAD()                                                                      \
    {                                                                                 \
        OpWords at_ = ((const OpWords*)ops)[idx];                                     \
        nw0 = at_.w0;                                                                 \
        nimm = at_.imm;                                                               \
    }
#endif

// Every branch goes to one jump (`jump:`, at the loop's end) instead of a copy of it in each
// case, so that the loop's code stays small: instruction fetches were most of the kernel's
// stalls on lanes of real programs (docs/performance.md, "The loop's code kept small").
#define JUMP(target_)                                                                 \
    {                                                                                 \
        jt = (target_);                                                               \
        goto jump;                                                                    \
    }

// A branch from slot idx: its edge, then the jump. FALL: a conditional branch not taken
// (its fall-through is an edge too).
#define BRANCH(target_)                                                               \
    {                                                                                 \
        u64 bt_ = (target_);                                                          \
        COV_EDGE(base + idx * 4, bt_);                                                \
        JUMP(bt_)                                                                     \
    }
#define FALL() COV_EDGE(base + idx * 4, base + idx * 4 + 4)

// An out-of-line load or store (ldst.cu): on, or the lane stops for the host or a miss.
#define COLD(call_)                                                                   \
    {                                                                                 \
        u32 r_ = (call_);                                                             \
        if (r_ == COLD_HOST) {                                                        \
            stop = STOP_HOST;                                                         \
            goto stop_here;                                                           \
        }                                                                             \
        if (r_ != COLD_OK) {                                                          \
            miss_addr = cold_miss;                                                    \
            miss_write = r_ == COLD_MISS_W;                                           \
            goto miss;                                                                \
        }                                                                             \
        break;                                                                        \
    }

    nw0 = ops[2 * idx];
    nimm = ops[2 * idx + 1];

    for (;;) {
#if defined(ARMADA_MINPC) && !defined(ARMADA_SIM) && !defined(ARMADA_NO_MINPC)
        // Lanes of a warp at different micro-ops serialize, and lanes running the same code
        // out of step stay out of step: a lane waits while another lane of its warp is less
        // than MINPC_LAG micro-ops behind it, so lanes out of step in the same code fall
        // into step, while lanes far apart (an interpreter's lanes in different handlers, or
        // in different libraries) each run, sharing the loop's fetch and decode, instead of
        // taking turns. Measured on an H100 (docs/performance.md, "Min-PC within a window"):
        // 8,192 Python lanes' kernel 18.2 s waiting for any lane behind, 14.5 s with no
        // vote, 11.8-12.6 s with a window of 16 to 256. With one lane a warp (lane_shift 5)
        // there is nothing to vote on. ARMADA_NO_MINPC (a variant to measure): no vote.
        if (P.lane_shift < 5) {
            u32 key = kbase + (u32)idx;
            u32 lag = key - __reduce_min_sync(__activemask(), key);
            if (lag != 0 && lag < MINPC_LAG) continue;
        }
#endif
        if (retired >= check) {
            if (retired >= end) {
                stop = retired >= limit ? STOP_LIMIT : STOP_SLICE;
                break;
            }
            u64 now = a_now_ns();
            if (now - t_start >= P.min_run_ns) {
                u64 first = *(volatile u64*)&P.sched[0];
                u64 grace = first > launch_start ? first - launch_start : 0;
                if (grace < P.min_grace_ns) grace = P.min_grace_ns;
                if (now - t_start >= P.max_ns || (first != 0 && now >= first + grace)) {
                    stop = STOP_SLICE;
                    break;
                }
            }
            check = retired + CHECK_EVERY;
            if (check > end) check = end;
        }
#ifdef ARMADA_NO_PREFETCH
        u64 w0 = ops[2 * idx];
        u64 imm = ops[2 * idx + 1];
#else
        u64 w0 = nw0, imm = nimm;
        {
            // the next micro-op's two words in one 16-byte load
            OpWords nx = ((const OpWords*)ops)[idx + 1];
            nw0 = nx.w0;
            nimm = nx.imm;
        }
#endif
    decode: // (a translated block that cannot run whole comes back with its slot's own micro-op)
        u32 op = (u32)(w0 & 0xffff);
        u32 a = (u32)(w0 >> 16) & 63, b = (u32)(w0 >> 24) & 63, c = (u32)(w0 >> 32) & 63;
        u32 d = (u32)(w0 >> 40) & 0xff, dr = d & 63;
        u32 e = (u32)(w0 >> 48) & 0xff, f = (u32)(w0 >> 56) & 0xff;

#if defined(ARMADA_SIM) && defined(ARMADA_STATS)
        STAT(ops[op & 0x7ff]);
#endif
#ifndef ARMADA_NO_LDST_FIRST
        // The loads and stores of general registers, a third of what real programs run, are
        // found before the switch's tree of compares (NVRTC compiles the switch as a tree
        // about seven compares deep with small jump tables at its leaves).
        // ARMADA_NO_LDST_FIRST (a variant to measure) leaves them to the switch.
        if (op - OP_LDR_B <= OP_STR_X - OP_LDR_B || op == OP_LDP_X || op == OP_STP_X) goto ldst;
#endif
        switch (op) {
        case OP_NOP:
        case OP_PRFM:
        case OP_MSR_NZCV_IMM:
            break;
        case OP_END_OF_REGION: {
            pc = base + idx * 4;
            if (!find_region(P, regs, pc, base, rlen, ops)) {
                stop = STOP_HOST;
                goto done;
            }
            kbase = (u32)((ops - P.ops) >> 1);
            idx = (pc - base) >> 2;
            RELOAD()
            continue;
        }
        case OP_UNDEFINED:
            stop = STOP_UNDEFINED;
            info = imm;
            goto stop_here;
        case OP_SVC:
            idx++;
            retired++;
            {
                u32 dev = dev_syscall(T, P, lane, rec, x, retired);
                if (dev == DEV_ANSWERED) {
                    RELOAD()
                    continue;
                }
                stop = dev == DEV_EXIT ? STOP_EXIT : STOP_SVC;
            }
            info = imm;
            goto stop_here;
        case OP_HLT:
            idx++;
            retired++;
            stop = STOP_HLT;
            info = imm;
            goto stop_here;
        case OP_BRK:
            stop = STOP_BRK;
            info = imm;
            goto stop_here;

        // ----- branches
        case OP_B: BRANCH(imm)
        case OP_BL:
            x[30] = base + (idx + 1) * 4;
            BRANCH(imm)
        case OP_BR: BRANCH(x[b])
        case OP_BLR: {
            u64 t = x[b];
            x[30] = base + (idx + 1) * 4;
            BRANCH(t)
        }
        case OP_B_COND:
            if (cond_holds(e, nzcv)) BRANCH(imm)
            FALL();
            break;
        case OP_CBZ_W:
            if ((u32)x[b] == 0) BRANCH(imm)
            FALL();
            break;
        case OP_CBZ_X:
            if (x[b] == 0) BRANCH(imm)
            FALL();
            break;
        case OP_CBNZ_W:
            if ((u32)x[b] != 0) BRANCH(imm)
            FALL();
            break;
        case OP_CBNZ_X:
            if (x[b] != 0) BRANCH(imm)
            FALL();
            break;
        case OP_TBZ:
            if (((x[b] >> (e & 63)) & 1) == 0) BRANCH(imm)
            FALL();
            break;
        case OP_TBNZ:
            if (((x[b] >> (e & 63)) & 1) != 0) BRANCH(imm)
            FALL();
            break;

        // ----- system
        case OP_MRS: x[a] = sysreg_read(rec, imm, nzcv, tpidr, retired); break;
        case OP_MSR: sysreg_write(rec, imm, x[b], nzcv, tpidr); break;
        case OP_CLREX: excl = MAXU64; break;
        case OP_DC_ZVA: {
            u64 addr = x[b] & ~(u64)(ZVA_BYTES - 1);
            TR(p, addr, 1)
            for (int i = 0; i < ZVA_BYTES / 8; i++) ((u64*)p)[i] = 0;
            break;
        }


        // A compare and the B.cond after it in one dispatch (layout.rs: fused), when the
        // lane's budget has room for both; otherwise only the compare retires here.
        case OP_ADDS_IMM_W_BCOND:
        case OP_ADDS_IMM_X_BCOND:
        case OP_SUBS_SR_W_BCOND:
        case OP_SUBS_SR_X_BCOND: {
            switch (op) { // the compare, as armada-semantics defines it (generated)
// @include fused.cu
            }
            if (retired + 1 < end) {
#ifdef ARMADA_NO_PREFETCH
                u64 bw0 = ops[2 * idx + 2], bimm = ops[2 * idx + 3];
#else
                u64 bw0 = nw0, bimm = nimm; // the B.cond, loaded one ahead
#endif
                retired++;
                idx++;
                if (cond_holds((u32)(bw0 >> 48) & 0xff, nzcv)) BRANCH(bimm)
                FALL();
                idx++;
                retired++;
                RELOAD()
                continue;
            }
            break;
        }
        // the ops armada-semantics defines (crates/armada-semantics) that the loop runs
        // inline (hot_ops.rs), generated; the others are exec_cold's (cold.cu)
// @include defined.cu

#ifdef ARMADA_BLOCKS
        // A translated block (blocks.rs, generated for this batch's hot code), run whole
        // when the lane's budget has room for all of it; otherwise the loop runs the slot's
        // own micro-op.
        case OP_TBLOCK: {
            const u64* bt = BLOCK_TABLE + 3 * (u32)(w0 >> 16);
            if (retired + bt[2] > end) {
                w0 = bt[0];
                imm = bt[1];
                goto decode;
            }
            BlockExit r = BLOCKS[(u32)(w0 >> 16)](x, nzcv, T, base + idx * 4);
            idx += r.n;
            retired += r.n;
            if (r.how == BX_JUMP) {
                jt = r.v;
                goto jump;
            }
            if (r.n == 0) {
                // it left before its first micro-op: the loop runs that one, or the lane
                // would come back to the block for ever
                w0 = bt[0];
                imm = bt[1];
                goto decode;
            }
            RELOAD()
            continue;
        }
#endif

        // ----- loads and stores
        case OP_LDR_B: case OP_LDR_H: case OP_LDR_W: case OP_LDR_X:
        case OP_LDRSB_W: case OP_LDRSB_X: case OP_LDRSH_W: case OP_LDRSH_X: case OP_LDRSW:
        case OP_LDR_V8: case OP_LDR_V16: case OP_LDR_V32: case OP_LDR_V64: case OP_LDR_V128:
        case OP_STR_B: case OP_STR_H: case OP_STR_W: case OP_STR_X:
        case OP_STR_V8: case OP_STR_V16: case OP_STR_V32: case OP_STR_V64: case OP_STR_V128:
        case OP_LDP_W: case OP_LDP_X: case OP_LDPSW: case OP_STP_W: case OP_STP_X:
        case OP_LDP_V32: case OP_LDP_V64: case OP_LDP_V128: case OP_STP_V32: case OP_STP_V64: case OP_STP_V128: {
        ldst:
            u64 addr;
            if (f == AM_OFFSET || f == AM_PRE) addr = x[b] + imm;
            else if (f == AM_POST) addr = x[b];
            else addr = x[b] + extend(x[c], e >> 3, e & 7);
            // The common case first: one general register, within one page.
            if (op >= OP_LDR_B && op <= OP_STR_X) {
                u32 k = op - OP_LDR_B;
                u32 lg = (LDST_LG >> (2 * k)) & 3;
                if ((addr & 4095) + (1u << lg) <= 4096) {
                    u32 wr1 = op >= OP_STR_B;
                    TR(p1, addr, wr1)
                    if (wr1) {
                        st_raw(p1, 1u << lg, x[a]);
                        if (f == AM_PRE) x[b] = addr;
                        else if (f == AM_POST) x[b] = addr + imm;
                    } else {
                        u64 v = ld_raw(p1, 1u << lg);
                        switch (op) {
                        case OP_LDRSB_W: v = (u32)(i32)(signed char)(u8)v; break;
                        case OP_LDRSB_X: v = (u64)(i64)(signed char)(u8)v; break;
                        case OP_LDRSH_W: v = (u32)(i32)(short)(u16)v; break;
                        case OP_LDRSH_X: v = (u64)(i64)(short)(u16)v; break;
                        case OP_LDRSW: v = (u64)(i64)(i32)(u32)v; break;
                        default: break;
                        }
                        if (f == AM_PRE) x[b] = addr;
                        else if (f == AM_POST) x[b] = addr + imm;
                        x[a] = v;
                    }
                    break;
                }
            }
            // Pairs of general registers within one page (every call's frame is saved and
            // restored with them): loaded, the base written back, then the registers (a load
            // into the base wins).
            if ((op == OP_LDP_X || op == OP_STP_X) && (addr & 4095) + 16 <= 4096) {
                if (op == OP_STP_X) {
                    TR(p2, addr, 1)
                    st_raw(p2, 8, x[a]);
                    st_raw(p2 + 8, 8, x[dr]);
                    if (f == AM_PRE) x[b] = addr;
                    else if (f == AM_POST) x[b] = addr + imm;
                } else {
                    TR(p2, addr, 0)
                    u64 v0 = ld_raw(p2, 8), v1 = ld_raw(p2 + 8, 8);
                    if (f == AM_PRE) x[b] = addr;
                    else if (f == AM_POST) x[b] = addr + imm;
                    x[a] = v0;
                    x[dr] = v1;
                }
                break;
            }
            COLD(ldst_general(T, P, lane, rec, x, op, a, b, d, f, addr, imm, cold_miss))
        }

        // exclusives and atomics (ldst.cu)
        case OP_LDXR: case OP_LDXP: case OP_STXR: case OP_STXP: case OP_ATOMIC_RMW: case OP_CAS: case OP_CASP:
            COLD(excl_atomic(T, P, lane, rec, x, excl, op, a, b, c, d, e, f, cold_miss))

        // structure loads and stores of one register group (ldst.cu)
        case OP_V_LD_MULTI: case OP_V_ST_MULTI: case OP_V_LD_SINGLE: case OP_V_ST_SINGLE: case OP_V_LD_REPL:
            COLD(vec_struct(T, P, lane, rec, x, op, a, b, c, d, e, f, imm, cold_miss))

        default:
            // FP/SIMD without memory: on the GPU when exec_simd knows it; the other defined
            // ops (cold.cu); else on the host.
            if (op >= OP_V_MOVI) {
                if (exec_simd(rec, x, nzcv, op, a, b, c, d, e, f, imm)) break;
            } else if (exec_cold(x, nzcv, op, a, b, c, dr, e, f, imm)) {
                break;
            }
            stop = STOP_HOST;
            goto stop_here;
        }
        idx++;
        retired++;
        continue;
    jump: // every branch's (JUMP): within the region an index, else the region found again
        retired++;
        if (jt - base < rlen && (jt & 3) == 0) {
            idx = (jt - base) >> 2;
            RELOAD()
            continue;
        }
        if (!find_region(P, regs, jt, base, rlen, ops)) {
            pc = jt;
            stop = STOP_HOST;
            goto done;
        }
        kbase = (u32)((ops - P.ops) >> 1);
        idx = (jt - base) >> 2;
        RELOAD()
    }
stop_here:
    pc = base + idx * 4;
    goto done;
miss:
    pc = base + idx * 4;
    stop = miss_write ? STOP_MISS_W : STOP_MISS_R;
    info = miss_addr;
    goto done;
done:
    if (stop == STOP_LIMIT || stop == STOP_SLICE) pc = base + idx * 4;
    // where a lane's slice ended, as the micro-op's index in P.ops: the host's sample of
    // where lanes spend their time, to choose the blocks it translates
    if (stop == STOP_SLICE) info = kbase + idx;
    COV_FLUSH()
#pragma unroll
    for (int r = 0; r < 32; r++) rec[S_X + r] = x[r];
    rec[S_PC] = pc;
    rec[S_NZCV] = nzcv;
    rec[S_TPIDR] = tpidr;
    rec[S_EXCL] = excl;
    rec[S_RETIRED] = retired;
    rec[S_STOP] = stop;
    rec[S_INFO] = info;
    P.stops[lane] = stop;
    if (stop == STOP_EXIT && P.ends) {
        u64* e = P.ends + (u64)lane * END_WORDS;
        e[0] = x[0];
        e[1] = retired;
        e[2] = COV_NEWS();
    }
    // the clock of the grace period (lanes leave the launch once the first lane that needs
    // the host has waited about as long as it ran): a lane that ended at exit needs nothing
    // soon, so its stop does not start it
    if (stop != STOP_SLICE && stop != STOP_EXIT) a_set_once(&P.sched[0], a_now_ns());
    if (P.progress) a_store_progress((volatile u64*)&P.progress[lane], retired);
#undef TR
#undef JUMP
#undef BRANCH
#undef FALL
#undef COLD
}

