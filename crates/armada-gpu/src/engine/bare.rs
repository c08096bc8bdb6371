//! Bare lanes.
//!
//! A bare machine (armada.Machine on a GPU backend): one lane whose whole address space is one
//! flat read-write-execute region [0, size), no Linux process. Everything the lane stops for
//! that the Linux batch loop above services (SVC, HLT, BRK, undefined instructions, the
//! instruction limit, faults) goes back to the caller instead; page misses and host steps are
//! still serviced here, by the CPU engine on the caller's host mirror of the memory.
//!
//! Code in writable memory. The batch loop decodes only executable, non-writable areas; here
//! every page is writable and any may hold code, so:
//! - the micro-op table covers the whole region (one slot per word, one region [0, size)) and
//!   starts out all NOT_DECODED (zero), which the kernel leaves to the host: when the lane
//!   reaches a page whose code is not decoded, the host decodes that page (a "code page"),
//!   uploads its micro-ops and relaunches;
//! - a code page is mapped read-only on the device, so a guest store into it stops the lane
//!   (a write miss): the host runs that instruction with the CPU engine on the mirror, uploads
//!   the bytes it wrote and decodes the page again before the lane goes on;
//! - the host's own writes (`host_wrote`) and changes made on the device behind the engine's
//!   back (`sync_full`) re-decode the code pages they touch.
//!
//! So the device never runs a stale micro-op and every result is the CPU engine's.
//!
//! The guest memory is one device allocation, page n at offset n * 4096 (frames in order), so
//! it can be handed out as one contiguous array (DLPack). After every stop the host mirror is
//! brought up to date from the pages the lane wrote (the kernel lists them).

use super::code::encode_uop;
use super::records::{record_to_state, state_to_record};
use super::setup::{env_ms, DEFAULT_SLICE};
use super::*;
use crate::device::{dtoh_vec, htod_slice};
use armada_core::cpu;
use armada_core::memory::{AddressSpace, PAGE_SHIFT};
use armada_core::state::Stop;

/// A device allocation that frees itself; shared so that an exported view can keep it alive.
pub struct DeviceBuffer {
    dev: Arc<dyn Device>,
    ptr: DevPtr,
    bytes: usize,
}

impl DeviceBuffer {
    /// A zeroed allocation of `bytes`.
    pub fn new(dev: Arc<dyn Device>, bytes: usize) -> Result<DeviceBuffer, Error> {
        let ptr = dev.alloc(bytes)?;
        Ok(DeviceBuffer { dev, ptr, bytes })
    }
    /// A zeroed allocation of `bytes` for guest pages (`Device::alloc_frames`: on wgpu, in a
    /// frame buffer, where the kernel's guest accesses look).
    pub fn frames(dev: Arc<dyn Device>, bytes: usize) -> Result<DeviceBuffer, Error> {
        let ptr = dev.alloc_frames(bytes)?;
        Ok(DeviceBuffer { dev, ptr, bytes })
    }
    /// Its device address (a host address on the CUDA engine's simulator).
    pub fn ptr(&self) -> DevPtr {
        self.ptr
    }
    pub fn len(&self) -> usize {
        self.bytes
    }
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        self.dev.free(self.ptr);
    }
}

/// How a bare run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BareEnd {
    /// The stop the CPU engine would report (Budget: the instruction limit).
    Stop(Stop),
    /// `keep_going` said no; the state is consistent (registers and mirror up to date).
    Interrupted,
}

/// Micro-op slots per page.
const WORDS_PER_PAGE: usize = (PAGE_SIZE / 4) as usize;

/// One bare lane on a device (see the section comment).
pub struct BareLane {
    dev: Arc<dyn Device>,
    size: u64,
    mem: Arc<DeviceBuffer>,
    ops: DeviceBuffer,
    record: DeviceBuffer,
    pt: DeviceBuffer,
    sched: DeviceBuffer,
    /// The other buffers the kernel reads (regions, stops, active list, page-table epochs,
    /// chunk table), kept for as long as the lane.
    _held: Vec<DeviceBuffer>,
    /// Page-table slot of each page.
    slot: Vec<u64>,
    /// Pages whose micro-ops are on the device (mapped read-only there).
    code: Vec<bool>,
    epoch: u32,
    params: Params,
    /// Figures: launches, pages decoded, host steps.
    pub launches: u64,
    pub pages_decoded: u64,
    pub host_steps: u64,
}

