// ------------------------------------------------------------------------------------------
// Persistent lanes (armada-gpu's engine/persist.rs): a lane the host left alone since its start
// is taken back to it here, as its next launch starts, rather than by host work and small
// kernels between rounds (which wait for the device while another batch's kernel holds it).

__device__ __noinline__ void restart_lane(const Params& P, u32 lane, u32 bits) {
    u64* u = P.undo + (u64)lane * UNDO_WORDS;
    if (bits & RESTART_TABLE) {
        // the pages it claimed are lazy again (their frames are back in its reserve with its
        // record); their write epochs cleared, as the page-table write kernel does
        u64 n = u[0] < RES_CAP ? u[0] : RES_CAP;
        for (u64 k = 0; k < n; k++) {
            u64 s = u[1 + 2 * k];
            P.pt[2 * s + 1] = u[2 + 2 * k];
            P.pt_epoch[s] = 0;
        }
    }
    u[0] = 0;
    if (bits & RESTART_RECORD) {
        u64* rec = P.lanes + (u64)lane * S_WORDS;
        const u64* st = P.start + (u64)lane * S_WORDS;
        // (the dirty list's second part needs no start: the count starts at 0)
        for (u32 w = 0; w < S_DIRTY_MORE; w++) rec[w] = st[w];
    }
    if (bits & RESTART_INPUT) {
        u64* sd = P.sysd + (u64)lane * SYSD_WORDS;
        sd[0] = P.newio[2 * lane];
        sd[1] = P.newio[2 * lane + 1];
        if (P.cov) cov_clear(P, lane);
    }
}
