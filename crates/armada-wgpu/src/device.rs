//! The wgpu device: armada-gpu's `Device` over one storage buffer and the WGSL shader.
//!
//! WGSL has no pointers, so the engine's device addresses are byte offsets into ONE storage
//! buffer (`mem`) that holds everything: micro-ops, lane records, the page table, frames. The
//! buffer is as large as the adapter lets one binding be (or `Options::memory`), and
//! allocations are carved out of it first-fit. The shader is created without wgpu's bounds
//! checks (5x faster on the H200): it bounds every guest access itself, since guest accesses
//! only reach frames found through the page table.
//!
//! The CUDA kernel writes progress into host-mapped memory while it runs; here the host copy
//! of a "mapped" range is refreshed after each launch.

use crate::Options;
use armada_gpu::device::{DevPtr, Device};
use armada_gpu::layout::Params;
use armada_gpu::Error;
use std::sync::{Arc, Mutex};

/// Threads per workgroup of every entry point (the shader's `@workgroup_size`).
const WORKGROUP: u32 = 64;
/// Allocation granularity in `mem` (keeps u64 arrays and copies aligned).
const ALIGN: u64 = 256;
/// Bytes of the uniform parameter block (`WParams`, rounded up).
const PARAMS_BYTES: u64 = 256;

/// The shader's `Params`: armada-gpu's run parameters, the first thread's index of this
/// dispatch, and the helper kernels' arguments. Field order and types match the WGSL struct
/// (flat: nesting `Params` would put padding before `lane_base`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct WParams {
    words: [u64; 15],
    nactive: u32,
    nregions: u32,
    pt_shift: u32,
    chunk_shift: u32,
    lane_shift: u32,
    lane_base: u32,
    k_a: u64,
    k_b: u64,
    k_c: u64,
    k_d: u64,
    k_n: u32,
    k_pad: u32,
}

const _: () = assert!(std::mem::size_of::<WParams>() as u64 <= PARAMS_BYTES);

impl WParams {
    fn run(p: &Params) -> WParams {
        WParams {
            words: [
                p.ops,
                p.regions,
                p.lanes,
                p.stops,
                p.active,
                p.pt,
                p.pt_epoch,
                p.chunks,
                p.progress,
                p.sched,
                p.slice,
                p.max_ns,
                p.min_grace_ns,
                p.min_run_ns,
                p.pt_mask,
            ],
            nactive: p.nactive,
            nregions: p.nregions,
            pt_shift: p.pt_shift,
            chunk_shift: p.chunk_shift,
            lane_shift: p.lane_shift,
            // the run kernel's coverage maps (the other kernels' arguments are free)
            k_a: p.cov,
            ..Default::default()
        }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: plain #[repr(C)] data of u64/u32 fields with no padding (see the test).
        unsafe {
            std::slice::from_raw_parts(
                self as *const WParams as *const u8,
                std::mem::size_of::<WParams>(),
            )
        }
    }
}

/// First-fit allocator over `[0, size)` of the one buffer.
struct Heap {
    /// Free ranges (start, len), sorted by start, never adjacent.
    free: Vec<(u64, u64)>,
    /// Live allocations: start -> len.
    live: std::collections::HashMap<u64, u64>,
    used: u64,
}

impl Heap {
    fn new(size: u64) -> Heap {
        // offset 0 is never handed out: 0 means "none" to the engine and the shader
        Heap {
            free: vec![(ALIGN, size - ALIGN)],
            live: Default::default(),
            used: ALIGN,
        }
    }

    fn alloc(&mut self, bytes: u64) -> Option<u64> {
        let len = bytes.max(1).div_ceil(ALIGN) * ALIGN;
        let i = self.free.iter().position(|&(_, l)| l >= len)?;
        let (start, l) = self.free[i];
        if l == len {
            self.free.remove(i);
        } else {
            self.free[i] = (start + len, l - len);
        }
        self.live.insert(start, len);
        self.used += len;
        Some(start)
    }

    fn free(&mut self, start: u64) {
        let Some(len) = self.live.remove(&start) else {
            return;
        };
        self.used -= len;
        let i = self.free.partition_point(|&(s, _)| s < start);
        self.free.insert(i, (start, len));
        // merge with the next, then with the previous range
        if i + 1 < self.free.len() && self.free[i].0 + self.free[i].1 == self.free[i + 1].0 {
            self.free[i].1 += self.free[i + 1].1;
            self.free.remove(i + 1);
        }
        if i > 0 && self.free[i - 1].0 + self.free[i - 1].1 == self.free[i].0 {
            self.free[i - 1].1 += self.free[i].1;
            self.free.remove(i);
        }
    }
}

