//! The duplicate-check table of a relation: an open-addressing hash set of row numbers.
//!
//! Each slot is one `u64` holding the row number and 32 bits of the row's hash, so a probe reads one cache
//! line of slots and compares hashes there, touching a stored row only when its hash bits match (almost
//! always the row sought); growing the table rehashes from the slots alone, without reading any row. The
//! slot of a hash can be prefetched before the probe, which lets evaluation overlap the cache misses of
//! many head tuples instead of waiting for each in turn.

/// An empty slot; an occupied one is `(hash bits << 32) | (row + 1)`.
const EMPTY: u64 = 0;

/// The size of a table's first allocation. Tables are kept at most half full: linear probing then reads
/// about two slots on a miss, usually within one cache line.
const MIN_SLOTS: usize = 16;

#[derive(Debug, Clone, Default)]
pub(crate) struct RowTable {
    slots: Vec<u64>,
    len: usize,
}

/// The stored hash bits (the high half, as the fmix finaliser of `hash_values` mixes every input bit into
/// it); the home slot is their low bits.
#[inline]
fn tag(hash: u64) -> u32 {
    (hash >> 32) as u32
}

impl RowTable {
    /// The row for which `eq` holds among those stored with `hash`.
    #[inline]
    pub(crate) fn find(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let tag = tag(hash);
        let mask = self.slots.len() - 1;
        let mut pos = tag as usize & mask;
        loop {
            let slot = self.slots[pos];
            if slot == EMPTY {
                return None;
            }
            if (slot >> 32) as u32 == tag {
                let row = (slot as u32).wrapping_sub(1);
                if eq(row) {
                    return Some(row);
                }
            }
            pos = (pos + 1) & mask;
        }
    }

    /// The first row stored with the same hash bits as `hash`, if any: the row a `find` would compare first.
    #[inline]
    pub(crate) fn candidate(&self, hash: u64) -> Option<u32> {
        self.find(hash, |_| true)
    }

    /// Stores `row`, which no row of the table equals, under `hash`.
    pub(crate) fn insert_new(&mut self, hash: u64, row: u32) {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        Self::place(
            &mut self.slots,
            (u64::from(tag(hash)) << 32) | u64::from(row.wrapping_add(1)),
        );
        self.len += 1;
    }

    #[inline]
    fn place(slots: &mut [u64], slot: u64) {
        let mask = slots.len() - 1;
        let mut pos = (slot >> 32) as usize & mask;
        while slots[pos] != EMPTY {
            pos = (pos + 1) & mask;
        }
        slots[pos] = slot;
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(MIN_SLOTS);
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; size]);
        for slot in old.into_iter().filter(|&s| s != EMPTY) {
            Self::place(&mut self.slots, slot);
        }
    }

    /// Asks the cache for the home slot of `hash` ahead of a `find` or `insert_new`.
    #[inline]
    pub(crate) fn prefetch(&self, hash: u64) {
        if !self.slots.is_empty() {
            prefetch(&self.slots[tag(hash) as usize & (self.slots.len() - 1)]);
        }
    }

    /// Empties the table, keeping its allocation.
    pub(crate) fn clear(&mut self) {
        if self.len > 0 {
            self.slots.fill(EMPTY);
            self.len = 0;
        }
    }
}

/// A hint to bring the cache line holding `value` closer; it never faults and has no other effect.
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // `_mm_prefetch` is a safe function since Rust 1.87; the block keeps older compilers (MSRV 1.85) happy.
    #[allow(unused_unsafe)]
    // SAFETY: a prefetch only hints the cache and never accesses memory architecturally, and the pointer
    // comes from a reference anyway.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(value).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
