// ------------------------------------------------------------------------------------------
// Edge coverage (armada-core's coverage.rs): the build with ARMADA_COVERAGE counts every branch
// edge in the lane's map; the plain build compiles it away. The simulator always has it and
// asks P.cov at run time.

// A run of hits of one edge (a loop's back edge) is counted in registers and added to the map
// when another edge comes or the lane leaves the launch: one byte read and written a run
// instead of one a hit. The counters saturate at 255 either way, so the map is the same.
#if defined(ARMADA_COVERAGE) || defined(ARMADA_SIM)
__device__ __forceinline__ u32 cov_slot(u64 src, u64 dst) {
    u32 s = (u32)(src >> 2) * 0x9e3779b1u;
    return ((s ^ (u32)(dst >> 2)) * 0x85ebca6bu) >> 16;
}
__device__ __forceinline__ void cov_add(const Params& P, u32 lane, u32 slot, u32 n) {
    if (!P.cov || n == 0) return;
    u8* m = P.cov + (u64)lane * COV_MAP_BYTES + slot;
    u32 old = *m;
    if (old == 0 && P.covlist) {
        u32* l = P.covlist + (u64)lane * COVLIST_WORDS;
        u32 k = l[0];
        if (k < COVLIST_CAP) l[1 + k] = slot;
        l[0] = k + 1;
    }
    u32 c = old + n;
    *m = (u8)(c > 255 ? 255 : c);
}
#define COV_STATE u32 cov_last = 0, cov_run = 0;
#define COV_EDGE(src_, dst_)                                                          \
    {                                                                                 \
        u32 cs_ = cov_slot((src_), (dst_));                                           \
        if (cs_ == cov_last) {                                                        \
            cov_run += cov_run < 255;                                                 \
        } else {                                                                      \
            cov_add(P, lane, cov_last, cov_run);                                      \
            cov_last = cs_;                                                           \
            cov_run = 1;                                                              \
        }                                                                             \
    }
#define COV_FLUSH() cov_add(P, lane, cov_last, cov_run);
// At a persistent lane's end: its map's news against P.virgin and its path hash, the word of
// the coverage-news kernel, found by the lane's thread so no kernel of its own has to wait for
// the device (another batch's kernel may hold every SM).
#define COV_NEWS() (P.cov && P.virgin ? cov_lane_news(P, lane) : 0ull)
#else
#define COV_STATE
#define COV_EDGE(src_, dst_)
#define COV_FLUSH()
#define COV_NEWS() 0ull
#endif


// ------------------------------------------------------------------------------------------
// Coverage news (coverage.rs: bucket, slot_mix, Virgin::novelty): whether a lane's map has a
// hit in a bucket the virgin map (the buckets seen so far, one bit each) lacks, and the map's
// path hash, the sum over hit slots of slot_mix.

__device__ __forceinline__ u32 cov_bucket(u32 c) {
    if (c <= 2) return c;
    if (c == 3) return 4;
    if (c <= 7) return 8;
    if (c <= 15) return 16;
    if (c <= 31) return 32;
    if (c <= 127) return 64;
    return 128;
}

__device__ __forceinline__ u32 cov_mix(u32 slot, u32 bucket) {
    u32 h = (slot << 8) | bucket;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    return h ^ (h >> 16);
}

// Word w (8 slots) of one map: sets news when a bucket is new, adds to hash.
__device__ __forceinline__ void cov_scan(const u64* m, const u8* virgin, u32 w, u32& news, u32& hash) {
    u64 v = m[w];
    if (!v) return;
    for (u32 j = 0; j < 8; j++) {
        u32 c = (u32)(v >> (8 * j)) & 255;
        if (!c) continue;
        u32 slot = w * 8 + j;
        u32 bk = cov_bucket(c);
        if (!(virgin[slot] & bk)) news = 1;
        hash += cov_mix(slot, bk);
    }
}

// The coverage-news word of one lane's map, by one thread: from the slots it listed, or the
// whole map where the list ran over.
__device__ __noinline__ u64 cov_lane_news(const Params& P, u32 lane) {
    const u8* m8 = P.cov + (u64)lane * COV_MAP_BYTES;
    u32 nw = 0, h = 0;
    const u32* l = P.covlist ? P.covlist + (u64)lane * COVLIST_WORDS : 0;
    if (l && l[0] <= COVLIST_CAP) {
        for (u32 k = 0; k < l[0]; k++) {
            u32 slot = l[1 + k];
            u32 bk = cov_bucket(m8[slot]);
            if (!(P.virgin[slot] & bk)) nw = 1;
            h += cov_mix(slot, bk);
        }
    } else {
        const u64* m = (const u64*)m8;
        for (u32 w = 0; w < COV_MAP_BYTES / 8; w++) cov_scan(m, P.virgin, w, nw, h);
    }
    return ((u64)nw << 32) | h;
}

// Clears one lane's map: the slots it listed, or the whole map where the list ran over.
__device__ __noinline__ void cov_clear(const Params& P, u32 lane) {
    u8* m8 = P.cov + (u64)lane * COV_MAP_BYTES;
    u32* l = P.covlist ? P.covlist + (u64)lane * COVLIST_WORDS : 0;
    if (l && l[0] <= COVLIST_CAP) {
        for (u32 k = 0; k < l[0]; k++) m8[l[1 + k]] = 0;
    } else {
        u64* m = (u64*)m8;
        for (u32 w = 0; w < COV_MAP_BYTES / 8; w++) m[w] = 0;
    }
    if (l) l[0] = 0;
}
