//! Road-surface decoding through the rules: the simulator asserts `typecode(C)` for every distinct
//! code of the scene and reads back `surface(C, Accel_mps2, Decel_mps2, AdvisedSpeed_mps)`, `obstacle(C)` and
//! (optionally) `surface_name(C, Name)`. A code the rules call an obstacle is an obstacle even if a `surface`
//! rule also decodes it; a code neither decoded nor an obstacle is an error naming its first cell.

use std::collections::BTreeMap;

use lockstep_rules::{Engine, Facts, RuleSet, Value};

use crate::error::{Error, Result};
use crate::scene::{Cell, Scene};

/// What a typecode means for the vehicle.
#[derive(Debug, Clone, PartialEq)]
pub struct Surface {
    /// The typecode.
    pub code: i64,
    /// `surface_name` of the code, or `code <n>`.
    pub name: String,
    /// Whether the cell can be entered at all.
    pub obstacle: bool,
    /// Largest speed increase per second of a wheel on this surface (m/s^2).
    pub accel_mps2: f64,
    /// Largest speed decrease per second (m/s^2).
    pub decel_mps2: f64,
    /// Advised cruising speed (m/s).
    pub advised_speed_mps: f64,
}

impl Surface {
    /// An enterable surface from a `surface(Code, Accel, Decel, Speed)` row; `Err` says which value is wrong.
    pub fn checked(
        code: i64,
        name: String,
        (a, s, v): (f64, f64, f64),
    ) -> std::result::Result<Surface, String> {
        if !(a.is_finite() && a > 0.0 && s.is_finite() && s > 0.0 && v.is_finite() && v >= 0.0) {
            return Err(format!(
                "`surface` gives accel {a}, decel {s}, speed {v}: accelerations must be > 0 and the speed >= 0"
            ));
        }
        Ok(Surface {
            code,
            name,
            obstacle: false,
            accel_mps2: a,
            decel_mps2: s,
            advised_speed_mps: v,
        })
    }
}

/// The decoding of every typecode a scene uses.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SurfaceTable {
    surfaces: BTreeMap<i64, Surface>,
}

impl SurfaceTable {
    /// Decodes every distinct typecode of `scene` with `rules`. All unknown codes are reported at once, each
    /// at its first cell (row-major).
    pub fn decode(rules: &RuleSet, scene: &Scene) -> Result<SurfaceTable> {
        SurfaceTable::decode_with(&mut Engine::new(rules.clone()), scene, &Facts::new())
    }

    /// [`SurfaceTable::decode`] in `engine` (which holds the rules), with `extra` facts asserted beside the
    /// typecodes (the simulated time, facts from outside).
    pub fn decode_with(engine: &mut Engine, scene: &Scene, extra: &Facts) -> Result<SurfaceTable> {
        let codes = scene.distinct_codes();
        let mut facts = extra.clone();
        for &code in &codes {
            facts.add("typecode", [code]);
        }
        engine.tick(&facts)?;
        let origin = scene.origin();
        let names = surface_names(query(engine, "surface_name")?);
        let obstacles: Vec<i64> = query(engine, "obstacle")?
            .iter()
            .filter_map(|r| r.first().and_then(|v| v.as_i64()))
            .collect();
        let decoded = surface_rows(query(engine, "surface")?, origin)?;
        let mut surfaces = BTreeMap::new();
        let mut unknown = Vec::new();
        for &code in &codes {
            let name = names
                .get(&code)
                .cloned()
                .unwrap_or_else(|| format!("code {code}"));
            if obstacles.contains(&code) {
                surfaces.insert(
                    code,
                    Surface {
                        code,
                        name,
                        obstacle: true,
                        accel_mps2: 0.0,
                        decel_mps2: 0.0,
                        advised_speed_mps: 0.0,
                    },
                );
            } else if let Some(&(a, s, v)) = decoded.get(&code) {
                let surface = Surface::checked(code, name, (a, s, v))
                    .map_err(|message| bad_surface(origin, code, message))?;
                surfaces.insert(code, surface);
            } else {
                unknown.push(code);
            }
        }
        if !unknown.is_empty() {
            return Err(unknown_codes(scene, unknown));
        }
        Ok(SurfaceTable { surfaces })
    }

