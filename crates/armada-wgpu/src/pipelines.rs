//! The interpreter's compute pipelines (`RunPipelines`: one a variant, built when first
//! asked for) and when FP arithmetic goes in them (`FpPolicy`, `FpSwitch`): what a launch runs,
//! apart from the buffers and bindings device.rs keeps.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};

/// When a device runs FP arithmetic in the shader (`Options::fp`; ARMADA_WGPU_FP=0, 1 or
/// `stops`). Results are the same in every case (fp.wgsl is the CPU engine's exact
/// arithmetic); what differs is where the time goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FpPolicy {
    /// Never: the FP ops the shader's plain part does not run go to the host.
    Never,
    /// From the first launch.
    Always,
    /// Once lanes have stopped for the host at FP ops this many times in all
    /// (`host_stepped`); on a GPU the pipelines with fp.wgsl are built on a thread meanwhile,
    /// and launches go on without them until they are ready.
    OnFpStops(u64),
}

/// The FP stops after which a GPU builds the pipelines with fp.wgsl by default: each stop
/// lets the host run up to 4,096 instructions (`host_run`), so 4,096 stops are up to 16 M
/// instructions of the host's FP. A program with fewer never pays for the build: the first
/// took NVIDIA's compiler 31 s on an H100, and a process that ends waits for a build under
/// way (`WgpuDevice`'s `Drop`). nbody on 4,096 lanes stops 4,096 times in its first round.
pub const FP_STOPS_BEFORE_BUILD: u64 = 4096;

/// Whether the shader's plain part leaves `op` to the host (where fp.wgsl runs it): the FP
/// arithmetic, conversions and compares, but the bit moves FABS and FNEG.
pub fn fp_op(op: u16) -> bool {
    use armada_isa::ops;
    ((ops::F_ADD..=ops::INT_TO_F_V).contains(&op) && op != ops::F_ABS && op != ops::F_NEG)
        || op == ops::F_CMP
        || op == ops::F_CCMP
}

/// A device's `FpPolicy` and the FP stops its batches have made, from which whether launches
/// want the pipelines with fp.wgsl follows.
pub struct FpSwitch {
    pub policy: FpPolicy,
    stops: AtomicU64,
}

impl FpSwitch {
    pub fn new(policy: FpPolicy) -> FpSwitch {
        FpSwitch {
            policy,
            stops: AtomicU64::new(0),
        }
    }

    /// Whether launches now want the pipelines with fp.wgsl.
    pub fn wanted(&self) -> bool {
        match self.policy {
            FpPolicy::Never => false,
            FpPolicy::Always => true,
            FpPolicy::OnFpStops(after) => self.stops.load(Relaxed) >= after,
        }
    }

    /// Counts the FP ops among a round's host steps (`Device::host_stepped`).
    pub fn stepped(&self, ops: &[u16]) {
        if let FpPolicy::OnFpStops(after) = self.policy {
            if self.stops.load(Relaxed) < after {
                let n = ops.iter().filter(|&&op| fp_op(op)).count() as u64;
                self.stops.fetch_add(n, Relaxed);
            }
        }
    }
}

/// A pipeline once built (or why not).
pub type Built = OnceLock<Result<wgpu::ComputePipeline, String>>;

/// A run pipeline's key: FRAME_SPACES, COVERAGE, VOTE, and whether its module has fp.wgsl.
pub type Key = (u32, bool, bool, bool);

/// The interpreter's pipelines by `Key`: each built the first time it is asked for (a batch's
/// pages outgrow the frame buffers in use, it wants coverage, its lanes share subgroups, or it
/// runs FP on the device), so plain runs of small batches never pay for the others.
/// Builds of different keys proceed at once (on a GPU a growing batch builds ahead, see
/// `WgpuDevice::build_ahead`); a second asker of a key waits for the build under way.
pub struct RunPipelines {
    pub device: wgpu::Device,
    pub module: wgpu::ShaderModule,
    /// The frame buffers and subgroups `module` was made for, which the module with fp.wgsl
    /// is made for too, the first time a pipeline with FP on the device is built.
    pub frames: u32,
    pub subgroups: bool,
    pub fp_module: OnceLock<Result<wgpu::ShaderModule, String>>,
    pub layout: wgpu::PipelineLayout,
    /// The overrides every run pipeline has (LOOP_BUDGET on CPU adapters).
    pub constants: Vec<(&'static str, f64)>,
    /// ARMADA_WGPU_PREFETCH=0: no pipeline loads micro-ops ahead.
    pub no_prefetch: bool,
    pub built: Mutex<HashMap<Key, Arc<Built>>>,
}

impl RunPipelines {
    fn cell(&self, key: Key) -> Arc<Built> {
        self.built
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(key)
            .or_default()
            .clone()
    }

    pub fn get(&self, key: Key) -> Result<wgpu::ComputePipeline, String> {
        self.cell(key).get_or_init(|| self.build(key)).clone()
    }

    /// Whether the pipeline of the key is built (not only under way).
    pub fn is_built(&self, key: Key) -> bool {
        self.cell(key).get().is_some_and(|r| r.is_ok())
    }

    /// The module with fp.wgsl, made (naga parses and checks it) the first time it is asked for.
    fn fp_module(&self) -> Result<&wgpu::ShaderModule, String> {
        self.fp_module
            .get_or_init(|| {
                let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
                // SAFETY: as the module without fp.wgsl (`WgpuDevice::open`): the shader bounds
                // its own indices into `mem`, and fp.wgsl touches memory only through them.
                let m = unsafe {
                    self.device.create_shader_module_trusted(
                        wgpu::ShaderModuleDescriptor {
                            label: Some("armada.wgsl with fp.wgsl"),
                            source: wgpu::ShaderSource::Wgsl(
                                crate::shader_source_with(self.frames, self.subgroups, true).into(),
                            ),
                        },
                        wgpu::ShaderRuntimeChecks::unchecked(),
                    )
                };
                match pollster::block_on(scope.pop()) {
                    Some(e) => Err(e.to_string()),
                    None => Ok(m),
                }
            })
            .as_ref()
            .map_err(|e| e.clone())
    }

    pub fn build(
        &self,
        (spaces, coverage, vote, fp): Key,
    ) -> Result<wgpu::ComputePipeline, String> {
        let module = if fp { self.fp_module()? } else { &self.module };
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut constants = self.constants.clone();
        constants.push(("FRAME_SPACES", spaces as f64));
        if coverage {
            constants.push(("COVERAGE", 1.0));
        }
        if vote {
            constants.push(("VOTE", 1.0));
        }
        // Waiting lanes would load ahead for nothing at every wait: on an H200 the pipelines
        // that vote ran the CRC batches 7-9% faster without it (issue 17 step 3).
        if vote || self.no_prefetch {
            constants.push(("OP_PREFETCH", 0.0));
        }
        let p = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(if fp { "run with fp" } else { "run" }),
                layout: Some(&self.layout),
                module,
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
    }
}
