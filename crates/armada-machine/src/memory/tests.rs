//! The address space's tests: mapping, faults, copy-on-write, caps, flat memory, windows.

use super::*;

#[test]
fn map_read_write_fault() {
    let mut m = AddressSpace::new();
    m.map(0x10000, 0x2000, Perm::RW).unwrap();
    assert_eq!(m.read_u64(0x10000).unwrap(), 0);
    m.write_u64(0x10ffc, 0x1122334455667788).unwrap(); // crosses a page
    assert_eq!(m.read_u64(0x10ffc).unwrap(), 0x1122334455667788);
    assert_eq!(m.read_u32(0x11000).unwrap(), 0x11223344);
    let f = m.read_u8(0x12000).unwrap_err();
    assert_eq!(f.addr, 0x12000);
    assert!(!f.mapped);
    m.protect(0x10000, 0x1000, Perm::R).unwrap();
    let f = m.write_u8(0x10000, 1).unwrap_err();
    assert!(f.mapped);
    assert_eq!(f.access, Access::Write);
    // a write that straddles into a read-only page changes nothing
    m.protect(0x10000, 0x1000, Perm::RW).unwrap();
    m.protect(0x11000, 0x1000, Perm::R).unwrap();
    assert!(m.write_u64(0x10ffc, 0).is_err());
    assert_eq!(m.read_u64(0x10ffc).unwrap(), 0x1122334455667788);
}

#[test]
fn kept_writes_give_each_page_its_bytes_before_the_first_write() {
    let mut m = AddressSpace::new();
    m.map(0x10000, 0x3000, Perm::RW).unwrap();
    m.write_u64(0x10010, 5).unwrap();
    m.gpu_track_writes_keep();
    m.write_u64(0x10010, 6).unwrap();
    m.write_u64(0x10010, 7).unwrap();
    m.write_bytes(0x11ff8, &[1; 16]).unwrap(); // two pages, one never written
    let w = m.gpu_take_written_keep();
    assert_eq!(
        w.iter().map(|p| p.0).collect::<Vec<_>>(),
        [0x10, 0x11, 0x12]
    );
    let kept: Vec<&PageData> = w.iter().map(|p| p.1.as_deref().unwrap()).collect();
    assert_eq!(kept[0][0x10], 5);
    assert!(kept[1].iter().chain(kept[2].iter()).all(|&b| b == 0));
    assert_eq!(m.read_u64(0x10010).unwrap(), 7);
    // tracking ended: no more pages are kept
    m.write_u64(0x10010, 8).unwrap();
    m.gpu_track_writes();
    assert!(m.gpu_take_written().is_empty());
    // a written page dropped (MADV_DONTNEED maps it again): reported, its bytes unknown
    m.gpu_track_writes_keep();
    m.write_u64(0x11000, 9).unwrap();
    m.map(0x10000, 0x2000, Perm::RW).unwrap();
    let w = m.gpu_take_written_keep();
    assert_eq!(w.iter().map(|p| p.0).collect::<Vec<_>>(), [0x10, 0x11]);
    assert!(w.iter().all(|p| p.1.is_none()));
}

#[test]
fn shared_pages_copy_on_write() {
    let data = Arc::new(PageBuf::from_bytes(&[7u8; PAGE_SIZE as usize]));
    let mut a = AddressSpace::new();
    a.map(0x4000, 0x1000, Perm::RW).unwrap();
    a.share_page(4, data.clone());
    let mut b = a.clone();
    assert_eq!(b.read_u8(0x4000).unwrap(), 7);
    b.write_u8(0x4000, 9).unwrap();
    assert_eq!(b.read_u8(0x4000).unwrap(), 9);
    assert_eq!(a.read_u8(0x4000).unwrap(), 7);
    assert_eq!(data[0], 7);
    assert_eq!(b.private_bytes(), PAGE_SIZE);
}