    /// The decoding of `code`, if the scene uses it.
    pub fn get(&self, code: i64) -> Option<&Surface> {
        self.surfaces.get(&code)
    }

    /// Every decoded code, sorted by code.
    pub fn iter(&self) -> impl Iterator<Item = &Surface> {
        self.surfaces.values()
    }
}
/// The rows of `pred` after a tick; a rule set without `obstacle` or `surface_name` simply has none.
fn query(engine: &Engine, pred: &str) -> Result<Vec<Vec<Value>>> {
    match engine.query(pred) {
        Ok(rows) => Ok(rows),
        Err(lockstep_rules::Error::UnknownPredicate { .. }) => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

fn bad_surface(origin: &str, code: i64, message: String) -> Error {
    Error::BadSurface {
        origin: origin.to_owned(),
        code,
        message,
    }
}

/// The names `surface_name(Code, Name)` gives; the first one counts.
fn surface_names(rows: Vec<Vec<Value>>) -> BTreeMap<i64, String> {
    let mut names: BTreeMap<i64, String> = BTreeMap::new();
    for row in rows {
        if let (Some(code), Some(name)) = (row.first().and_then(|v| v.as_i64()), row.get(1)) {
            let text = match name {
                Value::Sym(s) => s.as_str().to_owned(),
                other => format!("{other:?}"),
            };
            names.entry(code).or_insert(text);
        }
    }
    names
}

/// The decodings `surface(Code, Accel, Decel, Speed)` gives; two different ones for a code are an error.
fn surface_rows(rows: Vec<Vec<Value>>, origin: &str) -> Result<BTreeMap<i64, (f64, f64, f64)>> {
    let mut decoded: BTreeMap<i64, (f64, f64, f64)> = BTreeMap::new();
    for row in rows {
        let Some(code) = row.first().and_then(|v| v.as_i64()) else {
            continue;
        };
        let nums: Vec<Option<f64>> = row.iter().skip(1).map(|v| v.as_f64()).collect();
        let (Some(Some(a)), Some(Some(s)), Some(Some(v))) = (nums.first(), nums.get(1), nums.get(2)) else {
            return Err(bad_surface(
                origin,
                code,
                format!("`surface` row {row:?} has non-numeric values"),
            ));
        };
        if let Some(prev) = decoded.insert(code, (*a, *s, *v)) {
            if prev != (*a, *s, *v) {
                return Err(bad_surface(
                    origin,
                    code,
                    format!("two `surface` decodings: {prev:?} and {:?}", (a, s, v)),
                ));
            }
        }
    }
    Ok(decoded)
}

/// Every code no rule decodes, each at its first cell (row-major), in one error.
fn unknown_codes(scene: &Scene, unknown: Vec<i64>) -> Error {
    let mut errors = Vec::new();
    for code in unknown {
        if let Some(idx) = scene.codes().iter().position(|&c| c == code) {
            let cell = Cell {
                column: idx % scene.columns(),
                row: idx / scene.columns(),
            };
            let (line, text_column) = scene.text_position(cell).unwrap_or((0, 0));
            errors.push((
                idx,
                Error::UnknownTypecode {
                    origin: scene.origin().to_owned(),
                    line,
                    text_column,
                    row: cell.row,
                    column: cell.column,
                    code,
                },
            ));
        }
    }
    errors.sort_by_key(|(idx, _)| *idx);
    let mut errors: Vec<Error> = errors.into_iter().map(|(_, e)| e).collect();
    if errors.len() == 1 {
        errors.remove(0)
    } else {
        Error::Multiple { errors }
    }
}