/// A host copy of a device range the engine reads while the batch runs (progress counters).
struct Mapped {
    host: Box<[u64]>,
    dev: DevPtr,
}

pub struct WgpuDevice {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    mem: wgpu::Buffer,
    mem_size: u64,
    params: wgpu::Buffer,
    counter: wgpu::Buffer,
    bind: wgpu::BindGroup,
    run: wgpu::ComputePipeline,
    copy: wgpu::ComputePipeline,
    diff: wgpu::ComputePipeline,
    pt_write: wgpu::ComputePipeline,
    cov_news: wgpu::ComputePipeline,
    /// The interpreter with edge coverage (the COVERAGE override), built on first use.
    run_covered: std::sync::OnceLock<Result<wgpu::ComputePipeline, String>>,
    /// What building it needs.
    module: wgpu::ShaderModule,
    pipeline_layout: wgpu::PipelineLayout,
    /// The run pipeline's overrides (LOOP_BUDGET on CPU adapters).
    run_constants: Vec<(&'static str, f64)>,
    max_groups: u32,
    heap: Mutex<Heap>,
    /// A MAP_READ buffer reused for reads, grown as needed.
    staging: Mutex<Option<(wgpu::Buffer, u64)>>,
    reading: Mutex<()>,
    /// Held from writing the parameter block (or the counter) to the submit that uses it:
    /// queue writes land at the start of the NEXT submit, whoever makes it, so two batches
    /// on one device (threads) must not interleave there.
    submitting: Mutex<()>,
    mapped: Mutex<Vec<Mapped>>,
    /// The first error wgpu reported outside an error scope (a lost device, say).
    failed: Arc<Mutex<Option<String>>>,
    chunk_shift: u32,
    slice: u64,
    /// log2(threads per lane) at least (lavapipe's loop cap, see `open`).
    min_lane_shift: u32,
}

fn no_device(what: impl std::fmt::Display) -> Error {
    Error::NoDevice(format!(
        "{what}; the wgpu engine needs a GPU with a Vulkan, Metal or DX12 driver (or Mesa's \
         lavapipe: apt install mesa-vulkan-drivers): use --backend cpu"
    ))
}

impl WgpuDevice {
    /// Opens the adapter wgpu prefers (high performance) and compiles the shader on it.
    pub fn open(opts: &Options) -> Result<WgpuDevice, Error> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        }))
        .map_err(|e| no_device(format!("no GPU adapter found by wgpu ({e})")))?;
        WgpuDevice::open_adapter(opts, adapter)
    }

    /// The adapters that count as this host's devices for `--devices`, numbered by their
    /// place here: those with 64-bit integers in shaders, one per physical device (its
    /// Vulkan, Metal or DX12 adapter before a GL one), and CPU adapters (lavapipe) only
    /// where there is no GPU.
    pub fn adapters() -> Vec<wgpu::Adapter> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let mut all: Vec<wgpu::Adapter> =
            pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()))
                .into_iter()
                .filter(|a| a.features().contains(wgpu::Features::SHADER_INT64))
                .collect();
        let gpu = |a: &wgpu::Adapter| a.get_info().device_type != wgpu::DeviceType::Cpu;
        if all.iter().any(gpu) {
            all.retain(gpu);
        }
        // a stable sort: each device's GL adapter goes after the others, then is dropped
        all.sort_by_key(|a| a.get_info().backend == wgpu::Backend::Gl);
        let mut seen = Vec::new();
        all.retain(|a| {
            let i = a.get_info();
            let key = (i.vendor, i.device, i.name.clone());
            let new = !seen.contains(&key);
            seen.push(key);
            new
        });
        all
    }

    /// Opens `adapter` and compiles the shader on it.
    pub fn open_adapter(opts: &Options, adapter: wgpu::Adapter) -> Result<WgpuDevice, Error> {
        let info = adapter.get_info();
        if !adapter.features().contains(wgpu::Features::SHADER_INT64) {
            return Err(no_device(format!(
                "the adapter {} ({:?}) has no 64-bit integers in shaders (SHADER_INT64)",
                info.name, info.backend
            )));
        }
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("armada"),
            required_features: wgpu::Features::SHADER_INT64,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| no_device(format!("the adapter {} refused a device: {e}", info.name)))?;
        let failed: Arc<Mutex<Option<String>>> = Arc::default();
        {
            let failed = failed.clone();
            device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                let mut f = failed.lock().unwrap_or_else(|p| p.into_inner());
                f.get_or_insert_with(|| e.to_string());
            }));
        }

        // One binding holds everything; leave the buffer's alignment slack out of it.
        let cap = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size)
            & !(ALIGN - 1);
        let mem_size = opts.memory.map_or(cap, |m| m.min(cap) & !(ALIGN - 1));
        if mem_size < 16 << 20 {
            return Err(no_device(format!(
                "the adapter {} allows storage bindings of {} bytes only",
                info.name, mem_size
            )));
        }
        let mem = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("armada mem"),
            size: mem_size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("armada params"),
            size: PARAMS_BYTES,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let counter = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("armada counter"),
            size: 256,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });

        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let source = crate::shader_source();
        // SAFETY: the shader bounds every index into `mem` by itself (guest accesses go
        // through frames from the page table the host writes); see the module comment.
        let module = unsafe {
            device.create_shader_module_trusted(
                wgpu::ShaderModuleDescriptor {
                    label: Some("armada.wgsl"),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                },
                wgpu::ShaderRuntimeChecks::unchecked(),
            )
        };
        let entry = |binding, ty| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("armada"),
            entries: &[
                entry(0, wgpu::BufferBindingType::Storage { read_only: false }),
                entry(1, wgpu::BufferBindingType::Uniform),
                entry(2, wgpu::BufferBindingType::Storage { read_only: false }),
            ],
        });
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("armada"),
            layout: &layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: mem.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: params.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: counter.as_entire_binding(),
                },
            ],
        });
        let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("armada"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        // llvmpipe (lavapipe) ends any shader loop after 65,535 iterations in all, counted per
        // SIMD batch of invocations, and silently: on a CPU adapter the interpreter counts its
        // iterations and leaves (STOP_SLICE) before that, and each lane gets a SIMD batch of
        // its own (lane_shift >= 4: 16 threads). Real GPUs have no such cap; the count
        // compiles away with LOOP_BUDGET = 0.
        let cpu = info.device_type == wgpu::DeviceType::Cpu;
        let budget: &[(&'static str, f64)] = if cpu {
            &[("LOOP_BUDGET", 60000.0)]
        } else {
            &[]
        };
        let pipeline = |name: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(name),
                layout: Some(&pl),
                module: &module,
                entry_point: Some(name),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: if name == "run" { budget } else { &[] },
                    ..Default::default()
                },
                cache: None,
            })
        };
        let (run, copy, diff, pt_write, cov_news) = (
            pipeline("run"),
            pipeline("copy"),
            pipeline("diff"),
            pipeline("pt_write"),
            pipeline("cov_news"),
        );
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Compile(format!(
                "the WGSL shader did not compile on {}: {e}",
                info.name
            )));
        }

        // Chunks of the frame pool: at most 1/16 of the buffer each (frames and shadows), so
        // small bindings (lavapipe's 128 MiB) still hold several.
        let mut chunk_shift = 14;
        while chunk_shift > 6 && ((2 * 4096u64) << chunk_shift) > mem_size / 16 {
            chunk_shift -= 1;
        }
        Ok(WgpuDevice {
            device,
            queue,
            mem,
            mem_size,
            params,
            counter,
            bind,
            run,
            copy,
            diff,
            pt_write,
            cov_news,
            run_covered: std::sync::OnceLock::new(),
            module,
            pipeline_layout: pl,
            run_constants: budget.to_vec(),
            max_groups: limits.max_compute_workgroups_per_dimension,
            heap: Mutex::new(Heap::new(mem_size)),
            staging: Mutex::new(None),
            reading: Mutex::new(()),
            submitting: Mutex::new(()),
            mapped: Mutex::new(Vec::new()),
            failed,
            chunk_shift,
            slice: if cpu { 100_000 } else { 1_000_000 },
            min_lane_shift: if cpu { 4 } else { 0 },
            info,
        })
    }

    /// The interpreter pipeline with edge coverage (COVERAGE = 1), built the first time a
    /// batch asks for coverage, so plain runs never pay for it.
    fn run_covered(&self) -> Result<&wgpu::ComputePipeline, Error> {
        let r = self.run_covered.get_or_init(|| {
            let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
            let mut constants = self.run_constants.clone();
            constants.push(("COVERAGE", 1.0));
            let p = self
                .device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some("run (coverage)"),
                    layout: Some(&self.pipeline_layout),
                    module: &self.module,
                    entry_point: Some("run"),
                    compilation_options: wgpu::PipelineCompilationOptions {
                        constants: &constants,
                        ..Default::default()
                    },
                    cache: None,
                });
            match pollster::block_on(scope.pop()) {
                Some(e) => Err(e.to_string()),
                None => Ok(p),
            }
        });
        r.as_ref().map_err(|e| {
            Error::Compile(format!(
                "the WGSL shader with coverage did not compile on {}: {e}",
                self.info.name
            ))
        })
    }

    /// The adapter, its backend and the memory a batch may use.
    pub fn describe_long(&self) -> String {
        format!(
            "{} ({:?}, {:?}; {} MiB for lanes' memory)",
            self.info.name,
            self.info.backend,
            self.info.device_type,
            self.mem_size >> 20
        )
    }

    fn check(&self) -> Result<(), Error> {
        match self
            .failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            Some(e) => Err(Error::Device(format!("wgpu: {e}"))),
            None => Ok(()),
        }
    }

    fn wait(&self) -> Result<(), Error> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::Device(format!("wgpu: waiting for the GPU failed: {e}")))?;
        self.check()
    }

    fn in_bounds(&self, p: DevPtr, len: usize) -> Result<(), Error> {
        if p.checked_add(len as u64).is_none_or(|e| e > self.mem_size) {
            return Err(Error::Device(format!(
                "wgpu: access of {len} bytes at {p:#x} outside the {} MiB buffer",
                self.mem_size >> 20
            )));
        }
        Ok(())
    }

    /// Encodes one dispatch of `entry` over `threads` threads per pass, splitting into several
    /// dispatches (each with its `lane_base`) beyond the adapter's workgroup limit, and submits.
    fn dispatch(
        &self,
        pipeline: &wgpu::ComputePipeline,
        mut wp: WParams,
        threads: u64,
    ) -> Result<(), Error> {
        let per = self.max_groups as u64 * WORKGROUP as u64;
        let mut base = 0u64;
        while base < threads.max(1) {
            let n = (threads - base).min(per);
            wp.lane_base = base as u32;
            self.queue.write_buffer(&self.params, 0, wp.bytes());
            let mut enc = self.device.create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, &self.bind, &[]);
                pass.dispatch_workgroups((n.div_ceil(WORKGROUP as u64)).max(1) as u32, 1, 1);
            }
            self.queue.submit([enc.finish()]);
            base += n;
            if threads == 0 {
                break;
            }
        }
        self.check()
    }

    /// One dispatch of a helper kernel that strides over its work by the number of
    /// workgroups: `groups` of them, at most the adapter's limit.
    fn dispatch_strided(
        &self,
        pipeline: &wgpu::ComputePipeline,
        wp: WParams,
        groups: u64,
    ) -> Result<(), Error> {
        self.queue.write_buffer(&self.params, 0, wp.bytes());
        let mut enc = self.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &self.bind, &[]);
            pass.dispatch_workgroups(groups.clamp(1, self.max_groups as u64) as u32, 1, 1);
        }
        self.queue.submit([enc.finish()]);
        self.check()
    }

    fn staging(&self, len: u64) -> wgpu::Buffer {
        let mut s = self.staging.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((b, l)) = s.as_ref() {
            if *l >= len {
                return b.clone();
            }
        }
        let size = len.next_power_of_two().max(1 << 16);
        let b = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("armada staging"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        *s = Some((b.clone(), size));
        b
    }

    /// Reads `dst.len()` bytes at `src` (any alignment).
    fn read(&self, src: DevPtr, dst: &mut [u8]) -> Result<(), Error> {
        if dst.is_empty() {
            return Ok(());
        }
        self.in_bounds(src, dst.len())?;
        let start = src & !7;
        let end = (src + dst.len() as u64).div_ceil(8) * 8;
        let len = end.min(self.mem_size) - start;
        // one reader at a time: the staging buffer is shared
        let _g = self.reading.lock().unwrap_or_else(|p| p.into_inner());
        let staging = self.staging(len);
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(&self.mem, start, &staging, 0, len);
        self.queue.submit([enc.finish()]);
        let slice = staging.slice(0..len);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.wait()?;
        match rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(Error::Device(format!("wgpu: reading back failed: {e}"))),
            Err(_) => return Err(Error::Device("wgpu: reading back was dropped".into())),
        }
        {
            let view = slice
                .get_mapped_range()
                .map_err(|e| Error::Device(format!("wgpu: reading back failed: {e}")))?;
            let off = (src - start) as usize;
            dst.copy_from_slice(&view[off..off + dst.len()]);
        }
        staging.unmap();
        Ok(())
    }
}

