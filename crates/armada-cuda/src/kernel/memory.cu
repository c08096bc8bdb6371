// ------------------------------------------------------------------------------------------
// Memory: a per-lane translation cache in registers in front of the shared page table.

#if defined(ARMADA_SIM) && defined(ARMADA_STATS)
#include <stdio.h>
// Counters on the simulator (ARMADA_SIM_DEFINES=ARMADA_STATS), printed to stderr when the
// process ends: the micro-ops run (the 40 most run, by number, in percent of all) and how the
// lanes' loads and stores were translated. For tuning the kernel; nothing else reads them.
struct SimStats {
    u64 lookups, misses, writes, second, finds, probes;
    u64 ops[0x800];
    ~SimStats() {
        u64 total = 0;
        for (u32 i = 0; i < 0x800; i++) total += ops[i];
        fprintf(stderr, "sim stats: %llu micro-ops;", (unsigned long long)total);
        for (u32 k = 0; k < 40; k++) {
            u32 best = 0;
            for (u32 i = 0; i < 0x800; i++) if (ops[i] > ops[best]) best = i;
            if (!ops[best]) break;
            fprintf(stderr, " %u:%.2f%%", best, 100.0 * ops[best] / total);
            ops[best] = 0;
        }
        fprintf(stderr, "\n");
        fprintf(stderr,
                "sim stats: translations %llu, first-level misses %llu (%llu of them writes), "
                "second-level hits %llu, page-table finds %llu (%llu probes)\n",
                (unsigned long long)lookups, (unsigned long long)misses, (unsigned long long)writes,
                (unsigned long long)second, (unsigned long long)finds, (unsigned long long)probes);
    }
};
static SimStats sim_stats;
#define STAT(f) __atomic_fetch_add(&sim_stats.f, 1, __ATOMIC_RELAXED)
#else
#define STAT(f)
#endif

struct Tlb {
    u64 tag0, tag1, tag2, tag3;
    u64 ptr0, ptr1, ptr2, ptr3;
    u32 wr; // bit i: entry i may be written (the page is marked dirty this sync period)
};

__device__ __forceinline__ u64 pt_hash(u64 key, u32 shift) { return (key * 0x9E3779B97F4A7C15ull) >> shift; }

__device__ __forceinline__ u64 frame_addr(const Params& P, u64 frame) {
    return P.chunks[frame >> P.chunk_shift] + ((frame & ((1ull << P.chunk_shift) - 1)) << 12);
}

// The slot holding `key`, or MAXU64.
__device__ __forceinline__ u64 pt_find(const Params& P, u64 key) {
    u64 s = pt_hash(key, P.pt_shift);
    STAT(finds);
    for (u64 probes = 0; probes <= P.pt_mask; probes++) {
        STAT(probes);
        u64 k = P.pt[2 * s];
        if (k == key) return s;
        if (k == 0) return MAXU64;
        s = (s + 1) & P.pt_mask;
    }
    return MAXU64;
}

// A frame for one of the lane's lazy pages: the last of its reserve, else the next of the
// batch's pool (`Params::pool`: [0] the next slot to take, [1] the slots filled, then the
// frames), within the lane's budget there (`S_POOL_LEFT`: its memory cap less what it holds
// and its reserve). Sets `pooled` to say which; MAXU64: neither has one, and the host refills
// the lane's reserve at its stop. The pool spares the stop: a Python lane started from a
// snapshot claims about 600 pages, and with reserves alone most of its stops were refills.
__device__ __forceinline__ u64 take_frame(const Params& P, u64* rec, u64& pooled) {
    u64 n = rec[S_RES_N];
    if (n != 0) {
        rec[S_RES_N] = n - 1;
        pooled = 0;
        return rec[S_RES + n - 1];
    }
    if (!P.pool || rec[S_POOL_LEFT] == 0) return MAXU64;
    u64 at = a_fetch_add(&P.pool[0], 1);
    if (at >= P.pool[1]) return MAXU64;
    rec[S_POOL_LEFT] -= 1;
    pooled = CLAIM_POOLED;
    return P.pool[2 + at];
}

// Gives back a frame `take_frame` took that no page got: to the end of the reserve it came
// from (the host's list is unchanged), or, from the pool, logged as unused for the host.
__device__ __forceinline__ void untake_frame(const Params& P, u32 lane, u64* rec, u64 f, u64 pooled) {
    if (!pooled) {
        rec[S_RES + rec[S_RES_N]] = f;
        rec[S_RES_N] += 1;
        return;
    }
    rec[S_POOL_LEFT] += 1;
    u64 at = a_fetch_add(&P.claims[0], 1);
    P.claims[1 + 2 * at] = (u64)lane << 32 | f | CLAIM_POOLED | CLAIM_UNUSED;
    P.claims[2 + 2 * at] = 0;
}

