//! The engine's WGSL shader, translated by naga (the version wgpu 30 uses) for every backend
//! wgpu compiles it for: SPIR-V (Vulkan), MSL (Metal) and HLSL (DX12), with validation on.
//!
//! CI has only lavapipe (Vulkan), so a change that breaks the Metal or DX12 translation would
//! otherwise pass unnoticed. wgpu translates a pipeline's entry point when the pipeline is
//! created (`process_overrides`, then the backend's writer); this test does the same for each
//! entry point device.rs creates a pipeline for, under each override setting it uses, with the
//! options wgpu-hal 30 passes for a module made by `create_shader_module_trusted(..,
//! ShaderRuntimeChecks::unchecked())`. It does not run the platform compilers (Metal's, DXC) on
//! the output: a construct naga translates but one of them rejects still needs that machine.
//!
//! `cargo test --release -p armada-wgpu --test naga_backends`

use naga::back::{hlsl, msl, spv};
use naga::proc::{BoundsCheckPolicies, BoundsCheckPolicy};
use naga::valid::{Capabilities, ModuleInfo, ValidationFlags, Validator};
use naga::{AddressSpace, Module, ResourceBinding, ShaderStage, StorageAccess};

/// The capabilities the engine's shader needs: `SHADER_INT64` (u64 and i64 everywhere), and
/// `SUBGROUP` in the build with min-PC scheduling's vote (ARMADA_WGPU_MINPC=1 on an adapter
/// with subgroup operations). The device is requested with `wgpu::Features::SHADER_INT64`, and
/// `SUBGROUP` for that build (device.rs, `open_adapter`), and wgpu's validator gets the capabilities
/// that map from the requested features (wgpu-naga-bridge, `features_to_naga_capabilities`).
/// The shader uses no 64-bit atomics (its atomics are `atomic<u32>`), f16, i16, f64 or binding
/// arrays; `the_harness_rejects_bad_input` checks that validating without `SHADER_INT64`
/// fails, and with subgroups, without `SUBGROUP`.
fn capabilities(subgroups: bool) -> Capabilities {
    if subgroups {
        Capabilities::SHADER_INT64 | Capabilities::SUBGROUP
    } else {
        Capabilities::SHADER_INT64
    }
}

/// The entry points device.rs creates pipelines for (`pipeline(..)` in `open_adapter`, and
/// `run_pipeline`). Every compute entry point of the module is translated; these must be there.
const ENTRY_POINTS: [&str; 5] = ["run", "copy", "diff", "pt_write", "cov_news"];

/// The pipeline-override settings device.rs uses: none on a GPU; `LOOP_BUDGET = 60000` on a CPU
/// adapter (lavapipe's loop cap); `COVERAGE = 1` for the interpreter with edge coverage, and
/// `VOTE = 1` with `OP_PREFETCH = 0` for min-PC scheduling's pipelines, which `RunPipelines`
/// adds to the adapter's other overrides. Each setting is applied to every entry
/// point (device.rs passes them to `run` only; the others use neither override). `FRAME_SPACES`
/// keeps its default here (all frame buffers: the whole tree of accessors); the engine's
/// smaller values only prune that tree, and lavapipe builds them in the wgpu tests.
const SETTINGS: [(&str, &[(&str, f64)]); 6] = [
    ("defaults", &[]),
    (
        "LOOP_BUDGET=60000 (CPU adapter)",
        &[("LOOP_BUDGET", 60000.0)],
    ),
    ("COVERAGE=1", &[("COVERAGE", 1.0)]),
    (
        "LOOP_BUDGET=60000 COVERAGE=1 (CPU adapter, coverage)",
        &[("LOOP_BUDGET", 60000.0), ("COVERAGE", 1.0)],
    ),
    (
        "VOTE=1 OP_PREFETCH=0 (GPU, lanes share subgroups)",
        &[("VOTE", 1.0), ("OP_PREFETCH", 0.0)],
    ),
    (
        "VOTE=1 OP_PREFETCH=0 COVERAGE=1",
        &[("VOTE", 1.0), ("OP_PREFETCH", 0.0), ("COVERAGE", 1.0)],
    ),
];