/// A fork after writes to few pages (their TLB entries cleared one by one) and after writes
/// to many (the whole TLB cleared), several times over: neither side's later writes reach
/// the other, and pages spread over several chunks of the page map stay apart.
#[test]
fn forks_after_few_and_many_writes_stay_apart() {
    for pages in [3u64, 16, 17, 150] {
        let mut a = AddressSpace::new();
        a.map(0x100000, 0x200000, Perm::RW).unwrap();
        for round in 1..=3u8 {
            for p in 0..pages {
                a.write_u8(0x100000 + p * PAGE_SIZE * 3, round).unwrap();
            }
            let mut b = a.fork();
            for p in 0..pages {
                let at = 0x100000 + p * PAGE_SIZE * 3;
                a.write_u8(at, 100 + round).unwrap();
                assert_eq!(
                    b.read_u8(at).unwrap(),
                    round,
                    "{pages} pages, round {round}"
                );
                b.write_u8(at, 200).unwrap();
                assert_eq!(a.read_u8(at).unwrap(), 100 + round);
            }
            drop(b);
        }
    }
}

#[test]
fn limit_faults_alone() {
    let mut m = AddressSpace::new();
    m.set_limit(2 * PAGE_SIZE);
    m.map(0x10000, 0x10000, Perm::RW).unwrap();
    m.write_u8(0x10000, 1).unwrap();
    m.write_u8(0x11000, 1).unwrap();
    assert!(m.write_u8(0x12000, 1).is_err());
    m.unmap(0x10000, 0x1000).unwrap();
    m.write_u8(0x12000, 1).unwrap();
}

/// A page written before anything read it and a page read first (the shared zero page
/// until its first write) each count once against the cap, and a write over the cap
/// changes nothing.
#[test]
fn first_writes_count_once_whether_read_before_or_not() {
    let mut m = AddressSpace::new();
    m.set_limit(2 * PAGE_SIZE);
    m.map(0x10000, 0x4000, Perm::RW).unwrap();
    m.write_u8(0x10008, 1).unwrap();
    assert_eq!(m.private_bytes(), PAGE_SIZE);
    m.write_u8(0x10010, 2).unwrap();
    assert_eq!(m.private_bytes(), PAGE_SIZE);
    assert_eq!(m.read_u8(0x11000).unwrap(), 0);
    assert_eq!(m.private_bytes(), PAGE_SIZE);
    m.write_u8(0x11000, 3).unwrap();
    assert_eq!(m.private_bytes(), 2 * PAGE_SIZE);
    // over the cap: a page never touched, and one that was read
    assert_eq!(m.read_u8(0x12000).unwrap(), 0);
    assert!(m.write_u8(0x12000, 4).is_err());
    assert!(m.write_u8(0x13000, 4).is_err());
    assert_eq!(m.private_bytes(), 2 * PAGE_SIZE);
    assert_eq!(m.read_u8(0x12000).unwrap(), 0);
    assert_eq!(m.read_u8(0x13000).unwrap(), 0);
    assert_eq!(
        (m.read_u8(0x10008).unwrap(), m.read_u8(0x10010).unwrap()),
        (1, 2)
    );
    assert_eq!(m.read_u8(0x11000).unwrap(), 3);
}

#[test]
fn flat_memory_is_one_buffer() {
    let mut m = AddressSpace::with_flat(0, 0x10000, Perm::RWX).unwrap();
    m.write_u64(0x1ffc, 0x1122_3344_5566_7788).unwrap();
    let (base, buf) = m.flat().unwrap();
    assert_eq!(base, 0);
    assert_eq!(
        &buf[0x1ffc..0x2004],
        &0x1122_3344_5566_7788u64.to_le_bytes()
    );
    m.flat_mut().unwrap().1[0x3000] = 0xab;
    assert_eq!(m.read_u8(0x3000).unwrap(), 0xab);
    assert!(m.read_u8(0x10000).is_err());
    let c = m.clone();
    assert_eq!(c.flat().unwrap().1[0x3000], 0xab);
}

