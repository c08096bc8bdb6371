//! The device: one place that owns the GPU, the compiled kernels and every buffer.
//!
//! [`Device`] is what the engine needs from a GPU: plain allocations, copies, the four
//! kernels, and host-mapped memory for progress. armada-cuda implements it with cudarc's
//! driver API (and with the CUDA kernel compiled for the host, for tests); armada-wgpu with
//! wgpu over a WGSL shader.

use crate::layout::Params;
use crate::Error;

/// A device address (or, for the simulator, a host address).
pub type DevPtr = u64;

/// A queue of work on the device (`Device::new_queue`); 0 is the device's own.
pub type Queue = u64;

/// A kernel build with a batch's translated blocks (`Device::build_blocks`).
#[derive(Clone, Debug)]
pub struct BlockBuild {
    /// Its number (`Params::blocks`).
    pub build: u64,
    /// Block k's first micro-op, for the batch to rewrite to `layout::TBLOCK`.
    pub heads: Vec<u32>,
    /// The samples that fell in the blocks, per mille.
    pub covered: u32,
}

pub trait Device: Send + Sync {
    /// What it is, for messages ("NVIDIA H200 (sm_90)").
    fn describe(&self) -> String;
    /// A zeroed allocation of `bytes`.
    fn alloc(&self, bytes: usize) -> Result<DevPtr, Error>;
    /// A zeroed allocation of `bytes` for a chunk of the frame pool (guest pages and their
    /// shadows). Devices whose kernels reach memory through bindings of bounded size (wgpu)
    /// keep frames in buffers of their own; the others allocate as `alloc` does.
    fn alloc_frames(&self, bytes: usize) -> Result<DevPtr, Error> {
        self.alloc(bytes)
    }
    fn free(&self, ptr: DevPtr);
    fn htod(&self, dst: DevPtr, src: &[u8]) -> Result<(), Error>;
    fn dtoh(&self, src: DevPtr, dst: &mut [u8]) -> Result<(), Error>;
    /// Starts the interpreter over `p.nactive` lanes; returns at once.
    fn launch_run(&self, p: &Params) -> Result<(), Error>;
    /// Waits for everything launched so far.
    fn sync(&self) -> Result<(), Error>;
    /// A queue of its own for one batch's interpreter launches (`launch_run_on`,
    /// `wait_on`): with one each, batches that share the device overlap, one's kernel
    /// running while another's host work, copies and small kernels go on (a pipelined fuzzer
    /// keeps two). Devices with one queue give 0, and their batches take turns.
    fn new_queue(&self) -> Result<Queue, Error> {
        Ok(0)
    }
    /// Whether `new_queue` gives queues of their own, so that batches sharing the device
    /// overlap (the default for big batches on one device: `armada_gpu::shards_on_one_device`).
    fn overlapping_queues(&self) -> bool {
        false
    }
    /// Gives back a queue from `new_queue`, once nothing waits on it.
    fn drop_queue(&self, _q: Queue) {}
    /// `launch_run` on queue `q`, after everything copied or launched outside the queues
    /// so far.
    fn launch_run_on(&self, p: &Params, _q: Queue) -> Result<(), Error> {
        self.launch_run(p)
    }
    /// Waits for everything launched on queue `q`.
    fn wait_on(&self, _q: Queue) -> Result<(), Error> {
        self.sync()
    }
    /// Runs the copy kernel over `n` descriptors at `descs` and waits.
    fn copy(&self, descs: DevPtr, n: u32) -> Result<(), Error>;
    /// Runs the diff kernel: the changed 64-byte blocks of `n` frames (their addresses at
    /// `frames`) against their shadows `shadow_off` bytes further, appended to `out` as
    /// 9-word entries, the count at `count` (zeroed by the caller); shadows are updated.
    fn diff(
        &self,
        frames: DevPtr,
        n: u32,
        shadow_off: u64,
        out: DevPtr,
        count: DevPtr,
    ) -> Result<(), Error>;
    /// Runs the page-table write kernel over `n` (slot, key, value) triples at `writes`.
    fn pt_write(&self, pt: DevPtr, pt_epoch: DevPtr, writes: DevPtr, n: u32) -> Result<(), Error>;
    /// Runs the coverage-news kernel over `n` lanes (u32 lane numbers at `lanes`) and waits:
    /// `out[k]` (u64) = 1 << 32 when lane `lanes[k]`'s map at `maps` (`layout::COV_MAP_BYTES`
    /// a lane) has a hit whose bucket `virgin` (one byte a slot, a bit a bucket) lacks, | its
    /// path hash (`armada_core::coverage::path_hash`).
    fn cov_news(
        &self,
        maps: DevPtr,
        virgin: DevPtr,
        lanes: DevPtr,
        n: u32,
        out: DevPtr,
    ) -> Result<(), Error>;
    /// Sets `bytes` bytes at `ptr` to zero (the default uploads zeros).
    fn zero(&self, ptr: DevPtr, bytes: usize) -> Result<(), Error> {
        const PIECE: usize = 1 << 24;
        let zeros = vec![0u8; bytes.min(PIECE)];
        let mut done = 0;
        while done < bytes {
            let n = (bytes - done).min(PIECE);
            self.htod(ptr + done as u64, &zeros[..n])?;
            done += n;
        }
        Ok(())
    }
    /// Makes the kernel build with coverage ready (compiles it on first use), so the time goes
    /// to the batch's setup rather than its first launch.
    fn prepare_coverage(&self) -> Result<(), Error> {
        Ok(())
    }
    /// Makes ready the kernel build the next `launch_run` with `p` uses (a device that builds
    /// variants as a batch grows compiles it here), so that its time is counted apart from
    /// the kernel's (`Stats::build_s`).
    fn prepare_run(&self, _p: &Params) -> Result<(), Error> {
        Ok(())
    }
    /// Host memory the kernel can write while it runs: (host pointer, device address).
    fn alloc_mapped(&self, bytes: usize) -> Result<(*mut u64, DevPtr), Error>;
    fn free_mapped(&self, host: *mut u64);
    /// Page-locked host memory of `bytes` (page-aligned, zeroed) for staging transfers: the
    /// driver copies to and from it at the bus's full rate, where pageable memory goes through
    /// a staging copy of its own. The default is ordinary memory.
    fn alloc_host(&self, bytes: usize) -> Result<*mut u8, Error> {
        let layout = host_layout(bytes)?;
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return Err(Error::Device(format!(
                "out of host memory ({bytes} bytes of staging)"
            )));
        }
        Ok(p)
    }
    /// Frees what `alloc_host` returned.
    ///
    /// # Safety
    /// `p` came from this device's `alloc_host` with the same `bytes`, and is not used after.
    unsafe fn free_host(&self, p: *mut u8, bytes: usize) {
        if let Ok(layout) = host_layout(bytes) {
            // SAFETY: `p` came from `alloc_host` (the default one) with this layout.
            unsafe { std::alloc::dealloc(p, layout) }
        }
    }
    /// (free, total) device memory in bytes.
    fn mem_info(&self) -> (u64, u64);
    /// Makes the device current on the calling thread.
    fn bind(&self) -> Result<(), Error>;
    /// log2 of the frames in one chunk of the frame pool (each chunk is one allocation of
    /// twice that many 4 KiB pages: frames and their shadows). Devices with small buffers
    /// ask for smaller chunks.
    fn chunk_shift(&self) -> u32 {
        14
    }
    /// Instructions per lane per launch when the options name none: devices that cannot end
    /// a launch by time (no clock in the shader) bound it by count.
    fn default_slice(&self) -> Option<u64> {
        None
    }
    /// Instructions the CPU engine runs for a lane that stopped on an instruction the kernel
    /// leaves to the host: 1 where such instructions are rare (CUDA), more where whole classes
    /// go to the host (wgpu: floating point), so FP-dense code does not pay a launch per
    /// instruction. Results are the same either way: the CPU engine is the reference.
    fn host_run(&self) -> u64 {
        1
    }
    /// The micro-ops at which lanes stopped for the host in the round just serviced (one
    /// entry a host step): a device that can run more on itself at some cost (wgpu's FP
    /// pipeline) learns here that a batch needs it.
    fn host_stepped(&self, _ops: &[u16]) {}
    /// Whether the kernel runs the fused compare-and-branch micro-ops (`layout::fused`); the
    /// host then rewrites such pairs in the shared code.
    fn fused_pairs(&self) -> bool {
        false
    }
    /// Whether the kernel answers the syscalls of `engine/devio.rs` itself when a batch asks
    /// (`Params::sysd`).
    fn device_syscalls(&self) -> bool {
        false
    }
    /// Whether the device translates a batch's hot blocks (`build_blocks`); a batch then
    /// samples where its lanes' slices end (`layout::S_INFO` at `STOP_SLICE`).
    fn translates(&self) -> bool {
        false
    }
    /// A build of the kernel with blocks translated from `code` (a batch's micro-ops, two
    /// words each) where `samples` ((micro-op index, count): where slices ended) fell. None:
    /// no block worth translating.
    fn build_blocks(
        &self,
        _code: &[u64],
        _samples: &[(u32, u32)],
    ) -> Result<Option<BlockBuild>, Error> {
        Ok(None)
    }
    /// Whether the kernel copies lazy pages (`layout::PT_LAZY`) on their first write from the
    /// lane's frame reserve and logs the claims (`Params::claims`); the host then maps pages
    /// a lane is likely to write as lazy, so those writes do not stop the lane.
    fn lazy_pages(&self) -> bool {
        false
    }
    /// Whether the kernel also copies a lane's first write to a copy-on-write image page
    /// (`layout::PT_LAZY` on an image's entry) and inserts the lane's entry for it; the host
    /// then marks writable image pages so, and lanes started from one snapshot need no
    /// entries of their own for them. Needs `lazy_pages`.
    fn image_cow(&self) -> bool {
        false
    }
    /// Whether the kernel takes a lazy page's frame from the batch's pool (`Params::pool`)
    /// once the lane's reserve is empty, and logs it as such (`layout::CLAIM_POOLED`).
    /// Needs `lazy_pages`.
    fn frame_pool(&self) -> bool {
        false
    }
    /// Whether the kernel keeps a second-level translation cache for each lane in the
    /// buffer at `Params::tlb2` (`layout::TLB2_ENTRIES`), valid for the launch whose
    /// generation (`Params::gen`) its entries carry.
    fn second_level_tlb(&self) -> bool {
        false
    }
}

