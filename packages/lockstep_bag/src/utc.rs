//! Calendar date and time of day (UTC) of a Unix time, for printed timestamps and default bag names.

/// A Unix time as a UTC calendar date and time of day (proleptic Gregorian calendar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

impl UtcTime {
    /// The date and time `secs` seconds after 1970-01-01 00:00:00 UTC (Howard Hinnant's civil-from-days).
    pub fn from_unix_secs(secs: u64) -> Self {
        let days = (secs / 86_400) as i64;
        let rem = secs % 86_400;
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        Self {
            year: yoe + era * 400 + i64::from(month <= 2),
            month: month as u32,
            day: day as u32,
            hour: (rem / 3600) as u32,
            minute: (rem % 3600 / 60) as u32,
            second: (rem % 60) as u32,
        }
    }

    /// `YYYY_MM_DD-hh_mm_ss`, the form of `ros2 bag record`'s default bag names.
    pub fn bag_name_stamp(&self) -> String {
        format!(
            "{:04}_{:02}_{:02}-{:02}_{:02}_{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

#[cfg(test)]
mod tests {
    use super::UtcTime;

    #[test]
    fn dates_across_leap_years_and_centuries() {
        let t = |s| UtcTime::from_unix_secs(s).bag_name_stamp();
        assert_eq!(t(0), "1970_01_01-00_00_00");
        assert_eq!(t(951_782_400), "2000_02_29-00_00_00");
        assert_eq!(t(1_795_600_000), "2026_11_25-09_46_40");
        assert_eq!(t(4_107_542_399), "2100_02_28-23_59_59");
        assert_eq!(t(4_107_542_400), "2100_03_01-00_00_00");
    }
}
