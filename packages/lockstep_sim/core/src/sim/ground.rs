//! The ground under the TRUE vehicle: the slip model in force, and the motion it gives the wheel speeds.

use crate::error::Result;
use crate::slip::{ground_motion, GroundMotion, SlipModel};

use super::types::Simulator;

impl Simulator {
    /// Replaces the slip model of the ground under the TRUE vehicle, from the next step on (like
    /// [`Simulator::set_true_vehicle`]: a new floor, new tyres). Invalid coefficients: an error naming the
    /// parameter, nothing changes.
    pub fn set_slip(&mut self, model: SlipModel) -> Result<()> {
        model.validate()?;
        self.config.slip = model;
        Ok(())
    }

    /// The true body twist (v, w) of the last step. Centripetal model: from the wheel speeds and the TRUE
    /// parameters in force. Lateral model: the slipped speed along the body's x axis and the yaw rate of the
    /// last step (the sideways velocity is not part of it).
    pub fn true_twist(&self) -> (f64, f64) {
        let p = &self.config.true_vehicle;
        match self.config.slip {
            SlipModel::Centripetal => {
                let (v, w) = p.body_twist(self.wheels.left_velocity_radps, self.wheels.right_velocity_radps);
                (v, p.slipped_yaw_rate(v, w))
            }
            SlipModel::Lateral { .. } => self.ground_twist,
        }
    }

    /// Where the ground takes the vehicle this step with wheel speeds (left, right; rad/s) `wl`, `wr`, from
    /// the pose and wheel speeds of the last step. Changes nothing.
    pub(super) fn ground_motion(&self, wl: f64, wr: f64, dt_secs: f64) -> GroundMotion {
        let before = (self.wheels.left_velocity_radps, self.wheels.right_velocity_radps);
        ground_motion(
            &self.config.slip,
            &self.config.true_vehicle,
            &self.pose,
            before,
            (wl, wr),
            dt_secs,
        )
    }
}