/// SPIR-V versions: wgpu-hal's Vulkan backend writes SPIR-V 1.0 for a Vulkan 1.0 device, 1.3
/// for Vulkan 1.1, and 1.6 for Vulkan 1.3+ (lavapipe), and zero-initializes workgroup memory
/// natively where the device has the feature (core in Vulkan 1.3), else by a polyfill; both
/// ends are written. Subgroups need Vulkan 1.1 (wgpu-hal exposes `SUBGROUP` from there on), so
/// the build with them is written for 1.3 and 1.6.
fn spirv_versions(subgroups: bool) -> [((u8, u8), spv::ZeroInitializeWorkgroupMemoryMode); 2] {
    let oldest = if subgroups { (1, 3) } else { (1, 0) };
    [
        (oldest, spv::ZeroInitializeWorkgroupMemoryMode::Polyfill),
        ((1, 6), spv::ZeroInitializeWorkgroupMemoryMode::Native),
    ]
}

/// MSL versions. wgpu-hal's Metal backend writes the newest MSL the OS has and exposes
/// `SHADER_INT64` only from MSL 2.3 (macOS 11, iOS 14) on, on GPUs of the Apple3 or Metal3
/// families (wgpu-hal 30, metal/adapter.rs; wgpu-types documents the feature as "Metal (with
/// MSL 2.3+)"). 2.3 is the oldest MSL the engine can meet, 4.0 the newest wgpu 30 writes
/// (macOS 26).
const MSL: [(u8, u8); 2] = [(2, 3), (4, 0)];

/// HLSL shader models. wgpu-hal's DX12 backend exposes `SHADER_INT64` only at shader model
/// 6.0 or later (DXIL, so only with DXC; FXC stops at 5.1) on a device reporting
/// `Int64ShaderOps`; it uses the highest model both the device and DXC support, up to 6.9.
const HLSL: [hlsl::ShaderModel; 2] = [hlsl::ShaderModel::V6_0, hlsl::ShaderModel::V6_9];

/// Parses and validates `source`, then writes every backend's code for every compute entry
/// point under every override setting. Err lists each failure with the backend, the entry
/// point, the override setting and naga's error.
fn translate_all(source: &str, subgroups: bool) -> Result<(), String> {
    let (module, info) = guard(|| validate(source, capabilities(subgroups)))?;
    let names: Vec<&str> = module
        .entry_points
        .iter()
        .filter(|ep| ep.stage == ShaderStage::Compute)
        .map(|ep| ep.name.as_str())
        .collect();
    let mut failures = Vec::new();
    for want in ENTRY_POINTS {
        if !names.contains(&want) {
            failures.push(format!(
                "entry point `{want}` is missing (device.rs creates a pipeline for it)"
            ));
        }
    }
    let buffers = buffer_bindings(&module)?;
    for (setting, constants) in SETTINGS {
        let constants: naga::back::PipelineConstants = constants
            .iter()
            .map(|&(name, value)| (name.to_string(), value))
            .collect();
        for &ep in &names {
            let resolved = guard(|| {
                use naga::back::pipeline_constants::{process_overrides, PipelineConstantError};
                process_overrides(&module, &info, Some((ShaderStage::Compute, ep)), &constants)
                    .map_err(|e| match e {
                        PipelineConstantError::ValidationError(e) => {
                            format!("naga: {}", e.emit_to_string(source))
                        }
                        e => format!("naga: {e}"),
                    })
            });
            let (module, info) = match resolved {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("overrides, entry point `{ep}`, {setting}: {e}"));
                    continue;
                }
            };
            for (backend, result) in [
                spirv(&module, &info, ep, &buffers, subgroups),
                metal(&module, &info, ep, &buffers),
                dx12(&module, &info, ep, &buffers),
            ]
            .into_iter()
            .flatten()
            {
                if let Err(e) = result {
                    failures.push(format!("{backend}, entry point `{ep}`, {setting}: {e}"));
                }
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n\n"))
    }
}

