//! armada-wgpu: the portable GPU engine. The interpreter is a WGSL compute shader
//! (`src/shader/`) run through wgpu on Vulkan, Metal or DX12 (and on Mesa's lavapipe, a
//! software Vulkan driver, in CI); the batch loop around it is armada-gpu's, the same as the
//! CUDA engine's, so both run the same micro-ops, memory model, stops and syscall batches.
//!
//! What differs from CUDA (see docs/wgpu.md): WGSL has no pointers, so device memory is a few
//! storage buffers (one for records and tables, and frame buffers for lanes' pages, made as
//! they are needed, each at most the adapter's largest binding), WGSL has
//! no clock so a launch ends after a bounded number of instructions per lane (which also keeps
//! desktop GPUs clear of OS watchdogs), and the shader leaves floating point to the host.

pub mod device;
mod pipelines;

pub use armada_gpu::{
    run_batch, run_lanes, Batch, Devices, Engine, Error, LaneStop, Running, Stats,
};
pub use device::{quiet_vulkan_layers, set_by_armada, WgpuDevice};
pub use pipelines::{FpPolicy, FP_STOPS_BEFORE_BUILD};
use std::sync::Arc;

/// How the wgpu engine runs.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Instructions per lane per launch; `None`: the device's default (1 M on a GPU, 100 k on
    /// a CPU adapter such as lavapipe).
    pub slice: Option<u64>,
    /// The most device memory the engine takes, all its buffers together, in bytes; `None`:
    /// as much as the adapter's limits allow (the buffer of records and tables, and as many
    /// frame buffers as lanes' pages need, up to the storage bindings a shader may have).
    pub memory: Option<u64>,
    /// The size of each frame buffer, in bytes; `None`: the adapter's largest storage
    /// binding. Tests make it small to spread a batch's pages over several frame buffers.
    pub binding: Option<u64>,
    /// The most frame buffers, in 1..=`MAX_FRAME_BINDINGS`; `None`: as many as the adapter's
    /// storage bindings allow.
    pub frame_bindings: Option<u32>,
    /// Min-PC scheduling where lanes share subgroups (on a GPU with subgroup operations):
    /// lanes at the subgroup's lowest micro-op run, the others wait. `None`: on for a GPU
    /// adapter with subgroups, for launches whose lanes share subgroups (their pipeline loads
    /// each micro-op as it runs: waiting lanes wasted the loads ahead). On an H200, 65,536
    /// lanes of the bitwise CRC ran 45% faster with it, the table CRC as fast or faster, and
    /// tight loops 11-16% slower (docs/performance.md, issue 17 step 3).
    pub minpc: Option<bool>,
    /// Load each micro-op when it runs instead of one iteration ahead (for measuring what
    /// the prefetch gives).
    pub no_prefetch: bool,
    /// When FP arithmetic runs in the shader (fp.wgsl's soft-float) rather than on the host
    /// (`FpPolicy`). `None`: on a GPU once lanes stop for the host at FP ops; never on a CPU
    /// adapter, where the host's CPU engine runs FP far faster than lavapipe would (nbody:
    /// 0.7 s of kernel with the host's FP, 6 s with fp.wgsl).
    pub fp: Option<FpPolicy>,
    /// Print the adapter and per-batch notes on stderr.
    pub verbose: bool,
}

impl Options {
    /// Defaults, adjusted by the environment: ARMADA_WGPU_SLICE=N, ARMADA_WGPU_MEMORY_MIB=N,
    /// ARMADA_WGPU_BINDING_MIB=N, ARMADA_WGPU_FRAME_BINDINGS=N, ARMADA_WGPU_MINPC=0|1,
    /// ARMADA_WGPU_PREFETCH=0, ARMADA_WGPU_FP=0|1|stops, ARMADA_WGPU_VERBOSE=1 (wgpu's own WGPU_BACKEND and
    /// WGPU_ADAPTER_NAME also apply).
    pub fn from_env() -> Options {
        let num = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
        Options {
            slice: num("ARMADA_WGPU_SLICE"),
            memory: num("ARMADA_WGPU_MEMORY_MIB").map(|m| m << 20),
            binding: num("ARMADA_WGPU_BINDING_MIB").map(|m| m << 20),
            frame_bindings: num("ARMADA_WGPU_FRAME_BINDINGS")
                .map(|n| n.min(u32::MAX as u64) as u32),
            minpc: std::env::var("ARMADA_WGPU_MINPC").ok().map(|v| v != "0"),
            no_prefetch: std::env::var("ARMADA_WGPU_PREFETCH").is_ok_and(|v| v == "0"),
            fp: std::env::var("ARMADA_WGPU_FP")
                .ok()
                .map(|v| match v.as_str() {
                    "0" => FpPolicy::Never,
                    "stops" => FpPolicy::OnFpStops(1),
                    _ => FpPolicy::Always,
                }),
            verbose: std::env::var("ARMADA_WGPU_VERBOSE").is_ok_and(|v| !v.is_empty() && v != "0"),
        }
    }
}

