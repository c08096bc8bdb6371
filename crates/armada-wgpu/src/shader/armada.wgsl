// The interpreter (armada.cu's run_lane) and the entry points: run, copy, diff, pt_write.
//
// CUDA's gotos become a loop: each micro-op sets `flow` (next, jump, region change, stop) and
// the code after the op switch moves the index, leaves the loop, or changes region. There is no
// clock: a lane runs until it stops, reaches its limit, or retires P.slice instructions.

// The current code region: base address, length in bytes, index of its first micro-op (in
// micro-ops of 4 words: `mem[4 * (rops + idx)]` is micro-op idx's first word; the ops are
// 256-byte aligned, so the index says to the driver's compiler that a micro-op's four words can
// be one 16-byte load).
var<private> rbase: u64;
var<private> rlen: u64;
var<private> rops: u32;

// A micro-op's four words (the ops of a region, from word index w = 4 * its index).
fn op_words(q: u32) -> vec4<u32> {
    let w = 4u * q;
    return vec4<u32>(mem[w], mem[w + 1u], mem[w + 2u], mem[w + 3u]);
}

// The next micro-op's words, loaded one iteration ahead (OP_PREFETCH), and the index (rops +
// idx) they are for: the load's latency hides behind the current micro-op, as in armada.cu's
// RELOAD. A jump, a refill or a wait leaves them for another index, and the loop loads again.
var<private> nwords: vec4<u32>;
var<private> nkey: u32;

const FLOW_NEXT: u32 = 0u;   // idx++, retired++
const FLOW_JUMP: u32 = 1u;   // retired++, continue at `jt`
const FLOW_REGION: u32 = 2u; // continue at `jt` (END_OF_REGION: nothing retired)
const FLOW_STOP: u32 = 3u;   // stop with g_stop/g_info at base + idx * 4, or refill (g_refill)

// Not a micro-op (they are below 0x800): a lane that waits for its subgroup's lowest micro-op
// (min-PC scheduling) runs this instead, which changes nothing, through the same switch and the
// same path after it as the lanes that run.
const OP_WAIT: u32 = 0xffffu;

// Loop budget (LOOP_BUDGET, helpers.wgsl): an upper bound of the loop iterations lavapipe counts
// for one pass of the main loop (every loop construct inlined into it counts one even when no
// lane enters it: 26 loops in the source, 23 measured on Mesa 22.3, before the structure
// accesses' element loop made 27; the pipelines with fp.wgsl have three more, 30), and a
// margin for the inner loops of one instruction (page-table probes included).
const LOOP_PER_ITER: u32 = 32u;
const LOOP_MARGIN: u32 = 1024u;

fn find_region(regs: u64, pc: u64) -> bool {
    if (pc & 3lu) != 0lu { return false; }
    let first = u32(regs);
    let n = u32(regs >> 32u);
    let rw = wi(P.regions);
    for (var i = first; i < first + n && i < P.nregions; i++) {
        lp(2u);
        let b = ld64w(rw + 6u * i);
        let e = ld64w(rw + 6u * i + 2u);
        if pc >= b && pc < e {
            rbase = b;
            rlen = e - b;
            rops = (wi(P.ops) >> 2u) + u32(ld64w(rw + 6u * i + 4u));
            return true;
        }
    }
    return false;
}

// The edge (src, dst) into the current lane's map: coverage.rs's edge_index, a saturating
// one-byte counter (the lane owns its map: no atomics). A pipeline with coverage runs
// launches without it too on a CPU adapter (`all_coverage`): their map pointer is 0.
fn cov_edge(src: u64, dst: u64) {
    if COVERAGE == 0u || P.k_a == 0lu { return; }
    let s = u32(src >> 2u) * 0x9e3779b1u;
    let slot = ((s ^ u32(dst >> 2u)) * 0x85ebca6bu) >> 16u;
    let w = wi(P.k_a) + cur_lane * (COV_MAP_BYTES / 4u) + (slot >> 2u);
    let sh = (slot & 3u) * 8u;
    let v = mem[w];
    if ((v >> sh) & 255u) != 255u { mem[w] = v + (1u << sh); }
}