/// The window's rule (see `window.rs`): every page with a read tag in the TLB is shown
/// in the window with its current bytes, and every page with a write tag writable; and
/// the entries point into the window.
fn check_window(m: &AddressSpace) {
    if let Some(w) = m.retired.as_ref() {
        assert!(
            w.shown_pages().is_empty(),
            "a window given up shows nothing"
        );
        assert!(m.window.is_none());
    }
    let Some(w) = m.window.as_ref() else { return };
    for e in m.tlb.iter() {
        for (tag, ptr, write) in [(e.rtag, e.rptr, false), (e.wtag, e.wptr.cast_const(), true)] {
            if tag == NO_TAG {
                continue;
            }
            let vpn = tag >> PAGE_SHIFT;
            assert_eq!(
                ptr,
                w.base(),
                "page {vpn:#x}'s entry points into the window"
            );
            let page = &m.pages.get(vpn).expect("a page in the TLB").data;
            let zero = Arc::ptr_eq(page, zero_page_ref()) && !w.guarded();
            let shown = w.shows(vpn, if zero { None } else { page.slot() });
            assert!(shown.is_some(), "page {vpn:#x} is shown with its buffer");
            assert!(
                !write || shown == Some(true),
                "page {vpn:#x} is shown writable"
            );
            // SAFETY: the window shows the page (just checked).
            let bytes = unsafe {
                std::slice::from_raw_parts(w.base().add(tag as usize), PAGE_SIZE as usize)
            };
            assert_eq!(bytes, &page[..], "page {vpn:#x}'s bytes in the window");
        }
    }
    if !w.guarded() {
        return;
    }
    // A guarded window is read and written with no TLB lookup: every page it shows is the
    // page's current buffer, and writable only where a write tag would be allowed.
    for (vpn, slot, writable) in w.shown_pages() {
        let page = &m
            .pages
            .get(vpn)
            .expect("a page shown is a page of the space")
            .data;
        assert_eq!(
            page.slot(),
            Some(slot),
            "page {vpn:#x} is shown with its buffer"
        );
        let perm = m.area_at(vpn << PAGE_SHIFT).map(|a| a.2);
        assert!(
            perm.is_some_and(|p| p.contains(Perm::R)),
            "page {vpn:#x} is readable"
        );
        if writable {
            assert_eq!(
                Arc::strong_count(page),
                1,
                "page {vpn:#x} shown writable is private"
            );
            assert!(
                perm.unwrap().contains(Perm::W),
                "page {vpn:#x} shown writable may be written"
            );
            assert!(
                !m.code_pages.contains(&vpn),
                "page {vpn:#x} shown writable is not code"
            );
        }
    }
}

/// (One test: the walks and the limit's check count on no other test holding windows.)
#[test]
fn windows_show_every_page_the_tlb_holds() {
    window_walk(false, usize::MAX);
    // guarded windows show only what the guest may do, and nothing stale
    window_walk(true, usize::MAX);
    // ... also when past their share of mappings, where they are given up
    let given_up = window_walk(true, 6);
    assert!(given_up > 0, "the small cap gave windows up");
    window_limit();
}

