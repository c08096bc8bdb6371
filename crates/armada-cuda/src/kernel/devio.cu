// ------------------------------------------------------------------------------------------
// Syscalls the kernel answers itself (armada-gpu's engine/devio.rs, armada-core's
// Process::device_io): the ones a fuzz target's execution repeats, each only where the host's
// answer is known to be the same. Writes to the captured stdout and stderr are kept in the
// output list at P.out (the host appends them to the lanes' captures after the launch), or
// dropped where there is none (fuzzing). Anything else, or a buffer whose pages are not all
// in the lane's table, stops for the host as before (and nothing was changed).

#define NR_READ 63
#define NR_WRITE 64
#define NR_NEWFSTATAT 79
#define NR_FSTAT 80
#define NR_CLOCK_GETTIME 113
#define EINVAL_ 22
#define AT_EMPTY_PATH_ 0x1000
// Linux's MAX_RW_COUNT; armada's write clamps to it too (rw.rs MAX_RW)
#define MAX_RW_ 0x7ffff000ull

// Whether every page of [addr, addr + n) is in the lane's table, readable or (`write`)
// writable, a lazy page counting as writable: what the host's check_readable/check_writable
// would say of the whole buffer (the host answers when the table does not know a page).
// Nothing is claimed or marked.
__device__ __forceinline__ bool range_ok(const Params& P, u32 lane, u64* rec, u64 addr, u64 n, u32 write) {
    if (n == 0) return true;
    if (addr + n < addr) return false;
    for (u64 vpn = addr >> 12; vpn <= (addr + n - 1) >> 12; vpn++) {
        if (vpn >> PT_VPN_BITS) return false;
        u64 s = pt_find(P, (rec[S_SPACE] << PT_VPN_BITS | vpn) + 1);
        if (s == MAXU64) {
            s = pt_find(P, (rec[S_IMAGE] << PT_VPN_BITS | vpn) + 1);
            if (s == MAXU64) return false;
            // an image page is written only through a copy of the lane's own, which pt_walk
            // makes where the host marked it copy-on-write (the first read of stdin from a
            // snapshot goes to such a page)
            if (write && ((P.pt[2 * s + 1] & (PT_W | PT_LAZY)) != (PT_W | PT_LAZY) || !P.claims || P.start)) return false;
        }
        if (!(P.pt[2 * s + 1] & (write ? PT_W : PT_R))) return false;
    }
    return true;
}

// Makes the pages of [addr, addr + n) the lane's own for writing (lazy pages copied from
// the reserve); false when the reserve runs out (the host then answers: nothing visible
// changed, a claimed page holds the bytes it had).
__device__ __forceinline__ bool claim_range(Tlb& T, const Params& P, u32 lane, u64* rec, u64 addr, u64 n) {
    for (u64 a = addr; a < addr + n; a = (a | 4095) + 1)
        if (!tlb_get(T, P, lane, rec, a, 1)) return false;
    return true;
}

// Copies n bytes to guest `addr` (claim_range first).
__device__ __forceinline__ void copy_out(Tlb& T, const Params& P, u32 lane, u64* rec, u64 addr, const u8* src, u64 n) {
    u64 i = 0;
    while (i < n) {
        u64 a = addr + i;
        u64 chunk = 4096 - (a & 4095);
        if (chunk > n - i) chunk = n - i;
        u8* p = tlb_get(T, P, lane, rec, a, 1);
        for (u64 k = 0; k < chunk; k++) p[k] = src[i + k];
        i += chunk;
    }
}

// Keeps the n bytes at guest `addr` (readable: range_ok) as a chunk of the output list at
// P.out for the lane's stream (0 stdout, 1 stderr): claims room with one atomic add, so one
// lane's chunks are in the order it wrote them. False when the list is full: the host
// answers the write (and the list ends where this claim starts; a header whose lane is all
// ones and is not OUT_END is a chunk to skip).
__device__ __noinline__ bool keep_out(Tlb& T, const Params& P, u32 lane, u64* rec, u64 stream, u64 addr, u64 n) {
    if (n == 0) return true;
    u64 words = 1 + (n + 7) / 8;
    u64 cap = P.out[1];
    u64 at = a_fetch_add(P.out, words);
    u64* list = P.out + OUT_HEAD_WORDS;
    if (at + words > cap) {
        if (at < cap) list[at] = MAXU64;  // OUT_END
        return false;
    }
    list[at] = (u64)lane | stream << 32 | n << 33;
    u8* dst = (u8*)(list + at + 1);
    u64 i = 0;
    while (i < n) {
        u64 a = addr + i;
        u64 chunk = 4096 - (a & 4095);
        if (chunk > n - i) chunk = n - i;
        const u8* p = tlb_get(T, P, lane, rec, a, 0);
        if (!p) {
            // (range_ok said readable: not expected) the host skips the chunk and answers
            list[at] = 0xffffffffull | n << 33;
            return false;
        }
        for (u64 k = 0; k < chunk; k++) dst[i + k] = p[k];
        i += chunk;
    }
    return true;
}