/// Parses `source` as wgpu-core does (the WGSL front end with the device's capabilities) and
/// validates it with every check on.
fn validate(source: &str, caps: Capabilities) -> Result<(Module, ModuleInfo), String> {
    let mut options = naga::front::wgsl::Options::new();
    options.capabilities = caps;
    let module = naga::front::wgsl::Frontend::new_with_options(options)
        .parse(source)
        .map_err(|e| format!("WGSL front end: {}", e.emit_to_string(source)))?;
    let info = Validator::new(ValidationFlags::all(), caps)
        .validate(&module)
        .map_err(|e| format!("validation: {}", e.emit_to_string(source)))?;
    Ok((module, info))
}

/// A buffer binding of the module: where it is, and whether the shader may write it.
struct Buffer {
    binding: ResourceBinding,
    uniform: bool,
    writable: bool,
}

/// The module's resources, in (group, binding) order: the order of device.rs's bind group
/// layout, which is the order the backends hand out slots and registers in.
fn buffer_bindings(module: &Module) -> Result<Vec<Buffer>, String> {
    let mut out = Vec::new();
    for (_, var) in module.global_variables.iter() {
        let Some(binding) = var.binding else { continue };
        let (uniform, writable) = match var.space {
            AddressSpace::Uniform => (true, false),
            AddressSpace::Storage { access } => (false, access.contains(StorageAccess::STORE)),
            space => {
                return Err(format!(
                    "binding {binding:?} ({space:?}) is not a buffer: this test maps buffer \
                     bindings only; extend buffer_bindings"
                ))
            }
        };
        out.push(Buffer {
            binding,
            uniform,
            writable,
        });
    }
    out.sort_by_key(|b| (b.binding.group, b.binding.binding));
    Ok(out)
}

/// Every bounds-check policy off, as for a module created with unchecked runtime checks.
const UNCHECKED: BoundsCheckPolicies = BoundsCheckPolicies {
    index: BoundsCheckPolicy::Unchecked,
    buffer: BoundsCheckPolicy::Unchecked,
    image_load: BoundsCheckPolicy::Unchecked,
    binding_array: BoundsCheckPolicy::Unchecked,
};

type Translation = (String, Result<(), String>);

/// SPIR-V as wgpu-hal's Vulkan backend writes it (vulkan/adapter.rs and device.rs): the
/// capabilities Vulkan always has plus `Int64` for `SHADER_INT64` and the group operations for
/// `SUBGROUP`, and a binding map.
fn spirv(
    module: &Module,
    info: &ModuleInfo,
    ep: &str,
    buffers: &[Buffer],
    subgroups: bool,
) -> Vec<Translation> {
    use spv::Capability as C;
    let mut capabilities = vec![
        C::Shader,
        C::Matrix,
        C::Sampled1D,
        C::Image1D,
        C::ImageQuery,
        C::DerivativeControl,
        C::StorageImageExtendedFormats,
        C::Int64,
    ];
    if subgroups {
        capabilities.extend([
            C::GroupNonUniform,
            C::GroupNonUniformVote,
            C::GroupNonUniformArithmetic,
            C::GroupNonUniformBallot,
            C::GroupNonUniformShuffle,
            C::GroupNonUniformShuffleRelative,
            C::GroupNonUniformQuad,
        ]);
    }
    let binding_map: spv::BindingMap = buffers
        .iter()
        .map(|b| {
            let info = spv::BindingInfo {
                descriptor_set: b.binding.group,
                binding: b.binding.binding,
                binding_array_size: None,
            };
            (b.binding, info)
        })
        .collect();
    let pipeline = spv::PipelineOptions {
        shader_stage: ShaderStage::Compute,
        entry_point: ep.to_string(),
    };
    spirv_versions(subgroups)
        .iter()
        .map(|&(lang_version, zero_init)| {
            let options = spv::Options {
                lang_version,
                flags: spv::WriterFlags::LABEL_VARYINGS | spv::WriterFlags::FORCE_POINT_SIZE,
                fake_missing_bindings: false,
                binding_map: binding_map.clone(),
                capabilities: Some(capabilities.iter().copied().collect()),
                bounds_check_policies: UNCHECKED,
                zero_initialize_workgroup_memory: zero_init,
                force_loop_bounding: false,
                ray_query_initialization_tracking: false,
                use_storage_input_output_16: false,
                debug_info: None,
                task_dispatch_limits: None,
                mesh_shader_primitive_indices_clamp: false,
                emit_int_div_checks: false,
                ..Default::default()
            };
            let r = guard(|| {
                spv::write_vec(module, info, &options, Some(&pipeline))
                    .map_err(|e| format!("naga: {e}"))
                    .and_then(|words| nonempty(words.len()))
            });
            let (major, minor) = lang_version;
            (format!("SPIR-V {major}.{minor} (Vulkan)"), r)
        })
        .collect()
}