fn mrs(key: u64, tpidr: u64, retired: u64) -> u64 {
    // sysreg keys are small: one outside u32 reads as zero like any unknown key
    let k = select(0u, u32(key), key < 0x100000000lu);
    switch k {
        case 1u: { return u64(nzcv); }           // SYSREG_NZCV
        case 2u: { return rget(S_FPCR); }        // SYSREG_FPCR
        case 3u: { return rget(S_FPSR); }        // SYSREG_FPSR
        case 4u: { return tpidr; }               // SYSREG_TPIDR_EL0
        case 8u, 16u: { return retired; }        // SYSREG_CNTVCT_EL0, SYSREG_CNTPCT_EL0
        // (the registers whose read is a constant: armada_isa's sysreg::value::CONSTANT)
        default: { return sysreg_constant(k); }
    }
}

// The case labels of mrs are the SYSREG_* keys; this fails to compile if they move.
const_assert SYSREG_NZCV == 1lu && SYSREG_FPCR == 2lu && SYSREG_FPSR == 3lu && SYSREG_TPIDR_EL0 == 4lu;
const_assert SYSREG_CNTVCT_EL0 == 8lu && SYSREG_CNTPCT_EL0 == 16lu;

fn run_lane(lane: u32) {
    cur_lane = lane;
    R = wi(P.lanes) + lane * (2u * S_WORDS);
    // unrolled: no loop iterations for lavapipe's limiter
    x[0] = rget(S_X + 0u);
    x[1] = rget(S_X + 1u);
    x[2] = rget(S_X + 2u);
    x[3] = rget(S_X + 3u);
    x[4] = rget(S_X + 4u);
    x[5] = rget(S_X + 5u);
    x[6] = rget(S_X + 6u);
    x[7] = rget(S_X + 7u);
    x[8] = rget(S_X + 8u);
    x[9] = rget(S_X + 9u);
    x[10] = rget(S_X + 10u);
    x[11] = rget(S_X + 11u);
    x[12] = rget(S_X + 12u);
    x[13] = rget(S_X + 13u);
    x[14] = rget(S_X + 14u);
    x[15] = rget(S_X + 15u);
    x[16] = rget(S_X + 16u);
    x[17] = rget(S_X + 17u);
    x[18] = rget(S_X + 18u);
    x[19] = rget(S_X + 19u);
    x[20] = rget(S_X + 20u);
    x[21] = rget(S_X + 21u);
    x[22] = rget(S_X + 22u);
    x[23] = rget(S_X + 23u);
    x[24] = rget(S_X + 24u);
    x[25] = rget(S_X + 25u);
    x[26] = rget(S_X + 26u);
    x[27] = rget(S_X + 27u);
    x[28] = rget(S_X + 28u);
    x[29] = rget(S_X + 29u);
    x[30] = rget(S_X + 30u);
    x[31] = rget(S_X + 31u);
    x[32] = 0lu;
    x[33] = 0lu;
    var pc = rget(S_PC);
    nzcv = u32(rget(S_NZCV));
    var tpidr = rget(S_TPIDR);
    excl = rget(S_EXCL);
    var retired = rget(S_RETIRED);
    let limit = rget(S_LIMIT);
    let regs = rget(S_REGIONS);
    var end = retired + P.slice;
    if end < retired || end > limit { end = limit; }
    tag0 = MAXU64;
    tag1 = MAXU64;
    tag2 = MAXU64;
    tag3 = MAXU64;
    ptr0 = 0u;
    ptr1 = 0u;
    ptr2 = 0u;
    ptr3 = 0u;
    twr = 0u;
    nkey = 0xffffffffu;

    var stop = STOP_NONE;
    var info = 0lu;
    var idx = 0u;

    if !find_region(regs, pc) {
        stop = STOP_HOST;
    } else {
        idx = u32((pc - rbase) >> 2u);
        loop {
            if retired >= end {
                stop = select(STOP_SLICE, STOP_LIMIT, retired >= limit);
                pc = rbase + u64(idx) * 4lu;
                break;
            }
            if LOOP_BUDGET != 0u {
                lp_used += LOOP_PER_ITER;
                if lp_used + LOOP_MARGIN >= LOOP_BUDGET {
                    stop = STOP_SLICE;
                    pc = rbase + u64(idx) * 4lu;
                    break;
                }
            }
            let oq = rops + idx;
            let ow = 4u * oq;
            // Min-PC scheduling (docs/cuda.md): lanes of a subgroup running the same code out
            // of step stay out of step in a switch-based interpreter, each dispatch serving
            // only the lanes at one micro-op. So a lane waits while another lane of its
            // subgroup is less than MINPC_WINDOW micro-ops behind it (its word index, unique
            // across regions), and falls back into step; lanes far apart (in different
            // handlers or libraries) run side by side. It changes which lane runs when, never
            // what a lane computes, and the lowest always runs. Only in the pipelines built with VOTE (a
            // GPU with subgroups: vote_wait, lib.rs), and in launches where lanes share
            // subgroups (P.vote).
            let waiting = VOTE != 0u && P.vote != 0u && vote_wait(ow);
            var cw: vec4<u32>;
            if OP_PREFETCH != 0u {
                if nkey == oq { cw = nwords; } else { cw = op_words(oq); }
                nwords = op_words(oq + 1u);
                nkey = oq + 1u;
            } else {
                cw = op_words(oq);
            }
            let w0 = cw.x;
            let w1 = cw.y;
            let imm = u64(cw.z) | (u64(cw.w) << 32u);
            let op = select(w0 & 0xffffu, OP_WAIT, waiting);
            let a = (w0 >> 16u) & 63u;
            let b = (w0 >> 24u) & 63u;
            let c = w1 & 63u;
            let d = (w1 >> 8u) & 0xffu;
            let dr = d & 63u;
            let e = (w1 >> 16u) & 0xffu;
            let f = w1 >> 24u;

            var flow = FLOW_NEXT;
            var step = 1u;
            var jt = 0lu;
            switch op {
                case OP_NOP, OP_PRFM, OP_MSR_NZCV_IMM: {}
                case OP_WAIT: { step = 0u; }
                case OP_END_OF_REGION: {
                    jt = rbase + u64(idx) * 4lu;
                    flow = FLOW_REGION;
                }
                case OP_UNDEFINED: {
                    g_stop = STOP_UNDEFINED;
                    g_info = imm;
                    flow = FLOW_STOP;
                }
                case OP_SVC, OP_HLT: {
                    idx += 1u;
                    retired += 1lu;
                    g_stop = select(STOP_HLT, STOP_SVC, op == OP_SVC);
                    g_info = imm;
                    flow = FLOW_STOP;
                }
                case OP_BRK: {
                    g_stop = STOP_BRK;
                    g_info = imm;
                    flow = FLOW_STOP;
                }

                // ----- branches
                case OP_B: {
                    jt = imm;
                    flow = FLOW_JUMP;
                    cov_edge(rbase + u64(idx) * 4lu, jt);
                }
                case OP_BL: {
                    x[30] = rbase + u64(idx + 1u) * 4lu;
                    jt = imm;
                    flow = FLOW_JUMP;
                    cov_edge(rbase + u64(idx) * 4lu, jt);
                }
                case OP_BR: {
                    jt = x[b];
                    flow = FLOW_JUMP;
                    cov_edge(rbase + u64(idx) * 4lu, jt);
                }
                case OP_BLR: {
                    jt = x[b];
                    x[30] = rbase + u64(idx + 1u) * 4lu;
                    flow = FLOW_JUMP;
                    cov_edge(rbase + u64(idx) * 4lu, jt);
                }
                case OP_B_COND, OP_CBZ_W, OP_CBZ_X, OP_CBNZ_W, OP_CBNZ_X, OP_TBZ, OP_TBNZ: {
                    var taken: bool;
                    switch op {
                        case OP_B_COND: { taken = cond_holds(e, nzcv); }
                        case OP_CBZ_W: { taken = (x[b] & LO32) == 0lu; }
                        case OP_CBZ_X: { taken = x[b] == 0lu; }
                        case OP_CBNZ_W: { taken = (x[b] & LO32) != 0lu; }
                        case OP_CBNZ_X: { taken = x[b] != 0lu; }
                        case OP_TBZ: { taken = ((x[b] >> (e & 63u)) & 1lu) == 0lu; }
                        default: { taken = ((x[b] >> (e & 63u)) & 1lu) != 0lu; }
                    }
                    if taken {
                        jt = imm;
                        flow = FLOW_JUMP;
                        cov_edge(rbase + u64(idx) * 4lu, jt);
                    } else {
                        cov_edge(rbase + u64(idx) * 4lu, rbase + u64(idx + 1u) * 4lu);
                    }
                }

                // ----- system
                case OP_MRS: { x[a] = mrs(imm, tpidr, retired); }
                case OP_MSR: {
                    let v = x[b];
                    if imm == SYSREG_NZCV {
                        nzcv = u32(v & 0xf0000000lu);
                    } else if imm == SYSREG_FPCR {
                        rset(S_FPCR, v & CONST_FPCR_MASK);
                    } else if imm == SYSREG_FPSR {
                        rset(S_FPSR, v & CONST_FPSR_MASK);
                    } else {
                        tpidr = v;
                    }
                }
                case OP_CLREX: { excl = MAXU64; }
                case OP_DC_ZVA: {
                    let addr = x[b] & ~u64(ZVA_BYTES - 1u);
                    let p = tr(addr, true);
                    if p == NOFP {
                        flow = FLOW_STOP;
                    } else {
                        // p is ZVA_BYTES-aligned (addr is, frames are 4096-aligned)
                        let sp = u32(p >> 32u);
                        let w = u32(p) >> 2u;
                        for (var i = 0u; i < ZVA_BYTES / 4u; i++) {
                            lp(2u);
                            fst(sp, w + i, 0u);
                        }
                    }
                }


                // A compare and the B.cond after it in one dispatch (layout.rs: fused), when
                // the lane's budget has room for both; otherwise only the compare retires here
                // (the B.cond keeps its own slot, so it runs next as any branch).
                case OP_ADDS_IMM_W_BCOND, OP_ADDS_IMM_X_BCOND, OP_SUBS_SR_W_BCOND, OP_SUBS_SR_X_BCOND: {
                    switch op {
                        // the compare, as armada-semantics defines it (generated)
// @generated fused
                        default: {}
                    }
                    if retired + 1lu < end {
                        // the B.cond: its condition (field e) and target
                        var bw: vec4<u32>;
                        if OP_PREFETCH != 0u { bw = nwords; } else { bw = op_words(oq + 1u); }
                        let bcond = (bw.y >> 16u) & 0xffu;
                        let bt = u64(bw.z) | (u64(bw.w) << 32u);
                        retired += 1lu;
                        idx += 1u;
                        if cond_holds(bcond, nzcv) {
                            jt = bt;
                            flow = FLOW_JUMP;
                            cov_edge(rbase + u64(idx) * 4lu, jt);
                        } else {
                            cov_edge(rbase + u64(idx) * 4lu, rbase + u64(idx + 1u) * 4lu);
                        }
                    }
                }
                // the ops armada-semantics defines (crates/armada-semantics), generated
// @generated defined

                // ----- loads and stores
                case OP_LDR_B, OP_LDR_H, OP_LDR_W, OP_LDR_X,
                     OP_LDRSB_W, OP_LDRSB_X, OP_LDRSH_W, OP_LDRSH_X, OP_LDRSW,
                     OP_LDR_V8, OP_LDR_V16, OP_LDR_V32, OP_LDR_V64, OP_LDR_V128,
                     OP_STR_B, OP_STR_H, OP_STR_W, OP_STR_X,
                     OP_STR_V8, OP_STR_V16, OP_STR_V32, OP_STR_V64, OP_STR_V128,
                     OP_LDP_W, OP_LDP_X, OP_LDPSW, OP_STP_W, OP_STP_X,
                     OP_LDP_V32, OP_LDP_V64, OP_LDP_V128, OP_STP_V32, OP_STP_V64, OP_STP_V128: {
                    if !exec_ldst(op, a, b, c, d, e, f, imm) { flow = FLOW_STOP; }
                }
                case OP_LDXR, OP_LDXP, OP_STXR, OP_STXP, OP_ATOMIC_RMW, OP_CAS, OP_CASP: {
                    if !exec_excl(op, a, b, c, d, e, f) { flow = FLOW_STOP; }
                }
                case OP_V_LD_MULTI, OP_V_ST_MULTI, OP_V_LD_SINGLE, OP_V_ST_SINGLE, OP_V_LD_REPL: {
                    if !exec_vldst(op, a, b, c, d, e, f, imm) { flow = FLOW_STOP; }
                }

                default: {
                    // AdvSIMD without memory: here when exec_simd knows it, else on the host.
                    if op < OP_V_MOVI || !exec_simd(op, a, b, c, d, e, f, imm) {
                        g_stop = STOP_HOST;
                        g_info = 0lu;
                        flow = FLOW_STOP;
                    }
                }
            }

            if flow == FLOW_NEXT {
                idx += step;
                retired += u64(step);
                continue;
            }
            if flow == FLOW_STOP {
                if g_refill {
                    // a translation-cache miss: walk the page table, then run the instruction
                    // again (it changed nothing), or stop for the host to map the page
                    if tlb_refill() { continue; }
                    g_stop = select(STOP_MISS_R, STOP_MISS_W, g_write);
                    g_info = g_addr;
                }
                stop = g_stop;
                info = g_info;
                pc = rbase + u64(idx) * 4lu;
                break;
            }
            if flow == FLOW_JUMP { retired += 1lu; }
            let off = jt - rbase;
            if off < rlen && (jt & 3lu) == 0lu {
                idx = u32(off >> 2u);
                continue;
            }
            if !find_region(regs, jt) {
                pc = jt;
                stop = STOP_HOST;
                break;
            }
            idx = u32((jt - rbase) >> 2u);
        }
    }
    if stop == STOP_NONE {
        // only if lavapipe ended the loop (LOOP_BUDGET unset or too high): at an instruction
        // boundary when it happened at the end of an iteration
        stop = STOP_SLICE;
        pc = rbase + u64(idx) * 4lu;
    }

    // unrolled: the write-back must not depend on any loop budget left
    rset(S_X + 0u, x[0]);
    rset(S_X + 1u, x[1]);
    rset(S_X + 2u, x[2]);
    rset(S_X + 3u, x[3]);
    rset(S_X + 4u, x[4]);
    rset(S_X + 5u, x[5]);
    rset(S_X + 6u, x[6]);
    rset(S_X + 7u, x[7]);
    rset(S_X + 8u, x[8]);
    rset(S_X + 9u, x[9]);
    rset(S_X + 10u, x[10]);
    rset(S_X + 11u, x[11]);
    rset(S_X + 12u, x[12]);
    rset(S_X + 13u, x[13]);
    rset(S_X + 14u, x[14]);
    rset(S_X + 15u, x[15]);
    rset(S_X + 16u, x[16]);
    rset(S_X + 17u, x[17]);
    rset(S_X + 18u, x[18]);
    rset(S_X + 19u, x[19]);
    rset(S_X + 20u, x[20]);
    rset(S_X + 21u, x[21]);
    rset(S_X + 22u, x[22]);
    rset(S_X + 23u, x[23]);
    rset(S_X + 24u, x[24]);
    rset(S_X + 25u, x[25]);
    rset(S_X + 26u, x[26]);
    rset(S_X + 27u, x[27]);
    rset(S_X + 28u, x[28]);
    rset(S_X + 29u, x[29]);
    rset(S_X + 30u, x[30]);
    rset(S_X + 31u, x[31]);
    rset(S_PC, pc);
    rset(S_NZCV, u64(nzcv));
    rset(S_TPIDR, tpidr);
    rset(S_EXCL, excl);
    rset(S_RETIRED, retired);
    rset(S_STOP, u64(stop));
    rset(S_INFO, info);
    mem[wi(P.stops) + lane] = stop;
    if P.progress != 0lu { st64w(wi(P.progress) + 2u * lane, retired); }
}

