//! Output rounding: percentages, seconds and money to 2 decimals; KPI ratios to 4.

/// Rounds half away from zero to `places` decimals; never returns `-0`.
#[must_use]
pub fn round_to(value: f64, places: i32) -> f64 {
    let factor = 10_f64.powi(places);
    (value * factor).round() / factor + 0.0
}

/// Percentages, seconds and money.
#[must_use]
pub fn round2(value: f64) -> f64 {
    round_to(value, 2)
}

/// `kpi_percent`, metric ratios and raw metric values.
#[must_use]
pub fn round4(value: f64) -> f64 {
    round_to(value, 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_seconds_and_money_round_to_two_decimals() {
        assert_eq!(round2(33.333_333), 33.33);
        assert_eq!(round2(66.666_666), 66.67);
        assert_eq!(round2(125.4), 125.4);
        assert_eq!(round2(1_234_567.891), 1_234_567.89);
    }

    #[test]
    fn kpi_ratios_round_to_four_decimals() {
        assert_eq!(round4(0.404_04), 0.404);
        assert_eq!(round4(1.123_456), 1.1235);
    }

    #[test]
    fn rounding_never_yields_negative_zero() {
        assert!(round2(-0.001).is_sign_positive());
        assert_eq!(serde_json::to_string(&round2(-0.001)).unwrap(), "0.0");
    }
}