/// The most buffers a Metal pipeline stage may bind through wgpu 30: Metal's 31 buffer slots
/// less the two wgpu-hal keeps for immediate data and buffer sizes (metal/adapter.rs,
/// `max_buffers_and_acceleration_structures_per_shader_stage`). naga does not check it.
const METAL_MAX_BUFFERS: usize = 29;

/// MSL as wgpu-hal's Metal backend writes it (metal/device.rs): buffers in buffer slots in
/// layout order, then the slot of the buffer-sizes buffer that storage bindings need.
fn metal(module: &Module, info: &ModuleInfo, ep: &str, buffers: &[Buffer]) -> Vec<Translation> {
    if buffers.len() > METAL_MAX_BUFFERS {
        let e = format!(
            "{} buffer bindings, but wgpu's Metal backend allows {METAL_MAX_BUFFERS} per stage",
            buffers.len()
        );
        return vec![("MSL (Metal)".into(), Err(e))];
    }
    let mut resources = msl::BindingMap::new();
    for (slot, b) in buffers.iter().enumerate() {
        let target = msl::BindTarget {
            buffer: Some(slot as msl::Slot),
            mutable: b.writable,
            ..Default::default()
        };
        resources.insert(b.binding, target);
    }
    let sizes_buffer = buffers
        .iter()
        .any(|b| !b.uniform)
        .then_some(buffers.len() as msl::Slot);
    let per_entry_point_map = msl::EntryPointResourceMap::from([(
        ep.to_string(),
        msl::EntryPointResources {
            resources,
            immediates_buffer: None,
            sizes_buffer,
        },
    )]);
    let pipeline = msl::PipelineOptions {
        entry_point: Some((ShaderStage::Compute, ep.to_string())),
        allow_and_force_point_size: false,
        vertex_pulling_transform: true,
        ..Default::default()
    };
    MSL.iter()
        .map(|&lang_version| {
            let options = msl::Options {
                lang_version,
                per_entry_point_map: per_entry_point_map.clone(),
                fake_missing_bindings: false,
                bounds_check_policies: UNCHECKED,
                zero_initialize_workgroup_memory: true,
                force_loop_bounding: false,
                task_dispatch_limits: None,
                mesh_shader_primitive_indices_clamp: false,
                emit_int_div_checks: false,
                ray_query_initialization_tracking: false,
                ..Default::default()
            };
            let r = guard(|| {
                let (text, tr) = msl::write_string(module, info, &options, &pipeline)
                    .map_err(|e| format!("naga: {e}"))?;
                entry_point_ok(tr.entry_point_names.into_iter().map(|n| n.map(|_| ())))?;
                nonempty(text.len())
            });
            let (major, minor) = lang_version;
            (format!("MSL {major}.{minor} (Metal)"), r)
        })
        .collect()
}