// ------------------------------------------------------------------------------------------
// Entry points. All use 64 threads a workgroup.

// Thread t (+ lane_base: big launches are split into several dispatches) runs active lane
// t >> lane_shift when its low lane_shift bits are zero (small batches spread their lanes out,
// so lanes at different PCs do not share a subgroup).
@compute @workgroup_size(64)
fn run(@builtin(global_invocation_id) gid: vec3<u32>) {
    let t = gid.x + P.lane_base;
    if (t & ((1u << P.lane_shift) - 1u)) != 0u { return; }
    let i = t >> P.lane_shift;
    if i < P.nactive { run_lane(mem[wi(P.active_list) + i]); }
}

// Copies: k_a = CopyDesc {src, dst, words} array, k_n = count; src and dst are device pointers
// of any space. Workgroup-stride over the descriptors (any number of workgroups), the 64
// threads over the words of one.
@compute @workgroup_size(64)
fn copy(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    for (var k = wg.x; k < P.k_n; k += nwg.x) {
        let dw = wi(P.k_a) + 6u * k;
        let src = ld64w(dw);
        let dst = ld64w(dw + 2u);
        let ss = u32(src >> 32u);
        let ts = u32(dst >> 32u);
        let s = u32(src) >> 2u;
        let t = u32(dst) >> 2u;
        let n = u32(ld64w(dw + 4u)) * 2u;
        for (var i = li; i < n; i += 64u) { gst(ts, t + i, gld(ss, s + i)); }
    }
}

