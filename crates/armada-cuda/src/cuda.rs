//! The CUDA device: cudarc's driver API over the kernel compiled by NVRTC.

use crate::Error;
use armada_gpu::device::{BlockBuild, DevPtr, Device, Queue};
use armada_gpu::layout::{Params, BLOCK_THREADS};
use cudarc::driver::{result, sys};
use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// From this many active lanes on, launches use the kernel build for throughput: from where
/// lanes start to share warps (`Batch::launch` gives each lane a warp of its own up to 2,048),
/// since that build also keeps a warp's lanes in step (`ARMADA_MINPC`).
pub const MANY_LANES: u32 = 2049;
/// Blocks an SM the many-lane build is compiled for.
pub const MANY_BLOCKS: u32 = 4;

pub struct CudaDevice {
    ctx: sys::CUcontext,
    name: String,
    arch: String,
    module: sys::CUmodule,
    module_many: sys::CUmodule,
    run: sys::CUfunction,
    run_many: sys::CUfunction,
    copy: sys::CUfunction,
    diff: sys::CUfunction,
    pt_write: sys::CUfunction,
    cov_news: sys::CUfunction,
    /// The builds with edge coverage (few lanes, many lanes), compiled on first use.
    covered: OnceLock<Result<(sys::CUfunction, sys::CUfunction), String>>,
    /// The builds with batches' translated blocks (few lanes, many lanes): build k + 1 is
    /// `Params::blocks` k + 1.
    blocks: Mutex<Vec<(sys::CUfunction, sys::CUfunction)>>,
    /// What compiling more builds needs: the source and the many-lane build's defines.
    src: String,
    many_define: String,
    cache_dir: Option<PathBuf>,
    /// Launches over at least this many lanes use the many-lane build
    /// (`ARMADA_CUDA_MANY_LANES`, for measurements).
    many_lanes: u32,
    /// Serializes launches and copies issued from several threads (async mode polls).
    lock: Mutex<()>,
    pub compile_note: String,
}

// SAFETY: the raw CUDA handles are process-wide objects; every use binds the context to
// the calling thread first and goes through the driver, which is thread-safe.
unsafe impl Send for CudaDevice {}
unsafe impl Sync for CudaDevice {}

fn derr(what: &str, e: result::DriverError) -> Error {
    crate::cuda_err(format!("{what}: {e:?}"))
}

/// The number of CUDA devices the driver reports (an error says why there is none).
pub fn device_count() -> Result<usize, Error> {
    // SAFETY: is_culib_present only tries to open the library.
    if !unsafe { sys::is_culib_present() } {
        return Err(crate::no_driver(
            "no CUDA driver found (libcuda.so could not be loaded)",
        ));
    }
    let n = std::panic::catch_unwind(|| -> Result<i32, Error> {
        result::init().map_err(|e| derr("cuInit", e))?;
        result::device::get_count().map_err(|e| derr("cuDeviceGetCount", e))
    })
    .unwrap_or_else(|_| Err(crate::no_driver("the CUDA driver could not be initialized")))?;
    Ok(n.max(0) as usize)
}

/// Two builds of the kernel, with `few`'s and with `many`'s defines, compiled side by side
/// (or read from the cache `source.3`): each build's cubin and its compile note. `source`:
/// the kernel's source, the device's architecture and name.
#[allow(clippy::type_complexity)]
fn compile_pair(
    source: (&str, &str, &str, &Option<PathBuf>),
    few: &[&str],
    many: &[&str],
) -> Result<((Vec<u8>, String), (Vec<u8>, String)), Error> {
    let (src, arch, name, dir) = source;
    let compile =
        |defines: &[&str]| crate::nvrtc::compile_cached(src, arch, defines, name, dir.clone());
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| compile(few));
        let b = s.spawn(|| compile(many));
        (a.join(), b.join())
    });
    let join = |r: std::thread::Result<Result<(Vec<u8>, String), Error>>| {
        r.unwrap_or_else(|_| Err(Error::Compile("the kernel compiler panicked".into())))
    };
    Ok((join(a)?, join(b)?))
}

