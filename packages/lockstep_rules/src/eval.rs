//! Semi-naive evaluation of compiled strata over [`Relation`]s.
//!
//! A round's plans read only the rows present when it began (its bounds); the tuples they derive are
//! appended to the head relation at once, past those bounds, by batches whose hash-table slots are
//! prefetched as they are derived. The next round reads them as its delta.

use crate::arith::compare;
use crate::ast::CmpOp;
use crate::error::{Error, Result};
use crate::program::{eval_expr, Arg, CExpr, CRule, Program, Source, Step, Stratum};
use crate::relation::{bind_row, Relation, NONE};
use crate::value::{hash_values, Value};

/// All relations of a program plus the scratch space of evaluation, reused from tick to tick.
#[derive(Debug, Clone)]
pub(crate) struct Database {
    pub rels: Vec<Relation>,
    /// Per predicate, the row count before the previous round (`prev`) and at the start of this one (`len`).
    /// Rows derived during a round are appended to their relation at once but lie beyond `len`, so no
    /// plan reads them before the next round.
    bounds: Vec<(usize, usize)>,
    regs: Vec<Value>,
    batch: Batch,
    memo: Memo,
}

/// What one evaluation may take: tuples held, and time (the deadline, and the seconds it was set from).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) max_tuples: usize,
    pub(crate) deadline: Option<(std::time::Instant, f64)>,
}