// Changed 64-byte blocks of the listed frames (k_a: their device pointers, k_n: count) against
// their shadows (at frame + k_b): each changed block is appended to k_c as (index << 6 | block,
// 8 words), its slot counted in counter[0], and copied to the shadow. One workgroup per frame
// (workgroup-stride), thread t compares block t.
@compute @workgroup_size(64)
fn diff(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    for (var k = wg.x; k < P.k_n; k += nwg.x) {
        let fr = ld64w(wi(P.k_a) + 2u * k);
        let sp = u32(fr >> 32u); // a frame and its shadow share a chunk, so a space
        let fw = (u32(fr) >> 2u) + 16u * li;
        let sw = (u32(fr + P.k_b) >> 2u) + 16u * li;
        var w: array<u32, 16>;
        var changed = false;
        for (var i = 0u; i < 16u; i++) {
            w[i] = fld(sp, fw + i);
            changed = changed || w[i] != fld(sp, sw + i);
        }
        if changed {
            let pos = atomicAdd(&counter[0], 1u);
            let o = wi(P.k_c) + 18u * pos;
            st64w(o, (u64(k) << 6u) | u64(li));
            for (var i = 0u; i < 16u; i++) {
                mem[o + 2u + i] = w[i];
                fst(sp, sw + i, w[i]);
            }
        }
    }
}

