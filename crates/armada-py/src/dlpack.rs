//! DLPack export of a GPU machine's guest memory: `Machine(backend="cuda").memory_view()`
//! returns a [`DeviceMemory`], whose `__dlpack__` / `__dlpack_device__` hand the device
//! allocation that holds guest memory to CuPy, PyTorch, JAX... without a copy.
//!
//! The tensor is 1-D, uint8, `memory_size` long, on kDLCUDA device 0 (the CUDA engine's
//! device; on the engine's simulator, ARMADA_CUDA_SIM=1, the "device" memory is host memory
//! and the tensor is kDLCPU, so numpy can read it). Every capsule holds a reference to the
//! allocation, so the memory stays valid for as long as any consumer holds a tensor made from
//! it, even after the machine is gone. The capsule is the legacy `dltensor` one, or
//! `dltensor_versioned` (DLPack 1.0) when the consumer asks with `max_version >= (1, 0)`.
//!
//! Streams: every operation of the engine on the device is complete when the call that
//! issued it returns (the CUDA engine uses the legacy default stream and synchronizes), so the
//! memory is ready on any stream the consumer names. Writes a consumer makes through the
//! tensor are seen by the machine at its next `execute` / `start` / `read_memory` /
//! `write_memory` (the machine then reads its memory back from the device; a consumer that
//! writes on a stream of its own must synchronize it first).

use armada_gpu::DeviceBuffer;
use pyo3::exceptions::{PyAttributeError, PyBufferError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// kDLCPU
pub(crate) const KDL_CPU: i32 = 1;
/// kDLCUDA
pub(crate) const KDL_CUDA: i32 = 2;

/// A DLPack device: (device type, device id).
pub(crate) type DlDevice = (i32, i32);

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

/// What a capsule owns: the shape and strides the tensor points at, and the allocation.
struct Ctx {
    shape: [i64; 1],
    strides: [i64; 1],
    _buf: Arc<DeviceBuffer>,
}

const NAME: &CStr = c"dltensor";
const NAME_VERSIONED: &CStr = c"dltensor_versioned";
/// kDLUInt
const KDL_UINT: u8 = 1;

unsafe extern "C" fn delete_legacy(p: *mut DLManagedTensor) {
    if p.is_null() {
        return;
    }
    // SAFETY: p and its context were made by Box::into_raw in `capsule` and are freed once:
    // by the consumer through this deleter, or by the capsule's destructor if never consumed.
    unsafe {
        drop(Box::from_raw((*p).manager_ctx as *mut Ctx));
        drop(Box::from_raw(p));
    }
}

unsafe extern "C" fn delete_versioned(p: *mut DLManagedTensorVersioned) {
    if p.is_null() {
        return;
    }
    // SAFETY: as delete_legacy.
    unsafe {
        drop(Box::from_raw((*p).manager_ctx as *mut Ctx));
        drop(Box::from_raw(p));
    }
}

/// The capsule's destructor: frees the tensor unless a consumer took it (and renamed the
/// capsule to "used_dltensor", taking over the deleter).
unsafe extern "C" fn destroy_legacy(cap: *mut ffi::PyObject) {
    // SAFETY: cap is a capsule; IsValid checks its name without raising.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, NAME.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(cap, NAME.as_ptr()) as *mut DLManagedTensor;
            if !p.is_null() {
                if let Some(d) = (*p).deleter {
                    d(p);
                }
            }
        }
    }
}

unsafe extern "C" fn destroy_versioned(cap: *mut ffi::PyObject) {
    // SAFETY: as destroy_legacy.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, NAME_VERSIONED.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(cap, NAME_VERSIONED.as_ptr())
                as *mut DLManagedTensorVersioned;
            if !p.is_null() {
                if let Some(d) = (*p).deleter {
                    d(p);
                }
            }
        }
    }
}

/// A DLPack capsule over all of `buf` (1-D uint8) on `device`.
fn capsule<'py>(
    py: Python<'py>,
    buf: &Arc<DeviceBuffer>,
    device: DlDevice,
    versioned: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let ctx = Box::into_raw(Box::new(Ctx {
        shape: [buf.len() as i64],
        strides: [1],
        _buf: buf.clone(),
    }));
    // SAFETY: ctx was just made; its arrays live as long as the tensor (freed by the deleter).
    let tensor = unsafe {
        DLTensor {
            data: buf.ptr() as *mut c_void,
            device: DLDevice {
                device_type: device.0,
                device_id: device.1,
            },
            ndim: 1,
            dtype: DLDataType {
                code: KDL_UINT,
                bits: 8,
                lanes: 1,
            },
            shape: (*ctx).shape.as_mut_ptr(),
            strides: (*ctx).strides.as_mut_ptr(),
            byte_offset: 0,
        }
    };
    let (ptr, name, destructor): (*mut c_void, &CStr, ffi::PyCapsule_Destructor) = if versioned {
        let m = Box::into_raw(Box::new(DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: ctx as *mut c_void,
            deleter: Some(delete_versioned),
            flags: 0,
            dl_tensor: tensor,
        }));
        (m as *mut c_void, NAME_VERSIONED, destroy_versioned)
    } else {
        let m = Box::into_raw(Box::new(DLManagedTensor {
            dl_tensor: tensor,
            manager_ctx: ctx as *mut c_void,
            deleter: Some(delete_legacy),
        }));
        (m as *mut c_void, NAME, destroy_legacy)
    };
    // SAFETY: ptr is a live managed tensor; the name is a static string; on failure nothing
    // owns the tensor, so it is freed here.
    unsafe {
        let cap = ffi::PyCapsule_New(ptr, name.as_ptr(), Some(destructor));
        if cap.is_null() {
            if versioned {
                delete_versioned(ptr as *mut DLManagedTensorVersioned);
            } else {
                delete_legacy(ptr as *mut DLManagedTensor);
            }
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, cap))
    }
}

