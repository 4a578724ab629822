//! Relations, hash indexes and semi-naive evaluation of compiled strata.
//!
//! A relation stores its rows flat (`arity` values per row) and only ever appends within one evaluation, so
//! a row is named by its number and "the rows of the previous round" are a range of numbers. Each index
//! (one per set of bound columns some plan uses) maps a key to the newest row with that key and chains
//! older rows through `next`; walking a chain therefore visits rows newest first and can stop as soon as it
//! passes below the range being read, which makes delta lookups touch only delta rows.

use hashbrown::HashTable;

use crate::error::{Error, Result};
use crate::parser::{ArithOp, CmpOp};
use crate::program::{Arg, CExpr, CRule, Program, Source, Step, Stratum};
use crate::value::{hash_values, Value};

const NONE: u32 = u32::MAX;

/// `a op b`, or `None` when undefined (division by zero, overflow, non-finite float, arithmetic on a
/// symbol): the rule instance then derives nothing, as in clingo.
pub(crate) fn arith(op: ArithOp, a: Value, b: Value) -> Option<Value> {
    if let ArithOp::Min | ArithOp::Max = op {
        // By value, as comparisons order numbers; the value keeps its type (min(2, 3.5) is 2).
        if matches!(a, Value::Sym(_)) || matches!(b, Value::Sym(_)) {
            return None;
        }
        let a_first = a.compare(b).is_le() == (op == ArithOp::Min);
        return Some(if a_first { a } else { b });
    }
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => match op {
            ArithOp::Add => x.checked_add(y),
            ArithOp::Sub => x.checked_sub(y),
            ArithOp::Mul => x.checked_mul(y),
            // Integer division truncates toward zero, like Soufflé and C.
            ArithOp::Div => x.checked_div(y),
            ArithOp::Mod => x.checked_rem(y),
            ArithOp::Min | ArithOp::Max => None,
        }
        .map(Value::Int),
        (Value::Sym(_), _) | (_, Value::Sym(_)) => None,
        (a, b) => {
            let (x, y) = (a.as_f64()?, b.as_f64()?);
            let r = match op {
                ArithOp::Add => x + y,
                ArithOp::Sub => x - y,
                ArithOp::Mul => x * y,
                ArithOp::Div => x / y,
                ArithOp::Mod => x % y,
                ArithOp::Min | ArithOp::Max => return None,
            };
            r.is_finite().then(|| Value::from(r))
        }
    }
}

