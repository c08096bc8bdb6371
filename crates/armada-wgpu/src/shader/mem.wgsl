// Lane record, page table, the per-lane translation cache, and guest memory accesses.
//
// Guest memory is reached only through frame addresses from the page table (host-written), and
// an access never crosses a page here: callers split page-straddling accesses, so no guest
// address can make the shader touch anything outside the lane's frames.
//
// Frames live in the frame buffers (spaces 1.., see helpers.wgsl), so a frame address is a
// device pointer of 64 bits: the space above bit 32, the byte offset in its buffer below. Adding
// an offset inside a page never carries into the space (buffers hold whole pages).

// Word index of the running lane's record, and the lane.
var<private> R: u32;
var<private> cur_lane: u32;

fn rget(i: u32) -> u64 { return ld64w(R + 2u * i); }
fn rset(i: u32, v: u64) { st64w(R + 2u * i, v); }

// Translation cache (4 entries, most recent first). A pointer is the frame's device pointer
// packed into 32 bits (`tlb_pack`: the space above bit 24, the byte offset / 256 below: 4
// registers fewer for the whole interpreter than 64-bit pointers); `twr` bit i: entry i may be
// written (its page is marked dirty this sync period).
var<private> tag0: u64;
var<private> tag1: u64;
var<private> tag2: u64;
var<private> tag3: u64;
var<private> ptr0: u32;
var<private> ptr1: u32;
var<private> ptr2: u32;
var<private> ptr3: u32;
var<private> twr: u32;

// A frame's device pointer in 32 bits and back: a space fits in 8 bits (MAX_FRAME_BINDINGS), a
// buffer is at most 4 GiB (one storage binding), and frames are 256-byte aligned (the device's
// allocations are; device.rs, ALIGN).
fn tlb_pack(p: u64) -> u32 { return (u32(p >> 32u) << 24u) | (u32(p) >> 8u); }
fn tlb_unpack(q: u32) -> u64 { return (u64(q >> 24u) << 32u) | (u64(q & 0xffffffu) << 8u); }

// Not a frame's device pointer (no space is that high): a failed translation.
const NOFP: u64 = MAXU64;

// Stop code and detail of an instruction that ends the lane (set with FLOW_STOP).
var<private> g_stop: u32;
var<private> g_info: u64;

fn pt_hash(key: u64) -> u64 { return (key * 0x9E3779B97F4A7C15lu) >> (P.pt_shift & 63u); }

// The slot holding `key`, or MAXU64.
fn pt_find(key: u64) -> u64 {
    var s = pt_hash(key);
    let ptw = wi(P.pt);
    for (var probes = 0lu; probes <= P.pt_mask; probes++) {
        lp(1u);
        let k = ld64w(ptw + 4u * u32(s));
        if k == key { return s; }
        if k == 0lu { return MAXU64; }
        s = (s + 1lu) & P.pt_mask;
    }
    return MAXU64;
}

