//! The wgpu device: armada-gpu's `Device` over a few storage buffers and the WGSL shader.
//!
//! WGSL has no pointers, and one binding holds at most the adapter's largest storage binding
//! (2047 MiB on the H200, 128 MiB on lavapipe). So device memory is *spaces*, one buffer and
//! binding each, and a device pointer is (space << 32) | byte offset:
//! - space 0, `mem`, holds micro-ops, lane records, the page table, staging and the rest, made
//!   when the device opens (`Device::alloc`);
//! - spaces 1.. hold frame-pool chunks, guest pages and their shadows (`Device::alloc_frames`):
//!   a frame buffer is made when a chunk fits in none of the others, up to as many as the
//!   adapter lets a shader bind (or `Options::frame_bindings`), so the largest batch depends on
//!   the device's memory, not on one binding. A frame buffer that empties is given back (but
//!   the first, which the next batch would make again).
//!
//! Allocations are carved out of each buffer first-fit. The shader is created without wgpu's
//! bounds checks (5x faster on the H200): it bounds every guest access itself, since guest
//! accesses only reach frames found through the page table.
//!
//! The CUDA kernel writes progress into host-mapped memory while it runs; here the host copy
//! of a "mapped" range is refreshed after each launch.

use crate::pipelines::{FpPolicy, FpSwitch, Key, RunPipelines, FP_STOPS_BEFORE_BUILD};
use crate::Options;
use armada_gpu::device::{DevPtr, Device};
use armada_gpu::layout::Params;
use armada_gpu::Error;
use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, OnceLock};

/// Threads per workgroup of every entry point (the shader's `@workgroup_size`).
const WORKGROUP: u32 = 64;
/// Allocation granularity in every buffer (keeps u64 arrays and copies aligned).
const ALIGN: u64 = 256;
// The shader's translation cache packs a frame's device pointer into 32 bits (mem.wgsl,
// `tlb_pack`): the space in 8 bits, the offset (below 4 GiB: buffers are capped at u32::MAX)
// in units of 256 bytes.
const _: () = assert!(ALIGN.is_multiple_of(256) && crate::MAX_FRAME_BINDINGS < 256);
/// Buffer sizes are whole pages (a frame buffer holds whole chunks of frames).
const PAGE: u64 = 4096;
/// Bytes of the uniform parameter block (`WParams`, rounded up).
const PARAMS_BYTES: u64 = 256;

