// ------------------------------------------------------------------------------------------
// Entry points.

#ifndef ARMADA_SIM
#ifndef ARMADA_MIN_BLOCKS
#define ARMADA_MIN_BLOCKS 1
#endif
// Thread t runs active lane t >> lane_shift when its low lane_shift bits are zero: a small
// batch spreads its lanes one to a warp, so lanes at different PCs do not share a warp.
KERNEL void __launch_bounds__(BLOCK_THREADS, ARMADA_MIN_BLOCKS) armada_run(Params P) {
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t & ((1u << P.lane_shift) - 1)) return;
    u32 i = t >> P.lane_shift;
    if (i < P.nactive) run_lane(P, P.active[i]);
}

// One block per descriptor (grid-stride over descriptors): copies `words` words.
KERNEL void armada_copy(const CopyDesc* descs, u32 n) {
    for (u32 k = blockIdx.x; k < n; k += gridDim.x) {
        const u64* s = (const u64*)descs[k].src;
        u64* t = (u64*)descs[k].dst;
        u64 w = descs[k].words;
        for (u64 i = threadIdx.x; i < w; i += blockDim.x) t[i] = s[i];
    }
}

// Changed 64-byte blocks of the listed frames against their shadows (the bytes the host has):
// each changed block is appended to `out` as (index << 6 | block, 8 words) and copied to the
// shadow. One block of 64 threads per frame.
KERNEL void armada_diff(const u64* frames, u32 n, u64 shadow_off, u64* out, unsigned long long* count) {
    for (u32 k = blockIdx.x; k < n; k += gridDim.x) {
        u64* fr = (u64*)frames[k];
        u64* sh = (u64*)(frames[k] + shadow_off);
        u32 t = threadIdx.x;
        if (t < 64) {
            u64 w[8];
            bool diff = false;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                w[i] = fr[8 * t + i];
                diff |= w[i] != sh[8 * t + i];
            }
            if (diff) {
                u64 pos = atomicAdd(count, 1ull);
                u64* o = out + 9 * pos;
                o[0] = ((u64)k << 6) | t;
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    o[1 + i] = w[i];
                    sh[8 * t + i] = w[i];
                }
            }
        }
    }
}

// Page-table writes: (slot, key, value) triples; the slot's write epoch is cleared.
KERNEL void armada_pt_write(u64* pt, u32* pt_epoch, const u64* writes, u32 n) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        u64 s = writes[3 * i];
        pt[2 * s] = writes[3 * i + 1];
        pt[2 * s + 1] = writes[3 * i + 2];
        pt_epoch[s] = 0;
    }
}

// Coverage news of the listed lanes: out[k] = news << 32 | path hash of lane lanes[k]'s map.
// One block per lane (grid-stride over lanes).
KERNEL void armada_cov_news(const u8* maps, const u8* virgin, const u32* lanes, u32 n, u64* out) {
    __shared__ u32 news, hash;
    for (u32 k = blockIdx.x; k < n; k += gridDim.x) {
        if (threadIdx.x == 0) {
            news = 0;
            hash = 0;
        }
        __syncthreads();
        const u64* m = (const u64*)(maps + (u64)lanes[k] * COV_MAP_BYTES);
        u32 nw = 0, h = 0;
        for (u32 w = threadIdx.x; w < COV_MAP_BYTES / 8; w += blockDim.x) cov_scan(m, virgin, w, nw, h);
        if (nw) atomicOr(&news, 1u);
        if (h) atomicAdd(&hash, h);
        __syncthreads();
        if (threadIdx.x == 0) out[k] = ((u64)news << 32) | hash;
        __syncthreads();
    }
}
#else
extern "C" void armada_sim_cov_news(const u8* maps, const u8* virgin, const u32* lanes, u32 n, u64* out) {
    for (u32 k = 0; k < n; k++) {
        const u64* m = (const u64*)(maps + (u64)lanes[k] * COV_MAP_BYTES);
        u32 nw = 0, h = 0;
        for (u32 w = 0; w < COV_MAP_BYTES / 8; w++) cov_scan(m, virgin, w, nw, h);
        out[k] = ((u64)nw << 32) | h;
    }
}
extern "C" void armada_sim_run_lane(const Params* P, u32 i) {
    if (i < P->nactive) run_lane(*P, P->active[i]);
}
extern "C" void armada_sim_copy(const CopyDesc* descs, u32 n) {
    for (u32 k = 0; k < n; k++) memcpy((void*)descs[k].dst, (const void*)descs[k].src, descs[k].words * 8);
}
extern "C" void armada_sim_diff(const u64* frames, u32 n, u64 shadow_off, u64* out, u64* count) {
    for (u32 k = 0; k < n; k++) {
        u64* fr = (u64*)frames[k];
        u64* sh = (u64*)(frames[k] + shadow_off);
        for (u32 t = 0; t < 64; t++) {
            if (memcmp(fr + 8 * t, sh + 8 * t, 64) != 0) {
                u64 pos = (*count)++;
                u64* o = out + 9 * pos;
                o[0] = ((u64)k << 6) | t;
                memcpy(o + 1, fr + 8 * t, 64);
                memcpy(sh + 8 * t, fr + 8 * t, 64);
            }
        }
    }
}
extern "C" void armada_sim_pt_write(u64* pt, u32* pt_epoch, const u64* writes, u32 n) {
    for (u32 i = 0; i < n; i++) {
        u64 s = writes[3 * i];
        pt[2 * s] = writes[3 * i + 1];
        pt[2 * s + 1] = writes[3 * i + 2];
        pt_epoch[s] = 0;
    }
}
#endif
