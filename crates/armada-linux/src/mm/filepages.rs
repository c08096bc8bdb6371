//! The pages of files mapped privately (`mmap` of a file without `MAP_SHARED`: every shared
//! library, ld.so's maps of libc and libpython), read once and shared by every address space
//! that maps the same page of the same file: the lanes of a batch, a process and its forks, a
//! script's thousand execs. A lane copies such a page on its first write (relocations,
//! RELRO), as it does an image's page, so a library's code and read-only data exist once
//! however many lanes run it; the decoded-code cache (`cpu::DecodedPages`, keyed by the page's
//! buffer) and the GPU engines' frames (one a page for every lane) follow from that.
//!
//! A file is known by (device, inode, size, modification time): a file changed in place
//! gets new pages. The cache holds each page it hands out, so that no address space ever
//! holds a cached page alone (it would count as that space's private page and be written in
//! place); once the cache has grown, it lets go of the pages no address space maps any more.

use crate::Errno;
use armada_machine::memory::{PageBuf, PageData, PAGE_SIZE};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Which file a page belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FileKey {
    dev: u64,
    ino: u64,
    size: i64,
    mtime: (i64, i64),
}

impl FileKey {
    pub(crate) fn of(st: &libc::stat) -> FileKey {
        FileKey {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size,
            mtime: (st.st_mtime, st.st_mtime_nsec),
        }
    }
}

/// Whether private file mappings share the cache's pages (`ARMADA_FILE_PAGES=0`: each
/// mapping reads its own, as before the cache; for measuring what it gives).
pub(crate) fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("ARMADA_FILE_PAGES").map_or(true, |v| v != "0"))
}

/// Pages the cache holds before it first looks for ones nobody maps (16 MiB).
const FIRST_SWEEP: usize = 4096;

struct Cache {
    pages: HashMap<(FileKey, u64), Arc<PageBuf>>,
    /// Size at which the next sweep runs.
    sweep_at: usize,
}

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| {
        Mutex::new(Cache {
            pages: HashMap::new(),
            sweep_at: FIRST_SWEEP,
        })
    })
}

/// Page `index` of file `key`, from the cache, else made with `read` (which fills the page
/// from the file: bytes past its end are zeros) and kept.
pub(crate) fn page(
    key: FileKey,
    index: u64,
    read: impl FnOnce(&mut PageData) -> Result<(), Errno>,
) -> Result<Arc<PageBuf>, Errno> {
    if let Some(p) = lock().pages.get(&(key, index)) {
        return Ok(p.clone());
    }
    // (read without the lock: lanes that map different files do not wait on each other)
    let mut bytes: Box<PageData> = Box::new([0; PAGE_SIZE as usize]);
    read(&mut bytes)?;
    let fresh = Arc::new(PageBuf::from_bytes(&bytes).held_by_cache());
    let mut c = lock();
    if c.pages.len() >= c.sweep_at {
        // pages only the cache holds: no address space maps them now
        c.pages.retain(|_, p| Arc::strong_count(p) > 1);
        c.sweep_at = (2 * c.pages.len()).max(FIRST_SWEEP);
    }
    // another lane may have read it meanwhile: every lane gets the same buffer
    Ok(c.pages.entry((key, index)).or_insert(fresh).clone())
}

fn lock() -> std::sync::MutexGuard<'static, Cache> {
    cache().lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ino: u64) -> FileKey {
        FileKey {
            dev: 1,
            ino,
            size: 10,
            mtime: (0, 0),
        }
    }

    #[test]
    fn one_buffer_per_file_page() {
        let k = key(u64::MAX - 7);
        let a = page(k, 0, |b| {
            b[0] = 7;
            Ok(())
        })
        .unwrap();
        let b = page(k, 0, |_| panic!("read again")).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!((**b)[0], 7);
        // another page, another file, a failed read
        let c = page(k, 1, |_| Ok(())).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        let d = page(key(u64::MAX - 8), 0, |_| Ok(())).unwrap();
        assert!(!Arc::ptr_eq(&a, &d));
        assert!(page(key(u64::MAX - 9), 0, |_| Err(Errno::EIO)).is_err());
        // the cache's own reference: a mapper never holds a cached page alone
        assert!(Arc::strong_count(&a) >= 3);
    }
}