/// HLSL as wgpu-hal's DX12 backend writes it (dx12/device.rs): uniform buffers in CBV
/// registers (b), writable storage in UAV registers (u), read-only storage in SRV registers
/// (t), each counted from 0 in space 0.
fn dx12(module: &Module, info: &ModuleInfo, ep: &str, buffers: &[Buffer]) -> Vec<Translation> {
    let (mut cbv, mut srv, mut uav) = (0u32, 0u32, 0u32);
    let mut binding_map = hlsl::BindingMap::new();
    for b in buffers {
        let counter = if b.uniform {
            &mut cbv
        } else if b.writable {
            &mut uav
        } else {
            &mut srv
        };
        let target = hlsl::BindTarget {
            space: 0,
            register: *counter,
            ..Default::default()
        };
        *counter += 1;
        binding_map.insert(b.binding, target);
    }
    let pipeline = hlsl::PipelineOptions {
        entry_point: Some((ShaderStage::Compute, ep.to_string())),
    };
    HLSL.iter()
        .map(|&shader_model| {
            let options = hlsl::Options {
                shader_model,
                binding_map: binding_map.clone(),
                fake_missing_bindings: false,
                zero_initialize_workgroup_memory: true,
                restrict_indexing: false,
                force_loop_bounding: false,
                task_dispatch_limits: None,
                mesh_shader_primitive_indices_clamp: false,
                ray_query_initialization_tracking: false,
                ..Default::default()
            };
            let r = guard(|| {
                let mut text = String::new();
                let tr = hlsl::Writer::new(&mut text, &options, &pipeline)
                    .write(module, info, None)
                    .map_err(|e| format!("naga: {e}"))?;
                entry_point_ok(tr.entry_point_names.into_iter().map(|n| n.map(|_| ())))?;
                nonempty(text.len())
            });
            (format!("HLSL SM {} (DX12)", shader_model.to_str()), r)
        })
        .collect()
}

/// Runs a step of naga, turning a panic into an Err (naga has panicked on constructs it
/// validated: 64-bit `countLeadingZeros`, see docs/wgpu.md).
fn guard<T>(step: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(step)).unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(format!("naga panicked: {msg}"))
    })
}

/// The writers report an entry point they could not write in their reflection output.
fn entry_point_ok<E: std::fmt::Display>(
    mut names: impl Iterator<Item = Result<(), E>>,
) -> Result<(), String> {
    match names.next() {
        None => Err("naga wrote no entry point".into()),
        Some(Err(e)) => Err(format!("naga: entry point: {e}")),
        Some(Ok(())) => names.try_for_each(|r| r.map_err(|e| format!("naga: entry point: {e}"))),
    }
}

fn nonempty(len: usize) -> Result<(), String> {
    if len == 0 {
        Err("naga wrote nothing".into())
    } else {
        Ok(())
    }
}

#[test]
fn shader_translates_for_every_backend() {
    // the shader as an adapter of WebGPU's limits gets it, and with the fewest and the most
    // frame buffers the engine binds (MAX_FRAME_BINDINGS is what Metal's buffer slots allow)
    // frame buffers, each with and without subgroups, and each with and without fp.wgsl
    for (frames, subgroups, fp) in [
        (armada_wgpu::DEFAULT_FRAME_BINDINGS, false, false),
        (armada_wgpu::DEFAULT_FRAME_BINDINGS, true, true),
        (1, false, true),
        (1, true, false),
        (armada_wgpu::MAX_FRAME_BINDINGS, true, true),
        (armada_wgpu::MAX_FRAME_BINDINGS, false, false),
    ] {
        let source = armada_wgpu::shader_source_with(frames, subgroups, fp);
        let t = std::time::Instant::now();
        let with = if subgroups { "with" } else { "without" };
        let fp_with = if fp { "with" } else { "without" };
        if let Err(e) = translate_all(&source, subgroups) {
            panic!(
                "the wgpu engine's shader ({frames} frame buffers, {with} subgroups, {fp_with} \
                 fp.wgsl) does not translate:\n\n{e}"
            );
        }
        eprintln!(
            "{frames} frame buffers, {with} subgroups, {fp_with} fp.wgsl: every entry point x {} \
             override settings x {} backend versions translated in {:?}",
            SETTINGS.len(),
            spirv_versions(subgroups).len() + MSL.len() + HLSL.len(),
            t.elapsed()
        );
    }
    // one more frame buffer would not bind on Metal
    let over = armada_wgpu::shader_source_with(armada_wgpu::MAX_FRAME_BINDINGS + 1, true, false);
    let e = translate_all(&over, true).unwrap_err();
    assert!(e.contains("Metal"), "{e}");
}

