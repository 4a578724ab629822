//! Typed parameters whose run-time changes pass a check first: a change the node cannot apply is refused on
//! `~/set_parameters` (`successful: false` with the reason, as `ros2 param set` prints it) instead of being
//! accepted and ignored.
//!
//! r2r's derived parameter handler takes any `RosParams`; [`Guarded`] is one that runs the node's guard
//! before handing a set to the typed struct. The guard runs on the parameter service's task, with the
//! parameters locked: it may apply the change itself (reload a file, tell the simulation) and must not lock
//! the parameters again.

use std::ops::{Deref, DerefMut};

use r2r::indexmap::IndexMap;
use r2r::{Parameter, ParameterValue, RosParams};

/// Decides whether a set of `name` to `value` is taken; `Err(reason)` refuses it. It sees the values in force.
pub type Guard<P> = Box<dyn FnMut(&str, &ParameterValue, &P) -> Result<(), String> + Send>;

/// Typed parameters `P` behind a guard (none until [`Guarded::set_guard`]: every well-typed set is taken).
pub struct Guarded<P> {
    params: P,
    guard: Option<Guard<P>>,
}

impl<P> Guarded<P> {
    /// `params` with no guard yet.
    pub fn new(params: P) -> Self {
        Guarded { params, guard: None }
    }

    /// Installs the guard (typically once the node's state exists, after the parameters were read).
    pub fn set_guard(&mut self, guard: Guard<P>) {
        self.guard = Some(guard);
    }
}

impl<P> Deref for Guarded<P> {
    type Target = P;
    fn deref(&self) -> &P {
        &self.params
    }
}

impl<P> DerefMut for Guarded<P> {
    fn deref_mut(&mut self) -> &mut P {
        &mut self.params
    }
}

impl<P: RosParams> RosParams for Guarded<P> {
    fn register_parameters(
        &mut self,
        prefix: &str,
        param: Option<Parameter>,
        params: &mut IndexMap<String, Parameter>,
    ) -> r2r::Result<()> {
        self.params.register_parameters(prefix, param, params)
    }

    fn get_parameter(&mut self, param_name: &str) -> r2r::Result<ParameterValue> {
        self.params.get_parameter(param_name)
    }

    fn set_parameter(&mut self, param_name: &str, param_val: &ParameterValue) -> r2r::Result<()> {
        // A wrong type or unknown name is refused by the typed struct before the guard acts on it.
        self.params.check_parameter(param_name, param_val)?;
        if let Some(guard) = self.guard.as_mut() {
            guard(param_name, param_val, &self.params).map_err(|msg| r2r::Error::ParameterValueConv {
                name: param_name.to_owned(),
                msg,
            })?;
        }
        self.params.set_parameter(param_name, param_val)
    }

    fn check_parameter(&self, param_name: &str, param_val: &ParameterValue) -> r2r::Result<()> {
        self.params.check_parameter(param_name, param_val)
    }
}
