//! The simulator: the CUDA kernel source compiled as C++ for the host (by build.rs), behind
//! the same `Device` trait, so the engine and the kernel are tested without a GPU.

use crate::Error;
use armada_gpu::device::{BlockBuild, DevPtr, Device};
use armada_gpu::layout::CopyDesc;
use armada_gpu::layout::Params;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

extern "C" {
    fn armada_sim_run_lane(p: *const Params, i: u32);
    fn armada_sim_copy(descs: *const CopyDesc, n: u32);
    fn armada_sim_pt_write(pt: *mut u64, pt_epoch: *mut u32, writes: *const u64, n: u32);
    fn armada_sim_cov_news(
        maps: *const u8,
        virgin: *const u8,
        lanes: *const u32,
        n: u32,
        out: *mut u64,
    );
    fn armada_sim_diff(frames: *const u64, n: u32, shadow_off: u64, out: *mut u64, count: *mut u64);
}

/// Host memory standing in for device memory; addresses are host pointers.
#[derive(Default)]
pub struct SimDevice {
    allocs: Mutex<Vec<(u64, Vec<u64>)>>,
    /// Its number among the simulator's devices.
    ordinal: usize,
    /// Launches that succeed before every later one fails (tests of a failing device).
    fail_after: Option<u64>,
    launches: AtomicU64,
    /// Bytes of frame chunks it holds at most (`Options::sim_frame_mib`).
    pub frame_cap: Option<usize>,
    /// Frame chunks held: (address, bytes).
    frame_chunks: Mutex<Vec<(u64, usize)>>,
    /// The builds with batches' translated blocks (`build_blocks`): build k + 1 is
    /// `Params::blocks` k + 1, its library kept loaded with its lane function.
    blocks: Mutex<Vec<(libloading::Library, RunLane)>>,
}

/// The simulator's entry for one lane.
type RunLane = unsafe extern "C" fn(*const Params, u32);

/// Compiles the simulator's source with translated blocks `cases` into a shared library
/// and loads it. The build script compiles the simulator of the start; a batch's blocks
/// are known only while it runs, so they are compiled here, by the same C++ compiler
/// (`CXX`, else `c++`), about 3 s at -O1.
fn compile_blocks(cases: &str) -> Result<(libloading::Library, RunLane), Error> {
    use std::sync::atomic::AtomicUsize;
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "armada-sim-blocks-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let fail = |what: String| {
        Error::Compile(format!(
            "the simulator's build with translated blocks: {what}"
        ))
    };
    std::fs::create_dir_all(&dir).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
    let src = dir.join("blocks.cpp");
    let lib = dir.join("libblocks.so");
    let text = format!(
        "#define ARMADA_SIM 1\n#define ARMADA_BLOCKS 1\n{}",
        crate::kernel_source_with_blocks(cases)
    );
    std::fs::write(&src, text).map_err(|e| fail(format!("{}: {e}", src.display())))?;
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let out = std::process::Command::new(&cxx)
        .args([
            "-std=c++17",
            "-O1",
            "-fno-strict-aliasing",
            "-fwrapv",
            "-fPIC",
            "-shared",
        ])
        .args(["-w", "-Wl,-Bsymbolic", "-o"])
        .arg(&lib)
        .arg(&src)
        .output()
        .map_err(|e| fail(format!("{cxx}: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(fail(format!(
            "{cxx} failed: {}",
            err.lines().take(20).collect::<Vec<_>>().join("\n")
        )));
    }
    // SAFETY: the library is the kernel's source compiled for this host; loading it runs no
    // code of its own (no constructors but the C++ runtime's).
    let loaded = unsafe { libloading::Library::new(&lib) }.map_err(|e| fail(e.to_string()))?;
    // SAFETY: the symbol is the simulator's lane entry, of this type (sim.rs's extern block).
    let run: RunLane = *unsafe { loaded.get::<RunLane>(b"armada_sim_run_lane\0") }
        .map_err(|e| fail(e.to_string()))?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok((loaded, run))
}

impl SimDevice {
    pub fn new() -> SimDevice {
        SimDevice::default()
    }

    /// Simulated device `ordinal`; with `fail_after`, launches after that many fail.
    pub fn numbered(ordinal: usize, fail_after: Option<u64>) -> SimDevice {
        SimDevice {
            ordinal,
            fail_after,
            ..SimDevice::default()
        }
    }
}

impl Device for SimDevice {
    fn fused_pairs(&self) -> bool {
        true
    }
    fn lazy_pages(&self) -> bool {
        true
    }
    fn image_cow(&self) -> bool {
        true
    }
    fn frame_pool(&self) -> bool {
        true
    }
    fn second_level_tlb(&self) -> bool {
        true
    }
    fn device_syscalls(&self) -> bool {
        true
    }
    fn translates(&self) -> bool {
        true
    }
    fn build_blocks(
        &self,
        code: &[u64],
        samples: &[(u32, u32)],
    ) -> Result<Option<BlockBuild>, Error> {
        crate::blocks::build_into(code, samples, &self.blocks, compile_blocks)
    }