impl CudaDevice {
    /// Opens device `ordinal` (0 for the first) and loads the kernel onto it (compiled by
    /// NVRTC, or from the cache when a device of its architecture compiled it before).
    pub fn open(ordinal: usize, cache_dir: Option<PathBuf>) -> Result<CudaDevice, Error> {
        // cudarc panics when the library is missing: ask first, and catch a panic anyway.
        // SAFETY: is_culib_present only tries to open the library.
        if !unsafe { sys::is_culib_present() } {
            return Err(crate::no_driver(
                "no CUDA driver found (libcuda.so could not be loaded)",
            ));
        }
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(crate::no_driver(
                "the CUDA driver is present but NVRTC (libnvrtc.so) is not; install the \
                 CUDA toolkit's runtime compiler",
            ));
        }
        let opened = std::panic::catch_unwind(|| -> Result<_, Error> {
            result::init().map_err(|e| derr("cuInit", e))?;
            let n = result::device::get_count().map_err(|e| derr("cuDeviceGetCount", e))?;
            if n < 1 {
                return Err(crate::no_driver("the CUDA driver reports no device"));
            }
            if ordinal >= n as usize {
                return Err(Error::NoDevice(format!(
                    "there is no CUDA device {ordinal}: the driver reports {n}"
                )));
            }
            let dev = result::device::get(ordinal as i32).map_err(|e| derr("cuDeviceGet", e))?;
            // SAFETY: dev is a valid device handle.
            let ctx = unsafe { result::primary_ctx::retain(dev) }
                .map_err(|e| derr("cuDevicePrimaryCtxRetain", e))?;
            unsafe { result::ctx::set_current(ctx) }.map_err(|e| derr("cuCtxSetCurrent", e))?;
            let name = result::device::get_name(dev).map_err(|e| derr("cuDeviceGetName", e))?;
            let attr = |a| unsafe { result::device::get_attribute(dev, a) };
            let major = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
                .map_err(|e| derr("cuDeviceGetAttribute", e))?;
            let minor = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
                .map_err(|e| derr("cuDeviceGetAttribute", e))?;
            Ok((ctx, name, format!("sm_{major}{minor}")))
        });
        let (ctx, name, arch) = match opened {
            Ok(r) => r?,
            Err(_) => return Err(crate::no_driver("the CUDA driver could not be initialized")),
        };
        // Two builds of the kernel, compiled side by side: one for few lanes (all the
        // registers it wants: the fastest single lane) and one for many (a register cap so
        // that a whole batch of 65,536 lanes is resident at once).
        let src = crate::kernel_source();
        // blocks an SM the many-lane build is made for (ARMADA_CUDA_MANY_BLOCKS, for
        // measurements): 4 blocks of 128 threads leave 128 registers a thread and hold 67,584
        // lanes at once on an H200. Measured there (65,536 lanes): 8 blocks (64 registers,
        // heavy spills) ran the tight loop at 74 G/s and lanecrc at 44; 4 blocks at 139 and 60.
        let many_blocks = std::env::var("ARMADA_CUDA_MANY_BLOCKS")
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
            .filter(|&b| (1..=16).contains(&b))
            .unwrap_or(MANY_BLOCKS);
        let many_define = format!("-DARMADA_MIN_BLOCKS={many_blocks}");
        // min-PC scheduling: lanes of a warp run in step (see the kernel); it costs a vote an
        // instruction, which one lane a warp (the few-lane build) does without
        let minpc = "-DARMADA_MINPC";
        let ((cubin, compile_note), (cubin_many, _)) = compile_pair(
            (&src, &arch, &name, &cache_dir),
            &[],
            &[many_define.as_str(), minpc],
        )?;
        // SAFETY: cubin is a complete module image; the context is current.
        let module = unsafe { result::module::load_data(cubin.as_ptr() as *const c_void) }
            .map_err(|e| derr("cuModuleLoadData", e))?;
        // SAFETY: as above.
        let module_many =
            unsafe { result::module::load_data(cubin_many.as_ptr() as *const c_void) }
                .map_err(|e| derr("cuModuleLoadData", e))?;
        let func_in = |m: sys::CUmodule, n: &str| -> Result<sys::CUfunction, Error> {
            let c = CString::new(n).unwrap();
            // SAFETY: the module is loaded; c is a valid name.
            unsafe { result::module::get_function(m, c) }
                .map_err(|e| derr(&format!("cuModuleGetFunction({n})"), e))
        };
        let func = |n: &str| func_in(module, n);
        let run = func("armada_run")?;
        let run_many = func_in(module_many, "armada_run")?;
        let copy = func("armada_copy")?;
        let diff = func("armada_diff")?;
        let pt_write = func("armada_pt_write")?;
        let cov_news = func("armada_cov_news")?;
        Ok(CudaDevice {
            ctx,
            name,
            arch,
            module,
            module_many,
            run,
            run_many,
            copy,
            diff,
            pt_write,
            cov_news,
            covered: OnceLock::new(),
            blocks: Mutex::new(Vec::new()),
            src,
            many_define,
            cache_dir,
            many_lanes: std::env::var("ARMADA_CUDA_MANY_LANES")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(MANY_LANES),
            lock: Mutex::new(()),
            compile_note,
        })
    }

    /// The kernel builds with edge coverage (ARMADA_COVERAGE), compiled (or read from the
    /// cache) the first time a batch asks for coverage, so plain runs never pay for it. The
    /// two are compiled side by side, as the plain builds are: one after the other, a 20 s
    /// fuzzing run on an H200 with an empty kernel cache finished no round of 16,384 lanes
    /// (side by side, its first round's setup took 7.7 s).
    fn covered(&self) -> Result<(sys::CUfunction, sys::CUfunction), Error> {
        let r = self.covered.get_or_init(|| {
            let cov = "-DARMADA_COVERAGE";
            // (the fields, not `self`, go to the compiling threads)
            let ((few, _), (many, _)) = compile_pair(
                (&self.src, &self.arch, &self.name, &self.cache_dir),
                &[cov],
                &[self.many_define.as_str(), "-DARMADA_MINPC", cov],
            )
            .map_err(|e| e.to_string())?;
            let load = |cubin: &[u8]| self.load_run(cubin).map_err(|e| e.to_string());
            Ok((load(&few)?, load(&many)?))
        });
        r.clone().map_err(|e| {
            Error::Compile(format!(
                "the kernel build with coverage did not compile: {e}"
            ))
        })
    }

    /// The `armada_run` of a build compiled after the start (coverage, translated blocks).
    fn load_run(&self, cubin: &[u8]) -> Result<sys::CUfunction, Error> {
        self.bind()?;
        // SAFETY: cubin is a complete module image; the context is current. The module stays
        // loaded for the device's life (unloaded with the context).
        let m = unsafe { result::module::load_data(cubin.as_ptr() as *const c_void) }
            .map_err(|e| derr("cuModuleLoadData", e))?;
        let c = CString::new("armada_run").unwrap();
        // SAFETY: the module is loaded; c is a valid name.
        unsafe { result::module::get_function(m, c) }
            .map_err(|e| derr("cuModuleGetFunction(armada_run)", e))
    }

    fn launch(
        &self,
        f: sys::CUfunction,
        grid: u32,
        block: u32,
        params: &mut [*mut c_void],
    ) -> Result<(), Error> {
        self.launch_in(f, grid, block, params, std::ptr::null_mut())
    }

    fn launch_in(
        &self,
        f: sys::CUfunction,
        grid: u32,
        block: u32,
        params: &mut [*mut c_void],
        stream: sys::CUstream,
    ) -> Result<(), Error> {
        self.bind()?;
        // SAFETY: f belongs to our loaded module and `params` points at values laid out
        // as the kernel's parameters; they live until the launch has read them (the
        // driver copies parameters at launch).
        unsafe { result::launch_kernel(f, (grid.max(1), 1, 1), (block, 1, 1), 0, stream, params) }
            .map_err(|e| derr("cuLaunchKernel", e))
    }

    /// Waits for the copies and small kernels, which go to the null stream: not for the
    /// batches' run kernels on their own streams (`new_queue`), which it does not wait for.
    fn sync_small(&self) -> Result<(), Error> {
        self.bind()?;
        // SAFETY: the null stream always exists.
        unsafe { result::stream::synchronize(std::ptr::null_mut()) }.map_err(|e| {
            crate::cuda_err(format!(
                "a copy kernel failed: {e:?} (run under compute-sanitizer to find out where)"
            ))
        })
    }

    fn run_function(&self, p: &Params) -> Result<sys::CUfunction, Error> {
        let (few, many) = if p.cov != 0 {
            self.covered()?
        } else if p.blocks != 0 {
            self.blocks.lock().unwrap()[p.blocks as usize - 1]
        } else {
            (self.run, self.run_many)
        };
        Ok(if p.nactive >= self.many_lanes {
            many
        } else {
            few
        })
    }
}

