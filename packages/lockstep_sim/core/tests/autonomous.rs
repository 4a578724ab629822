//! Autonomous runs on the sample scene with the shipped rules.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

#[test]
fn reaches_the_destination_in_the_sample_scene() {
    let mut sim = sample_sim();
    let arrived = run_until_arrived(&mut sim, 300.0);
    let states: Vec<&str> = sim.states_visited().iter().map(|(_, s)| s.as_str()).collect();
    println!(
        "{}\nstates {states:?}\ncollisions {}",
        sim.ascii_map(),
        sim.collisions()
    );
    let t = arrived.expect("arrives within 300 s");
    let dest = sim.destination().unwrap();
    let cell = sim.scene().cell_at(sim.pose().x_m, sim.pose().y_m).unwrap();
    assert_eq!(cell, dest, "stopped inside the destination cell");
    // The route goes around the racks: the vehicle had to stop and turn on the way.
    assert!(states.contains(&"obstacle_ahead"), "{states:?}");
    assert!(
        states.contains(&"turn_left") || states.contains(&"turn_right"),
        "{states:?}"
    );
    assert!(t > 10.0);
    // It stays there: a few more seconds change nothing.
    let before = sim.pose();
    for _ in 0..200 {
        sim.step(DT);
    }
    assert!(sim.pose().distance_to(&before) < 0.05);
    assert_eq!(sim.state(), "arrived");
}