/// Declares `WParams` and [`wgsl_params`], the shader's declaration of it, from one list.
macro_rules! shader_params {
    ($($(#[$doc:meta])* $name:ident: $ty:ident,)*) => {
        /// The shader's `Params`: armada-gpu's run parameters, the first thread's index of
        /// this dispatch, and the helper kernels' arguments; the WGSL struct is generated from
        /// the same list (flat: nesting `Params` would put padding before `lane_base`).
        #[repr(C)]
        #[derive(Clone, Copy, Default)]
        struct WParams {
            $($(#[$doc])* $name: $ty,)*
        }

        /// The shader's `struct Params` (where helpers.wgsl says `// @params`).
        pub(crate) fn wgsl_params() -> String {
            let mut s = String::from("struct Params { // generated from device.rs's WParams\n");
            $(s.push_str(&format!("    {}: {},\n", stringify!($name), stringify!($ty)));)*
            s.push_str("}\n");
            s
        }
    };
}

shader_params! {
    ops: u64,
    regions: u64,
    lanes: u64,
    stops: u64,
    /// `Params::active` (`active` is a reserved word in WGSL)
    active_list: u64,
    pt: u64,
    pt_epoch: u64,
    chunks: u64,
    progress: u64,
    sched: u64,
    slice: u64,
    max_ns: u64,
    min_grace_ns: u64,
    min_run_ns: u64,
    pt_mask: u64,
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
    /// run: lanes of a subgroup vote on the micro-op to run (min-PC scheduling)
    vote: u32,
    /// run: armada-gpu's claim log of lazy pages (`Params::claims`)
    claims: u64,
}

const _: () = assert!(std::mem::size_of::<WParams>() as u64 <= PARAMS_BYTES);

impl WParams {
    fn run(p: &Params) -> WParams {
        WParams {
            ops: p.ops,
            regions: p.regions,
            lanes: p.lanes,
            stops: p.stops,
            active_list: p.active,
            pt: p.pt,
            pt_epoch: p.pt_epoch,
            chunks: p.chunks,
            progress: p.progress,
            sched: p.sched,
            slice: p.slice,
            max_ns: p.max_ns,
            min_grace_ns: p.min_grace_ns,
            min_run_ns: p.min_run_ns,
            pt_mask: p.pt_mask,
            nactive: p.nactive,
            nregions: p.nregions,
            pt_shift: p.pt_shift,
            chunk_shift: p.chunk_shift,
            lane_shift: p.lane_shift,
            // the run kernel's coverage maps (the other kernels' arguments are free)
            k_a: p.cov,
            claims: p.claims,
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

/// A device pointer's space (its buffer) and its byte offset there.
fn split(p: DevPtr) -> (usize, u64) {
    ((p >> 32) as usize, p & 0xffff_ffff)
}

/// First-fit allocator over `[0, size)` of one buffer.
struct Heap {
    /// Free ranges (start, len), sorted by start, never adjacent.
    free: Vec<(u64, u64)>,
    /// Live allocations: start -> len.
    live: std::collections::HashMap<u64, u64>,
    used: u64,
}

impl Heap {
    /// A heap of `size` bytes; with `skip_zero`, offset 0 is never handed out (in space 0 it
    /// is the device pointer 0, which means "none" to the engine and the shader).
    fn new(size: u64, skip_zero: bool) -> Heap {
        let first = if skip_zero { ALIGN } else { 0 };
        Heap {
            free: vec![(first, size - first)],
            live: Default::default(),
            used: first,
        }
    }

    /// Whether nothing is allocated.
    fn empty(&self) -> bool {
        self.live.is_empty()
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

/// One buffer of device memory and what is allocated in it.
struct Space {
    buffer: wgpu::Buffer,
    size: u64,
    heap: Heap,
}

/// Every space, and the bind group that binds them.
struct Spaces {
    /// Space 0 is `mem`; frame buffer k is `list[k]`, `None` while there is none (its binding
    /// then holds a small buffer nothing points into).
    list: Vec<Option<Space>>,
    bind: wgpu::BindGroup,
}

impl Spaces {
    fn bytes(&self) -> u64 {
        self.list.iter().flatten().map(|s| s.size).sum()
    }

    fn frame_buffers(&self) -> usize {
        self.list[1..].iter().flatten().count()
    }
}

/// The buffers every bind group has besides the spaces.
struct Fixed {
    layout: wgpu::BindGroupLayout,
    params: wgpu::Buffer,
    counter: wgpu::Buffer,
    /// Bound where a frame buffer is missing.
    dummy: wgpu::Buffer,
}

impl Fixed {
    fn bind(&self, device: &wgpu::Device, list: &[Option<Space>]) -> wgpu::BindGroup {
        let mut entries = vec![
            wgpu::BindGroupEntry {
                binding: 1,
                resource: self.params.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 2,
                resource: self.counter.as_entire_binding(),
            },
        ];
        for (k, s) in list.iter().enumerate() {
            let buffer = s.as_ref().map_or(&self.dummy, |s| &s.buffer);
            entries.push(wgpu::BindGroupEntry {
                binding: if k == 0 { 0 } else { 2 + k as u32 },
                resource: buffer.as_entire_binding(),
            });
        }
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("armada"),
            layout: &self.layout,
            entries: &entries,
        })
    }
}

impl Drop for WgpuDevice {
    /// Waits for the pipelines being built ahead: the process may exit next, and one that
    /// exited while a thread was inside NVIDIA's driver crashed there.
    fn drop(&mut self) {
        let ahead = std::mem::take(self.ahead.get_mut().unwrap_or_else(|p| p.into_inner()));
        for (_, h) in ahead {
            let _ = h.join();
        }
    }
}

pub struct WgpuDevice {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    spaces: Mutex<Spaces>,
    fixed: Fixed,
    /// The size of a new frame buffer.
    frame_bytes: u64,
    /// The most bytes all buffers may hold together.
    budget: u64,
    /// Frame buffers made so far, and the most in use at once.
    made: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
    copy: wgpu::ComputePipeline,
    diff: wgpu::ComputePipeline,
    pt_write: wgpu::ComputePipeline,
    cov_news: wgpu::ComputePipeline,
    /// The interpreter's pipelines (see `RunPipelines`).
    runs: Arc<RunPipelines>,
    /// Whether growing batches build pipelines ahead (`build_ahead`), and the threads doing
    /// so, by the key of their pipeline.
    ahead_on: bool,
    ahead: Mutex<Vec<(Key, std::thread::JoinHandle<()>)>>,
    /// When the run pipelines have fp.wgsl.
    fp: FpSwitch,
    max_groups: u32,
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
    /// Every launch runs the pipeline for all the frame buffers (`spaces_in_use`).
    all_spaces: bool,
    /// Every launch runs a pipeline with the coverage code, which a launch without coverage
    /// skips at run time (its map pointer, `k_a`, is 0): a CPU adapter's (one build fewer).
    all_coverage: bool,
    /// The most invocations a subgroup has, where the shader has subgroup operations and
    /// min-PC scheduling is on (a GPU, unless ARMADA_WGPU_MINPC=0); 0: no vote.
    vote_width: u32,
}

/// The most frame buffers for which a CPU adapter's launches all run one pipeline, the one
/// for every frame buffer (`WgpuDevice::all_spaces`).
const ALL_SPACES_MOST: u32 = 4;

fn no_device(what: impl std::fmt::Display) -> Error {
    Error::NoDevice(format!(
        "{what}; the wgpu engine needs a GPU with a Vulkan, Metal or DX12 driver (or Mesa's \
         lavapipe: apt install mesa-vulkan-drivers): use --backend cpu"
    ))
}

/// The environment variable that turns off Mesa's implicit Vulkan layer
/// `VK_LAYER_MESA_device_select`. The layer connects to a Wayland and an X display to pick a
/// default GPU, and without one libwayland prints `error: XDG_RUNTIME_DIR is invalid or not
/// set in the environment.` on stderr, twice, while armada only probes for a GPU (issue 50:
/// an "error:" must mean an error). armada picks its adapters itself.
pub const QUIET_LAYER_VAR: &str = "NODEVICE_SELECT";

static QUIETED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Turns the device-select layer off for this process (see [`QUIET_LAYER_VAR`]) unless the
/// user set its switch. Call it while the process has one thread (the command's `main`,
/// the Python module's import): it sets an environment variable. Returns whether armada
/// set it, so that guests, which start with armada's environment, are not given it.
pub fn quiet_vulkan_layers() -> bool {
    *QUIETED.get_or_init(|| {
        if std::env::var_os(QUIET_LAYER_VAR).is_some() {
            return false;
        }
        std::env::set_var(QUIET_LAYER_VAR, "1");
        true
    })
}

/// Whether armada set environment variable `name` itself (it is not the user's, and a
/// guest's environment leaves it out).
pub fn set_by_armada(name: &[u8]) -> bool {
    name == QUIET_LAYER_VAR.as_bytes() && QUIETED.get().copied().unwrap_or(false)
}

fn instance() -> wgpu::Instance {
    quiet_vulkan_layers();
    wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env())
}

impl WgpuDevice {
    /// Opens the adapter wgpu prefers (high performance) and compiles the shader on it.
    pub fn open(opts: &Options) -> Result<WgpuDevice, Error> {
        let instance = instance();
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
        let instance = instance();
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
        // Subgroup operations for min-PC scheduling (a vote before each instruction among the
        // lanes of a subgroup), where it is asked for and the adapter has them; the shader is
        // built without them otherwise.
        let subgroups = opts
            .minpc
            .unwrap_or(info.device_type != wgpu::DeviceType::Cpu)
            && adapter.features().contains(wgpu::Features::SUBGROUP);
        let features = if subgroups {
            wgpu::Features::SHADER_INT64 | wgpu::Features::SUBGROUP
        } else {
            wgpu::Features::SHADER_INT64
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("armada"),
            required_features: features,
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

        // Every buffer is at most the largest binding (less the alignment slack); `mem` is
        // made now, frame buffers (of `binding` bytes) as lanes' pages need them.
        let cap = limits
            .max_storage_buffer_binding_size
            .min(limits.max_buffer_size)
            .min(u32::MAX as u64)
            & !(PAGE - 1);
        let binding = opts.binding.map_or(cap, |b| b.min(cap) & !(PAGE - 1));
        let mem_budget = opts.memory.unwrap_or(u64::MAX);
        // with a budget, `mem` takes at most half of it (the rest is for lanes' pages)
        let mem_size = cap.min((mem_budget / 2) & !(PAGE - 1));
        if mem_size < 16 << 20 {
            return Err(no_device(format!(
                "the adapter {} allows storage bindings of {} bytes only (armada needs 16 MiB)",
                info.name, mem_size
            )));
        }
        // the spaces' bindings come after mem (0), the parameters (1) and the counter (2)
        let frame_bindings = limits
            .max_storage_buffers_per_shader_stage
            .saturating_sub(2)
            .min(crate::MAX_FRAME_BINDINGS)
            .min(opts.frame_bindings.unwrap_or(u32::MAX))
            .max(1);
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
        let small = |label| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 256,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let (counter, dummy) = (small("armada counter"), small("armada no frames"));

        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let source = crate::shader_source_with(frame_bindings, subgroups, false);
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
        let storage = wgpu::BufferBindingType::Storage { read_only: false };
        let mut entries = vec![
            entry(0, storage),
            entry(1, wgpu::BufferBindingType::Uniform),
            entry(2, storage),
        ];
        entries.extend((1..=frame_bindings).map(|k| entry(2 + k, storage)));
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("armada"),
            entries: &entries,
        });
        let fixed = Fixed {
            layout,
            params,
            counter,
            dummy,
        };
        let mut list: Vec<Option<Space>> = (0..=frame_bindings).map(|_| None).collect();
        list[0] = Some(Space {
            buffer: mem,
            size: mem_size,
            heap: Heap::new(mem_size, true),
        });
        let bind = fixed.bind(&device, &list);
        let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("armada"),
            bind_group_layouts: &[Some(&fixed.layout)],
            immediate_size: 0,
        });
        // llvmpipe (lavapipe) ends any shader loop after 65,535 iterations in all, counted per
        // SIMD batch of invocations, and silently: on a CPU adapter the interpreter counts its
        // iterations and leaves (STOP_SLICE) before that, and each lane gets a SIMD batch of
        // its own (lane_shift >= 4: 16 threads). Real GPUs have no such cap; the count
        // compiles away with LOOP_BUDGET = 0.
        let cpu = info.device_type == wgpu::DeviceType::Cpu;
        let mut overrides: Vec<(&'static str, f64)> = Vec::new();
        if cpu {
            overrides.push(("LOOP_BUDGET", 60000.0));
        }
        let pipeline = |name: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(name),
                layout: Some(&pl),
                module: &module,
                entry_point: Some(name),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: &[],
                    ..Default::default()
                },
                cache: None,
            })
        };
        let (copy, diff, pt_write, cov_news) = (
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

        // Chunks of the frame pool: at most 1/16 of a frame buffer each (frames and shadows),
        // so small bindings (lavapipe's 128 MiB) still hold several.
        let mut chunk_shift = 14;
        while chunk_shift > 6 && ((2 * 4096u64) << chunk_shift) > binding / 16 {
            chunk_shift -= 1;
        }
        let dev = WgpuDevice {
            device: device.clone(),
            queue,
            spaces: Mutex::new(Spaces { list, bind }),
            fixed,
            frame_bytes: binding,
            budget: mem_budget,
            made: Default::default(),
            most: Default::default(),
            copy,
            diff,
            pt_write,
            cov_news,
            runs: Arc::new(RunPipelines {
                device: device.clone(),
                module,
                frames: frame_bindings,
                subgroups,
                fp_module: OnceLock::new(),
                layout: pl,
                constants: overrides,
                no_prefetch: opts.no_prefetch,
                built: Mutex::new(HashMap::new()),
            }),
            ahead_on: std::env::var("ARMADA_WGPU_BUILD_AHEAD").map_or(!cpu, |v| v != "0"),
            ahead: Mutex::new(Vec::new()),
            fp: FpSwitch::new(opts.fp.unwrap_or(if cpu {
                FpPolicy::Never
            } else {
                FpPolicy::OnFpStops(FP_STOPS_BEFORE_BUILD)
            })),
            max_groups: limits.max_compute_workgroups_per_dimension,
            staging: Mutex::new(None),
            reading: Mutex::new(()),
            submitting: Mutex::new(()),
            mapped: Mutex::new(Vec::new()),
            failed,
            chunk_shift,
            slice: if cpu { 100_000 } else { 1_000_000 },
            // llvmpipe runs a workgroup on one of its threads: on a CPU adapter each lane is a
            // workgroup of its own (64 threads, the first runs it), so a batch of a few lanes
            // keeps every thread busy (where 4 lanes shared a workgroup, a batch of up to 4
            // ran on one thread) and no lane shares a SIMD batch with another.
            min_lane_shift: if cpu { WORKGROUP.ilog2() } else { 0 },
            // On a CPU adapter each pipeline is a build of a minute or more (lavapipe, 2
            // cores: 75 s for one frame buffer, about 120 s for three, over 15 minutes for
            // 26), so where the frame buffers are few one build for all of them beats one a
            // power of two (a batch over three 2 MiB frame buffers: 334 s -> 205 s with the
            // driver's cache empty, 98 -> 84 s with it full). ARMADA_WGPU_ALL_SPACES=0 or 1
            // decides either way.
            all_spaces: std::env::var("ARMADA_WGPU_ALL_SPACES")
                .map_or(cpu && frame_bindings <= ALL_SPACES_MOST, |v| v != "0"),
            // (as for the frame buffers: on lavapipe a pipeline is a build of a minute or more,
            // and a launch that skips the coverage code pays a uniform's test an edge)
            all_coverage: std::env::var("ARMADA_WGPU_ALL_COVERAGE").map_or(cpu, |v| v != "0"),
            // On a CPU adapter each lane has a SIMD batch of its own (lavapipe's loop cap), so
            // there is nothing to vote on.
            vote_width: if subgroups && !cpu {
                info.subgroup_max_size
            } else {
                0
            },
            info,
        };
        // the interpreter for the first launches now, so a shader the driver refuses fails here
        dev.run_pipeline((
            dev.spaces_in_use(),
            dev.all_coverage,
            false,
            dev.fp.policy == FpPolicy::Always,
        ))?;
        Ok(dev)
    }

    /// Starts building, on a thread of its own, the interpreter pipeline a batch will need
    /// once its pages fill frame buffer `k` (1..) past half (see `alloc_frames`): the one for
    /// the next power of two of frame buffers above `k`. The driver compiles on the thread
    /// that asks, and NVIDIA's took 12-27 s a build the first time on a machine (an H100), so
    /// a batch whose pages outgrow its frame buffers would otherwise stop for each build.
    /// Only growth starts one, so short runs never pay for builds they do not use; `Drop`
    /// waits for those under way (a process that exits while a thread is inside the driver
    /// crashed there: exit status 139 on an H200). Not on a CPU adapter, where a build takes
    /// as long and the cores are the lanes' (ARMADA_WGPU_BUILD_AHEAD=0 or 1 decides either way).
    fn build_ahead(&self, k: usize) {
        let most = (self.lock_spaces().list.len() - 1) as u32;
        let spaces = ((k as u32 + 1).next_power_of_two()).min(most);
        if spaces <= k as u32 {
            return;
        }
        // a batch that grows has many lanes, which vote where the device can
        let vote = self.vote_width > 0;
        self.build_key_ahead((spaces, self.all_coverage, vote, self.fp.wanted()));
    }

    /// Starts building the pipeline of `key` on a thread of its own (`build_ahead`), unless
    /// one is under way or builds ahead are off.
    fn build_key_ahead(&self, key: Key) {
        if !self.ahead_on {
            return;
        }
        let mut ahead = self.ahead.lock().unwrap_or_else(|p| p.into_inner());
        if ahead.iter().any(|(k, _)| *k == key) {
            return;
        }
        let runs = self.runs.clone();
        if let Ok(h) = std::thread::Builder::new()
            .name("armada-wgpu-build".into())
            .spawn(move || drop(runs.get(key)))
        {
            ahead.push((key, h));
        }
    }

    /// The interpreter pipeline of `key`: for `spaces` frame buffers in use (FRAME_SPACES),
    /// with edge coverage or without (COVERAGE), with min-PC scheduling's vote or without
    /// (VOTE), with FP on the device or not (fp.wgsl), built the first time it is asked for.
    fn run_pipeline(&self, key: Key) -> Result<wgpu::ComputePipeline, Error> {
        let (spaces, coverage, vote, fp) = key;
        self.runs.get(key).map_err(|e| {
            Error::Compile(format!(
                "the WGSL shader did not compile on {} ({spaces} frame buffers{}{}{}): {e}",
                self.info.name,
                if coverage { ", with coverage" } else { "" },
                if vote { ", with min-PC scheduling" } else { "" },
                if fp {
                    ", with FP arithmetic (fp.wgsl; ARMADA_WGPU_FP=0 leaves it to the host)"
                } else {
                    ""
                }
            ))
        })
    }

    /// A run launch's parameters for `p`, and the key of the pipeline it runs (`run_pipeline`).
    fn run_launch(&self, p: &Params) -> (WParams, Key) {
        let mut wp = WParams::run(p);
        wp.lane_shift = wp.lane_shift.max(self.min_lane_shift);
        // vote only where a subgroup holds several lanes (a small batch has one a subgroup)
        wp.vote = ((1u64 << wp.lane_shift) < self.vote_width as u64) as u32;
        let spaces = self.spaces_in_use();
        let cov = p.cov != 0 || self.all_coverage;
        let built = |vote, fp| self.runs.is_built((spaces, cov, vote, fp));
        // A batch's tail (fewer lanes running, each in a subgroup of its own) keeps the
        // voting pipeline it ran with, P.vote = 0, rather than wait for a build of the other.
        let vote_for =
            |fp| self.vote_width > 0 && (wp.vote != 0 || (built(true, fp) && !built(false, fp)));
        let mut fp = self.fp.wanted();
        // On a GPU, lanes that stopped at FP ops go on without fp.wgsl (the host runs those)
        // until its pipeline is built on a thread (12-27 s a build on an H100).
        let on_stops = matches!(self.fp.policy, FpPolicy::OnFpStops(_));
        if fp && on_stops && self.ahead_on && !built(vote_for(true), true) {
            self.build_key_ahead((spaces, cov, vote_for(true), true));
            fp = false;
        }
        (wp, (spaces, cov, vote_for(fp), fp))
    }

    /// FRAME_SPACES for a launch now: the highest frame buffer in use, rounded up to a power
    /// of two (so a growing batch builds few pipelines), at most the bindings there are.
    /// On a CPU adapter with at most [`ALL_SPACES_MOST`] frame buffers, all of them.
    fn spaces_in_use(&self) -> u32 {
        let sp = self.lock_spaces();
        if self.all_spaces {
            return (sp.list.len() - 1) as u32;
        }
        let highest = sp
            .list
            .iter()
            .rposition(Option::is_some)
            .unwrap_or(0)
            .max(1) as u32;
        highest.next_power_of_two().min((sp.list.len() - 1) as u32)
    }

    /// The adapter, its backend and the memory a batch may use.
    pub fn describe_long(&self) -> String {
        let sp = self.lock_spaces();
        let mem = sp.list[0].as_ref().map_or(0, |s| s.size);
        let frames = sp.list.len() - 1;
        let most = self
            .budget
            .saturating_sub(mem)
            .min(frames as u64 * self.frame_bytes);
        let vote = if self.vote_width > 0 {
            format!(
                "; min-PC scheduling in subgroups of up to {}",
                self.vote_width
            )
        } else {
            String::new()
        };
        format!(
            "{} ({:?}, {:?}; {} MiB for records and tables, up to {} MiB for lanes' pages and \
             their shadows in {frames} frame buffers of {} MiB{vote})",
            self.info.name,
            self.info.backend,
            self.info.device_type,
            mem >> 20,
            most >> 20,
            self.frame_bytes >> 20
        )
    }

    fn lock_spaces(&self) -> std::sync::MutexGuard<'_, Spaces> {
        self.spaces.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The buffer of `p`'s space, `p`'s offset in it, after checking that `len` bytes there
    /// are inside the buffer.
    fn locate(&self, p: DevPtr, len: usize) -> Result<(wgpu::Buffer, u64, u64), Error> {
        let (k, off) = split(p);
        let sp = self.lock_spaces();
        let Some(Some(space)) = sp.list.get(k) else {
            return Err(Error::Device(format!(
                "wgpu: access of {len} bytes at {p:#x}: there is no buffer {k}"
            )));
        };
        if off.checked_add(len as u64).is_none_or(|e| e > space.size) {
            return Err(Error::Device(format!(
                "wgpu: access of {len} bytes at {p:#x} outside buffer {k} ({} MiB)",
                space.size >> 20
            )));
        }
        Ok((space.buffer.clone(), off, space.size))
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

    /// Encodes one dispatch of `entry` over `threads` threads per pass, splitting into several
    /// dispatches (each with its `lane_base`) beyond the adapter's workgroup limit, and submits.
    fn dispatch(
        &self,
        pipeline: &wgpu::ComputePipeline,
        mut wp: WParams,
        threads: u64,
    ) -> Result<(), Error> {
        let per = self.max_groups as u64 * WORKGROUP as u64;
        let bind = self.lock_spaces().bind.clone();
        let mut base = 0u64;
        while base < threads.max(1) {
            let n = (threads - base).min(per);
            wp.lane_base = base as u32;
            self.queue.write_buffer(&self.fixed.params, 0, wp.bytes());
            let mut enc = self.device.create_command_encoder(&Default::default());
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, &bind, &[]);
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
        let bind = self.lock_spaces().bind.clone();
        self.queue.write_buffer(&self.fixed.params, 0, wp.bytes());
        let mut enc = self.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(groups.clamp(1, self.max_groups as u64) as u32, 1, 1);
        }
        self.queue.submit([enc.finish()]);
        self.check()
    }

    /// Zeroes an allocation, as the engine expects (the range may have been used before).
    fn clear(&self, buffer: &wgpu::Buffer, off: u64, bytes: usize) {
        let len = (bytes as u64).max(1).div_ceil(ALIGN) * ALIGN;
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.clear_buffer(buffer, off, Some(len));
        self.queue.submit([enc.finish()]);
    }

    /// Makes a frame buffer for an allocation of `need` bytes in the first free binding, and
    /// binds it; says why not when every binding has one, the budget is spent, or the driver
    /// is out of memory.
    fn new_frame_buffer(&self, sp: &mut Spaces, need: u64) -> Result<usize, Error> {
        let have = sp.bytes();
        let frames_have = have - sp.list[0].as_ref().map_or(0, |s| s.size);
        let full = |why: String| {
            Error::Device(format!(
                "out of device memory for lanes' pages: {why}; the batch had {} MiB of them in \
                 {} frame buffers on {}: run fewer lanes at once, cap each lane's memory with \
                 --lane-memory, or use --backend cuda",
                frames_have >> 20,
                sp.frame_buffers(),
                self.info.name
            ))
        };
        let Some(k) = sp
            .list
            .iter()
            .skip(1)
            .position(Option::is_none)
            .map(|i| i + 1)
        else {
            return Err(full(format!(
                "all {} frame buffers the shader binds are full (each a storage binding of {} \
                 MiB)",
                sp.list.len() - 1,
                self.frame_bytes >> 20
            )));
        };
        if need > self.frame_bytes {
            // one piece: a bare lane's memory (Python's Machine)
            return Err(Error::Device(format!(
                "{} MiB of guest memory in one piece is more than the wgpu engine can bind on {}: \
                 a frame buffer holds {} MiB (one storage binding); give it at most that much \
                 memory, or use the cuda backend",
                need.div_ceil(1 << 20),
                self.info.name,
                self.frame_bytes >> 20
            )));
        }
        let size = self.frame_bytes.min(self.budget.saturating_sub(have)) & !(PAGE - 1);
        if size < need {
            return Err(full(format!(
                "ARMADA_WGPU_MEMORY_MIB allows {} MiB in all",
                self.budget >> 20
            )));
        }
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("armada frames"),
            size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(full(format!(
                "the driver could not make another buffer of {} MiB ({e})",
                size >> 20
            )));
        }
        sp.list[k] = Some(Space {
            buffer,
            size,
            heap: Heap::new(size, false),
        });
        sp.bind = self.fixed.bind(&self.device, &sp.list);
        self.made.fetch_add(1, Relaxed);
        self.most.fetch_max(sp.frame_buffers(), Relaxed);
        Ok(k)
    }

    /// Frame buffers made so far, and the most that were in use at once.
    pub fn frame_buffers(&self) -> (usize, usize) {
        (self.made.load(Relaxed), self.most.load(Relaxed))
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
        let (buffer, off, size) = self.locate(src, dst.len())?;
        let start = off & !7;
        let end = (off + dst.len() as u64).div_ceil(8) * 8;
        let len = end.min(size) - start;
        // one reader at a time: the staging buffer is shared
        let _g = self.reading.lock().unwrap_or_else(|p| p.into_inner());
        let staging = self.staging(len);
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(&buffer, start, &staging, 0, len);
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
            let at = (off - start) as usize;
            dst.copy_from_slice(&view[at..at + dst.len()]);
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
        let mut sp = self.lock_spaces();
        let Some(mem) = sp.list[0].as_mut() else {
            return Err(Error::Device("wgpu: the device has no buffer 0".into()));
        };
        let p = mem.heap.alloc(bytes as u64).ok_or_else(|| {
            Error::Device(format!(
                "the batch's records and tables need more than the {} MiB buffer that holds \
                 them on {} (one storage binding: lanes' pages are elsewhere): run fewer lanes \
                 at once, or use --backend cuda",
                mem.size >> 20,
                self.info.name
            ))
        })?;
        let buffer = mem.buffer.clone();
        drop(sp);
        self.clear(&buffer, p, bytes);
        Ok(p)
    }

    fn alloc_frames(&self, bytes: usize) -> Result<DevPtr, Error> {
        let need = bytes as u64;
        let mut sp = self.lock_spaces();
        let mut found = None;
        for (k, s) in sp.list.iter_mut().enumerate().skip(1) {
            if let Some(s) = s {
                if let Some(off) = s.heap.alloc(need) {
                    found = Some((k, off));
                    break;
                }
            }
        }
        let (k, off) = match found {
            Some(f) => f,
            None => {
                let k = self.new_frame_buffer(&mut sp, need)?;
                let s = sp.list[k].as_mut().expect("just made");
                let off = s
                    .heap
                    .alloc(need)
                    .expect("a new buffer holds what it was made for");
                (k, off)
            }
        };
        let space = sp.list[k].as_ref().expect("allocated in");
        let buffer = space.buffer.clone();
        let past_half = space.heap.used > space.size / 2;
        drop(sp);
        if past_half {
            self.build_ahead(k);
        }
        self.clear(&buffer, off, bytes);
        Ok(((k as u64) << 32) | off)
    }

    fn free(&self, ptr: DevPtr) {
        let (k, off) = split(ptr);
        let mut sp = self.lock_spaces();
        let Some(Some(s)) = sp.list.get_mut(k) else {
            return;
        };
        s.heap.free(off);
        // an emptied frame buffer goes back to the driver, but the first: the next batch
        // would make it again
        if k >= 2 && s.heap.empty() {
            sp.list[k] = None;
            let bind = self.fixed.bind(&self.device, &sp.list);
            sp.bind = bind;
        }
    }

    fn htod(&self, dst: DevPtr, src: &[u8]) -> Result<(), Error> {
        if src.is_empty() {
            return Ok(());
        }
        let (buffer, off, _) = self.locate(dst, src.len())?;
        if off.is_multiple_of(4) && src.len().is_multiple_of(4) {
            self.queue.write_buffer(&buffer, off, src);
            return Ok(());
        }
        // wgpu writes whole 4-byte words: merge the edges with what is there
        let start = off & !3;
        let end = (off + src.len() as u64).div_ceil(4) * 4;
        let mut buf = vec![0u8; (end - start) as usize];
        self.read(dst - (off - start), &mut buf)?;
        let at = (off - start) as usize;
        buf[at..at + src.len()].copy_from_slice(src);
        self.queue.write_buffer(&buffer, start, &buf);
        Ok(())
    }

    fn dtoh(&self, src: DevPtr, dst: &mut [u8]) -> Result<(), Error> {
        self.read(src, dst)
    }

    fn launch_run(&self, p: &Params) -> Result<(), Error> {
        let (wp, key) = self.run_launch(p);
        let pipeline = self.run_pipeline(key)?;
        let _g = self.submitting.lock().unwrap_or_else(|e| e.into_inner());
        if p.claims != 0 {
            self.queue.write_buffer(&self.fixed.counter, 4, &[0u8; 4]);
        }
        self.dispatch(&pipeline, wp, (p.nactive as u64) << wp.lane_shift)?;
        if p.claims != 0 {
            // the claim count as the engine reads it: the low half of the u64 at `claims`
            // (the engine zeroed it before the launch)
            let (mem, off, _) = self.locate(p.claims, 8)?;
            let mut enc = self.device.create_command_encoder(&Default::default());
            enc.copy_buffer_to_buffer(&self.fixed.counter, 4, &mem, off, 4);
            self.queue.submit([enc.finish()]);
            self.check()?;
        }
        Ok(())
    }

    // (no prepare_coverage: prepare_run builds the pipeline with coverage that a launch needs,
    // which depends on the launch's lanes)

    fn prepare_run(&self, p: &Params) -> Result<(), Error> {
        let (_, key) = self.run_launch(p);
        self.run_pipeline(key).map(|_| ())
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
        let (mem, count_off, _) = self.locate(count, 8)?;
        let _g = self.submitting.lock().unwrap_or_else(|e| e.into_inner());
        self.queue.write_buffer(&self.fixed.counter, 0, &[0u8; 4]);
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
        enc.copy_buffer_to_buffer(&self.fixed.counter, 0, &mem, count_off, 4);
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
        // what the buffers have and may yet have (the driver may run out first)
        let sp = self.lock_spaces();
        let free_bindings = sp.list[1..].iter().filter(|s| s.is_none()).count() as u64;
        let have = sp.bytes();
        let total = self
            .budget
            .min(have.saturating_add(free_bindings * self.frame_bytes));
        let used: u64 = sp.list.iter().flatten().map(|s| s.heap.used).sum();
        (total - used.min(total), total)
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

    fn fused_pairs(&self) -> bool {
        true
    }

    fn lazy_pages(&self) -> bool {
        true
    }

    fn host_run(&self) -> u64 {
        // FP arithmetic runs on the host (until the pipelines with fp.wgsl are in use): a stop
        // costs a launch and a round trip, so the host runs on through the FP-dense stretch
        // (a few microseconds on the CPU engine)
        4096
    }

    fn host_stepped(&self, ops: &[u16]) {
        self.fp.stepped(ops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_layout_matches_the_shader() {
        // WGSL: 15 u64, then nactive nregions pt_shift chunk_shift lane_shift lane_base (u32),
        // then k_a..k_d (u64), k_n and vote (u32), claims (u64).
        assert_eq!(std::mem::offset_of!(WParams, lane_base), 15 * 8 + 5 * 4);
        assert_eq!(std::mem::offset_of!(WParams, k_a), 144);
        assert_eq!(std::mem::offset_of!(WParams, k_n), 176);
        assert_eq!(std::mem::offset_of!(WParams, claims), 184);
        assert_eq!(std::mem::size_of::<WParams>(), 192);
    }

    #[test]
    fn the_wait_micro_op_is_no_micro_op() {
        // min-PC scheduling's waiting lanes run OP_WAIT (armada.wgsl), which must not be the
        // number of anything the decoder or the fused pairs produce
        let wait = crate::SHADER_BODY
            .lines()
            .find_map(|l| l.strip_prefix("const OP_WAIT: u32 = "))
            .and_then(|v| v.strip_suffix("u;"))
            .and_then(|v| u32::from_str_radix(v.trim_start_matches("0x"), 16).ok())
            .expect("OP_WAIT in the shader");
        let ops = armada_gpu::layout::op_names();
        assert!(ops.len() > 100);
        for (n, name) in ops.into_iter().chain(armada_gpu::layout::fused::NAMES) {
            assert_ne!(n as u32, wait, "OP_{name} is OP_WAIT's number");
        }
    }

    #[test]
    fn heap_reuses_and_merges() {
        let mut h = Heap::new(1 << 20, true);
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