impl Device for WgpuDevice {
    fn describe(&self) -> String {
        format!("{} ({:?})", self.info.name, self.info.backend)
    }

    fn alloc(&self, bytes: usize) -> Result<DevPtr, Error> {
        let p = self
            .heap
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .alloc(bytes as u64)
            .ok_or_else(|| {
                Error::Device(format!(
                    "the batch needs more than the {} MiB of device memory one wgpu storage \
                     binding holds on {} (all lanes' memory shares it): run fewer lanes, cap \
                     each lane's memory with --lane-memory, or use --backend cuda",
                    self.mem_size >> 20,
                    self.info.name
                ))
            })?;
        // a zeroed allocation, as the engine expects (the range may have been used before)
        let len = (bytes as u64).max(1).div_ceil(ALIGN) * ALIGN;
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.clear_buffer(&self.mem, p, Some(len));
        self.queue.submit([enc.finish()]);
        Ok(p)
    }

    fn free(&self, ptr: DevPtr) {
        self.heap
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .free(ptr);
    }

    fn htod(&self, dst: DevPtr, src: &[u8]) -> Result<(), Error> {
        if src.is_empty() {
            return Ok(());
        }
        self.in_bounds(dst, src.len())?;
        if dst.is_multiple_of(4) && src.len().is_multiple_of(4) {
            self.queue.write_buffer(&self.mem, dst, src);
            return Ok(());
        }
        // wgpu writes whole 4-byte words: merge the edges with what is there
        let start = dst & !3;
        let end = (dst + src.len() as u64).div_ceil(4) * 4;
        let mut buf = vec![0u8; (end - start) as usize];
        self.read(start, &mut buf)?;
        let off = (dst - start) as usize;
        buf[off..off + src.len()].copy_from_slice(src);
        self.queue.write_buffer(&self.mem, start, &buf);
        Ok(())
    }

