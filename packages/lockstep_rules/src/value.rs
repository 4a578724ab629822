//! Values stored in relations: integers, floats and interned symbols.
//!
//! A [`Value`] is 16 bytes and `Copy`, so tuples are flat slices of values and joins never allocate per
//! value. Symbols (lowercase constants such as `explore` and quoted strings such as `"ice"`, which are the
//! same value, as in Soufflé) are interned once for the whole process: hashing and equality compare a `u32`.

use std::cmp::Ordering;
use std::fmt;
use std::sync::{OnceLock, RwLock};

use rustc_hash::FxHashMap;

/// An interned string. Equality and hashing are by id; ordering is by the text, so sorted output does not
/// depend on the order in which symbols were first seen.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Symbol(u32);

#[derive(Default)]
struct Interner {
    ids: FxHashMap<&'static str, u32>,
    names: Vec<&'static str>,
}

fn interner() -> &'static RwLock<Interner> {
    static INTERNER: OnceLock<RwLock<Interner>> = OnceLock::new();
    INTERNER.get_or_init(|| RwLock::new(Interner::default()))
}

impl Symbol {
    /// Interns `text`. The text lives for the rest of the process: symbols are meant for a bounded
    /// vocabulary (states, surface names), not for unbounded data such as timestamps.
    pub fn new(text: &str) -> Self {
        {
            // A poisoned lock only means another thread panicked while holding it; the table itself is
            // always consistent because every insertion is a single push + map insert.
            let guard = interner().read().unwrap_or_else(|e| e.into_inner());
            if let Some(&id) = guard.ids.get(text) {
                return Symbol(id);
            }
        }
        let mut guard = interner().write().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = guard.ids.get(text) {
            return Symbol(id);
        }
        let leaked: &'static str = Box::leak(text.to_owned().into_boxed_str());
        let id = guard.names.len() as u32;
        guard.names.push(leaked);
        guard.ids.insert(leaked, id);
        Symbol(id)
    }

    /// The symbol's text.
    pub fn as_str(self) -> &'static str {
        let guard = interner().read().unwrap_or_else(|e| e.into_inner());
        guard.names.get(self.0 as usize).copied().unwrap_or("")
    }
}

impl fmt::Debug for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl fmt::Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialOrd for Symbol {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Symbol {
    fn cmp(&self, other: &Self) -> Ordering {
        if self.0 == other.0 {
            Ordering::Equal
        } else {
            self.as_str().cmp(other.as_str())
        }
    }
}

/// A 64-bit float stored by its bits so that it can be hashed and compared for equality like the other
/// values. `-0.0` is normalised to `0.0` on construction so that the two zeros are one value.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Float(u64);

impl Float {
    /// Wraps `value`.
    pub fn new(value: f64) -> Self {
        let value = if value == 0.0 { 0.0 } else { value };
        Float(value.to_bits())
    }

    /// The float.
    pub fn get(self) -> f64 {
        f64::from_bits(self.0)
    }
}

impl fmt::Debug for Float {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.get())
    }
}

/// One argument of a fact or tuple.
///
/// Equality (and so joins, lookups and duplicate removal) is by value for numbers, as in comparisons: `2` and
/// `2.0` are the same value, so `p(2)` joins `q(2.0)` and `r(1). r(1.0).` is one fact (the first one kept).
/// An integer and a float are equal when the float is exactly that integer (beyond 2^53 a float stands for
/// several integers; only the one it converts to exactly is equal to it).
#[derive(Clone, Copy)]
pub enum Value {
    /// A signed integer, e.g. `3` or `-1`.
    Int(i64),
    /// A float, e.g. `2.5`.
    Float(Float),
    /// A symbol: `explore` or `"explore"` (the same value).
    Sym(Symbol),
}

impl Value {
    /// The integer, if this is one.
    pub fn as_i64(self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(i),
            _ => None,
        }
    }

    /// The number as a float: integers convert, symbols do not.
    pub fn as_f64(self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(i as f64),
            Value::Float(x) => Some(x.get()),
            Value::Sym(_) => None,
        }
    }

    /// The symbol's text, if this is a symbol.
    pub fn as_str(self) -> Option<&'static str> {
        match self {
            Value::Sym(s) => Some(s.as_str()),
            _ => None,
        }
    }

    /// A 64-bit key mixing the kind and the payload, used by the row hash of relations and indexes. A float
    /// that is exactly an integer hashes as that integer (they are equal).
    #[inline]
    pub(crate) fn hash_bits(self) -> u64 {
        match self {
            Value::Int(i) => i as u64,
            Value::Float(x) => match exact_int(x) {
                Some(i) => i as u64,
                None => x.0 ^ 0x9e37_79b9_7f4a_7c15,
            },
            Value::Sym(s) => u64::from(s.0) ^ 0xc2b2_ae3d_27d4_eb4f,
        }
    }

    fn rank(self) -> u8 {
        match self {
            Value::Int(_) | Value::Float(_) => 0,
            Value::Sym(_) => 1,
        }
    }

    /// The order used by comparison literals (`<`, `<=`, ...): numbers numerically (an integer and a float
    /// compare by value, so `2 = 2.0` holds), numbers before symbols, symbols by text.
    pub fn compare(self, other: Value) -> Ordering {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a.cmp(&b),
            (Value::Sym(a), Value::Sym(b)) => a.cmp(&b),
            (a, b) if a.rank() == 0 && b.rank() == 0 => {
                let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
                x.total_cmp(&y)
            }
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }
}

