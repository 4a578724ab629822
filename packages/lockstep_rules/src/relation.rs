//! Relations: sets of tuples stored flat, with their duplicate-check table and hash indexes.
//!
//! A relation stores its rows flat (`arity` values per row) and only ever appends within one evaluation, so
//! a row is named by its number and "the rows of the previous round" are a range of numbers. Each index
//! (one per set of bound columns some plan uses) maps a key to the newest row with that key and chains
//! older rows through `next`; walking a chain therefore visits rows newest first and can stop as soon as it
//! passes below the range being read, which makes delta lookups touch only delta rows.

use hashbrown::HashTable;

use crate::program::Arg;
use crate::table::{prefetch, RowTable};
use crate::value::{hash_values, Value};

/// The end of a chain (and no row).
pub(crate) const NONE: u32 = u32::MAX;

/// Rows with the same values on `cols`, chained newest first.
#[derive(Debug, Clone)]
struct Index {
    cols: Vec<usize>,
    heads: HashTable<u32>,
    next: Vec<u32>,
    /// Rows `0..indexed` are in the index.
    indexed: usize,
}

/// A set of tuples of one arity.
#[derive(Debug, Clone)]
pub(crate) struct Relation {
    arity: usize,
    data: Vec<Value>,
    len: usize,
    set: RowTable,
    indexes: Vec<Index>,
}

impl Relation {
    pub(crate) fn new(arity: usize, index_specs: &[Vec<usize>]) -> Self {
        Relation {
            arity,
            data: Vec::new(),
            len: 0,
            set: RowTable::default(),
            indexes: index_specs
                .iter()
                .map(|cols| Index {
                    cols: cols.clone(),
                    heads: HashTable::new(),
                    next: Vec::new(),
                    indexed: 0,
                })
                .collect(),
        }
    }

    /// Number of values per row.
    pub(crate) fn arity(&self) -> usize {
        self.arity
    }

    /// Number of tuples.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn row(&self, r: usize) -> &[Value] {
        &self.data[r * self.arity..(r + 1) * self.arity]
    }

    /// The row number of `tuple`, if present.
    #[inline]
    pub(crate) fn find_hashed(&self, hash: u64, tuple: impl Fn(usize) -> Value) -> Option<u32> {
        self.set.find(hash, |r| {
            self.row(r as usize)
                .iter()
                .enumerate()
                .all(|(i, v)| *v == tuple(i))
        })
    }

    pub(crate) fn contains(&self, tuple: &[Value]) -> bool {
        self.find_hashed(hash_values(tuple.iter().copied()), |i| tuple[i])
            .is_some()
    }

    /// Inserts `tuple`; false when it was already present.
    pub(crate) fn insert(&mut self, tuple: &[Value]) -> bool {
        self.insert_hashed(hash_values(tuple.iter().copied()), tuple)
    }

    /// Inserts `tuple`, whose hash is `hash`; false when it was already present.
    #[inline]
    pub(crate) fn insert_hashed(&mut self, hash: u64, tuple: &[Value]) -> bool {
        if self.find_hashed(hash, |i| tuple[i]).is_some() {
            return false;
        }
        self.set.insert_new(hash, self.len as u32);
        self.data.extend_from_slice(tuple);
        self.len += 1;
        true
    }

    /// Prefetches the first thing inserting a tuple with this hash reads: its slot of the table.
    #[inline]
    pub(crate) fn prefetch_slot(&self, hash: u64) {
        self.set.prefetch(hash);
    }

    /// Prefetches the second: the stored row that the slot names, if any (with a prefetched slot).
    #[inline]
    pub(crate) fn prefetch_row(&self, hash: u64) {
        if let Some(r) = self.set.candidate(hash) {
            if let Some(v) = self.data.get(r as usize * self.arity) {
                prefetch(v);
            }
        }
    }

    /// Empties the relation, keeping its allocations for the next tick.
    pub(crate) fn clear(&mut self) {
        self.data.clear();
        self.len = 0;
        self.set.clear();
        for index in &mut self.indexes {
            index.heads.clear();
            index.next.clear();
            index.indexed = 0;
        }
    }

    /// Brings index `index` up to date with the rows.
    pub(crate) fn update_index(&mut self, index: usize) {
        let (arity, data, len) = (self.arity, &self.data, self.len);
        let index = &mut self.indexes[index];
        let cols = &index.cols;
        let key_hash = |r: usize| hash_values(cols.iter().map(|&c| data[r * arity + c]));
        for r in index.indexed..len {
            let hash = key_hash(r);
            let same_key = |&h: &u32| {
                cols.iter()
                    .all(|&c| data[h as usize * arity + c] == data[r * arity + c])
            };
            match index.heads.find_mut(hash, same_key) {
                Some(head) => {
                    index.next.push(*head);
                    *head = r as u32;
                }
                None => {
                    index.next.push(NONE);
                    index
                        .heads
                        .insert_unique(hash, r as u32, |&h| key_hash(h as usize));
                }
            }
        }
        index.indexed = len;
    }

    /// The newest row whose `index` columns equal `key`; older ones follow through [`Relation::next_in`].
    #[inline]
    pub(crate) fn chain_head(&self, index: usize, key: &[Arg], regs: &[Value]) -> u32 {
        let ix = &self.indexes[index];
        let hash = hash_values(key.iter().map(|a| a.get(regs)));
        let (arity, data) = (self.arity, &self.data);
        ix.heads
            .find(hash, |&h| {
                ix.cols
                    .iter()
                    .zip(key)
                    .all(|(&c, a)| data[h as usize * arity + c] == a.get(regs))
            })
            .copied()
            .unwrap_or(NONE)
    }

    #[inline]
    pub(crate) fn next_in(&self, index: usize, row: u32) -> u32 {
        self.indexes[index].next[row as usize]
    }

    /// Calls `f` with each row numbered in `lo..hi` whose `index` columns equal `key` (every row of the range
    /// without an index), and the registers.
    #[inline]
    pub(crate) fn for_each_match(
        &self,
        index: Option<usize>,
        key: &[Arg],
        (lo, hi): (usize, usize),
        regs: &mut [Value],
        mut f: impl FnMut(&[Value], &mut [Value]),
    ) {
        match index {
            None => (lo..hi).for_each(|r| f(self.row(r), regs)),
            Some(ix) => {
                let mut r = self.chain_head(ix, key, regs);
                // A chain runs newest first: below `lo` nothing more is in the range.
                while r != NONE && (r as usize) >= lo {
                    if (r as usize) < hi {
                        f(self.row(r as usize), regs);
                    }
                    r = self.next_in(ix, r);
                }
            }
        }
    }
}

/// Whether `row` has equal values in the `same` column pairs (a variable repeated in an atom); if so, its
/// `binds` columns are copied into their register slots.
#[inline]
pub(crate) fn bind_row(
    row: &[Value],
    same: &[(usize, usize)],
    binds: &[(usize, usize)],
    regs: &mut [Value],
) -> bool {
    if !same.iter().all(|&(a, b)| row[a] == row[b]) {
        return false;
    }
    for &(col, slot) in binds {
        regs[slot] = row[col];
    }
    true
}
