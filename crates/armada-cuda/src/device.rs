//! The device: one place that owns the GPU, the compiled kernels and every buffer.
//!
//! [`Device`] is what the engine needs from a GPU: plain allocations, copies, the three
//! kernels, and host-mapped memory for progress. [`CudaDevice`] is the real one (cudarc's
//! driver API, NVRTC); [`SimDevice`] runs the same kernel source compiled as C++ on the host
//! (built by build.rs when a C++ compiler is present), so the engine and the kernel are
//! tested on machines without a GPU.

use crate::layout::{self, Params, BLOCK_THREADS};
use crate::Error;
use std::path::PathBuf;

/// From this many active lanes on, launches use the kernel build for throughput.
pub const MANY_LANES: u32 = 8192;

/// A device address (or, for the simulator, a host address).
pub type DevPtr = u64;

pub trait Device: Send + Sync {
    /// What it is, for messages ("NVIDIA H200 (sm_90)").
    fn describe(&self) -> String;
    /// A zeroed allocation of `bytes`.
    fn alloc(&self, bytes: usize) -> Result<DevPtr, Error>;
    fn free(&self, ptr: DevPtr);
    fn htod(&self, dst: DevPtr, src: &[u8]) -> Result<(), Error>;
    fn dtoh(&self, src: DevPtr, dst: &mut [u8]) -> Result<(), Error>;
    /// Starts the interpreter over `p.nactive` lanes; returns at once.
    fn launch_run(&self, p: &Params) -> Result<(), Error>;
    /// Waits for everything launched so far.
    fn sync(&self) -> Result<(), Error>;
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
    /// Host memory the kernel can write while it runs: (host pointer, device address).
    fn alloc_mapped(&self, bytes: usize) -> Result<(*mut u64, DevPtr), Error>;
    fn free_mapped(&self, host: *mut u64);
    /// (free, total) device memory in bytes.
    fn mem_info(&self) -> (u64, u64);
    /// Makes the device current on the calling thread.
    fn bind(&self) -> Result<(), Error>;
}

/// Reads `n` plain values from device memory.
pub fn dtoh_vec<T: Copy + Default>(
    dev: &dyn Device,
    src: DevPtr,
    n: usize,
) -> Result<Vec<T>, Error> {
    let mut v = vec![T::default(); n];
    // SAFETY: T is plain data (u32/u64 here); the slice covers exactly the vector.
    let bytes = unsafe {
        std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, n * std::mem::size_of::<T>())
    };
    dev.dtoh(src, bytes)?;
    Ok(v)
}

/// Writes plain values to device memory.
pub fn htod_slice<T: Copy>(dev: &dyn Device, dst: DevPtr, v: &[T]) -> Result<(), Error> {
    // SAFETY: T is plain data; the byte view covers exactly the slice.
    let bytes =
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) };
    dev.htod(dst, bytes)
}

// ================================================================================================
// CUDA