#define NR_EXIT 93
#define NR_EXIT_GROUP 94
#define DEV_HOST 0u
#define DEV_ANSWERED 1u
#define DEV_EXIT 2u

// Answers the syscall in x (x8 = number) when it is one of those the host allowed (S_SYS):
// sets x0 and returns DEV_ANSWERED; DEV_EXIT for an exit that ends the lane (the host takes
// it from the record: nothing changes here); DEV_HOST: the host services it. `retired`
// counts the SVC, as the host's state does when it runs the syscall.
__device__ __noinline__ u32 dev_syscall(Tlb& T, const Params& P, u32 lane, u64* rec, u64* x, u64 retired) {
    u64 allowed = rec[S_SYS];
    if (!allowed || !P.sysd) return DEV_HOST;
    const u64* sd = P.sysd + (u64)lane * SYSD_WORDS;
    u64 nr = x[8];
    u32 fd = (u32)x[0];
    u64 ret;
    if ((nr == NR_EXIT || nr == NR_EXIT_GROUP) && (allowed & SYS_EXIT)) return DEV_EXIT;
    if (nr == NR_READ && fd == 0 && (allowed & SYS_READ0)) {
        u64 len = sd[1], off = rec[S_IN_OFF];
        u64 count = x[2] < MAX_RW_ ? x[2] : MAX_RW_;
        u64 left = off < len ? len - off : 0;
        u64 n = count < left ? count : left;
        // the whole buffer must be writable (EFAULT otherwise, even at the end of input)
        if (!range_ok(P, lane, rec, x[1], count, 1) || !claim_range(T, P, lane, rec, x[1], n)) return DEV_HOST;
        copy_out(T, P, lane, rec, x[1], (const u8*)sd[0] + off, n);
        rec[S_IN_OFF] = off + n;
        ret = n;
    } else if (nr == NR_WRITE && (fd == 1 || fd == 2) && (allowed & (fd == 1 ? SYS_DROP1 : SYS_DROP2))) {
        u64 n = x[2] < MAX_RW_ ? x[2] : MAX_RW_;
        u64 room = rec[S_ROOM + fd - 1];
        // a write the capture cannot take whole, or from a buffer not (yet) in the table:
        // the host
        if (n > room || !range_ok(P, lane, rec, x[1], n, 0)) return DEV_HOST;
        if (P.out && !keep_out(T, P, lane, rec, fd - 1, x[1], n)) return DEV_HOST;
        rec[S_ROOM + fd - 1] = room - n;
        ret = n;
    } else if ((nr == NR_FSTAT || nr == NR_NEWFSTATAT) && fd < 3 && (allowed & (SYS_STAT0 << fd))) {
        u64 buf = x[1];
        if (nr == NR_NEWFSTATAT) {
            // only newfstatat(fd, "", buf, AT_EMPTY_PATH): an fstat
            if (x[3] != AT_EMPTY_PATH_) return DEV_HOST;
            const u8* path = range_ok(P, lane, rec, x[1], 1, 0) ? tlb_get(T, P, lane, rec, x[1], 0) : 0;
            if (!path || *path != 0) return DEV_HOST;
            buf = x[2];
        }
        if (!range_ok(P, lane, rec, buf, 128, 1) || !claim_range(T, P, lane, rec, buf, 128)) return DEV_HOST;
        copy_out(T, P, lane, rec, buf, (const u8*)(sd + 8 + 16 * fd), 128);
        ret = 0;
    } else if (nr == NR_CLOCK_GETTIME && (allowed & SYS_CLOCK)) {
        // the virtual clocks (armada-core's time::det_clock, the CLOCKS_* masks); the id is
        // an int, its register's upper half ignored, as the host's dispatch does
        u64 id = (u32)x[0];
        if (id >= 32 || !((CLOCKS_VALID >> id) & 1)) {
            ret = (u64)(-(i64)EINVAL_);
        } else {
            if (!range_ok(P, lane, rec, x[1], 16, 1) || !claim_range(T, P, lane, rec, x[1], 16)) return DEV_HOST;
            u64 ns = retired * NS_PER_INSN, base;
            if ((CLOCKS_CPU >> id) & 1) {
                base = 0;
            } else {
                ns += rec[S_SLEPT];
                base = ((CLOCKS_REALTIME >> id) & 1) ? DET_REALTIME_BASE_S
                     : ((CLOCKS_TAI >> id) & 1) ? DET_REALTIME_BASE_S + 37
                     : DET_MONOTONIC_BASE_S;
            }
            u64 ts[2] = {base + ns / 1000000000ull, ns % 1000000000ull};
            copy_out(T, P, lane, rec, x[1], (const u8*)ts, 16);
            ret = 0;
        }
    } else {
        return DEV_HOST;
    }
    x[0] = ret;
    rec[S_SYS_N] += 1;
    return DEV_ANSWERED;
}