impl BareLane {
    /// A lane with `size` bytes of zeroed memory (a multiple of the page size).
    pub fn new(dev: Arc<dyn Device>, size: u64) -> Result<BareLane, Error> {
        if size == 0 || size & (PAGE_SIZE - 1) != 0 {
            return Err(Error::Device(format!(
                "a bare lane needs a positive multiple of {PAGE_SIZE} bytes, not {size}"
            )));
        }
        let pages = size / PAGE_SIZE;
        if pages > PT_FRAME_MASK || pages >= 1 << PT_VPN_BITS {
            return Err(Error::Device(format!(
                "{size} bytes is too large for a bare lane"
            )));
        }
        let host_size = |bytes: u64| {
            usize::try_from(bytes)
                .map_err(|_| Error::Device("allocation too large for this host".into()))
        };
        let alloc = |bytes: u64| DeviceBuffer::new(dev.clone(), host_size(bytes)?);
        // the lane's pages: frames in order, in the frames' own memory
        let mem = Arc::new(DeviceBuffer::frames(dev.clone(), host_size(size)?)?);
        // one slot per word, and two of padding (the kernel loads the micro-op after the one
        // it runs): all NOT_DECODED (zero)
        let ops_buf = alloc((size / 4 + 2) * 16)?;
        let regions = alloc(3 * 8)?;
        htod_slice(&*dev, regions.ptr(), &[0u64, size, 0])?;
        let record = alloc((S_WORDS * 8) as u64)?;
        let stops = alloc(4)?;
        let active = alloc(4)?;
        let sched = alloc(16)?;
        // Frames in order: frame n is page n, in chunks of the device's size laid end to end.
        let shift = dev.chunk_shift();
        let nchunks = pages.div_ceil(1 << shift);
        let chunks = alloc(8 * nchunks)?;
        let chunk_ptrs: Vec<u64> = (0..nchunks)
            .map(|i| mem.ptr() + (i << (shift + PAGE_SHIFT)))
            .collect();
        htod_slice(&*dev, chunks.ptr(), &chunk_ptrs)?;
        // Every page mapped read-write from the start (code pages become read-only).
        let slots = (4 * pages).next_power_of_two().max(1 << 10);
        let mut table = HostTable::new(slots);
        let mut slot = Vec::with_capacity(pages as usize);
        for vpn in 0..pages {
            slot.push(table.set(pt_key(0, vpn), vpn | PT_R | PT_W, false)?);
        }
        let words = table.words();
        let pt = alloc(slots * 16)?;
        htod_slice(&*dev, pt.ptr(), &words)?;
        let pt_epoch = alloc(slots * 4)?;
        let params = Params {
            ops: ops_buf.ptr(),
            regions: regions.ptr(),
            lanes: record.ptr(),
            stops: stops.ptr(),
            active: active.ptr(),
            pt: pt.ptr(),
            pt_epoch: pt_epoch.ptr(),
            chunks: chunks.ptr(),
            progress: 0,
            cov: 0,
            sysd: 0,
            sched: sched.ptr(),
            // flat memory, every page mapped: no lazy pages
            claims: 0,
            slice: dev.default_slice().unwrap_or(DEFAULT_SLICE),
            max_ns: env_ms("ARMADA_CUDA_LAUNCH_MS", 100.0),
            min_grace_ns: env_ms("ARMADA_CUDA_GRACE_MS", 5.0),
            min_run_ns: env_ms("ARMADA_CUDA_MIN_RUN_MS", 1.0),
            pt_mask: slots - 1,
            nactive: 1,
            nregions: 1,
            pt_shift: 64 - slots.trailing_zeros(),
            chunk_shift: shift,
            // one lane: a warp of its own
            lane_shift: 5,
            ..Default::default()
        };
        Ok(BareLane {
            dev,
            size,
            mem,
            ops: ops_buf,
            record,
            pt,
            sched,
            _held: vec![regions, stops, active, pt_epoch, chunks],
            slot,
            code: vec![false; pages as usize],
            epoch: 1,
            params,
            launches: 0,
            pages_decoded: 0,
            host_steps: 0,
        })
    }

    /// Bytes of guest memory.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The guest memory on the device: one allocation, guest address a at offset a.
    pub fn memory(&self) -> &Arc<DeviceBuffer> {
        &self.mem
    }

    /// Makes the device current on the calling thread.
    pub fn bind(&self) -> Result<(), Error> {
        self.dev.bind()
    }

