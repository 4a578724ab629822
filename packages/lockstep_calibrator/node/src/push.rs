//! Pushing accepted parameters to another node through the standard `rcl_interfaces/srv/SetParameters`
//! service (`<push_node>/set_parameters`), as `ros2 param set` does.

use std::time::Duration;

use lockstep_calibrator::ModelParams;
use r2r::rcl_interfaces::msg::{Parameter, ParameterType, ParameterValue};
use r2r::rcl_interfaces::srv::SetParameters;

/// How long a push waits for the service and for its answer.
const PUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// The request setting `<prefix>wheel_radius_m`, `track_width_m`, `delay_secs` and `centripetal_factor`.
pub fn request(prefix: &str, p: &ModelParams) -> SetParameters::Request {
    let double = |name: &str, v: f64| Parameter {
        name: format!("{prefix}{name}"),
        value: ParameterValue {
            type_: ParameterType::PARAMETER_DOUBLE as u8,
            double_value: v,
            ..ParameterValue::default()
        },
    };
    SetParameters::Request {
        parameters: vec![
            double("wheel_radius_m", p.wheel_radius_m),
            double("track_width_m", p.track_width_m),
            double("delay_secs", p.delay_secs),
            double("centripetal_factor", p.centripetal_factor),
        ],
    }
}

/// Sends `request`; Ok when the node answered and set every parameter, else the reason.
pub async fn push(
    client: &r2r::Client<SetParameters::Service>,
    available: impl std::future::Future<Output = r2r::Result<()>>,
    service: &str,
    request: &SetParameters::Request,
) -> Result<(), String> {
    tokio::time::timeout(PUSH_TIMEOUT, available)
        .await
        .map_err(|_| format!("{service} is not available"))?
        .map_err(|e| format!("{service}: {e}"))?;
    let answer = client.request(request).map_err(|e| format!("{service}: {e}"))?;
    let response = tokio::time::timeout(PUSH_TIMEOUT, answer)
        .await
        .map_err(|_| format!("{service} did not answer within {PUSH_TIMEOUT:?}"))?
        .map_err(|e| format!("{service}: {e}"))?;
    let refused: Vec<String> = request
        .parameters
        .iter()
        .zip(&response.results)
        .filter(|(_, r)| !r.successful)
        .map(|(p, r)| format!("{}: {}", p.name, r.reason))
        .collect();
    if response.results.len() != request.parameters.len() {
        return Err(format!(
            "{service} answered {} results for {} parameters",
            response.results.len(),
            request.parameters.len()
        ));
    }
    if refused.is_empty() {
        Ok(())
    } else {
        Err(format!("{service} refused {}", refused.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_names_every_parameter_with_the_prefix() {
        let r = request("nominal_vehicle.", &ModelParams::default());
        let names: Vec<&str> = r.parameters.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "nominal_vehicle.wheel_radius_m",
                "nominal_vehicle.track_width_m",
                "nominal_vehicle.delay_secs",
                "nominal_vehicle.centripetal_factor"
            ]
        );
        assert_eq!(
            r.parameters[0].value.double_value,
            ModelParams::default().wheel_radius_m
        );
        assert_eq!(r.parameters[0].value.type_, ParameterType::PARAMETER_DOUBLE as u8);
    }
}