impl Device for CudaDevice {
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
    fn translates(&self) -> bool {
        true
    }
    fn build_blocks(
        &self,
        code: &[u64],
        samples: &[(u32, u32)],
    ) -> Result<Option<BlockBuild>, Error> {
        crate::blocks::build_into(code, samples, &self.blocks, |text| {
            let src = crate::kernel_source_with_blocks(text);
            let on = "-DARMADA_BLOCKS";
            let ((few, _), (many, _)) = compile_pair(
                (&src, &self.arch, &self.name, &self.cache_dir),
                &[on],
                &[self.many_define.as_str(), "-DARMADA_MINPC", on],
            )?;
            Ok((self.load_run(&few)?, self.load_run(&many)?))
        })
    }
    fn device_syscalls(&self) -> bool {
        true
    }

    fn describe(&self) -> String {
        format!("{} ({})", self.name, self.arch)
    }

    fn alloc(&self, bytes: usize) -> Result<DevPtr, Error> {
        self.bind()?;
        let bytes = bytes.max(8);
        // SAFETY: plain device allocation, then zeroed.
        unsafe {
            let p = result::malloc_sync(bytes).map_err(|e| {
                crate::cuda_err(format!(
                    "cuMemAlloc of {bytes} bytes failed (out of device memory?): {e:?}"
                ))
            })?;
            result::memset_d8_sync(p, 0, bytes).map_err(|e| derr("cuMemsetD8", e))?;
            Ok(p)
        }
    }