// Page-table writes: k_c = (slot, key, value) triples, k_n = count, into the table at k_a;
// the slot's write epoch (u32 array at k_b) is cleared. Grid-stride (any number of workgroups).
@compute @workgroup_size(64)
fn pt_write(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var i = gid.x; i < P.k_n; i += nwg.x * 64u) {
        let ww = wi(P.k_c) + 6u * i;
        let s = u32(ld64w(ww));
        let pw = wi(P.k_a) + 4u * s;
        st64w(pw, ld64w(ww + 2u));
        st64w(pw + 2u, ld64w(ww + 4u));
        mem[wi(P.k_b) + s] = 0u;
    }
}

// Coverage news (coverage.rs: bucket, slot_mix, Virgin::novelty): for each listed lane (k_c:
// u32 lane numbers, k_n of them), whether its map (k_a + lane * COV_MAP_BYTES) has a hit in a
// bucket the virgin map (k_b: one byte a slot, a bit a bucket) lacks, and the map's path hash:
// k_d[k] (u64) = news << 32 | hash. One workgroup per lane (workgroup-stride).
fn cov_bucket(c: u32) -> u32 {
    if c <= 2u { return c; }
    if c == 3u { return 4u; }
    if c <= 7u { return 8u; }
    if c <= 15u { return 16u; }
    if c <= 31u { return 32u; }
    if c <= 127u { return 64u; }
    return 128u;
}