// Frame (device pointer) of page `vpn` of the lane (then of its image), or NOFP when the host
// must step in. A write marks the slot dirty for this sync period (the per-lane dirty list).
fn pt_lookup(vpn: u64, write: bool) -> u64 {
    if (vpn >> PT_VPN_BITS) != 0lu { return NOFP; }
    var s = pt_find(((rget(S_SPACE) << PT_VPN_BITS) | vpn) + 1lu);
    if s == MAXU64 {
        if write { return NOFP; } // image pages are never written in place
        s = pt_find(((rget(S_IMAGE) << PT_VPN_BITS) | vpn) + 1lu);
        if s == MAXU64 { return NOFP; }
    }
    let vw = wi(P.pt) + 4u * u32(s) + 2u;
    var val = ld64w(vw);
    if (val & select(PT_R, PT_W, write)) == 0lu { return NOFP; }
    if write && (val & PT_LAZY) != 0lu {
        // First write to a lazy page: copy its starting bytes (the zero frame or an image
        // page) into a frame of the lane's reserve and into that frame's shadow (the host's
        // copy starts from the same bytes), point the entry at it, and log the claim for the
        // host (layout.rs: Params::claims). Only this lane uses its own entries, so no other
        // invocation races on the slot. An empty reserve is a miss the host answers.
        let n = rget(S_RES_N);
        if n == 0lu || P.claims == 0lu { return NOFP; }
        let f = rget(S_RES + u32(n) - 1u);
        rset(S_RES_N, n - 1lu);
        let src = frame_ptr(val & PT_FRAME_MASK);
        let dst = frame_ptr(f);
        let ss = u32(src >> 32u);
        let ds = u32(dst >> 32u);
        let sw = u32(src) >> 2u;
        let dw = u32(dst) >> 2u;
        // the shadow is the frame's twin in the second half of its chunk (pagetable.rs)
        let shw = dw + (1024u << (P.chunk_shift & 31u));
        lp(256u);
        for (var i = 0u; i < 1024u; i += 4u) {
            let v0 = fld2(ss, sw + i);
            let v1 = fld2(ss, sw + i + 2u);
            fst(ds, dw + i, v0.x);
            fst(ds, dw + i + 1u, v0.y);
            fst(ds, dw + i + 2u, v1.x);
            fst(ds, dw + i + 3u, v1.y);
            fst(ds, shw + i, v0.x);
            fst(ds, shw + i + 1u, v0.y);
            fst(ds, shw + i + 2u, v1.x);
            fst(ds, shw + i + 3u, v1.y);
        }
        val = f | (val & (PT_R | PT_W));
        st64w(vw, val);
        let at = atomicAdd(&counter[1], 1u);
        let cw = wi(P.claims) + 2u + 4u * at;
        st64w(cw, (u64(cur_lane) << 32u) | f);
        st64w(cw + 2u, vpn);
    }
    if write {
        let ep = u32(rget(S_EPOCH));
        let ew = wi(P.pt_epoch) + u32(s);
        if mem[ew] != ep {
            mem[ew] = ep;
            let n = rget(S_DIRTY_N);
            if n < u64(DIRTY_CAP) {
                rset(S_DIRTY + u32(n), vpn);
            } else if n < u64(DIRTY_CAP + DIRTY_MORE) {
                rset(S_DIRTY_MORE + u32(n) - DIRTY_CAP, vpn);
            }
            rset(S_DIRTY_N, n + 1lu);
        }
    }
    return frame_ptr(val & PT_FRAME_MASK);
}

// Device pointer of frame number `frame` (pagetable.rs, `addr`).
fn frame_ptr(frame: u64) -> u64 {
    let cs = P.chunk_shift & 63u;
    let chunk = ld64w(wi(P.chunks) + 2u * u32(frame >> cs));
    return chunk + ((frame & ((1lu << cs) - 1lu)) << 12u);
}

// Device pointer of guest `addr`'s byte (the access must not cross its page), from the
// translation cache only. On a cache miss it returns NOFP and records the access (g_refill): the
// instruction, which changes nothing before all its translations succeed, ends, the main loop
// walks the page table (tlb_refill, the one place that does) and runs the instruction again.
// One call site of the page walk keeps the inlined code small (and lavapipe's loop count low).
var<private> g_refill: bool;
var<private> g_addr: u64;
var<private> g_write: bool;

fn tr(addr: u64, write: bool) -> u64 {
    let vpn = addr >> 12u;
    let off = addr & 4095lu;
    if tag0 == vpn && (!write || (twr & 1u) != 0u) { return tlb_unpack(ptr0) + off; }
    if tag1 == vpn && (!write || (twr & 2u) != 0u) { return tlb_unpack(ptr1) + off; }
    if tag2 == vpn && (!write || (twr & 4u) != 0u) { return tlb_unpack(ptr2) + off; }
    if tag3 == vpn && (!write || (twr & 8u) != 0u) { return tlb_unpack(ptr3) + off; }
    g_refill = true;
    g_addr = addr;
    g_write = write;
    return NOFP;
}