/// Guest memory of a machine on a GPU backend, in device memory: hand it to CuPy, PyTorch and
/// other DLPack consumers (`cupy.from_dlpack(view)`, `torch.from_dlpack(view)`) for a
/// zero-copy 1-D uint8 array. It keeps the memory alive, as does every array made from it.
#[pyclass(module = "armada", frozen)]
pub struct DeviceMemory {
    buf: Arc<DeviceBuffer>,
    device: DlDevice,
    /// Set on each export: the machine reads its memory back from the device before it next
    /// uses it (a consumer may have written it).
    exported: Arc<AtomicBool>,
}

impl DeviceMemory {
    pub(crate) fn new(buf: Arc<DeviceBuffer>, device: DlDevice, exported: Arc<AtomicBool>) -> Self {
        exported.store(true, Ordering::Relaxed);
        DeviceMemory {
            buf,
            device,
            exported,
        }
    }

    /// `__dlpack__` for any exporter of this memory.
    pub(crate) fn export<'py>(
        &self,
        py: Python<'py>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut versioned = false;
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                let key: String = k.extract()?;
                match key.as_str() {
                    // Everything the engine did is complete: ready on any stream.
                    "stream" => {}
                    "max_version" => {
                        if !v.is_none() {
                            let (major, _minor): (u32, u32) = v.extract()?;
                            versioned = major >= 1;
                        }
                    }
                    "dl_device" => {
                        if !v.is_none() {
                            let d: (i32, i32) = v.extract()?;
                            if d != self.device {
                                return Err(PyBufferError::new_err(format!(
                                    "armada's device memory is on DLPack device {:?}, not {d:?}",
                                    self.device
                                )));
                            }
                        }
                    }
                    "copy" => {
                        if v.is_truthy()? {
                            return Err(PyBufferError::new_err(
                                "armada exports guest memory without a copy only (copy=True)",
                            ));
                        }
                    }
                    _ => {
                        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                            "__dlpack__() got an unexpected keyword argument '{key}'"
                        )))
                    }
                }
            }
        }
        self.exported.store(true, Ordering::Relaxed);
        capsule(py, &self.buf, self.device, versioned)
    }
}

#[pymethods]
impl DeviceMemory {
    /// A DLPack capsule over guest memory (no copy); see the class documentation.
    #[pyo3(signature = (**kwargs))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.export(py, kwargs)
    }

    /// (2, 0): kDLCUDA, device 0 ((1, 0), kDLCPU, on the CUDA engine's simulator).
    fn __dlpack_device__(&self) -> DlDevice {
        self.device
    }

    /// The CUDA array interface (version 3), for consumers that read it instead of DLPack
    /// (Numba, older CuPy). Only on a CUDA device.
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.device.0 != KDL_CUDA {
            return Err(PyAttributeError::new_err(
                "__cuda_array_interface__: this memory is not on a CUDA device",
            ));
        }
        self.exported.store(true, Ordering::Relaxed);
        let d = PyDict::new(py);
        d.set_item("shape", (self.buf.len(),))?;
        d.set_item("typestr", "|u1")?;
        d.set_item("data", (self.buf.ptr(), false))?;
        d.set_item("version", 3)?;
        d.set_item("strides", py.None())?;
        d.set_item("stream", py.None())?;
        Ok(d)
    }

    /// The device address of guest address 0.
    #[getter]
    fn ptr(&self) -> u64 {
        self.buf.ptr()
    }

    /// Bytes of guest memory.
    #[getter]
    fn nbytes(&self) -> usize {
        self.buf.len()
    }

    /// (memory_size,)
    #[getter]
    fn shape(&self) -> (usize,) {
        (self.buf.len(),)
    }

    /// "cuda:0" (or "cpu" on the CUDA engine's simulator).
    #[getter]
    fn device(&self) -> String {
        if self.device.0 == KDL_CUDA {
            format!("cuda:{}", self.device.1)
        } else {
            "cpu".to_string()
        }
    }

    fn __len__(&self) -> usize {
        self.buf.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "DeviceMemory(nbytes={:#x}, device='{}', ptr={:#x})",
            self.buf.len(),
            self.device(),
            self.buf.ptr()
        )
    }
}

/// The DLPack device of a machine's memory: None for CPU machines (numpy's export serves
/// them) and wgpu (no DLPack device for its buffers).
pub(crate) fn machine_device(backend: crate::Backend) -> Option<DlDevice> {
    match backend {
        crate::Backend::Cuda if crate::cuda_is_sim() => Some((KDL_CPU, 0)),
        crate::Backend::Cuda => Some((KDL_CUDA, 0)),
        _ => None,
    }
}
