#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `~/set_destination` (SetDestination: `int32 column`, `int32 row`) with any pair of int32, as the node
//! passes them (`i64::from`): refused with a message naming the column and the row, or a destination inside
//! the grid that the simulator then steps towards with a finite state; never a panic (debug build: an
//! overflow panics too).

mod common;

use common::{sample_sim, DT};
use lockstep_ranges::hostile::{any_i32_around, config};
use proptest::prelude::*;

/// Any i32, the edges often (see `lockstep_ranges::hostile`).
fn any_i32() -> BoxedStrategy<i32> {
    any_i32_around(-2..25i32)
}

proptest! {
    #![proptest_config(config(256, 0x5EED_0002))]

    #[test]
    fn set_destination_column_and_row_of_any_int32_are_refused_naming_them_or_inside_the_grid(
        column in any_i32(),
        row in any_i32(),
    ) {
        let mut sim = sample_sim();
        let before = sim.destination();
        let (columns, rows) = (sim.scene().columns(), sim.scene().rows());
        match sim.set_destination(i64::from(column), i64::from(row)) {
            Ok(()) => {
                let cell = sim.destination().unwrap();
                prop_assert_eq!((i64::from(column), i64::from(row)), (cell.column as i64, cell.row as i64));
                prop_assert!(cell.column < columns && cell.row < rows);
            }
            Err(e) => {
                let e = e.to_string();
                prop_assert!(
                    e.contains(&format!("column {column}")) && e.contains(&format!("row {row}")),
                    "{}", e
                );
                prop_assert_eq!(sim.destination(), before, "a refused destination changed it");
            }
        }
        for _ in 0..10 {
            sim.step(DT);
        }
        let (p, o) = (sim.pose(), sim.odometry());
        prop_assert!(
            [p.x_m, p.y_m, p.yaw_rad, o.v_mps, o.w_radps].iter().all(|x| x.is_finite()),
            "{:?} {:?}", p, o
        );
    }
}