/// 4,000 random steps over a few address spaces with windows (`guarded` or not), checking
/// the windows' rules after each (`check_window`). Returns how many guarded windows were
/// given up.
fn window_walk(guarded: bool, cap: usize) -> usize {
    set_windows(true);
    if !windows_possible() {
        return 1;
    }
    let mut given_up = 0;
    let new_space = || {
        let mut m = AddressSpace::new();
        m.set_guards(guarded);
        m.set_window_cap(cap);
        m
    };
    let mut r = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        r % n
    };
    let image = Arc::new(PageBuf::from_bytes(&[3u8; PAGE_SIZE as usize]));
    let base = 0x40_0000u64;
    let mut spaces = vec![new_space()];
    spaces[0].map(base, 16 * PAGE_SIZE, Perm::RW).unwrap();
    spaces[0].tlb_view();
    assert!(spaces[0].has_window());
    assert_eq!(spaces[0].guarded(), guarded);
    for _ in 0..4000 {
        let i = next(spaces.len() as u64) as usize;
        let addr = base + next(16 * PAGE_SIZE - 8);
        let n = spaces.len();
        let m = &mut spaces[i];
        match next(13) {
            12 => {
                m.mark_code_page(addr >> PAGE_SHIFT);
                // (where translated code has left it)
                given_up += m.window_retired() as usize;
                m.drop_retired_window();
            }
            0..=3 => {
                let _ = m.read_u64(addr);
            }
            10 | 11 => {
                // a guarded access's host fault (translated code's way to a page)
                let shown = m.guard_fault(addr, Some(next(2) == 0));
                assert!(!shown || guarded);
            }
            4..=6 => {
                let _ = m.write_u64(addr, next(1 << 40));
            }
            7 if n < 4 => {
                let mut child = spaces[i].fork();
                child.set_guards(guarded);
                child.set_window_cap(cap);
                child.tlb_view();
                spaces.push(child);
            }
            7 => {
                spaces.swap_remove(i);
            }
            8 => {
                let page = addr & !PAGE_MASK;
                m.map(page, PAGE_SIZE, Perm::RW).unwrap();
                if next(2) == 0 {
                    m.share_page(page >> PAGE_SHIFT, image.clone());
                }
            }
            _ => {
                let page = addr & !PAGE_MASK;
                let perm = [Perm::R, Perm::RW][next(2) as usize];
                m.protect(page, PAGE_SIZE, perm).unwrap();
            }
        }
        for m in &spaces {
            check_window(m);
        }
        if spaces.is_empty() {
            spaces.push(new_space());
            spaces[0].map(base, 16 * PAGE_SIZE, Perm::RW).unwrap();
            spaces[0].tlb_view();
        }
    }
    given_up
}

fn window_limit() {
    if !windows_possible() {
        return;
    }
    // Windows are few: the address spaces past the limit go without, and a dropped
    // one's window can be had again. (No other test of this crate makes windows but the
    // two walks, which hold a few at most.)
    let mut many: Vec<AddressSpace> = (0..window::MAX_WINDOWS + 2)
        .map(|_| {
            let mut m = AddressSpace::new();
            m.tlb_view();
            m
        })
        .collect();
    let with = many.iter().filter(|m| m.has_window()).count();
    assert_eq!(with, window::MAX_WINDOWS);
    let mut without = many.split_off(window::MAX_WINDOWS);
    assert!(without.iter().all(|m| !m.has_window()));
    drop(many);
    // one that went without gets one when it asks again
    without[0].tlb_view();
    assert!(without[0].has_window());
}

#[test]
fn find_free_goes_down() {
    let mut m = AddressSpace::new();
    m.map(0x7000_0000, 0x1000, Perm::RW).unwrap();
    let a = m.find_free(0x2000, 0x1000_0000, 0x8000_0000).unwrap();
    assert_eq!(a, 0x8000_0000 - 0x2000);
    m.map(a, 0x2000, Perm::RW).unwrap();
    let b = m.find_free(0x1000, 0x1000_0000, 0x8000_0000).unwrap();
    assert_eq!(b, a - 0x1000);
}

/// A cap of 0 pages (`Lane::without_windows`: lanes that run many at once) means no window
/// at all, for the address space and for its forks and execs.
#[test]
fn a_cap_of_no_pages_means_no_window() {
    set_windows(true);
    let mut m = AddressSpace::new();
    m.set_window_cap(0);
    m.map(0x40_0000, PAGE_SIZE, Perm::RW).unwrap();
    m.write_u64(0x40_0000, 7).unwrap();
    m.tlb_view();
    assert!(!m.has_window());
    let mut child = m.fork();
    child.tlb_view();
    assert!(!child.has_window());
    let mut exec = m.empty_in_lane();
    exec.tlb_view();
    assert!(!exec.has_window());
    assert_eq!(child.read_u64(0x40_0000).unwrap(), 7);
}