    fn zero(&self, ptr: DevPtr, bytes: usize) -> Result<(), Error> {
        if bytes == 0 {
            return Ok(());
        }
        self.bind()?;
        let _g = self.lock.lock();
        // SAFETY: ptr is a device allocation of at least `bytes` bytes (caller's duty).
        unsafe { result::memset_d8_sync(ptr, 0, bytes) }.map_err(|e| derr("cuMemsetD8", e))
    }

    fn free(&self, ptr: DevPtr) {
        if self.bind().is_ok() {
            // SAFETY: ptr came from alloc.
            let _ = unsafe { result::free_sync(ptr) };
        }
    }

    fn htod(&self, dst: DevPtr, src: &[u8]) -> Result<(), Error> {
        if src.is_empty() {
            return Ok(());
        }
        self.bind()?;
        let _g = self.lock.lock();
        // SAFETY: dst is a device allocation of at least src.len() bytes (caller's duty).
        unsafe { result::memcpy_htod_sync(dst, src) }.map_err(|e| derr("cuMemcpyHtoD", e))
    }

    fn dtoh(&self, src: DevPtr, dst: &mut [u8]) -> Result<(), Error> {
        if dst.is_empty() {
            return Ok(());
        }
        self.bind()?;
        let _g = self.lock.lock();
        // SAFETY: src is a device allocation of at least dst.len() bytes.
        unsafe { result::memcpy_dtoh_sync(dst, src) }.map_err(|e| derr("cuMemcpyDtoH", e))
    }