    /// Reads guest memory straight from the device.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), Error> {
        self.check(addr, buf.len() as u64)?;
        self.dev.dtoh(self.mem.ptr() + addr, buf)
    }

    fn check(&self, addr: u64, len: u64) -> Result<(), Error> {
        if addr.checked_add(len).is_some_and(|e| e <= self.size) {
            Ok(())
        } else {
            Err(Error::Device(format!(
                "{len} bytes at {addr:#x} are outside the lane's memory"
            )))
        }
    }

    /// The host wrote `[addr, addr + len)` of its mirror (`mirror`: all guest memory): copies
    /// those bytes to the device and decodes again the code pages they touch.
    pub fn host_wrote(&mut self, addr: u64, len: u64, mirror: &[u8]) -> Result<(), Error> {
        if len == 0 {
            return Ok(());
        }
        self.check(addr, len)?;
        let (a, e) = (addr as usize, (addr + len) as usize);
        self.dev.htod(self.mem.ptr() + addr, &mirror[a..e])?;
        for vpn in addr >> PAGE_SHIFT..=(addr + len - 1) >> PAGE_SHIFT {
            if self.code[vpn as usize] {
                self.upload_code(vpn, mirror)?;
            }
        }
        Ok(())
    }

    /// Brings `mirror` up to date with the whole of device memory (after changes made on the
    /// device behind the engine's back, through an exported view): pages that differ are
    /// copied, and decoded again where they hold code. Returns the page numbers that changed.
    pub fn sync_full(&mut self, mirror: &mut [u8]) -> Result<Vec<u64>, Error> {
        let mut now = vec![0u8; self.size as usize];
        self.dev.dtoh(self.mem.ptr(), &mut now)?;
        let mut changed = Vec::new();
        let p = PAGE_SIZE as usize;
        for (vpn, (new, old)) in now.chunks(p).zip(mirror.chunks_mut(p)).enumerate() {
            if new != old {
                old.copy_from_slice(new);
                changed.push(vpn as u64);
            }
        }
        for &vpn in &changed {
            if self.code[vpn as usize] {
                self.upload_code(vpn, mirror)?;
            }
        }
        Ok(changed)
    }

    /// Forgets every decoded page (they are decoded again when they run).
    pub fn invalidate_code(&mut self) -> Result<(), Error> {
        let zeros = vec![0u64; 2 * WORDS_PER_PAGE];
        for vpn in 0..self.code.len() {
            if self.code[vpn] {
                htod_slice(
                    &*self.dev,
                    self.ops.ptr() + (vpn * WORDS_PER_PAGE * 16) as u64,
                    &zeros,
                )?;
                self.set_perms(vpn as u64, PT_R | PT_W)?;
                self.code[vpn] = false;
            }
        }
        Ok(())
    }

    fn set_perms(&mut self, vpn: u64, perms: u64) -> Result<(), Error> {
        let s = self.slot[vpn as usize];
        htod_slice(
            &*self.dev,
            self.pt.ptr() + 16 * s,
            &[pt_key(0, vpn), vpn | perms],
        )
    }

    /// Decodes page `vpn` of `mirror` onto the device.
    fn upload_code(&mut self, vpn: u64, mirror: &[u8]) -> Result<(), Error> {
        let base = vpn << PAGE_SHIFT;
        let bytes = &mirror[base as usize..(base + PAGE_SIZE) as usize];
        let words: Vec<u64> = bytes
            .chunks_exact(4)
            .enumerate()
            .flat_map(|(k, w)| {
                encode_uop(
                    u32::from_le_bytes([w[0], w[1], w[2], w[3]]),
                    base + 4 * k as u64,
                )
            })
            .collect();
        htod_slice(
            &*self.dev,
            self.ops.ptr() + vpn * WORDS_PER_PAGE as u64 * 16,
            &words,
        )?;
        self.pages_decoded += 1;
        Ok(())
    }

    /// Makes page `vpn` a code page: decoded on the device, read-only there.
    fn make_code(&mut self, vpn: u64, mirror: &[u8]) -> Result<(), Error> {
        self.upload_code(vpn, mirror)?;
        self.set_perms(vpn, PT_R)?;
        self.code[vpn as usize] = true;
        Ok(())
    }

    fn launch(&mut self) -> Result<Vec<u64>, Error> {
        let dev = &*self.dev;
        htod_slice(dev, self.sched.ptr(), &[0u64, 0u64])?;
        dev.launch_run(&self.params)?;
        dev.sync()?;
        self.launches += 1;
        dtoh_vec(dev, self.record.ptr(), S_WORDS)
    }

    fn upload_record(&mut self, st: &CpuState, limit: u64) -> Result<(), Error> {
        let mut rec = vec![0u64; S_WORDS];
        state_to_record(st, limit, self.epoch, &mut rec);
        rec[S_REGIONS] = 1 << 32;
        rec[S_IMAGE] = PT_IMAGE_LANE;
        rec[S_SPACE] = 0;
        htod_slice(&*self.dev, self.record.ptr(), &rec)
    }

    /// Takes a stopped lane's state: registers into `st`, the pages it wrote into the mirror
    /// (and out of the CPU engine's decoded code); a new sync period starts.
    fn take_state(
        &mut self,
        rec: &[u64],
        st: &mut CpuState,
        mem: &mut AddressSpace,
        code: &mut cpu::CodeCache,
    ) -> Result<(), Error> {
        record_to_state(rec, Some(&rec[S_V..]), st);
        let n = rec[S_DIRTY_N] as usize;
        let (_, flat) = mem
            .flat_mut()
            .ok_or_else(|| Error::Device("a bare lane needs flat memory".into()))?;
        if n > DIRTY_CAP {
            self.dev.dtoh(self.mem.ptr(), flat)?;
            mem.invalidate_code();
        } else {
            for &vpn in &rec[S_DIRTY..S_DIRTY + n] {
                if vpn < self.code.len() as u64 {
                    let a = (vpn << PAGE_SHIFT) as usize;
                    self.dev.dtoh(
                        self.mem.ptr() + a as u64,
                        &mut flat[a..a + PAGE_SIZE as usize],
                    )?;
                    code.invalidate_page(vpn);
                }
            }
        }
        self.epoch = self.epoch.wrapping_add(1).max(1);
        Ok(())
    }

    /// Runs from `st` until the first stop or `max` more instructions, the way
    /// `cpu::run(st, mem, code, max)` would (same stop, registers, memory, count). `mem` is
    /// the host mirror (flat memory of the lane's size, up to date with the device on entry;
    /// so it is again on return); `code` the CPU engine's cache for host steps.
    /// `keep_going(retired so far)` is asked after each launch; false ends the run early.
    pub fn run(
        &mut self,
        st: &mut CpuState,
        mem: &mut AddressSpace,
        code: &mut cpu::CodeCache,
        max: u64,
        keep_going: &mut dyn FnMut(u64) -> bool,
    ) -> Result<BareEnd, Error> {
        self.dev.bind()?;
        let first = st.retired;
        let limit = first.saturating_add(max);
        let mut upload = true;
        loop {
            if upload {
                self.upload_record(st, limit)?;
            }
            let rec = self.launch()?;
            let stop = rec[S_STOP] as u32;
            let go = keep_going(rec[S_RETIRED] - first);
            if stop == STOP_SLICE {
                if !go {
                    self.take_state(&rec, st, mem, code)?;
                    return Ok(BareEnd::Interrupted);
                }
                upload = false;
                continue;
            }
            self.take_state(&rec, st, mem, code)?;
            upload = true;
            let info = rec[S_INFO];
            let end = match stop {
                STOP_SVC => Stop::Syscall,
                STOP_HLT => Stop::Halt(info as u16),
                STOP_BRK => Stop::Breakpoint(info as u16),
                STOP_UNDEFINED => Stop::Undefined(info as u32),
                STOP_LIMIT => Stop::Budget,
                STOP_HOST | STOP_MISS_R | STOP_MISS_W => {
                    let pc = st.pc;
                    let vpn = pc >> PAGE_SHIFT;
                    if stop == STOP_HOST
                        && pc & 3 == 0
                        && pc < self.size
                        && !self.code[vpn as usize]
                        && st.retired < limit
                    {
                        // Code not decoded yet: decode its page and go on.
                        let (_, flat) = mem.flat().expect("flat memory");
                        self.make_code(vpn, flat)?;
                    } else {
                        // The CPU engine runs the instruction: a store into code, a fault,
                        // an operation the kernel leaves to the host.
                        let left = limit - st.retired;
                        let budget = left.min(1);
                        mem.gpu_track_writes();
                        let s = cpu::run(st, mem, code, budget);
                        let written = mem.gpu_take_written();
                        self.host_steps += 1;
                        let (_, flat) = mem.flat().expect("flat memory");
                        for vpn in written {
                            if vpn < self.code.len() as u64 {
                                self.host_wrote(vpn << PAGE_SHIFT, PAGE_SIZE, flat)?;
                            }
                        }
                        if !(s == Stop::Budget && budget < left) {
                            return Ok(BareEnd::Stop(s));
                        }
                    }
                    if !go {
                        return Ok(BareEnd::Interrupted);
                    }
                    continue;
                }
                s => {
                    return Err(Error::Device(format!(
                        "the kernel stopped the bare lane with code {s} ({})",
                        stop_name(s)
                    )))
                }
            };
            return Ok(BareEnd::Stop(end));
        }
    }
}