pub(crate) fn eval_expr(e: &CExpr, regs: &[Value]) -> Option<Value> {
    match e {
        CExpr::Const(v) => Some(*v),
        CExpr::Slot(s) => Some(regs[*s]),
        CExpr::Neg(a) => match eval_expr(a, regs)? {
            Value::Int(i) => i.checked_neg().map(Value::Int),
            Value::Float(x) => Some(Value::from(-x.get())),
            Value::Sym(_) => None,
        },
        CExpr::Bin(op, a, b) => arith(*op, eval_expr(a, regs)?, eval_expr(b, regs)?),
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

pub(crate) fn compare(op: CmpOp, a: Value, b: Value) -> bool {
    let ord = a.compare(b);
    match op {
        CmpOp::Eq => ord.is_eq(),
        CmpOp::Ne => ord.is_ne(),
        CmpOp::Lt => ord.is_lt(),
        CmpOp::Le => ord.is_le(),
        CmpOp::Gt => ord.is_gt(),
        CmpOp::Ge => ord.is_ge(),
    }
}

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
    set: HashTable<u32>,
    indexes: Vec<Index>,
}

impl Relation {
    pub(crate) fn new(arity: usize, index_specs: &[Vec<usize>]) -> Self {
        Relation {
            arity,
            data: Vec::new(),
            len: 0,
            set: HashTable::new(),
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
        let arity = self.arity;
        let data = &self.data;
        self.set
            .find(hash, |&r| {
                let row = &data[r as usize * arity..(r as usize + 1) * arity];
                row.iter().enumerate().all(|(i, v)| *v == tuple(i))
            })
            .copied()
    }

    pub(crate) fn contains(&self, tuple: &[Value]) -> bool {
        self.find_hashed(hash_values(tuple.iter().copied()), |i| tuple[i])
            .is_some()
    }

    /// Inserts `tuple`; false when it was already present.
    pub(crate) fn insert(&mut self, tuple: &[Value]) -> bool {
        let hash = hash_values(tuple.iter().copied());
        if self.find_hashed(hash, |i| tuple[i]).is_some() {
            return false;
        }
        self.push_new(hash, tuple);
        true
    }

    /// Appends a tuple known to be absent.
    fn push_new(&mut self, hash: u64, tuple: &[Value]) {
        let row = self.len as u32;
        self.data.extend_from_slice(tuple);
        self.len += 1;
        let (arity, data) = (self.arity, &self.data);
        self.set.insert_unique(hash, row, |&r| {
            hash_values(data[r as usize * arity..(r as usize + 1) * arity].iter().copied())
        });
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

    /// Brings every index up to date with the rows.
    fn update_indexes(&mut self) {
        let (arity, data, len) = (self.arity, &self.data, self.len);
        for index in &mut self.indexes {
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
    }

    /// The newest row whose `index` columns equal `key`; older ones follow through [`Relation::next_in`].
    #[inline]
    fn chain_head(&self, index: usize, key: &[Arg], regs: &[Value]) -> u32 {
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
    fn next_in(&self, index: usize, row: u32) -> u32 {
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

/// All relations of a program plus the scratch space of evaluation, reused from tick to tick.
#[derive(Debug, Clone)]
pub(crate) struct Database {
    pub rels: Vec<Relation>,
    pending: Vec<Relation>,
    /// Per predicate, the row count before the previous round (`prev`) and now (`len`).
    bounds: Vec<(usize, usize)>,
    regs: Vec<Value>,
    head_buf: Vec<Value>,
}

impl Database {
    pub(crate) fn new(program: &Program) -> Self {
        let rels: Vec<Relation> = program
            .preds
            .iter()
            .zip(&program.index_specs)
            .map(|(p, specs)| Relation::new(p.arity, specs))
            .collect();
        let pending = program
            .preds
            .iter()
            .map(|p| Relation::new(p.arity, &[]))
            .collect();
        Database {
            bounds: vec![(0, 0); rels.len()],
            rels,
            pending,
            regs: Vec::new(),
            head_buf: Vec::new(),
        }
    }

    pub(crate) fn clear(&mut self) {
        for rel in &mut self.rels {
            rel.clear();
        }
    }

    fn total_rows(&self) -> usize {
        self.rels.iter().map(Relation::len).sum()
    }

    /// Evaluates every stratum in order; the relations must already hold the input facts.
    pub(crate) fn evaluate(&mut self, program: &Program, max_tuples: usize) -> Result<()> {
        for stratum in &program.strata {
            self.eval_stratum(stratum, max_tuples)?;
        }
        Ok(())
    }

    fn eval_stratum(&mut self, stratum: &Stratum, max_tuples: usize) -> Result<()> {
        // First round: every rule over everything known so far.
        self.begin_round();
        for rule in &stratum.rules {
            self.run(rule, &rule.full);
        }
        let mut grew = self.commit(stratum, max_tuples)?;
        if !stratum.recursive {
            return Ok(());
        }
        // Later rounds: only derivations that use at least one row new in the previous round.
        while grew {
            self.begin_round();
            for rule in &stratum.rules {
                for (pred, plan) in &rule.deltas {
                    let (prev, len) = self.bounds[*pred];
                    if len > prev {
                        self.run(rule, plan);
                    }
                }
            }
            grew = self.commit(stratum, max_tuples)?;
        }
        Ok(())
    }

    fn begin_round(&mut self) {
        for (rel, bound) in self.rels.iter_mut().zip(&mut self.bounds) {
            rel.update_indexes();
            bound.1 = rel.len();
        }
    }

    /// Moves this round's new tuples into their relations; true when any relation of the stratum grew.
    fn commit(&mut self, stratum: &Stratum, max_tuples: usize) -> Result<bool> {
        let mut grew = false;
        for &p in &stratum.preds {
            let pending = &mut self.pending[p];
            let rel = &mut self.rels[p];
            self.bounds[p].0 = rel.len();
            if pending.len() > 0 {
                grew = true;
                rel.set.reserve(pending.len(), |&r| {
                    let (a, d) = (rel.arity, &rel.data);
                    hash_values(d[r as usize * a..(r as usize + 1) * a].iter().copied())
                });
                rel.data.reserve(pending.data.len());
                for r in 0..pending.len() {
                    let tuple = pending.row(r);
                    // Pending rows were checked against the relation when derived, and the relation did
                    // not change during the round.
                    rel.push_new(hash_values(tuple.iter().copied()), tuple);
                }
                pending.clear();
            }
        }
        if grew && self.total_rows() > max_tuples {
            return Err(Error::TupleLimit { limit: max_tuples });
        }
        Ok(grew)
    }

    fn run(&mut self, rule: &CRule, steps: &[Step]) {
        self.regs.clear();
        self.regs.resize(rule.slots, Value::Int(0));
        let mut regs = std::mem::take(&mut self.regs);
        let mut head_buf = std::mem::take(&mut self.head_buf);
        let (head_rel, rest) = (&self.rels[rule.head], &self.rels);
        let mut exec = Exec {
            rels: rest,
            bounds: &self.bounds,
            head_rel,
            pending: &mut self.pending[rule.head],
            head: &rule.head_args,
            head_buf: &mut head_buf,
        };
        exec.step(steps, 0, &mut regs);
        self.regs = regs;
        self.head_buf = head_buf;
    }
}

struct Exec<'a> {
    rels: &'a [Relation],
    bounds: &'a [(usize, usize)],
    head_rel: &'a Relation,
    pending: &'a mut Relation,
    head: &'a [CExpr],
    head_buf: &'a mut Vec<Value>,
}

impl Exec<'_> {
    #[inline]
    fn range(&self, pred: usize, source: Source) -> (usize, usize) {
        let (prev, len) = self.bounds[pred];
        match source {
            Source::All => (0, len),
            Source::Delta => (prev, len),
            Source::Old => (0, prev),
        }
    }

    fn emit(&mut self, regs: &[Value]) {
        self.head_buf.clear();
        for e in self.head {
            match eval_expr(e, regs) {
                Some(v) => self.head_buf.push(v),
                None => return,
            }
        }
        // One hash serves both probes: most derivations in a recursive stratum are already known.
        let tuple = self.head_buf.as_slice();
        let hash = hash_values(tuple.iter().copied());
        if self.head_rel.find_hashed(hash, |i| tuple[i]).is_none()
            && self.pending.find_hashed(hash, |i| tuple[i]).is_none()
        {
            self.pending.push_new(hash, tuple);
        }
    }

    fn step(&mut self, steps: &[Step], i: usize, regs: &mut [Value]) {
        let Some(step) = steps.get(i) else {
            self.emit(regs);
            return;
        };
        let rels = self.rels;
        match step {
            Step::Scan {
                pred,
                source,
                index,
                key,
                binds,
                same,
            } => {
                let range = self.range(*pred, *source);
                rels[*pred].for_each_match(*index, key, range, regs, |row, regs| {
                    if bind_row(row, same, binds, regs) {
                        self.step(steps, i + 1, regs);
                    }
                });
            }
            Step::Contains { pred, source, args } => {
                let rel = &rels[*pred];
                let (lo, hi) = self.range(*pred, *source);
                let hash = hash_values(args.iter().map(|a| a.get(regs)));
                if let Some(r) = rel.find_hashed(hash, |c| args[c].get(regs)) {
                    if (lo..hi).contains(&(r as usize)) {
                        self.step(steps, i + 1, regs);
                    }
                }
            }
            Step::NotContains { pred, args } => {
                let rel = &rels[*pred];
                let hash = hash_values(args.iter().map(|a| a.get(regs)));
                if rel.find_hashed(hash, |c| args[c].get(regs)).is_none() {
                    self.step(steps, i + 1, regs);
                }
            }
            Step::NotExists { pred, index, key } => {
                let rel = &rels[*pred];
                let exists = match index {
                    None => rel.len() > 0,
                    Some(ix) => rel.chain_head(*ix, key, regs) != NONE,
                };
                if !exists {
                    self.step(steps, i + 1, regs);
                }
            }
            Step::Aggregate {
                inner,
                op,
                value,
                out,
                out_bound,
            } => {
                let Some(result) = crate::aggregate::fold(rels, inner, *op, value.as_ref(), regs) else {
                    return;
                };
                if *out_bound {
                    if compare(CmpOp::Eq, regs[*out], result) {
                        self.step(steps, i + 1, regs);
                    }
                } else {
                    regs[*out] = result;
                    self.step(steps, i + 1, regs);
                }
            }
            Step::Filter { op, lhs, rhs } => {
                if let (Some(a), Some(b)) = (eval_expr(lhs, regs), eval_expr(rhs, regs)) {
                    if compare(*op, a, b) {
                        self.step(steps, i + 1, regs);
                    }
                }
            }
            Step::Assign { slot, expr } => {
                if let Some(v) = eval_expr(expr, regs) {
                    regs[*slot] = v;
                    self.step(steps, i + 1, regs);
                }
            }
        }
    }
}
