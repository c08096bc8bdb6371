// armada's wgpu engine: the WGSL port of crates/armada-cuda/src/kernel/armada.cu.
//
// The Rust side prepends the generated header (layout.rs: OP_*, S_*, STOP_*, PT_*, ...) and
// concatenates the files listed in ORDER. Semantics are the CUDA kernel's bit for bit (which
// mirrors crates/armada-core/src/cpu); whatever the shader does not implement stops the lane
// with STOP_HOST before changing anything, and the host's CPU engine runs that instruction.
//
// This file: bindings, Params, and the integer helpers (cpu/int.rs).
//
// Device memory is several storage buffers ("spaces"), and a device pointer is the space above
// bit 32 and the byte offset in its buffer below. Space 0 is `mem`: micro-ops, lane records, the
// page table, staging; its pointers are plain byte offsets (< 4 GiB), so `u32(p >> 2)` is a word
// index and a u64 at word w is mem[w] | mem[w + 1] << 32. Spaces 1.. are the frame buffers
// (guest pages and their shadows), one binding each: one binding holds at most 2-4 GiB, so a
// batch's pages spread over as many as the adapter allows. The host generates their bindings
// (f1, f2, ..., after `counter`), fld/fld2/fst, which read and write a word of a frame buffer
// (a tree of ifs over the space, pruned by the pipeline constant FRAME_SPACES), and gld/gst,
// which reach any space (crates/armada-wgpu/src/lib.rs, `spaces_wgsl`).
// 64-bit countLeadingZeros/firstLeadingBit/reverseBits/countTrailingZeros/extractBits/
// insertBits/countOneBits are avoided (naga panics or lavapipe miscompiles): halves are used.
// Shift amounts are masked explicitly, whatever the backend does with large ones.

// struct Params: generated from device.rs's WParams (lib.rs puts it here)
// @params

@group(0) @binding(0) var<storage, read_write> mem: array<u32>;
@group(0) @binding(1) var<uniform> P: Params;
// counter[0]: the diff kernel's changed blocks; counter[1]: the run kernel's lazy-page claims
// (the host copies each into the count word the engine reads)
@group(0) @binding(2) var<storage, read_write> counter: array<atomic<u32>>;

const MAXU64: u64 = 0xfffffffffffffffflu;

// Loop budget for lavapipe (llvmpipe): it ends every loop of a shader invocation once all loops
// together have run 65535 iterations (LP_MAX_TGSI_LOOP_ITERATIONS, shared by all loops; a
// loop that no invocation of the SIMD batch enters still counts one). An interrupted loop
// would corrupt the lane silently, so with LOOP_BUDGET != 0 the interpreter counts (lp_used)
// an upper bound of those iterations and leaves with STOP_SLICE before reaching the budget.
// 0 (the default): no counting (real GPUs). The host sets it (pipeline constant) on lavapipe,
// where it must also run one lane per SIMD batch (lane_shift >= 4), so that one lane's count
// is the batch's.
override LOOP_BUDGET: u32 = 0u;
var<private> lp_used: u32;
fn lp(n: u32) {
    if LOOP_BUDGET != 0u { lp_used += n; }
}
const LO32: u64 = 0xfffffffflu;

// Edge coverage (armada-core's coverage.rs): with COVERAGE != 0 (a pipeline constant the host
// sets when a batch asks for coverage, and on a CPU adapter always) every branch edge counts
// in the lane's map, the COV_MAP_BYTES at P.k_a + lane * COV_MAP_BYTES (none where P.k_a is
// 0); 0 compiles it away.
override COVERAGE: u32 = 0u;

// The interpreter loads the next micro-op one iteration ahead (armada.wgsl, `nwords`); 0 loads
// each when it runs (the pipelines that vote, and ARMADA_WGPU_PREFETCH=0).
override OP_PREFETCH: u32 = 1u;

// Min-PC scheduling's vote (armada.wgsl) in this pipeline: the host builds one with it for
// launches whose lanes share subgroups, where the shader has subgroup operations; P.vote then
// says whether this launch votes.
override VOTE: u32 = 0u;

// ----- words of mem

fn wi(p: u64) -> u32 { return u32(p >> 2u); }
fn ld64w(w: u32) -> u64 { return u64(mem[w]) | (u64(mem[w + 1u]) << 32u); }
fn st64w(w: u32, v: u64) {
    mem[w] = u32(v);
    mem[w + 1u] = u32(v >> 32u);
}