mod cuda {
    use super::*;
    use cudarc::driver::{result, sys};
    use std::ffi::{c_void, CString};
    use std::sync::Mutex;

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
        /// Serializes launches and copies issued from several threads (async mode polls).
        lock: Mutex<()>,
        pub compile_note: String,
    }

    // SAFETY: the raw CUDA handles are process-wide objects; every use binds the context to
    // the calling thread first and goes through the driver, which is thread-safe.
    unsafe impl Send for CudaDevice {}
    unsafe impl Sync for CudaDevice {}

    fn derr(what: &str, e: result::DriverError) -> Error {
        Error::Cuda(format!("{what}: {e:?}"))
    }

    impl CudaDevice {
        pub fn open(cache_dir: Option<PathBuf>) -> Result<CudaDevice, Error> {
            // cudarc panics when the library is missing: ask first, and catch a panic anyway.
            // SAFETY: is_culib_present only tries to open the library.
            if !unsafe { sys::is_culib_present() } {
                return Err(Error::NoDriver(
                    "no CUDA driver found (libcuda.so could not be loaded)".into(),
                ));
            }
            if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                return Err(Error::NoDriver(
                    "the CUDA driver is present but NVRTC (libnvrtc.so) is not; install the \
                     CUDA toolkit's runtime compiler"
                        .into(),
                ));
            }
            let opened = std::panic::catch_unwind(|| -> Result<_, Error> {
                result::init().map_err(|e| derr("cuInit", e))?;
                let n = result::device::get_count().map_err(|e| derr("cuDeviceGetCount", e))?;
                if n < 1 {
                    return Err(Error::NoDriver("the CUDA driver reports no device".into()));
                }
                let dev = result::device::get(0).map_err(|e| derr("cuDeviceGet", e))?;
                // SAFETY: dev is a valid device handle.
                let ctx = unsafe { result::primary_ctx::retain(dev) }
                    .map_err(|e| derr("cuDevicePrimaryCtxRetain", e))?;
                unsafe { result::ctx::set_current(ctx) }.map_err(|e| derr("cuCtxSetCurrent", e))?;
                let name = result::device::get_name(dev).map_err(|e| derr("cuDeviceGetName", e))?;
                let attr = |a| unsafe { result::device::get_attribute(dev, a) };
                let major =
                    attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
                        .map_err(|e| derr("cuDeviceGetAttribute", e))?;
                let minor =
                    attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
                        .map_err(|e| derr("cuDeviceGetAttribute", e))?;
                Ok((ctx, name, format!("sm_{major}{minor}")))
            });
            let (ctx, name, arch) = match opened {
                Ok(r) => r?,
                Err(_) => {
                    return Err(Error::NoDriver(
                        "the CUDA driver could not be initialized".into(),
                    ))
                }
            };
            // Two builds of the kernel, compiled side by side: one for few lanes (all the
            // registers it wants: the fastest single lane) and one for many (at most 64
            // registers, 8 blocks an SM: more lanes resident, more throughput).
            let src = layout::kernel_source();
            let (few, many) = std::thread::scope(|s| {
                let a = s.spawn(|| {
                    crate::nvrtc::compile_cached(&src, &arch, &[], &name, cache_dir.clone())
                });
                let b = s.spawn(|| {
                    crate::nvrtc::compile_cached(
                        &src,
                        &arch,
                        &["-DARMADA_MIN_BLOCKS=8"],
                        &name,
                        cache_dir.clone(),
                    )
                });
                (a.join(), b.join())
            });
            let join = |r: std::thread::Result<Result<(Vec<u8>, String), Error>>| {
                r.unwrap_or_else(|_| Err(Error::Compile("the kernel compiler panicked".into())))
            };
            let (cubin, compile_note) = join(few)?;
            let (cubin_many, _) = join(many)?;
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
                lock: Mutex::new(()),
                compile_note,
            })
        }

        fn launch(
            &self,
            f: sys::CUfunction,
            grid: u32,
            block: u32,
            params: &mut [*mut c_void],
        ) -> Result<(), Error> {
            self.bind()?;
            // SAFETY: f belongs to our loaded module and `params` points at values laid out
            // as the kernel's parameters; they live until the launch has read them (the
            // driver copies parameters at launch).
            unsafe {
                result::launch_kernel(
                    f,
                    (grid.max(1), 1, 1),
                    (block, 1, 1),
                    0,
                    std::ptr::null_mut(),
                    params,
                )
            }
            .map_err(|e| derr("cuLaunchKernel", e))
        }
    }

    impl Device for CudaDevice {
        fn describe(&self) -> String {
            format!("{} ({})", self.name, self.arch)
        }

        fn alloc(&self, bytes: usize) -> Result<DevPtr, Error> {
            self.bind()?;
            let bytes = bytes.max(8);
            // SAFETY: plain device allocation, then zeroed.
            unsafe {
                let p = result::malloc_sync(bytes).map_err(|e| {
                    Error::Cuda(format!(
                        "cuMemAlloc of {bytes} bytes failed (out of device memory?): {e:?}"
                    ))
                })?;
                result::memset_d8_sync(p, 0, bytes).map_err(|e| derr("cuMemsetD8", e))?;
                Ok(p)
            }
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
            let mut pv = *p;
            let mut args = [&mut pv as *mut Params as *mut c_void];
            let grid = (p.nactive << p.lane_shift).div_ceil(BLOCK_THREADS);
            let f = if p.nactive >= MANY_LANES {
                self.run_many
            } else {
                self.run
            };
            let _g = self.lock.lock();
            self.launch(f, grid, BLOCK_THREADS, &mut args)
        }

        fn sync(&self) -> Result<(), Error> {
            self.bind()?;
            result::ctx::synchronize().map_err(|e| {
                Error::Cuda(format!(
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
            self.sync()
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
            self.sync()
        }

        fn pt_write(
            &self,
            pt: DevPtr,
            pt_epoch: DevPtr,
            writes: DevPtr,
            n: u32,
        ) -> Result<(), Error> {
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
            self.sync()
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
}

pub use cuda::CudaDevice;

// ================================================================================================
// The simulator: the kernel compiled as C++ for the host.

#[cfg(armada_sim)]
mod sim {
    use super::*;
    use crate::layout::CopyDesc;
    use rayon::prelude::*;
    use std::sync::Mutex;

    extern "C" {
        fn armada_sim_run_lane(p: *const Params, i: u32);
        fn armada_sim_copy(descs: *const CopyDesc, n: u32);
        fn armada_sim_pt_write(pt: *mut u64, pt_epoch: *mut u32, writes: *const u64, n: u32);
        fn armada_sim_diff(
            frames: *const u64,
            n: u32,
            shadow_off: u64,
            out: *mut u64,
            count: *mut u64,
        );
    }

    /// Host memory standing in for device memory; addresses are host pointers.
    #[derive(Default)]
    pub struct SimDevice {
        allocs: Mutex<Vec<(u64, Vec<u64>)>>,
    }

    impl SimDevice {
        pub fn new() -> SimDevice {
            SimDevice::default()
        }
    }

    impl Device for SimDevice {
        fn describe(&self) -> String {
            "the CUDA kernel compiled for the host CPU (simulator)".into()
        }
        fn alloc(&self, bytes: usize) -> Result<DevPtr, Error> {
            let v = vec![0u64; bytes.div_ceil(8).max(1)];
            let p = v.as_ptr() as u64;
            self.allocs.lock().unwrap().push((p, v));
            Ok(p)
        }
        fn free(&self, ptr: DevPtr) {
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
            let pp = *p;
            // Lanes touch disjoint memory (shared frames are only read), like GPU threads.
            (0..p.nactive).into_par_iter().for_each(|i| {
                // SAFETY: the parameters describe live allocations of this device.
                unsafe { armada_sim_run_lane(&pp, i) }
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

        fn pt_write(
            &self,
            pt: DevPtr,
            pt_epoch: DevPtr,
            writes: DevPtr,
            n: u32,
        ) -> Result<(), Error> {
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
        fn alloc_mapped(&self, bytes: usize) -> Result<(*mut u64, DevPtr), Error> {
            let p = self.alloc(bytes)?;
            Ok((p as *mut u64, p))
        }
        fn free_mapped(&self, host: *mut u64) {
            self.free(host as u64);
        }
        fn mem_info(&self) -> (u64, u64) {
            (16 << 30, 16 << 30)
        }
        fn bind(&self) -> Result<(), Error> {
            Ok(())
        }
    }
}

#[cfg(armada_sim)]
pub use sim::SimDevice;

/// Whether this build carries the simulator.
pub const HAS_SIM: bool = cfg!(armada_sim);

/// Opens the device the options ask for.
pub fn open(opts: &crate::Options) -> Result<Box<dyn Device>, Error> {
    if opts.sim {
        #[cfg(armada_sim)]
        {
            return Ok(Box::new(SimDevice::new()));
        }
        #[cfg(not(armada_sim))]
        {
            return Err(Error::NoDriver(
                "this build has no kernel simulator (no C++ compiler when it was built)".into(),
            ));
        }
    }
    let d = CudaDevice::open(opts.cache_dir.clone())?;
    if opts.verbose && !d.compile_note.is_empty() {
        eprintln!("armada: {}", d.compile_note);
    }
    Ok(Box::new(d))
}