impl Database {
    pub(crate) fn new(program: &Program) -> Self {
        let rels: Vec<Relation> = program
            .preds
            .iter()
            .zip(&program.index_specs)
            .map(|(p, specs)| Relation::new(p.arity, specs))
            .collect();
        Database {
            bounds: vec![(0, 0); rels.len()],
            rels,
            regs: Vec::new(),
            batch: Batch::default(),
            memo: Memo::default(),
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
    pub(crate) fn evaluate(&mut self, program: &Program, bounds: Bounds) -> Result<()> {
        for stratum in &program.strata {
            self.eval_stratum(stratum, bounds)?;
        }
        Ok(())
    }

    fn eval_stratum(&mut self, stratum: &Stratum, bounds: Bounds) -> Result<()> {
        // First round: every rule over everything known so far.
        self.begin_round(&stratum.full_indexes);
        for rule in &stratum.rules {
            self.run(rule, &rule.full);
        }
        let mut grew = self.commit(stratum, bounds)?;
        if !stratum.recursive {
            return Ok(());
        }
        // Later rounds: only derivations that use at least one row new in the previous round.
        while grew {
            self.begin_round(&stratum.delta_indexes);
            for rule in &stratum.rules {
                for (pred, plan) in &rule.deltas {
                    let (prev, len) = self.bounds[*pred];
                    if len > prev {
                        self.run(rule, plan);
                    }
                }
            }
            grew = self.commit(stratum, bounds)?;
        }
        Ok(())
    }

    /// Fixes the bounds of a round and brings the `indexes` its plans read up to date.
    fn begin_round(&mut self, indexes: &[(usize, usize)]) {
        for (rel, bound) in self.rels.iter_mut().zip(&mut self.bounds) {
            bound.1 = rel.len();
        }
        for &(pred, index) in indexes {
            self.rels[pred].update_index(index);
        }
    }

    /// Ends a round: its new rows become the delta of the next; true when any relation of the stratum grew.
    fn commit(&mut self, stratum: &Stratum, bounds: Bounds) -> Result<bool> {
        let mut grew = false;
        for &p in &stratum.preds {
            let bound = &mut self.bounds[p];
            grew |= self.rels[p].len() > bound.1;
            bound.0 = bound.1;
        }
        if grew && self.total_rows() > bounds.max_tuples {
            return Err(Error::TupleLimit {
                limit: bounds.max_tuples,
            });
        }
        if let Some((deadline, secs)) = bounds.deadline {
            if grew && std::time::Instant::now() > deadline {
                return Err(Error::TimeLimit { secs });
            }
        }
        Ok(grew)
    }

    fn run(&mut self, rule: &CRule, steps: &[Step]) {
        self.regs.clear();
        self.regs.resize(rule.slots, Value::Int(0));
        let mut regs = std::mem::take(&mut self.regs);
        self.memo.keys.resize(rule.memo, Value::Int(0));
        self.memo.heads.clear();
        self.memo.heads.resize(rule.memo, UNSET);
        let mut exec = Exec {
            rels: &mut self.rels,
            bounds: &self.bounds,
            head: rule.head,
            head_args: &rule.head_args,
            batch: &mut self.batch,
            memo: &mut self.memo,
        };
        exec.step(steps, 0, &mut regs);
        exec.flush();
        self.regs = regs;
    }
}

/// The lookup memo of a plan's indexed scans (see [`crate::program::assign_memos`]): at a scan's place,
/// the key of its last lookup in `keys` and the chain head it found in `heads` (`UNSET` before the first).
#[derive(Debug, Clone, Default)]
struct Memo {
    keys: Vec<Value>,
    heads: Vec<u32>,
}

const UNSET: u32 = NONE - 1;

/// Head tuples derived but not yet inserted, and their hashes.
#[derive(Debug, Clone, Default)]
struct Batch {
    values: Vec<Value>,
    hashes: Vec<u64>,
}

/// Derived tuples are inserted by batches of this many: each one's table slot is prefetched when it is
/// derived, so the cache misses of a batch overlap instead of stalling one insertion after another.
const BATCH: usize = 32;

/// One run of a plan. The head relation is the only one written: new rows are appended past the round's
/// bounds, and every read is confined to those bounds, so reads never see this round's derivations (nor
/// does it matter when, within the round, a derived tuple is inserted).
struct Exec<'a> {
    rels: &'a mut [Relation],
    bounds: &'a [(usize, usize)],
    head: usize,
    head_args: &'a [CExpr],
    batch: &'a mut Batch,
    memo: &'a mut Memo,
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

    /// The newest row of `pred` whose `index` columns equal `key`, remembered at `memo`: indexes do not
    /// change during a run, so an unchanged key has an unchanged chain.
    #[inline]
    fn chain_head(&mut self, pred: usize, index: usize, key: &[Arg], memo: usize, regs: &[Value]) -> u32 {
        let Memo { keys, heads } = &mut *self.memo;
        let last = &mut keys[memo..memo + key.len()];
        if heads[memo] != UNSET && key.iter().zip(last.iter()).all(|(a, v)| a.get(regs) == *v) {
            return heads[memo];
        }
        for (a, v) in key.iter().zip(last.iter_mut()) {
            *v = a.get(regs);
        }
        heads[memo] = self.rels[pred].chain_head(index, key, regs);
        heads[memo]
    }

    #[inline]
    fn emit(&mut self, regs: &[Value]) {
        let values = &mut self.batch.values;
        let start = values.len();
        for e in self.head_args {
            let v = match e {
                CExpr::Slot(s) => regs[*s],
                CExpr::Const(v) => *v,
                _ => match eval_expr(e, regs) {
                    Some(v) => v,
                    None => return values.truncate(start),
                },
            };
            values.push(v);
        }
        let hash = hash_values(values[start..].iter().copied());
        self.rels[self.head].prefetch_slot(hash);
        self.batch.hashes.push(hash);
        if self.batch.hashes.len() == BATCH {
            self.flush();
        }
    }

    /// Inserts the batch in derivation order (so the rows are numbered as if inserted one by one).
    fn flush(&mut self) {
        let rel = &mut self.rels[self.head];
        let Batch { values, hashes } = &mut *self.batch;
        // The slots have arrived (or are on their way): fetch the rows they point to, for the comparison.
        for &hash in hashes.iter() {
            rel.prefetch_row(hash);
        }
        let arity = rel.arity();
        for (j, &hash) in hashes.iter().enumerate() {
            rel.insert_hashed(hash, &values[j * arity..(j + 1) * arity]);
        }
        values.clear();
        hashes.clear();
    }

    fn step(&mut self, steps: &[Step], i: usize, regs: &mut [Value]) {
        let Some(step) = steps.get(i) else {
            self.emit(regs);
            return;
        };
        match step {
            Step::Scan {
                pred,
                source,
                index,
                key,
                binds,
                same,
                memo,
            } => {
                // Rows are read by number, so that the head relation may grow (past `hi`) meanwhile.
                let (lo, hi) = self.range(*pred, *source);
                match index {
                    None => {
                        for r in lo..hi {
                            if bind_row(self.rels[*pred].row(r), same, binds, regs) {
                                self.step(steps, i + 1, regs);
                            }
                        }
                    }
                    Some(ix) => {
                        let mut r = self.chain_head(*pred, *ix, key, *memo, regs);
                        // A chain runs newest first: below `lo` nothing more is in the range.
                        while r != NONE && (r as usize) >= lo {
                            let rel = &self.rels[*pred];
                            if (r as usize) < hi && bind_row(rel.row(r as usize), same, binds, regs) {
                                self.step(steps, i + 1, regs);
                            }
                            r = self.rels[*pred].next_in(*ix, r);
                        }
                    }
                }
            }
            _ => {
                if self.passes(step, regs) {
                    self.step(steps, i + 1, regs);
                }
            }
        }
    }

    /// Whether the bindings in `regs` pass `step`, one of the steps that continue at most once (every step
    /// but a scan); an assignment or an aggregate also stores its value in `regs`.
    #[inline]
    fn passes(&self, step: &Step, regs: &mut [Value]) -> bool {
        let rels = &*self.rels;
        match step {
            Step::Contains { pred, source, args } => {
                let rel = &rels[*pred];
                let (lo, hi) = self.range(*pred, *source);
                let hash = hash_values(args.iter().map(|a| a.get(regs)));
                (rel.find_hashed(hash, |c| args[c].get(regs)))
                    .is_some_and(|r| (lo..hi).contains(&(r as usize)))
            }
            Step::NotContains { pred, args } => {
                let rel = &rels[*pred];
                let hash = hash_values(args.iter().map(|a| a.get(regs)));
                rel.find_hashed(hash, |c| args[c].get(regs)).is_none()
            }
            Step::NotExists { pred, index, key } => {
                let rel = &rels[*pred];
                let exists = match index {
                    None => rel.len() > 0,
                    Some(ix) => rel.chain_head(*ix, key, regs) != NONE,
                };
                !exists
            }
            Step::Aggregate {
                inner,
                op,
                value,
                out,
                out_bound,
            } => {
                let Some(result) = crate::aggregate::fold(rels, inner, *op, value.as_deref(), regs) else {
                    return false;
                };
                if *out_bound {
                    compare(CmpOp::Eq, regs[*out], result)
                } else {
                    regs[*out] = result;
                    true
                }
            }
            Step::Filter { op, lhs, rhs } => match (eval_expr(lhs, regs), eval_expr(rhs, regs)) {
                (Some(a), Some(b)) => compare(*op, a, b),
                _ => false,
            },
            Step::Assign { slot, expr } => match eval_expr(expr, regs) {
                Some(v) => {
                    regs[*slot] = v;
                    true
                }
                None => false,
            },
            Step::Scan { .. } => unreachable!("a scan continues once per row: `step` runs it"),
        }
    }
}