    fn dtoh(&self, src: DevPtr, dst: &mut [u8]) -> Result<(), Error> {
        self.read(src, dst)
    }

    fn launch_run(&self, p: &Params) -> Result<(), Error> {
        let mut wp = WParams::run(p);
        wp.lane_shift = wp.lane_shift.max(self.min_lane_shift);
        let pipeline = if p.cov != 0 {
            self.run_covered()?
        } else {
            &self.run
        };
        let _g = self.submitting.lock().unwrap_or_else(|e| e.into_inner());
        self.dispatch(pipeline, wp, (p.nactive as u64) << wp.lane_shift)
    }

    fn prepare_coverage(&self) -> Result<(), Error> {
        self.run_covered().map(|_| ())
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
        let wp = WParams {
            k_a: maps,
            k_b: virgin,
            k_c: lanes,
            k_d: out,
            k_n: n,
            ..Default::default()
        };
        let _g = self.submitting.lock().unwrap_or_else(|e| e.into_inner());
        self.dispatch_strided(&self.cov_news, wp, n as u64)?;
        self.wait()
    }

    fn sync(&self) -> Result<(), Error> {
        self.wait()?;
        // refresh the host copies of "mapped" ranges (progress counters)
        let mut mapped = self.mapped.lock().unwrap_or_else(|e| e.into_inner());
        for m in mapped.iter_mut() {
            let mut bytes = vec![0u8; m.host.len() * 8];
            self.read(m.dev, &mut bytes)?;
            for (i, c) in bytes.chunks_exact(8).enumerate() {
                let v = u64::from_le_bytes(c.try_into().unwrap());
                // SAFETY: i < host.len(); volatile because another thread reads it (poll).
                unsafe { std::ptr::write_volatile(m.host.as_mut_ptr().add(i), v) };
            }
        }
        Ok(())
    }

