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
    u32 c = *m + n;
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
#else
#define COV_STATE
#define COV_EDGE(src_, dst_)
#define COV_FLUSH()
#endif

