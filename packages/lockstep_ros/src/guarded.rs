//! Typed parameters whose run-time changes pass a check first: a change the node cannot apply is refused on
//! `~/set_parameters` (`successful: false` with the reason, as `ros2 param set` prints it) instead of being
//! accepted and ignored.
//!
//! r2r's derived parameter handler takes any `RosParams`; [`Guarded`] is one that checks a set against the
//! struct's [`ParamRules`] (finite, in range, not empty...), then runs the node's guard, before handing it to
//! the typed struct. A refused set leaves the value in force and answers `successful: false` with the reason.
//! The guard runs on the parameter service's task, with the parameters locked: it may apply the change
//! itself (reload a file, tell the simulation) and must not lock the parameters again.

use std::ops::{Deref, DerefMut};

use r2r::indexmap::IndexMap;
use r2r::{Parameter, ParameterValue, RosParams};

use crate::introspection;
use crate::param_rules::{check_parameter, ParamRules};

/// Decides whether a set of `name` to `value` is taken; `Err(reason)` refuses it. It sees the values in force.
pub type Guard<P> = Box<dyn FnMut(&str, &ParameterValue, &P) -> Result<(), String> + Send>;

/// Told of every refused set: (parameter name, reason). For a node that counts bad input in its status.
pub type OnRefused = Box<dyn FnMut(&str, &str) + Send>;

/// Typed parameters `P` behind their rules and a guard (none until [`Guarded::set_guard`]: every set that
/// passes the rules is taken).
pub struct Guarded<P> {
    params: P,
    guard: Option<Guard<P>>,
    refused: u64,
    logger: Option<String>,
    on_refused: Option<OnRefused>,
}

impl<P> Guarded<P> {
    /// `params` with no guard yet.
    pub fn new(params: P) -> Self {
        Guarded {
            params,
            guard: None,
            refused: 0,
            logger: None,
            on_refused: None,
        }
    }

    /// Calls `hook` with the name and the reason of every refused set (after the warning is logged).
    pub fn set_on_refused(&mut self, hook: OnRefused) {
        self.on_refused = Some(hook);
    }

    /// Installs the guard (typically once the node's state exists, after the parameters were read).
    pub fn set_guard(&mut self, guard: Guard<P>) {
        self.guard = Some(guard);
    }

    /// Logs each refused set as a warning on `logger` (the node's logger name).
    pub fn set_logger(&mut self, logger: impl Into<String>) {
        self.logger = Some(logger.into());
    }

    /// Sets refused since start (by the rules or the guard).
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// A copy of the parameter values.
    pub fn values(&self) -> P
    where
        P: Clone,
    {
        self.params.clone()
    }
}

impl<P: ParamRules> Guarded<P> {
    /// Whether a set passes the rules and the guard: the reason when not (counted and logged).
    fn admit(&mut self, name: &str, value: &ParameterValue) -> Result<(), String> {
        let mut verdict = check_parameter(P::param_rules(), name, value);
        if verdict.is_ok() {
            if let Some(guard) = self.guard.as_mut() {
                verdict = guard(name, value, &self.params);
            }
        }
        if let Err(reason) = &verdict {
            self.refused += 1;
            if let Some(logger) = &self.logger {
                r2r::log_warn!(
                    logger,
                    "set of parameter '{name}' refused, the value in force stays: {reason}"
                );
            }
            if let Some(hook) = self.on_refused.as_mut() {
                hook(name, reason);
            }
        }
        verdict
    }
}