// ----- bit helpers on halves

fn clz32(v: u32) -> u32 { return countLeadingZeros(v); }
fn clz64(v: u64) -> u32 {
    let hi = u32(v >> 32u);
    if hi != 0u { return countLeadingZeros(hi); }
    return 32u + countLeadingZeros(u32(v));
}
fn popc64(v: u64) -> u32 { return countOneBits(u32(v)) + countOneBits(u32(v >> 32u)); }
fn brev64(v: u64) -> u64 { return (u64(reverseBits(u32(v))) << 32u) | u64(reverseBits(u32(v >> 32u))); }
fn bswap32(v: u32) -> u32 {
    return (v << 24u) | ((v & 0xff00u) << 8u) | ((v >> 8u) & 0xff00u) | (v >> 24u);
}
fn bswap64(v: u64) -> u64 { return (u64(bswap32(u32(v))) << 32u) | u64(bswap32(u32(v >> 32u))); }

// High half of the 128-bit product, from 32-bit partial products.
fn umulhi(a: u64, b: u64) -> u64 {
    let a0 = a & LO32;
    let a1 = a >> 32u;
    let b0 = b & LO32;
    let b1 = b >> 32u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 32u) + (p01 & LO32) + (p10 & LO32);
    return p11 + (p01 >> 32u) + (p10 >> 32u) + (mid >> 32u);
}
// Signed: the unsigned high half, less b for a negative a and a for a negative b (mod 2^64).
fn smulhi(a: u64, b: u64) -> u64 {
    var h = umulhi(a, b);
    if (a >> 63u) != 0lu { h -= b; }
    if (b >> 63u) != 0lu { h -= a; }
    return h;
}

fn ones(n: u32) -> u64 {
    if n >= 64u { return MAXU64; }
    return (1lu << n) - 1lu;
}

fn sext(v: u64, width: u32) -> u64 {
    if width >= 64u { return v; }
    let s = (64u - width) & 63u;
    return u64(i64(v << s) >> s);
}

// ----- the lane's registers while it runs

// x0-x30, SP (31), zero (32, never written), write sink (33); indexed with & 63 as in CUDA
var<private> x: array<u64, 64>;
var<private> nzcv: u32;
var<private> excl: u64; // exclusive monitor: armed address, or MAXU64

// ----- flags (cpu/int.rs add_with_flags*, logic_flags*)

fn add_flags64(a: u64, b: u64, carry: u64) -> u64 {
    let r1 = a + b;
    let r = r1 + carry;
    let c = select(0u, 1u, r1 < a || r < r1);
    let v = u32(((a ^ r) & (b ^ r)) >> 63u);
    let n = u32(r >> 63u);
    let z = select(0u, 1u, r == 0lu);
    nzcv = (n << 31u) | (z << 30u) | (c << 29u) | (v << 28u);
    return r;
}

fn add_flags32(a: u32, b: u32, carry: u32) -> u32 {
    let r1 = a + b;
    let r = r1 + carry;
    let c = select(0u, 1u, r1 < a || r < r1);
    let v = ((a ^ r) & (b ^ r)) >> 31u;
    let n = r >> 31u;
    let z = select(0u, 1u, r == 0u);
    nzcv = (n << 31u) | (z << 30u) | (c << 29u) | (v << 28u);
    return r;
}

fn logic_flags64(r: u64) -> u32 { return (u32(r >> 63u) << 31u) | (select(0u, 1u, r == 0lu) << 30u); }
fn logic_flags32(r: u32) -> u32 { return ((r >> 31u) << 31u) | (select(0u, 1u, r == 0u) << 30u); }

// The condition table (COND_TABLE) worked out from the flags, without a dynamically indexed
// constant array: bit 0 of the condition inverts, except for 15 (always, as 14).
fn cond_holds(cond: u32, flags: u32) -> bool {
    let n = (flags >> 31u) & 1u;
    let z = (flags >> 30u) & 1u;
    let c = (flags >> 29u) & 1u;
    let v = (flags >> 28u) & 1u;
    var r: bool;
    switch (cond >> 1u) & 7u {
        case 0u: { r = z == 1u; }
        case 1u: { r = c == 1u; }
        case 2u: { r = n == 1u; }
        case 3u: { r = v == 1u; }
        case 4u: { r = c == 1u && z == 0u; }
        case 5u: { r = n == v; }
        case 6u: { r = n == v && z == 0u; }
        default: { r = true; }
    }
    if (cond & 1u) == 1u && (cond & 15u) != 15u { r = !r; }
    return r;
}