/// Opens the first suitable adapter, compiles the shader and returns the engine.
pub fn open(opts: &Options) -> Result<Engine, Error> {
    let dev = WgpuDevice::open(opts)?;
    if opts.verbose {
        eprintln!("armada: wgpu engine on {}", dev.describe_long());
    }
    Ok(Engine::new(
        Arc::new(dev),
        armada_gpu::Options {
            slice: opts.slice,
            verbose: opts.verbose,
            block_samples: None,
            block_wait: false,
        },
    ))
}

/// Opens the adapters `which` names (numbered as [`WgpuDevice::adapters`] lists them), each
/// with the shader compiled; `Devices::First` is the adapter [`open`] picks.
pub fn open_devices(opts: &Options, which: &Devices) -> Result<Vec<Engine>, Error> {
    if *which == Devices::First {
        return Ok(vec![open(opts)?]);
    }
    let adapters = WgpuDevice::adapters();
    let list = which.select(adapters.len(), "wgpu")?;
    let gpu = armada_gpu::Options {
        slice: opts.slice,
        verbose: opts.verbose,
        block_samples: None,
        block_wait: false,
    };
    let mut engines = Vec::with_capacity(list.len());
    for o in list {
        let dev = WgpuDevice::open_adapter(opts, adapters[o].clone()).map_err(|e| match e {
            Error::NoDevice(m) => Error::NoDevice(format!("wgpu device {o}: {m}")),
            Error::Compile(m) => Error::Compile(format!("wgpu device {o}: {m}")),
            e => e,
        })?;
        if opts.verbose {
            eprintln!("armada: wgpu device {o}: {}", dev.describe_long());
        }
        engines.push(Engine::new(Arc::new(dev), gpu.clone()).on_device(o));
    }
    Ok(engines)
}

/// Whether the engine can run here: Ok with the adapter's description, or why not.
pub fn available(opts: &Options) -> Result<String, Error> {
    Ok(WgpuDevice::open(opts)?.describe_long())
}

/// Frame buffers a shader declares when the adapter's limits are not known: WebGPU's
/// guaranteed 8 storage buffers a stage, less `mem` and `counter`.
pub const DEFAULT_FRAME_BINDINGS: u32 = 6;

/// The most frame buffers the engine uses, whatever the adapter allows. wgpu 30's Metal
/// backend binds at most 29 buffers a stage, the uniform one included, which leaves 26 after
/// `mem`, the parameters and the counter (tests/naga_backends.rs checks it); 26 of the
/// largest bindings (2 GiB on NVIDIA's Vulkan) hold 26 GiB of guest pages and their shadows.
/// Each is also a case of the switch every guest access goes through (`spaces_wgsl`).
pub const MAX_FRAME_BINDINGS: u32 = 26;

/// The whole shader (FP arithmetic included) as compiled for `DEFAULT_FRAME_BINDINGS` frame
/// buffers, without subgroups: what an adapter of WebGPU's guaranteed limits and no optional
/// features gets once a batch runs FP on the device.
pub fn shader_source() -> String {
    shader_source_with(DEFAULT_FRAME_BINDINGS, false, true)
}

/// The shader as compiled for `frames` frame buffers (at least 1), with or without subgroup
/// operations (the adapter's `wgpu::Features::SUBGROUP`), with FP arithmetic on the device or
/// left to the host (`fp`: fp.wgsl, or an `exec_fp` that runs nothing): the generated header,
/// the shader's files, then the frame buffers' bindings and the accessors over every space,
/// min-PC scheduling's vote and the FP piece.
pub fn shader_source_with(frames: u32, subgroups: bool, fp: bool) -> String {
    // (naga 30 takes subgroup built-ins without WGSL's `enable subgroups;`, which it rejects as
    // not implemented: the device's SUBGROUP feature is what allows them)
    let mut s = armada_gpu::layout::wgsl_header();
    s.push_str(&SHADER_BODY.replace("// @params\n", &device::wgsl_params()));
    s.push_str(&spaces_wgsl(frames.max(1)));
    s.push_str(if subgroups { VOTE_SUBGROUPS } else { VOTE_NONE });
    s.push_str(if fp { FP_DEVICE } else { FP_HOST });
    s
}

/// FP arithmetic, conversions and compares in integer soft-float (src/shader/fp.wgsl, with the
/// FP element functions build.rs generates), in the
/// pipelines a device builds once a batch needs them (device.rs, `FpPolicy`): in every
/// pipeline, its size slowed every program on lavapipe by 25-40%.
const FP_DEVICE: &str = concat!(
    "\n// ----- fp.wgsl\n",
    include_str!(concat!(env!("OUT_DIR"), "/fp.wgsl"))
);