// Frame `f` (from `take_frame`) made a copy of `src`, with the same bytes in its shadow (the
// host's copy starts from them), logged as the lane's claim of page `vpn`; `inserted`: the
// entry the kernel made for it at that slot + 1 (0: the lane's lazy entry).
__device__ __forceinline__ void claim_copy(const Params& P, u32 lane, u64 vpn, const u64* src, u64 inserted, u64 f, u64 pooled) {
    u64* dst = (u64*)frame_addr(P, f);
    u64* shadow = dst + (512ull << P.chunk_shift);
    for (u32 i = 0; i < 512; i++) {
        u64 w = src[i];
        dst[i] = w;
        shadow[i] = w;
    }
    u64 at = a_fetch_add(&P.claims[0], 1);
    P.claims[1 + 2 * at] = (u64)lane << 32 | f | pooled;
    P.claims[2 + 2 * at] = vpn | inserted << PT_VPN_BITS;
}

// Finds page `vpn` of `lane` (then of the shared image); returns the frame's address, or 0 when
// the host must step in. A write marks the slot dirty for this sync period.
__device__ __forceinline__ u64 pt_walk(const Params& P, u32 lane, u64* rec, u64 vpn, u32 write) {
    if (vpn >> PT_VPN_BITS) return 0;
    u64 key = (rec[S_SPACE] << PT_VPN_BITS | vpn) + 1;
    u64 s = pt_find(P, key);
    u64 val;
    if (s == MAXU64) {
        s = pt_find(P, (rec[S_IMAGE] << PT_VPN_BITS | vpn) + 1);
        if (s == MAXU64) return 0;
        val = P.pt[2 * s + 1];
        if (write) {
            // Image pages are never written in place. One the host marked copy-on-write
            // (writable and lazy: it is writable in every lane that has no entry of its own
            // for it) is copied into a frame of the lane's reserve, under a new entry of the
            // lane's own, which the kernel inserts (the claim log gives the host its slot).
            // Only this lane inserts its keys, so the key is not there; other lanes take
            // free slots at once, hence the compare-and-swap. Persistent lanes take such a
            // write as a miss (their restart could not take the entry back out).
            if ((val & (PT_W | PT_LAZY)) != (PT_W | PT_LAZY) || !P.claims || P.start) return 0;
            u64 pooled;
            u64 f = take_frame(P, rec, pooled);
            if (f == MAXU64) return 0;
            u64 t = pt_hash(key, P.pt_shift);
            u64 probes = 0;
            for (; probes <= P.pt_mask; probes++) {
                if (P.pt[2 * t] == 0 && a_take_empty(&P.pt[2 * t], key)) break;
                t = (t + 1) & P.pt_mask;
            }
            if (probes > P.pt_mask) {
                untake_frame(P, lane, rec, f, pooled);
                return 0;
            }
            claim_copy(P, lane, vpn, (const u64*)frame_addr(P, val & PT_FRAME_MASK), t + 1, f, pooled);
            val = f | PT_R | PT_W;
            P.pt[2 * t + 1] = val;
            s = t;
        }
    } else {
        val = P.pt[2 * s + 1];
    }
    if (!(val & (write ? PT_W : PT_R))) return 0;
    if (write && (val & PT_LAZY)) {
        // First write to a lazy page of the lane's own: copy its starting bytes (zero frame
        // or image page) into a frame of the lane's reserve, point the entry at it, and log
        // the claim. Only this lane uses its own entries, so no other thread races on the slot.
        if (!P.claims) return 0; // the host takes it as a miss
        u64 pooled;
        u64 f = take_frame(P, rec, pooled);
        if (f == MAXU64) return 0;
        claim_copy(P, lane, vpn, (const u64*)frame_addr(P, val & PT_FRAME_MASK), 0, f, pooled);
        if (P.undo) {
            // (persistent lanes: the kernel gives the slot its lazy value back at restart)
            u64* u = P.undo + (u64)lane * UNDO_WORDS;
            u64 k = u[0];
            if (k < RES_CAP) {
                u[1 + 2 * k] = s;
                u[2 + 2 * k] = val;
            }
            u[0] = k + 1;
        }
        val = f | (val & (PT_R | PT_W));
        P.pt[2 * s + 1] = val;
    }
    if (write) {
        u32 ep = (u32)rec[S_EPOCH];
        if (P.pt_epoch[s] != ep) {
            P.pt_epoch[s] = ep;
            u64 n = rec[S_DIRTY_N];
            if (n < DIRTY_CAP) rec[S_DIRTY + n] = vpn;
            else if (n < DIRTY_CAP + DIRTY_MORE) rec[S_DIRTY_MORE + n - DIRTY_CAP] = vpn;
            rec[S_DIRTY_N] = n + 1;
        }
    }
    return frame_addr(P, val & PT_FRAME_MASK);
}