fn cov_mix(slot: u32, bucket: u32) -> u32 {
    var h = (slot << 8u) | bucket;
    h ^= h >> 16u;
    h *= 0x85ebca6bu;
    h ^= h >> 13u;
    h *= 0xc2b2ae35u;
    return h ^ (h >> 16u);
}

var<workgroup> wg_news: atomic<u32>;
var<workgroup> wg_hash: atomic<u32>;

@compute @workgroup_size(64)
fn cov_news(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) li: u32) {
    for (var k = wg.x; k < P.k_n; k += nwg.x) {
        if li == 0u {
            atomicStore(&wg_news, 0u);
            atomicStore(&wg_hash, 0u);
        }
        workgroupBarrier();
        let mw = wi(P.k_a) + mem[wi(P.k_c) + k] * (COV_MAP_BYTES / 4u);
        let vw = wi(P.k_b);
        var news = 0u;
        var h = 0u;
        for (var w = li; w < COV_MAP_BYTES / 4u; w += 64u) {
            let v = mem[mw + w];
            if v == 0u { continue; }
            let seen = mem[vw + w];
            // the word's four slots, unrolled (no loop iterations for lavapipe's limiter)
            let c0 = v & 255u;
            let c1 = (v >> 8u) & 255u;
            let c2 = (v >> 16u) & 255u;
            let c3 = v >> 24u;
            if c0 != 0u {
                let bk = cov_bucket(c0);
                if (seen & bk) == 0u { news = 1u; }
                h += cov_mix(4u * w, bk);
            }
            if c1 != 0u {
                let bk = cov_bucket(c1);
                if ((seen >> 8u) & bk) == 0u { news = 1u; }
                h += cov_mix(4u * w + 1u, bk);
            }
            if c2 != 0u {
                let bk = cov_bucket(c2);
                if ((seen >> 16u) & bk) == 0u { news = 1u; }
                h += cov_mix(4u * w + 2u, bk);
            }
            if c3 != 0u {
                let bk = cov_bucket(c3);
                if ((seen >> 24u) & bk) == 0u { news = 1u; }
                h += cov_mix(4u * w + 3u, bk);
            }
        }
        if news != 0u { atomicOr(&wg_news, 1u); }
        if h != 0u { atomicAdd(&wg_hash, h); }
        workgroupBarrier();
        if li == 0u {
            st64w(wi(P.k_d) + 2u * k, (u64(atomicLoad(&wg_news)) << 32u) | u64(atomicLoad(&wg_hash)));
        }
        workgroupBarrier();
    }
}