    fn launch_run(&self, p: &Params) -> Result<(), Error> {
        self.launch_run_on(p, 0)
    }

    fn new_queue(&self) -> Result<Queue, Error> {
        self.bind()?;
        // Non-blocking: the null stream's copies and small kernels (another batch's) do not
        // wait for this stream's run kernel, nor it for them.
        let s = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| derr("cuStreamCreate", e))?;
        Ok(s as Queue)
    }

    fn overlapping_queues(&self) -> bool {
        true
    }

    fn drop_queue(&self, q: Queue) {
        if q != 0 && self.bind().is_ok() {
            // SAFETY: q came from new_queue and nothing waits on it any more.
            let _ = unsafe { result::stream::destroy(q as sys::CUstream) };
        }
    }

    fn launch_run_on(&self, p: &Params, q: Queue) -> Result<(), Error> {
        let mut pv = *p;
        let mut args = [&mut pv as *mut Params as *mut c_void];
        let grid = (p.nactive << p.lane_shift).div_ceil(BLOCK_THREADS);
        let f = self.run_function(p)?;
        let stream = q as sys::CUstream;
        let _g = self.lock.lock();
        if q != 0 {
            // The records, table writes and inputs went up through the null stream, and a
            // copy from pageable memory or a memset may still be in flight when its call
            // returns: the kernel waits for what the null stream has so far.
            self.bind()?;
            let ev = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                .map_err(|e| derr("cuEventCreate", e))?;
            // SAFETY: ev was just created; the null stream and `stream` (from new_queue)
            // exist; an event may be destroyed while the stream still waits on it.
            unsafe {
                let r = result::event::record(ev, std::ptr::null_mut())
                    .and_then(|_| {
                        result::stream::wait_event(
                            stream,
                            ev,
                            sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
                        )
                    })
                    .map_err(|e| derr("cuStreamWaitEvent", e));
                let _ = result::event::destroy(ev);
                r?;
            }
        }
        self.launch_in(f, grid, BLOCK_THREADS, &mut args, stream)
    }

    fn wait_on(&self, q: Queue) -> Result<(), Error> {
        if q == 0 {
            return self.sync();
        }
        self.bind()?;
        // SAFETY: q came from new_queue and is not destroyed before its batch is.
        unsafe { result::stream::synchronize(q as sys::CUstream) }.map_err(|e| {
            crate::cuda_err(format!(
                "kernel failed: {e:?} (run under compute-sanitizer to find out where)"
            ))
        })
    }

    fn sync(&self) -> Result<(), Error> {
        self.bind()?;
        result::ctx::synchronize().map_err(|e| {
            crate::cuda_err(format!(
                "kernel failed: {e:?} (run under compute-sanitizer to find out where)"
            ))
        })
    }

    fn copy(&self, descs: DevPtr, n: u32) -> Result<(), Error> {
        if n == 0 {
            return Ok(());
        }
        let mut d = descs;
        let mut nn = n;
        let mut args = [
            &mut d as *mut u64 as *mut c_void,
            &mut nn as *mut u32 as *mut c_void,
        ];
        {
            let _g = self.lock.lock();
            self.launch(self.copy, n.min(65535), 128, &mut args)?;
        }
        self.sync_small()
    }

    fn diff(
        &self,
        frames: DevPtr,
        n: u32,
        shadow_off: u64,
        out: DevPtr,
        count: DevPtr,
    ) -> Result<(), Error> {
        if n == 0 {
            return Ok(());
        }
        let (mut f, mut nn, mut so, mut o, mut c) = (frames, n, shadow_off, out, count);
        let mut args = [
            &mut f as *mut u64 as *mut c_void,
            &mut nn as *mut u32 as *mut c_void,
            &mut so as *mut u64 as *mut c_void,
            &mut o as *mut u64 as *mut c_void,
            &mut c as *mut u64 as *mut c_void,
        ];
        {
            let _g = self.lock.lock();
            self.launch(self.diff, n.min(65535), 64, &mut args)?;
        }
        self.sync_small()
    }

    fn pt_write(&self, pt: DevPtr, pt_epoch: DevPtr, writes: DevPtr, n: u32) -> Result<(), Error> {
        if n == 0 {
            return Ok(());
        }
        let (mut a, mut b, mut c, mut nn) = (pt, pt_epoch, writes, n);
        let mut args = [
            &mut a as *mut u64 as *mut c_void,
            &mut b as *mut u64 as *mut c_void,
            &mut c as *mut u64 as *mut c_void,
            &mut nn as *mut u32 as *mut c_void,
        ];
        {
            let _g = self.lock.lock();
            self.launch(self.pt_write, n.div_ceil(256), 256, &mut args)?;
        }
        self.sync_small()
    }

    fn prepare_coverage(&self) -> Result<(), Error> {
        self.covered().map(|_| ())
    }

    fn cov_news(
        &self,
        maps: DevPtr,
        virgin: DevPtr,
        lanes: DevPtr,
        n: u32,
        out: DevPtr,
    ) -> Result<(), Error> {
        if n == 0 {
            return Ok(());
        }
        let (mut m, mut v, mut l, mut nn, mut o) = (maps, virgin, lanes, n, out);
        let mut args = [
            &mut m as *mut u64 as *mut c_void,
            &mut v as *mut u64 as *mut c_void,
            &mut l as *mut u64 as *mut c_void,
            &mut nn as *mut u32 as *mut c_void,
            &mut o as *mut u64 as *mut c_void,
        ];
        {
            let _g = self.lock.lock();
            self.launch(self.cov_news, n.min(65535), 256, &mut args)?;
        }
        self.sync_small()
    }

    fn alloc_host(&self, bytes: usize) -> Result<*mut u8, Error> {
        self.bind()?;
        // SAFETY: a plain pinned host allocation, zeroed before use.
        unsafe {
            let h = result::malloc_host(bytes.max(1), 0).map_err(|e| derr("cuMemHostAlloc", e))?;
            std::ptr::write_bytes(h as *mut u8, 0, bytes);
            Ok(h as *mut u8)
        }
    }

    unsafe fn free_host(&self, p: *mut u8, _bytes: usize) {
        if self.bind().is_ok() {
            // SAFETY: `p` came from cuMemHostAlloc in `alloc_host`.
            let _ = unsafe { result::free_host(p as *mut c_void) };
        }
    }

    fn alloc_mapped(&self, bytes: usize) -> Result<(*mut u64, DevPtr), Error> {
        self.bind()?;
        // SAFETY: pinned, device-mapped host allocation; we zero it before use.
        unsafe {
            let h = result::malloc_host(
                bytes,
                sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE,
            )
            .map_err(|e| derr("cuMemHostAlloc", e))?;
            std::ptr::write_bytes(h as *mut u8, 0, bytes);
            let mut d: sys::CUdeviceptr = 0;
            sys::cuMemHostGetDevicePointer_v2(&mut d, h, 0)
                .result()
                .map_err(|e| derr("cuMemHostGetDevicePointer", e))?;
            Ok((h as *mut u64, d))
        }
    }

    fn free_mapped(&self, host: *mut u64) {
        if self.bind().is_ok() {
            // SAFETY: host came from alloc_mapped.
            let _ = unsafe { result::free_host(host as *mut c_void) };
        }
    }

    fn mem_info(&self) -> (u64, u64) {
        if self.bind().is_err() {
            return (0, 0);
        }
        result::mem_get_info()
            .map(|(f, t)| (f as u64, t as u64))
            .unwrap_or((0, 0))
    }

    fn bind(&self) -> Result<(), Error> {
        // SAFETY: ctx is the retained primary context.
        unsafe { result::ctx::set_current(self.ctx) }.map_err(|e| derr("cuCtxSetCurrent", e))
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        if self.bind().is_ok() {
            // SAFETY: the modules were loaded by us and nothing uses them any more.
            let _ = unsafe { result::module::unload(self.module) };
            let _ = unsafe { result::module::unload(self.module_many) };
        }
    }
}