// The translation of a first-level miss: the lane's second-level cache (`Params::tlb2`, see
// layout.rs's TLB2_*), else the page table. A CPython lane misses the four entries in
// registers on a third of its accesses, and a page-table find is a dependent chain of loads
// from a table of hundreds of MiB; the lane's own TLB2_ENTRIES entries (direct-mapped, a KiB)
// stay in the GPU's caches and hold nine in ten of those pages. An entry is (tag, frame
// address), the tag vpn << TLB2_GEN_BITS + 1 | launch generation << 1 | writable: valid only in
// the launch that filled it (the host changes the table between launches; within one, only
// this lane's own lookups change its pages, and each fills the entry of its page), and
// writable only once a lookup for a write marked the page dirty in it.
__device__ __noinline__ u64 pt_lookup(const Params& P, u32 lane, u64* rec, u64 vpn, u32 write) {
    STAT(misses);
    if (write) STAT(writes);
    if (!P.tlb2 || (vpn >> PT_VPN_BITS)) return pt_walk(P, lane, rec, vpn, write);
    u64* e = P.tlb2 + 2 * ((u64)lane * TLB2_ENTRIES + (vpn & (TLB2_ENTRIES - 1)));
    u64 tag = vpn << (TLB2_GEN_BITS + 1) | (u64)P.gen << 1;
    u64 have = e[0];
    if (have == (tag | 1) || (!write && have == tag)) {
        STAT(second);
        return e[1];
    }
    u64 base = pt_walk(P, lane, rec, vpn, write);
    if (base) {
        e[0] = tag | write;
        e[1] = base;
    }
    return base;
}

__device__ __forceinline__ u8* tlb_get(Tlb& T, const Params& P, u32 lane, u64* rec, u64 addr, u32 write) {
    u64 vpn = addr >> 12;
    u64 off = addr & 4095;
    STAT(lookups);
    if (T.tag0 == vpn && (!write || (T.wr & 1))) return (u8*)(T.ptr0 + off);
    if (T.tag1 == vpn && (!write || (T.wr & 2))) return (u8*)(T.ptr1 + off);
    if (T.tag2 == vpn && (!write || (T.wr & 4))) return (u8*)(T.ptr2 + off);
    if (T.tag3 == vpn && (!write || (T.wr & 8))) return (u8*)(T.ptr3 + off);
    u64 base = pt_lookup(P, lane, rec, vpn, write);
    if (!base) return 0;
    if (write) {
        // a read entry of the page may point at the bytes a lazy page started from
        if (T.tag0 == vpn) T.tag0 = MAXU64;
        if (T.tag1 == vpn) T.tag1 = MAXU64;
        if (T.tag2 == vpn) T.tag2 = MAXU64;
        if (T.tag3 == vpn) T.tag3 = MAXU64;
    }
    T.tag3 = T.tag2; T.ptr3 = T.ptr2;
    T.tag2 = T.tag1; T.ptr2 = T.ptr1;
    T.tag1 = T.tag0; T.ptr1 = T.ptr0;
    T.tag0 = vpn; T.ptr0 = base;
    T.wr = ((T.wr << 1) & 0xe) | (write ? 1u : 0u);
    return (u8*)(base + off);
}

__device__ __forceinline__ u64 ld_raw(const u8* p, u32 size) {
    u64 a = (u64)p;
    switch (size) {
    case 1: return *p;
    case 2: if (!(a & 1)) return *(const u16*)p; break;
    case 4: if (!(a & 3)) return *(const u32*)p; break;
    default: if (!(a & 7)) return *(const u64*)p; break;
    }
    u64 v = 0;
    for (u32 i = 0; i < size; i++) v |= (u64)p[i] << (8 * i);
    return v;
}

__device__ __forceinline__ void st_raw(u8* p, u32 size, u64 v) {
    u64 a = (u64)p;
    switch (size) {
    case 1: *p = (u8)v; return;
    case 2: if (!(a & 1)) { *(u16*)p = (u16)v; return; } break;
    case 4: if (!(a & 3)) { *(u32*)p = (u32)v; return; } break;
    default: if (!(a & 7)) { *(u64*)p = v; return; } break;
    }
    for (u32 i = 0; i < size; i++) p[i] = (u8)(v >> (8 * i));
}

// `len` bytes at offset `at` of an access whose first n0 bytes are at p0 and the rest at p1
// (the next page's frame; null when it does not cross a page), as the shader's ld_span/st_span.
__device__ __forceinline__ u64 ld_span(const u8* p0, const u8* p1, u32 n0, u32 at, u32 len) {
    if (!p1 || at + len <= n0) return ld_raw(p0 + at, len);
    u64 v = 0;
    for (u32 i = 0; i < len; i++) {
        u32 k = at + i;
        v |= (u64)(k < n0 ? p0[k] : p1[k - n0]) << (8 * i);
    }
    return v;
}
__device__ __forceinline__ void st_span(u8* p0, u8* p1, u32 n0, u32 at, u32 len, u64 v) {
    if (!p1 || at + len <= n0) {
        st_raw(p0 + at, len, v);
        return;
    }
    for (u32 i = 0; i < len; i++) {
        u32 k = at + i;
        if (k < n0) p0[k] = (u8)(v >> (8 * i));
        else p1[k - n0] = (u8)(v >> (8 * i));
    }
}