    fn describe(&self) -> String {
        if self.ordinal == 0 {
            "the CUDA kernel compiled for the host CPU (simulator)".into()
        } else {
            format!(
                "the CUDA kernel compiled for the host CPU (simulated device {})",
                self.ordinal
            )
        }
    }
    fn alloc_frames(&self, bytes: usize) -> Result<DevPtr, Error> {
        let mut chunks = self.frame_chunks.lock().unwrap();
        if let Some(cap) = self.frame_cap {
            if chunks.iter().map(|c| c.1).sum::<usize>() + bytes > cap {
                return Err(Error::Device(format!(
                    "out of memory: the simulated device holds {} MiB of frames (ARMADA_CUDA_SIM_FRAME_MIB)",
                    cap >> 20
                )));
            }
        }
        let p = self.alloc(bytes)?;
        chunks.push((p, bytes));
        Ok(p)
    }
    fn alloc(&self, bytes: usize) -> Result<DevPtr, Error> {
        let v = vec![0u64; bytes.div_ceil(8).max(1)];
        let p = v.as_ptr() as u64;
        self.allocs.lock().unwrap().push((p, v));
        Ok(p)
    }
    fn free(&self, ptr: DevPtr) {
        self.frame_chunks.lock().unwrap().retain(|c| c.0 != ptr);
        self.allocs.lock().unwrap().retain(|(p, _)| *p != ptr);
    }
    fn htod(&self, dst: DevPtr, src: &[u8]) -> Result<(), Error> {
        // SAFETY: dst points into one of our allocations, large enough (caller's duty).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst as *mut u8, src.len()) };
        Ok(())
    }
    fn dtoh(&self, src: DevPtr, dst: &mut [u8]) -> Result<(), Error> {
        // SAFETY: as htod.
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }
    fn launch_run(&self, p: &Params) -> Result<(), Error> {
        let launch = self.launches.fetch_add(1, Ordering::Relaxed);
        if self.fail_after.is_some_and(|k| launch >= k) {
            return Err(Error::Device(format!(
                "simulated failure of device {} at launch {} (ARMADA_CUDA_SIM_FAIL)",
                self.ordinal,
                launch + 1
            )));
        }
        let pp = *p;
        let run: RunLane = if p.blocks != 0 {
            self.blocks.lock().unwrap()[p.blocks as usize - 1].1
        } else {
            armada_sim_run_lane
        };
        // Lanes touch disjoint memory (shared frames are only read), like GPU threads.
        (0..p.nactive).into_par_iter().for_each(|i| {
            // SAFETY: the parameters describe live allocations of this device.
            unsafe { run(&pp, i) }
        });
        Ok(())
    }
    fn sync(&self) -> Result<(), Error> {
        Ok(())
    }
    fn copy(&self, descs: DevPtr, n: u32) -> Result<(), Error> {
        // SAFETY: descs holds n descriptors of live ranges.
        unsafe { armada_sim_copy(descs as *const CopyDesc, n) };
        Ok(())
    }
    fn diff(
        &self,
        frames: DevPtr,
        n: u32,
        shadow_off: u64,
        out: DevPtr,
        count: DevPtr,
    ) -> Result<(), Error> {
        // SAFETY: as the kernel: the frames, their shadows and `out` are live allocations.
        unsafe {
            armada_sim_diff(
                frames as *const u64,
                n,
                shadow_off,
                out as *mut u64,
                count as *mut u64,
            )
        };
        Ok(())
    }

    fn pt_write(&self, pt: DevPtr, pt_epoch: DevPtr, writes: DevPtr, n: u32) -> Result<(), Error> {
        // SAFETY: as the kernel: slots are inside the table.
        unsafe {
            armada_sim_pt_write(
                pt as *mut u64,
                pt_epoch as *mut u32,
                writes as *const u64,
                n,
            )
        };
        Ok(())
    }
    fn cov_news(
        &self,
        maps: DevPtr,
        virgin: DevPtr,
        lanes: DevPtr,
        n: u32,
        out: DevPtr,
    ) -> Result<(), Error> {
        // SAFETY: as the kernel: the maps of the listed lanes, the virgin map, the list and
        // `out` are live allocations of this device.
        unsafe {
            armada_sim_cov_news(
                maps as *const u8,
                virgin as *const u8,
                lanes as *const u32,
                n,
                out as *mut u64,
            )
        };
        Ok(())
    }
    fn alloc_mapped(&self, bytes: usize) -> Result<(*mut u64, DevPtr), Error> {
        let p = self.alloc(bytes)?;
        Ok((p as *mut u64, p))
    }
    fn free_mapped(&self, host: *mut u64) {
        self.free(host as u64);
    }
    fn mem_info(&self) -> (u64, u64) {
        match self.frame_cap {
            // (what the frames may still take)
            Some(cap) => {
                let used: usize = self.frame_chunks.lock().unwrap().iter().map(|c| c.1).sum();
                (cap.saturating_sub(used) as u64, cap as u64)
            }
            None => (16 << 30, 16 << 30),
        }
    }
    fn bind(&self) -> Result<(), Error> {
        Ok(())
    }
}
