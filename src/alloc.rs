//! The binary's allocator: mimalloc 2 (the crate's `v2` line), entered through its plain
//! `mi_malloc` wherever the alignment asked for is one `malloc` already gives.
//!
//! The `mimalloc` crate sends every allocation through `mi_malloc_aligned`, whose fast path
//! (in the mimalloc 3 it builds by default) holds only while a small page of the right size
//! has a free block at hand; otherwise it over-allocates on a slow path. hyper's 8 KiB read
//! buffer, renewed per response while the previous response still holds a slice of it, cost
//! about 600 instructions per allocation there. `mi_malloc` returns blocks aligned to 16 bytes
//! from 16 bytes of size on (the alignment C's `malloc` owes to `max_align_t`), and to their
//! size below that, so a layout whose alignment is at most 16 and at most its size needs
//! nothing more: the rule std's own system allocator follows. Callgrind, `bench generator`
//! (naive, 64 connections, nginx), instructions per request: 19,775 with the crate, 19,295
//! through `mi_malloc` on mimalloc 3, 19,014 on mimalloc 2.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// Turns transparent huge pages off for this process, before the load allocates much.
///
/// mimalloc commits its arenas eagerly, and where the host allows transparent huge pages
/// (`madvise` or `always`) the kernel backs them with 2 MiB pages, every one resident in
/// full as soon as one byte of it is touched. A rehearsal holding thousands of requests in
/// flight then paid for pages it barely used: `bench memory` (4,000 hanging HTTP/1.1
/// requests) measured 36,615 bytes per request in flight with 75,776 KiB of huge pages in
/// `smaps_rollup`, against about 27,000 without. The figure also moved with a host setting;
/// with huge pages off it does not. A failure (a kernel without the prctl) changes nothing.
pub fn without_huge_pages() {
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
}

/// The alignment every `mi_malloc` block of at least this size has.
const MALLOC_ALIGN: usize = 16;

/// mimalloc as the global allocator (see the module docs).
pub struct Mimalloc;

#[inline(always)]
fn plain(layout: &Layout) -> bool {
    layout.align() <= MALLOC_ALIGN && layout.align() <= layout.size()
}

// SAFETY: every block comes from mimalloc with at least the layout's alignment (see
// `plain`), and every block is given back to mimalloc, which frees aligned and plain blocks
// alike with `mi_free`.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if plain(&layout) {
            mi::mi_malloc(layout.size()).cast()
        } else {
            mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if plain(&layout) {
            mi::mi_zalloc(layout.size()).cast()
        } else {
            mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        mi::mi_free(ptr.cast::<c_void>());
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= MALLOC_ALIGN && layout.align() <= new_size {
            mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
        } else {
            mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of every size and alignment up to a page come back aligned as asked, keep
    /// their bytes through a realloc, and zeroed ones are zero.
    #[test]
    fn blocks_are_aligned_and_keep_their_contents() {
        let a = Mimalloc;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 128, 4096] {
            for size in [1usize, 7, 8, 16, 24, 48, 100, 1024, 8192, 70_000] {
                let size = size.max(align);
                let layout = Layout::from_size_align(size, align).unwrap();
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    p.write_bytes(0xA5, size);
                    let q = a.realloc(p, layout, size * 2);
                    assert_eq!(q as usize % align, 0, "realloc {size} align {align}");
                    assert!((0..size).all(|i| *q.add(i) == 0xA5));
                    a.dealloc(q, Layout::from_size_align(size * 2, align).unwrap());
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