    fn copy(&self, descs: DevPtr, n: u32) -> Result<(), Error> {
        if n == 0 {
            return Ok(());
        }
        let wp = WParams {
            k_a: descs,
            k_n: n,
            ..Default::default()
        };
        let _g = self.submitting.lock().unwrap_or_else(|e| e.into_inner());
        self.dispatch_strided(&self.copy, wp, n as u64)?;
        self.wait()
    }

    fn diff(
        &self,
        frames: DevPtr,
        n: u32,
        shadow_off: u64,
        out: DevPtr,
        count: DevPtr,
    ) -> Result<(), Error> {
        self.in_bounds(count, 8)?;
        let _g = self.submitting.lock().unwrap_or_else(|e| e.into_inner());
        self.queue.write_buffer(&self.counter, 0, &[0u8; 4]);
        if n > 0 {
            let wp = WParams {
                k_a: frames,
                k_b: shadow_off,
                k_c: out,
                k_n: n,
                ..Default::default()
            };
            self.dispatch_strided(&self.diff, wp, n as u64)?;
        }
        // the count as the engine reads it: a u64 at `count` (the caller zeroed it)
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(&self.counter, 0, &self.mem, count, 4);
        self.queue.submit([enc.finish()]);
        self.wait()
    }

    fn pt_write(&self, pt: DevPtr, pt_epoch: DevPtr, writes: DevPtr, n: u32) -> Result<(), Error> {
        if n == 0 {
            return Ok(());
        }
        let wp = WParams {
            k_a: pt,
            k_b: pt_epoch,
            k_c: writes,
            k_n: n,
            ..Default::default()
        };
        let _g = self.submitting.lock().unwrap_or_else(|e| e.into_inner());
        self.dispatch_strided(&self.pt_write, wp, (n as u64).div_ceil(WORKGROUP as u64))?;
        self.wait()
    }