#[test]
fn the_harness_rejects_bad_input() {
    // a syntax error: the front end's error, with the source line
    let e = translate_all("fn broken( -> u32 { return 1u; }", false).unwrap_err();
    assert!(e.starts_with("WGSL front end: "), "{e}");
    assert!(e.contains("fn broken("), "no source excerpt in: {e}");

    // well-formed, but a store to a read-only buffer: the validator's error, with the line
    let e = translate_all(
        "@group(0) @binding(0) var<storage, read> mem: array<u32>;
         @compute @workgroup_size(64)
         fn run(@builtin(global_invocation_id) id: vec3<u32>) { mem[id.x] = 1u; }",
        false,
    )
    .unwrap_err();
    assert!(e.starts_with("validation: "), "{e}");
    assert!(e.contains("mem[id.x] = 1u"), "no source excerpt in: {e}");

    // valid, but it lacks the engine's other entry points, and an override value breaks it:
    // only the settings with LOOP_BUDGET = 60000 divide by zero
    let e = translate_all(
        "@group(0) @binding(0) var<storage, read_write> mem: array<u32>;
         override LOOP_BUDGET: u32 = 0u;
         override COVERAGE: u32 = 0u;
         @compute @workgroup_size(64)
         fn run(@builtin(global_invocation_id) id: vec3<u32>) {
             mem[id.x] = 1u / (60000u - LOOP_BUDGET) + COVERAGE;
         }",
        false,
    )
    .unwrap_err();
    for missing in ["copy", "diff", "pt_write", "cov_news"] {
        assert!(
            e.contains(&format!("entry point `{missing}` is missing")),
            "{e}"
        );
    }
    assert!(!e.contains("`run` is missing"), "{e}");
    let divides = |setting: &str| {
        e.contains(&format!(
            "overrides, entry point `run`, {setting}: naga: Division by zero"
        ))
    };
    assert!(divides(SETTINGS[1].0) && divides(SETTINGS[3].0), "{e}");
    assert!(!divides(SETTINGS[0].0) && !divides(SETTINGS[2].0), "{e}");

    // valid, but one backend fails: naga 30's SPIR-V writer panics on a 64-bit
    // countLeadingZeros (gfx-rs/wgpu#5276), which MSL and HLSL translate (the shader does it
    // on 32-bit halves; if a naga upgrade fixes this, pick another backend-only failure)
    let e = translate_all(
        "@group(0) @binding(0) var<storage, read_write> mem: array<u32>;
         override LOOP_BUDGET: u32 = 0u;
         override COVERAGE: u32 = 0u;
         @compute @workgroup_size(64)
         fn run(@builtin(global_invocation_id) id: vec3<u32>) {
             let x = u64(mem[id.x]) + u64(LOOP_BUDGET + COVERAGE);
             mem[id.x] = u32(countLeadingZeros(x));
         }",
        false,
    )
    .unwrap_err();
    for spirv in ["SPIR-V 1.0 (Vulkan)", "SPIR-V 1.6 (Vulkan)"] {
        let line = format!(
            "{spirv}, entry point `run`, {}: naga panicked: ",
            SETTINGS[0].0
        );
        assert!(e.contains(&line), "{e}");
    }
    assert!(!e.contains("MSL") && !e.contains("HLSL"), "{e}");

    // the engine's shader needs SHADER_INT64 (so `capabilities` is not larger than it must be)
    let source = armada_wgpu::shader_source();
    let Err(e) = validate(&source, Capabilities::empty()) else {
        panic!("the shader validated without SHADER_INT64");
    };
    assert!(e.contains("SHADER_INT64"), "{e}");
    // and its build with subgroups needs SUBGROUP
    let source = armada_wgpu::shader_source_with(armada_wgpu::DEFAULT_FRAME_BINDINGS, true, true);
    let Err(e) = validate(&source, Capabilities::SHADER_INT64) else {
        panic!("the shader with subgroups validated without SUBGROUP");
    };
    assert!(e.to_lowercase().contains("subgroup"), "{e}");
}