fn host_layout(bytes: usize) -> Result<std::alloc::Layout, Error> {
    std::alloc::Layout::from_size_align(bytes.max(1), 4096)
        .map_err(|_| Error::Device(format!("{bytes} bytes of staging is too many")))
}

/// Reads `n` plain values from device memory.
pub fn dtoh_vec<T: Copy + Default>(
    dev: &dyn Device,
    src: DevPtr,
    n: usize,
) -> Result<Vec<T>, Error> {
    let mut v = vec![T::default(); n];
    dtoh_into(dev, src, &mut v)?;
    Ok(v)
}

/// Reads `out.len()` plain values from device memory into `out`.
pub fn dtoh_into<T: Copy>(dev: &dyn Device, src: DevPtr, out: &mut [T]) -> Result<(), Error> {
    // SAFETY: T is plain data (u32/u64 here); the byte view covers exactly the slice.
    let bytes = unsafe {
        std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, std::mem::size_of_val(out))
    };
    dev.dtoh(src, bytes)
}

/// Writes plain values to device memory.
pub fn htod_slice<T: Copy>(dev: &dyn Device, dst: DevPtr, v: &[T]) -> Result<(), Error> {
    // SAFETY: T is plain data; the byte view covers exactly the slice.
    let bytes =
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) };
    dev.htod(dst, bytes)
}
