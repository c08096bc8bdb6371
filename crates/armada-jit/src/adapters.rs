//! How translated code calls its helpers: through adapters of Cranelift's `preserve_all`
//! convention, made once per process.
//!
//! A call in the C convention clobbers nine integer and all sixteen vector registers, so
//! every value a unit keeps across a helper call (the state and context pointers, the
//! registers a block has read, the flags' operands) had to sit in one of five callee-saved
//! registers or on the stack, on the hot path too, and the register allocator spent most
//! of a unit's compile splitting live ranges around the calls of cold paths. An adapter
//! saves what the helper may clobber itself, so a call site clobbers nothing. The
//! convention has no return values: an adapter leaves the helper's in `Ctx::ret`. (The
//! helpers that can run on hot paths, the FP helper and the interpreter's one instruction,
//! are plain calls: see `translate`.)

use crate::helpers::{self, CTX_RET};
use crate::store::{define_now, new_module};
use crate::translate::host_mem;
use cranelift_codegen::ir::{types::I64, AbiParam, InstBuilder, Signature};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::Module;
use std::sync::OnceLock;

/// One helper as translated code calls it.
#[derive(Clone, Copy)]
pub struct Adapter {
    /// Its parameters, the context first.
    pub params: usize,
    /// Whether the helper returns a value (in `Ctx::ret` after the call).
    pub returns: bool,
    pub addr: i64,
}

/// The adapters of every helper.
#[derive(Clone, Copy)]
pub struct Adapters {
    pub read: Adapter,
    pub write: Adapter,
}

/// An adapter's signature: `params` i64s, nothing back, `preserve_all`.
pub fn signature(params: usize) -> Signature {
    let mut s = Signature::new(CallConv::PreserveAll);
    s.params.extend((0..params).map(|_| AbiParam::new(I64)));
    s
}

/// The adapters, made at the first call; None where they cannot be made (then nothing is
/// translated).
pub fn adapters() -> Option<&'static Adapters> {
    static A: OnceLock<Option<Adapters>> = OnceLock::new();
    A.get_or_init(make).as_ref()
}

fn make() -> Option<Adapters> {
    let mut module = new_module()?;
    let mut fctx = FunctionBuilderContext::new();
    // one helper's adapter: its address, its parameters (the context first), whether it
    // returns a value
    let mut one = |f: *const (), params: usize, returns: bool| {
        let cc = module.isa().default_call_conv();
        let mut ctx = module.make_context();
        ctx.func.signature = signature(params);
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let blk = b.create_block();
            b.append_block_params_for_function_params(blk);
            b.switch_to_block(blk);
            let args = b.block_params(blk).to_vec();
            let c = args[0];
            let mut sig = Signature::new(cc);
            sig.params.extend((0..params).map(|_| AbiParam::new(I64)));
            if returns {
                sig.returns.push(AbiParam::new(I64));
            }
            let sig = b.import_signature(sig);
            let callee = b.ins().iconst(I64, f as i64);
            let call = b.ins().call_indirect(sig, callee, &args);
            if returns {
                let r = b.inst_results(call)[0];
                b.ins().store(host_mem(), r, c, CTX_RET);
            }
            b.ins().return_(&[]);
            b.seal_all_blocks();
            b.finalize(module.isa().frontend_config());
        }
        Some(Adapter {
            params,
            returns,
            addr: define_now(&mut module, &mut ctx)? as i64,
        })
    };
    let a = Adapters {
        read: one(helpers::read as *const (), 3, true)?,
        write: one(helpers::write as *const (), 5, true)?,
    };
    // the adapters live as long as the process
    std::mem::forget(module);
    Some(a)
}
