//! Surface decoding through the rule files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use lockstep_rules::RuleSet;
use lockstep_sim::{Error, Scene, SurfaceTable};

#[test]
fn shipped_rules_decode_each_code() {
    let rules = RuleSet::load_all(&common::rule_files()).unwrap();
    let scene = Scene::parse("3 1\n0 3 6\n", "s").unwrap();
    let table = SurfaceTable::decode(&rules, &scene).unwrap();
    let obstacle = table.get(0).unwrap();
    assert!(obstacle.obstacle);
    assert_eq!(obstacle.name, "obstacle");
    let gravel = table.get(3).unwrap();
    assert!(!gravel.obstacle);
    assert_eq!(
        (gravel.accel_mps2, gravel.decel_mps2, gravel.advised_speed_mps),
        (1.2, 2.5, 1.2)
    );
    assert_eq!(gravel.name, "gravel");
    let ice = table.get(6).unwrap();
    assert_eq!(
        (ice.accel_mps2, ice.decel_mps2, ice.advised_speed_mps),
        (0.3, 0.6, 0.4)
    );
    assert!(
        table.get(1).is_none(),
        "only the codes the scene uses are decoded"
    );
}

#[test]
fn a_new_surface_is_a_new_rule_and_obstacles_are_the_rules_choice() {
    let rules = RuleSet::parse(
        "surface(C, A, S, V) :- typecode(C), C = 42, A = 0.7, S = 1.1, V = 0.9.\n\
         surface(C, 1, 1, 1) :- typecode(C), C = 5.\n\
         obstacle(C) :- typecode(C), C = 5.\n\
         obstacle(C) :- typecode(C), C = 0.\n",
        "custom.dl",
    )
    .unwrap();
    let scene = Scene::parse("3 1\n42 5 0\n", "s").unwrap();
    let table = SurfaceTable::decode(&rules, &scene).unwrap();
    assert_eq!(table.get(42).unwrap().advised_speed_mps, 0.9);
    assert_eq!(table.get(42).unwrap().name, "code 42");
    assert!(
        table.get(5).unwrap().obstacle,
        "obstacle wins over a surface decoding"
    );
}

#[test]
fn contradicting_or_unusable_decodings_are_errors() {
    let scene = Scene::parse("1 1\n1\n", "s.scene").unwrap();
    let two = RuleSet::parse("surface(1, 1, 1, 1).\nsurface(1, 2, 2, 2).\n", "two.dl").unwrap();
    let e = SurfaceTable::decode(&two, &scene).unwrap_err();
    assert!(matches!(e, Error::BadSurface { code: 1, .. }), "{e}");
    let negative = RuleSet::parse("surface(1, -1, 1, 1).\n", "neg.dl").unwrap();
    let e = SurfaceTable::decode(&negative, &scene).unwrap_err();
    assert!(e.to_string().contains("accelerations must be > 0"), "{e}");
}