/// The integer `x` is exactly, if it is one.
#[inline]
fn exact_int(x: Float) -> Option<i64> {
    let f = x.get();
    // -2^63 converts exactly; 2^63 does not fit.
    if f.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
        let i = f as i64;
        (i as f64 == f).then_some(i)
    } else {
        None
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (*self, *other) {
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Sym(a), Value::Sym(b)) => a == b,
            (Value::Int(i), Value::Float(x)) | (Value::Float(x), Value::Int(i)) => exact_int(x) == Some(i),
            _ => false,
        }
    }
}

impl Eq for Value {}

impl std::hash::Hash for Value {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.hash_bits().hash(state);
    }
}

/// The total order of sorted output: [`Value::compare`]; values that are equal are equal here too, and an
/// integer comes before a float that compares equal without being it (beyond 2^53).
impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        if self == other {
            return Ordering::Equal;
        }
        self.compare(*other).then_with(|| {
            let kind = |v: &Value| match v {
                Value::Int(_) => 0u8,
                Value::Float(_) => 1,
                Value::Sym(_) => 2,
            };
            kind(self).cmp(&kind(other))
        })
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Rule-file syntax: `3`, `2.5`, `explore`, `"Two words"`.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{:?}", x.get()),
            Value::Sym(s) => {
                let text = s.as_str();
                if is_plain_symbol(text) {
                    f.write_str(text)
                } else {
                    write!(f, "{text:?}")
                }
            }
        }
    }
}

/// Whether `text` can be written without quotes (a lowercase identifier that is not the `not` keyword).
pub(crate) fn is_plain_symbol(text: &str) -> bool {
    let mut chars = text.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && text != "not"
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(i64::from(v))
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::Int(i64::from(v))
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(Float::new(v))
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Sym(Symbol::new(v))
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Self {
        Value::Sym(Symbol::new(v))
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Sym(Symbol::new(&v))
    }
}

impl From<Symbol> for Value {
    fn from(v: Symbol) -> Self {
        Value::Sym(v)
    }
}

/// The error of converting a [`Value`] to a Rust type it does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("value `{value}` is not {expected}")]
pub struct ValueTypeError {
    /// The value, in rule-file syntax.
    pub value: String,
    /// What was asked for: "an integer", "a number", "a symbol".
    pub expected: &'static str,
}

/// `TryFrom<Value>` for each Rust type through the [`Value`] accessor that returns `None` for other values.
macro_rules! try_from_value {
    ($($ty:ty => $accessor:ident, $expected:literal;)*) => {$(
        impl TryFrom<Value> for $ty {
            type Error = ValueTypeError;
            fn try_from(v: Value) -> std::result::Result<Self, Self::Error> {
                v.$accessor().ok_or_else(|| ValueTypeError {
                    value: v.to_string(),
                    expected: $expected,
                })
            }
        }
    )*};
}

try_from_value! {
    i64 => as_i64, "an integer";
    f64 => as_f64, "a number";
    &'static str => as_str, "a symbol";
}

/// Hash of a sequence of values (a row or an index key). Both sides of every lookup use this function, so
/// a key built from registers hashes like the same columns read from a stored row.
#[inline]
pub(crate) fn hash_values<I: IntoIterator<Item = Value>>(values: I) -> u64 {
    // Multiply-rotate mixing in the style of FxHash, finished with a fold of the high bits so that
    // hashbrown's top-7-bit control bytes see well-mixed input even for small integers.
    let mut h: u64 = 0x243f_6a88_85a3_08d3;
    for v in values {
        h = (h.rotate_left(5) ^ v.hash_bits()).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    // fmix64 finaliser (MurmurHash3): hashbrown takes the bucket from the low bits and the control byte
    // from the top 7, so every input bit must reach both ends.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}