/// Without fp.wgsl: the FP ops simd.wgsl does not run go to the host.
const FP_HOST: &str = "
// ----- FP arithmetic on the host (generated: crates/armada-wgpu/src/lib.rs, without fp.wgsl)
fn exec_fp(op: u32, a: u32, b: u32, c: u32, d: u32, e: u32, f: u32, imm: u64) -> bool { return false; }
";

/// Min-PC scheduling's vote with subgroup operations: whether this lane waits, another lane of
/// its subgroup being less than `MINPC_WINDOW` micro-ops behind it (`key`: its word index, 4
/// words a micro-op).
const VOTE_SUBGROUPS: &str = "
// ----- min-PC scheduling's vote (generated: crates/armada-wgpu/src/lib.rs, with subgroups)
fn vote_wait(key: u32) -> bool {
    let lag = key - subgroupMin(key);
    return lag != 0u && lag < 4u * MINPC_WINDOW;
}
";

/// Without subgroup operations: no vote (the host leaves `P.vote` at 0).
const VOTE_NONE: &str = "
// ----- no subgroups on this adapter: no vote (generated: crates/armada-wgpu/src/lib.rs)
fn vote_wait(key: u32) -> bool { return false; }
";

/// The frame buffers' bindings (space k, for k in 1..=frames, is `fk` at binding 2 + k) and
/// the word accessors:
/// - `fld` (a word), `fld2` (two words) and `fst` (a store) reach the frame buffers, for the
///   interpreter: a tree of ifs over the space that the pipeline constant `FRAME_SPACES`
///   (the frame buffers in use, at most `frames`) prunes, so with one frame buffer (most
///   batches) an access is one plain load or store and with k of them log2(k) compares;
/// - `gld` and `gst` reach every space, `mem` included (space 0), for the copy kernel.
pub fn spaces_wgsl(frames: u32) -> String {
    use std::fmt::Write;
    let mut s = String::from("\n// ----- spaces (generated: crates/armada-wgpu/src/lib.rs)\n");
    for k in 1..=frames {
        let _ = writeln!(
            s,
            "@group(0) @binding({}) var<storage, read_write> f{k}: array<u32>;",
            2 + k
        );
    }
    let _ = writeln!(
        s,
        "// frame buffers in use (spaces 1..=FRAME_SPACES); the host sets it per pipeline\n\
         override FRAME_SPACES: u32 = {frames}u;"
    );
    // a balanced tree of the spaces lo..=hi, each leaf `leaf(k)`
    fn tree(s: &mut String, lo: u32, hi: u32, depth: usize, leaf: &dyn Fn(u32) -> String) {
        let pad = "    ".repeat(depth);
        if lo == hi {
            let _ = writeln!(s, "{pad}{}", leaf(lo));
            return;
        }
        let mid = (lo + hi) / 2;
        let _ = writeln!(s, "{pad}if FRAME_SPACES <= {mid}u || sp <= {mid}u {{");
        tree(s, lo, mid, depth + 1, leaf);
        let _ = writeln!(s, "{pad}}} else {{");
        tree(s, mid + 1, hi, depth + 1, leaf);
        let _ = writeln!(s, "{pad}}}");
    }
    let frame_fn = |s: &mut String, sig: &str, leaf: &dyn Fn(u32) -> String| {
        let _ = writeln!(s, "fn {sig} {{");
        tree(s, 1, frames, 1, leaf);
        let _ = writeln!(s, "}}");
    };
    frame_fn(&mut s, "fld(sp: u32, w: u32) -> u32", &|k| {
        format!("return f{k}[w];")
    });
    frame_fn(&mut s, "fld2(sp: u32, w: u32) -> vec2<u32>", &|k| {
        format!("return vec2<u32>(f{k}[w], f{k}[w + 1u]);")
    });
    frame_fn(&mut s, "fst(sp: u32, w: u32, v: u32)", &|k| {
        format!("f{k}[w] = v;")
    });
    let _ = writeln!(
        s,
        "fn gld(sp: u32, w: u32) -> u32 {{\n    if sp == 0u {{ return mem[w]; }}\n    \
         return fld(sp, w);\n}}\n\
         fn gst(sp: u32, w: u32, v: u32) {{\n    if sp == 0u {{ mem[w] = v; }} else {{ fst(sp, w, v); }}\n}}"
    );
    s
}

/// The shader's files joined by build.rs in the order `src/shader/ORDER` gives.
pub const SHADER_BODY: &str = include_str!(concat!(env!("OUT_DIR"), "/shader.wgsl"));
