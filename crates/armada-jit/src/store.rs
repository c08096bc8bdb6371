//! Translated code and the module it lives in, shared by every lane whose code cache shares
//! decoded pages (the lanes of a batch, the processes of a lane).
//!
//! A unit made from a page no lane can write is kept under (entry PC, the page's buffer):
//! as for decoded pages, lanes of one image share the image's page buffers, so an equal
//! buffer means equal code, and holding the buffer keeps its address from being reused.
//! A unit made from writable code is handed to the one lane that asked, which drops it when
//! its code cache says the code changed.

use crate::translate::translate;
use crate::unit;
use armada_core::cpu::code::CodePage;
use armada_core::memory::PageData;
use cranelift_codegen::ir::{types::I64, AbiParam};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::Module;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Translated code's entry: `ctx` in, an exit code (`helpers::exit`) out.
pub type UnitFn = unsafe extern "C" fn(*mut crate::helpers::Ctx) -> u64;

/// Past this much translated code a store translates nothing more (the interpreter runs
/// the rest): code that rewrites itself forever must not take all memory.
const MAX_CODE_BYTES: usize = 256 << 20;

/// Units compiled and the time spent, over the whole process.
pub static UNITS: AtomicU64 = AtomicU64::new(0);
pub static COMPILE_NS: AtomicU64 = AtomicU64::new(0);
pub static GUEST_INSNS: AtomicU64 = AtomicU64::new(0);

struct Inner {
    module: Option<JITModule>,
    ctx: Context,
    fctx: FunctionBuilderContext,
    shared: HashMap<(u64, usize), (Option<UnitFn>, Arc<PageData>)>,
    code_bytes: usize,
}

// SAFETY: the module is used only under the store's mutex, and nothing in it is tied to the
// thread that made it (its memory is plain mappings, freed in Drop).
unsafe impl Send for Inner {}

pub struct Store {
    inner: Mutex<Option<Inner>>,
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Ok(mut g) = self.inner.lock() {
            if let Some(m) = g.as_mut().and_then(|i| i.module.take()) {
                // SAFETY: every lane that held a pointer into this module held the store,
                // and the store is being dropped: no pointer is left.
                unsafe { m.free_memory() };
            }
        }
    }
}

fn new_module() -> Option<JITModule> {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").ok()?;
    // the long-range relocations and non-PIC code `JITBuilder::new` asks for
    flags.set("use_colocated_libcalls", "false").ok()?;
    flags.set("is_pic", "false").ok()?;
    let isa = cranelift_native::builder()
        .ok()?
        .finish(settings::Flags::new(flags))
        .ok()?;
    Some(JITModule::new(JITBuilder::with_isa(
        isa,
        cranelift_module::default_libcall_names(),
    )))
}

impl Store {
    pub fn new() -> Store {
        let inner = new_module().map(|module| Inner {
            ctx: module.make_context(),
            module: Some(module),
            fctx: FunctionBuilderContext::new(),
            shared: HashMap::new(),
            code_bytes: 0,
        });
        Store {
            inner: Mutex::new(inner),
        }
    }

    /// Whether this host can translate at all.
    pub fn usable(&self) -> bool {
        self.inner.lock().map(|g| g.is_some()).unwrap_or(false)
    }

    /// The unit entered at `pc` of `page`, translated now if no lane has yet; None when it
    /// is not to be translated (its first op runs on the interpreter, or translating failed).
    pub fn unit(&self, page: &CodePage, pc: u64) -> Option<UnitFn> {
        let mut g = self.inner.lock().ok()?;
        let inner = g.as_mut()?;
        let key = page
            .buffer
            .as_ref()
            .map(|b| (pc, Arc::as_ptr(b) as *const u8 as usize));
        if let Some(k) = key {
            if let Some((f, _)) = inner.shared.get(&k) {
                return *f;
            }
        }
        let f = inner.compile(page, pc);
        if let (Some(k), Some(b)) = (key, page.buffer.as_ref()) {
            inner.shared.insert(k, (f, b.clone()));
        }
        f
    }
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

impl Inner {
    fn compile(&mut self, page: &CodePage, pc: u64) -> Option<UnitFn> {
        if self.code_bytes > MAX_CODE_BYTES {
            return None;
        }
        let slot = ((pc - page.base) / 4) as usize;
        let unit = unit::scan(&page.ops, page.base, slot)?;
        let t = Instant::now();
        let module = self.module.as_mut()?;
        let cc = module.isa().default_call_conv();
        self.ctx.clear();
        self.ctx.func.signature.call_conv = cc;
        self.ctx.func.signature.params.push(AbiParam::new(I64));
        self.ctx.func.signature.returns.push(AbiParam::new(I64));
        let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let b = FunctionBuilder::new(&mut self.ctx.func, &mut self.fctx);
            translate(b, &unit, &page.ops, cc, module.isa().frontend_config());
        }));
        if built.is_err() {
            self.ctx.clear();
            return None;
        }
        let id = module
            .declare_anonymous_function(&self.ctx.func.signature)
            .ok()?;
        let defined = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            module.define_function(id, &mut self.ctx)
        }));
        if std::env::var("ARMADA_JIT_DEBUG").is_ok_and(|v| v == "ir") {
            eprintln!("armada-jit: unit at {pc:#x}:\n{}", self.ctx.func.display());
        }
        let size = match defined {
            Ok(Ok(())) => self
                .ctx
                .compiled_code()
                .map(|c| c.code_buffer().len())
                .unwrap_or(0),
            other => {
                if std::env::var_os("ARMADA_JIT_DEBUG").is_some() {
                    let why = match other {
                        Ok(Err(e)) => format!("{e:?}"),
                        _ => "panic".into(),
                    };
                    eprintln!("armada-jit: unit at {pc:#x} not translated: {why}");
                }
                self.ctx.clear();
                return None;
            }
        };
        self.ctx.clear();
        module.finalize_definitions().ok()?;
        let ptr = module.get_finalized_function(id);
        self.code_bytes += size;
        UNITS.fetch_add(1, Ordering::Relaxed);
        COMPILE_NS.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let insns: usize = unit.blocks.iter().map(|b| b.end - b.start).sum();
        GUEST_INSNS.fetch_add(insns as u64, Ordering::Relaxed);
        // SAFETY: the function was built with the signature `UnitFn` names, in the
        // platform's C calling convention.
        Some(unsafe { std::mem::transmute::<*const u8, UnitFn>(ptr) })
    }
}