/// A guard for parameters read at start: every run-time set is refused with the reason, but for the names
/// in `run_time` (which the node applies itself, from [`crate::Parameters::changes`] or the typed values).
pub fn start_only<P>(run_time: &'static [&'static str]) -> Guard<P> {
    Box::new(move |name: &str, _value: &ParameterValue, _current: &P| {
        if run_time.contains(&name) {
            Ok(())
        } else {
            Err(format!(
                "parameter '{name}' is read at start only; restart the node to change it"
            ))
        }
    })
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

impl<P: RosParams + ParamRules> RosParams for Guarded<P> {
    fn register_parameters(
        &mut self,
        prefix: &str,
        param: Option<Parameter>,
        params: &mut IndexMap<String, Parameter>,
    ) -> r2r::Result<()> {
        self.params.register_parameters(prefix, param, params)?;
        // Every node's: the introspection of its services and clients.
        match prefix.is_empty() {
            true => introspection::register_parameters(params),
            false => Ok(()),
        }
    }

    fn get_parameter(&mut self, param_name: &str) -> r2r::Result<ParameterValue> {
        match introspection::get_parameter(param_name) {
            Some(value) => Ok(value),
            None => self.params.get_parameter(param_name),
        }
    }

    fn set_parameter(&mut self, param_name: &str, param_val: &ParameterValue) -> r2r::Result<()> {
        if let Some(done) = introspection::set_parameter(param_name, param_val) {
            return done;
        }
        // A wrong type or unknown name is refused by the typed struct before the guard acts on it.
        self.params.check_parameter(param_name, param_val)?;
        self.admit(param_name, param_val)
            .map_err(|msg| r2r::Error::ParameterValueConv {
                name: param_name.to_owned(),
                msg,
            })?;
        self.params.set_parameter(param_name, param_val)
    }

    /// The check of `~/set_parameters_atomically` before it sets anything: the type and the rules (the guard,
    /// which may act, runs on the set itself).
    fn check_parameter(&self, param_name: &str, param_val: &ParameterValue) -> r2r::Result<()> {
        if let Some(verdict) = introspection::check_parameter(param_name, param_val) {
            return verdict;
        }
        self.params.check_parameter(param_name, param_val)?;
        check_parameter(P::param_rules(), param_name, param_val).map_err(|msg| {
            r2r::Error::ParameterValueConv {
                name: param_name.to_owned(),
                msg,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::param_rules::{ParamRule, Real};

    #[derive(r2r::RosParams, Debug, Clone)]
    struct Params {
        /// Scale.
        time_scale: f64,
        /// Rate.
        rate_hz: f64,
    }

    impl ParamRules for Params {
        fn param_rules() -> &'static [ParamRule] {
            const R: &[ParamRule] = &[
                ParamRule::real("time_scale", Real::closed(0.0, 1e4, "")),
                ParamRule::real("rate_hz", Real::above(0.0, 1e3, "Hz")),
            ];
            R
        }
    }

    fn guarded() -> Guarded<Params> {
        Guarded::new(Params {
            time_scale: 1.0,
            rate_hz: 50.0,
        })
    }

    #[test]
    fn a_set_breaking_a_rule_is_refused_with_the_reason_and_the_value_stays() {
        let mut p = guarded();
        let e = p
            .set_parameter("time_scale", &ParameterValue::Double(f64::NAN))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("parameter 'time_scale' = NaN: must be finite and in [0, 10000]"),
            "{e}"
        );
        assert_eq!(p.time_scale, 1.0);
        assert!(p
            .check_parameter("time_scale", &ParameterValue::Double(-1.0))
            .is_err());
        p.set_parameter("time_scale", &ParameterValue::Double(2.0))
            .unwrap();
        assert_eq!(p.time_scale, 2.0);
        assert_eq!(p.refused(), 1);
    }

    #[test]
    fn the_guard_runs_after_the_rules_and_can_refuse_too() {
        let mut p = guarded();
        p.set_guard(start_only(&["time_scale"]));
        let e = p
            .set_parameter("rate_hz", &ParameterValue::Double(10.0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("'rate_hz' is read at start only"), "{e}");
        // The rule speaks first: the reason is the range, not the restart.
        let e = p
            .set_parameter("rate_hz", &ParameterValue::Double(f64::INFINITY))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'rate_hz' = inf: must be finite and in (0, 1000] Hz"),
            "{e}"
        );
        assert_eq!(p.rate_hz, 50.0);
        p.set_parameter("time_scale", &ParameterValue::Double(0.0))
            .unwrap();
        assert_eq!((p.time_scale, p.refused()), (0.0, 2));
        // A node counting bad input hears of each refusal.
        let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = heard.clone();
        p.set_on_refused(Box::new(move |name, reason| {
            sink.lock().unwrap().push(format!("{name}: {reason}"));
        }));
        assert!(p
            .set_parameter("time_scale", &ParameterValue::Double(-1.0))
            .is_err());
        assert_eq!(
            *heard.lock().unwrap(),
            ["time_scale: parameter 'time_scale' = -1: must be finite and in [0, 10000]"]
        );
        // A wrong type is refused by r2r's typed struct.
        assert!(p
            .set_parameter("time_scale", &ParameterValue::String("fast".into()))
            .is_err());
    }
}