// ----- shifts, extends, bitfields

fn ror64(v: u64, n0: u32) -> u64 {
    let n = n0 & 63u;
    if n == 0u { return v; }
    return (v >> n) | (v << ((64u - n) & 63u));
}
fn ror32(v: u32, n0: u32) -> u32 {
    let n = n0 & 31u;
    if n == 0u { return v; }
    return (v >> n) | (v << ((32u - n) & 31u));
}

fn shift64(v: u64, ty: u32, amount: u32) -> u64 {
    let n = amount & 63u;
    switch ty {
        case 0u: { return v << n; }
        case 1u: { return v >> n; }
        case 2u: { return u64(i64(v) >> n); }
        default: { return ror64(v, n); }
    }
}

fn shift32(v: u32, ty: u32, amount: u32) -> u32 {
    let n = amount & 31u;
    switch ty {
        case 0u: { return v << n; }
        case 1u: { return v >> n; }
        case 2u: { return u32(i32(v) >> n); }
        default: { return ror32(v, n); }
    }
}

fn extend(v: u64, option: u32, sh: u32) -> u64 {
    var e: u64;
    switch option & 7u {
        case 0u: { e = v & 0xfflu; }
        case 1u: { e = v & 0xfffflu; }
        case 2u: { e = v & LO32; }
        case 4u: { e = sext(v & 0xfflu, 8u); }
        case 5u: { e = sext(v & 0xfffflu, 16u); }
        case 6u: { e = sext(v & LO32, 32u); }
        default: { e = v; }
    }
    return e << (sh & 7u);
}

// divisions as the guest has them (armada-semantics' Udiv, Sdiv): a zero divisor gives 0,
// MIN / -1 gives MIN
fn udiv_w(n: u32, m: u32) -> u32 { return select(0u, n / max(m, 1u), m != 0u); }
fn udiv_x(n: u64, m: u64) -> u64 { return select(0lu, n / max(m, 1lu), m != 0lu); }
fn sdiv_w(n: u32, m: u32) -> u32 {
    if m == 0u { return 0u; }
    if m == 0xffffffffu { return 0u - n; }
    return u32(i32(n) / i32(m));
}
fn sdiv_x(n: u64, m: u64) -> u64 {
    if m == 0lu { return 0lu; }
    if m == 0xfffffffffffffffflu { return 0lu - n; }
    return u64(i64(n) / i64(m));
}

fn size_mask(lg: u32) -> u64 { return ones(8u << (lg & 3u)); }

fn crc_step(c: u32, poly: u32) -> u32 { return select(c >> 1u, (c >> 1u) ^ poly, (c & 1u) != 0u); }

fn crc32_fold(acc: u32, data: u64, lg: u32, castagnoli: u32) -> u32 {
    let poly = select(0xEDB88320u, 0x82F63B78u, (castagnoli & 1u) != 0u);
    var c = acc;
    let n = 1u << (lg & 3u);
    for (var i = 0u; i < n; i++) {
        lp(2u);
        c ^= u32((data >> ((8u * i) & 63u)) & 0xfflu);
        // the eight bit steps unrolled (no inner loop for lavapipe's loop limiter)
        c = crc_step(c, poly);
        c = crc_step(c, poly);
        c = crc_step(c, poly);
        c = crc_step(c, poly);
        c = crc_step(c, poly);
        c = crc_step(c, poly);
        c = crc_step(c, poly);
        c = crc_step(c, poly);
    }
    return c;
}

fn atomic_apply(op: u32, lg: u32, old: u64, operand: u64) -> u64 {
    let bits = 8u << (lg & 3u);
    let m = ones(bits);
    let o = old & m;
    let v = operand & m;
    let so = i64(sext(o, bits));
    let sv = i64(sext(v, bits));
    var r: u64;
    switch op {
        case AOP_ADD: { r = o + v; }
        case AOP_CLR: { r = o & ~v; }
        case AOP_EOR: { r = o ^ v; }
        case AOP_SET: { r = o | v; }
        case AOP_SMAX: { r = u64(select(sv, so, so > sv)); }
        case AOP_SMIN: { r = u64(select(sv, so, so < sv)); }
        case AOP_UMAX: { r = select(v, o, o > v); }
        case AOP_UMIN: { r = select(v, o, o < v); }
        default: { r = v; }
    }
    return r & m;
}