    fn alloc_mapped(&self, bytes: usize) -> Result<(*mut u64, DevPtr), Error> {
        let dev = self.alloc(bytes)?;
        let mut host = vec![0u64; bytes.div_ceil(8).max(1)].into_boxed_slice();
        let p = host.as_mut_ptr();
        self.mapped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Mapped { host, dev });
        Ok((p, dev))
    }

    fn free_mapped(&self, host: *mut u64) {
        let mut mapped = self.mapped.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = mapped
            .iter()
            .position(|m| std::ptr::eq(m.host.as_ptr(), host))
        {
            let m = mapped.swap_remove(i);
            self.free(m.dev);
        }
    }

    fn mem_info(&self) -> (u64, u64) {
        let used = self.heap.lock().unwrap_or_else(|e| e.into_inner()).used;
        (self.mem_size - used, self.mem_size)
    }

    fn bind(&self) -> Result<(), Error> {
        Ok(())
    }

    fn chunk_shift(&self) -> u32 {
        self.chunk_shift
    }

    fn default_slice(&self) -> Option<u64> {
        Some(self.slice)
    }

    fn host_run(&self) -> u64 {
        // FP arithmetic runs on the host: a stop costs a launch and a round trip, so the host
        // runs on through the FP-dense stretch (a few microseconds on the CPU engine)
        4096
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_layout_matches_the_shader() {
        // WGSL: 15 u64, then nactive nregions pt_shift chunk_shift lane_shift lane_base (u32),
        // then k_a..k_d (u64) and k_n, k_pad (u32).
        assert_eq!(std::mem::offset_of!(WParams, lane_base), 15 * 8 + 5 * 4);
        assert_eq!(std::mem::offset_of!(WParams, k_a), 144);
        assert_eq!(std::mem::offset_of!(WParams, k_n), 176);
        assert_eq!(std::mem::size_of::<WParams>(), 184);
    }

    #[test]
    fn heap_reuses_and_merges() {
        let mut h = Heap::new(1 << 20);
        let a = h.alloc(1000).unwrap();
        let b = h.alloc(5000).unwrap();
        let c = h.alloc(300).unwrap();
        assert!(a >= ALIGN && b > a && c > b);
        h.free(b);
        assert_eq!(h.alloc(4000), Some(b));
        h.free(a);
        h.free(c);
        h.free(b);
        assert_eq!(h.free, vec![(ALIGN, (1 << 20) - ALIGN)]);
        assert_eq!(h.used, ALIGN);
        assert!(h.alloc(2 << 20).is_none());
    }
}