// The page walk for the access tr() recorded: fills the cache (as CUDA's tlb_get does), or
// returns false for a miss stop (STOP_MISS_R/W with the address).
fn tlb_refill() -> bool {
    g_refill = false;
    let vpn = g_addr >> 12u;
    let base = pt_lookup(vpn, g_write);
    if base == NOFP { return false; }
    if g_write {
        // a read entry of the page may point at the bytes a lazy page started from
        if tag0 == vpn { tag0 = MAXU64; }
        if tag1 == vpn { tag1 = MAXU64; }
        if tag2 == vpn { tag2 = MAXU64; }
        if tag3 == vpn { tag3 = MAXU64; }
    }
    tag3 = tag2; ptr3 = ptr2;
    tag2 = tag1; ptr2 = ptr1;
    tag1 = tag0; ptr1 = ptr0;
    tag0 = vpn; ptr0 = tlb_pack(base);
    twr = ((twr << 1u) & 0xeu) | select(0u, 1u, g_write);
    return true;
}

// `size` (1 to 8) bytes at device pointer p, inside one frame: only the words holding those
// bytes are touched (at most three), each through one switch over the spaces.
fn ld_raw(p: u64, size: u32) -> u64 {
    let sp = u32(p >> 32u);
    let b = u32(p);
    let w = b >> 2u;
    let sh = (b & 3u) * 8u;
    if sh == 0u {
        if size <= 4u {
            let v = fld(sp, w);
            if size == 4u { return u64(v); }
            return u64(v & ((1u << (size * 8u)) - 1u));
        }
        let v2 = fld2(sp, w);
        return (u64(v2.x) | (u64(v2.y) << 32u)) & ones(size * 8u);
    }
    let last = (b + size - 1u) >> 2u;
    var acc: u64;
    if last > w {
        let v2 = fld2(sp, w);
        acc = u64(v2.x) | (u64(v2.y) << 32u);
    } else {
        acc = u64(fld(sp, w));
    }
    var v = acc >> sh;
    if last > w + 1u { v |= u64(fld(sp, w + 2u)) << ((64u - sh) & 63u); }
    return v & ones(size * 8u);
}

fn st_word(sp: u32, w: u32, m: u32, v: u32) {
    if m == 0xffffffffu {
        fst(sp, w, v);
    } else if m != 0u {
        fst(sp, w, (fld(sp, w) & ~m) | (v & m));
    }
}

fn st_raw(p: u64, size: u32, v: u64) {
    let sp = u32(p >> 32u);
    let b = u32(p);
    let w = b >> 2u;
    let sh = (b & 3u) * 8u;
    let m = ones(size * 8u);
    let vm = v & m;
    let lo = vm << sh;
    let mlo = m << sh;
    st_word(sp, w, u32(mlo), u32(lo));
    st_word(sp, w + 1u, u32(mlo >> 32u), u32(lo >> 32u));
    if sh != 0u {
        let s2 = (64u - sh) & 63u;
        st_word(sp, w + 2u, u32(m >> s2), u32(vm >> s2));
    }
}

// Bytes [at, at + len) (len <= 8) of an access split at byte n0 between the frames at p0 and p1
// (p1 == NOFP: not split). No byte loops: lavapipe counts every loop iteration.
fn ld_span(p0: u64, p1: u64, n0: u32, at: u32, len: u32) -> u64 {
    if p1 == NOFP || at + len <= n0 { return ld_raw(p0 + u64(at), len); }
    if at >= n0 { return ld_raw(p1 + u64(at - n0), len); }
    let k = n0 - at;
    return ld_raw(p0 + u64(at), k) | (ld_raw(p1, len - k) << (8u * k));
}

fn st_span(p0: u64, p1: u64, n0: u32, at: u32, len: u32, v: u64) {
    if p1 == NOFP || at + len <= n0 {
        st_raw(p0 + u64(at), len, v);
    } else if at >= n0 {
        st_raw(p1 + u64(at - n0), len, v);
    } else {
        let k = n0 - at;
        st_raw(p0 + u64(at), k, v);
        st_raw(p1, len - k, v >> (8u * k));
    }
}
